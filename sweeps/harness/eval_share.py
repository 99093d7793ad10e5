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
and a restored trial goes on with it. The four's evaluation is RLlib's, through its public hook
for it (``AlgorithmConfig.evaluation(custom_evaluation_function=...)``: ``evaluate_within_share``
plays the episodes RLlib's own local evaluation plays, on the same evaluation env runner); the
single-process baselines' trial asks ``Ledger.due`` the same question.
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


def evaluate_within_share(algorithm: Any, eval_workers: Any, *, share: float) -> tuple:
    """RLlib's ``custom_evaluation_function`` (``functools.partial`` gives ``share``): where the
    ledger allows, the configured episodes on the local evaluation env runner, as RLlib's own
    local evaluation plays them (``Algorithm._evaluate_on_local_env_runner`` in Ray 2.60.0:
    sample, then the runner's metrics aggregated under the evaluation results); else nothing
    (RLlib then reports no evaluation for the iteration). The training clock is the suite
    callbacks' (as of the previous result)."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EVALUATION_RESULTS

    from sweeps.harness.callbacks import training_clock_s

    ledger = Ledger(algorithm.metrics)
    if not ledger.due(training_clock_s(algorithm.metrics), share):
        return {}, 0, 0
    config = algorithm.config
    if config.evaluation_duration_unit != "episodes":
        raise ValueError("evaluate_within_share plays whole episodes (evaluation_duration_unit)")
    runner = eval_workers.local_env_runner
    started = time.perf_counter()
    episodes = runner.sample(num_episodes=config.evaluation_duration)
    metrics = runner.get_metrics()
    algorithm.metrics.aggregate([metrics], key=(EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
    ledger.spent(time.perf_counter() - started)
    env_steps = sum(e.env_steps() for e in episodes)
    agent_steps = sum(e.agent_steps() for e in episodes)
    return {}, int(env_steps), int(agent_steps)
