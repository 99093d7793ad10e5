"""Periodic greedy evaluation within a share of the training clock (``--eval-share``).

Evaluation is off the training clock, but not off the wall-clock: on an env whose greedy episodes
are long (a thousand-step lander, a hard game) five of them after every iteration can
cost more than the iteration, and a run's wall-clock becomes a multiple of its training clock.
The rule here keeps periodic evaluation to a share of the training clock (the workload's
``eval_share``: 25%; none on cabs, where it costs less, nor on Pong, where periodic evaluation
is off): an
evaluation that ``--eval-interval`` asks for runs only where the evaluation seconds so far plus
a mean evaluation's (the best guess of the next one's) stay within ``share`` x the training
seconds so far. The first always runs, so every trial has a greedy figure early. Where an
evaluation is cheap against an iteration, the rule never binds and evaluation runs every
``--eval-interval`` iterations as before; where it is dear, it runs as often as the share allows,
and the greedy figure in the results is the latest evaluation's (``suite/evaluations`` counts
them, ``suite/periodic_eval_s`` sums their seconds).

The confirmed target's checks (``confirm.py``) are not periodic evaluation: they get the episodes
they need whatever this share says, and their seconds do not count in it.

The ledger lives in the trial's MetricsLogger (lifetime sums), so it is saved with each checkpoint
and a restored trial goes on with it. The four's evaluation goes through RLlib's public hook for
it (``AlgorithmConfig.evaluation(custom_evaluation_function=...)``): ``evaluate_within_share``
plays the episodes with the evaluation env runner's policy, each of them once from its own
seeded start, as the single-process baselines' trial plays them (which asks ``Ledger.due`` the
same question); RLlib's own way (the first N episodes to end) only where every episode has one
length (the cab env's).
"""

from __future__ import annotations

import time
from typing import Any

from sweeps.harness import keys
from sweeps.harness.values import number

_LEDGER = "suite_eval_share"  # popped from the results (suite/... carries the figures)
_SPENT: tuple[str, str] = (_LEDGER, "spent_s")
_COUNT: tuple[str, str] = (_LEDGER, "evaluations")


def due(train_s: float, spent_s: float, evaluations: int, share: float) -> bool:
    """Whether an evaluation may run now: always where ``share`` is 0 (no cap) or none has run;
    else where the seconds so far plus a mean evaluation's stay within ``share`` x the training
    seconds."""
    if share <= 0 or evaluations <= 0:
        return True
    return spent_s * (1.0 + 1.0 / evaluations) <= share * train_s


class Ledger:
    """Periodic evaluation's seconds and count, in a MetricsLogger (``metrics``)."""

    KEY = _LEDGER

    def __init__(self, metrics: Any) -> None:
        self.metrics = metrics

    def _peek(self, key: tuple[str, str]) -> float:
        value = number(self.metrics.peek(key, default=0.0))
        return 0.0 if value != value else value

    @property
    def spent_s(self) -> float:
        return self._peek(_SPENT)

    @property
    def evaluations(self) -> int:
        return int(self._peek(_COUNT))

    def due(self, train_s: float, share: float) -> bool:
        return due(train_s, self.spent_s, self.evaluations, share)

    def spent(self, seconds: float) -> None:
        self.metrics.log_value(_SPENT, seconds, reduce="lifetime_sum")
        self.metrics.log_value(_COUNT, 1, reduce="lifetime_sum")

    def figures(self) -> dict[str, float]:
        """What a result carries of it (under ``suite``)."""
        return {keys.PERIODIC_EVAL_S[-1]: self.spent_s, keys.EVALUATIONS[-1]: self.evaluations}


def evaluate_within_share(
    algorithm: Any, eval_workers: Any, *, share: float, first_episodes: bool = True
) -> tuple:
    """RLlib's ``custom_evaluation_function`` (``functools.partial`` gives ``share`` and
    ``first_episodes``): where the ledger allows, the configured episodes with the policy of
    the local evaluation env runner (its weights synced by RLlib just before); else nothing
    (RLlib then reports no evaluation for the iteration). The training clock is the suite
    callbacks' (as of the previous result).

    ``first_episodes`` (the default): each of the N episodes played side by side counts once,
    from its own seeded start (``held_out_eval.play``, ``periodic_seed``), as the checks and
    the single-process baselines play them; its figures go to the result through the suite
    callbacks (``take_played``). RLlib's own local evaluation (``runner.sample(num_episodes=N)``
    on N sub-envs, which ``first_episodes=False`` keeps, for a workload whose episodes all have
    one length) counts the first N episodes to *end*: a sub-env whose episodes are short plays
    several of them while a long one plays one, so the figure leans to short episodes: high
    where short means good (Taxi's looping starts unseen: ``results/gym/tune/apex``), low where
    short means a failure (CartPole)."""
    ledger = Ledger(algorithm.metrics)
    from sweeps.harness.callbacks import training_clock_s

    if not ledger.due(training_clock_s(algorithm.metrics), share):
        return {}, 0, 0
    config = algorithm.config
    if config.evaluation_duration_unit != "episodes":
        raise ValueError("evaluate_within_share plays whole episodes (evaluation_duration_unit)")
    runner = eval_workers.local_env_runner
    started = time.perf_counter()
    if first_episodes:
        steps = _play_first_episodes(algorithm, runner.module, ledger.evaluations)
    else:
        steps = _sample_on_runner(algorithm, runner)
    ledger.spent(time.perf_counter() - started)
    return {}, steps, steps


# The figures of the latest periodic evaluation, on the algorithm until the suite callbacks'
# next on_train_result puts them in its result (take_played): evaluation runs after the
# iteration's own metrics are reduced, so the algorithm's MetricsLogger would carry them a
# result late.
PLAYED_ATTR = "suite_periodic_played"


def _play_first_episodes(algorithm: Any, module: Any, evaluations: int) -> int:
    """The configured episodes, each counted once from its own seeded start, played greedily by
    ``module`` (``held_out_eval.periodic_evaluation``); their figures left on ``algorithm`` for
    the callbacks; the env steps they took."""
    from sweeps.harness.held_out_eval import periodic_evaluation

    config = algorithm.config
    episodes = int(config.evaluation_duration)
    figures = periodic_evaluation(
        module, config.env, dict(config.env_config), episodes, config.seed, evaluations
    )
    setattr(algorithm, PLAYED_ATTR, figures)
    return int(figures[keys.NUM_ENV_STEPS_SAMPLED])


def _sample_on_runner(algorithm: Any, runner: Any) -> int:
    """The configured episodes as RLlib's own local evaluation plays them
    (``Algorithm._evaluate_on_local_env_runner`` in Ray 2.60.0: sample, then the runner's
    metrics aggregated under the evaluation results); the env steps they took."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EVALUATION_RESULTS

    episodes = runner.sample(num_episodes=algorithm.config.evaluation_duration)
    key = (EVALUATION_RESULTS, ENV_RUNNER_RESULTS)
    algorithm.metrics.aggregate([runner.get_metrics()], key=key)
    return int(sum(e.env_steps() for e in episodes))


def take_played(algorithm: Any, result: dict) -> bool:
    """Put the latest periodic evaluation's figures, where one ran since the last result, in
    ``result`` where RLlib's evaluation results go (``keys.EVAL_RETURN_MEAN`` and beside it),
    and take them off ``algorithm``: whether it did (``keys.PERIODIC_ONCE``)."""
    played = getattr(algorithm, PLAYED_ATTR, None)
    if not played:
        return False
    setattr(algorithm, PLAYED_ATTR, None)
    evaluation = result.setdefault(keys.EVAL_RETURN_MEAN[0], {})
    evaluation.setdefault(keys.EVAL_RETURN_MEAN[1], {}).update(played)
    return True
