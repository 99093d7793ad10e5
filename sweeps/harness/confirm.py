"""A target is reached when the policy plays it: the confirmed target.

A trial's judged figure (the running mean of its training games on Pong, the few-episode greedy
estimate elsewhere: ``runner._judged_by``) is noisy, and its first crossing of a target comes
early by construction. So when it reaches the run's target (``--stop-reward``), the policy the
learner holds plays a fixed set of seeded episodes (``--confirm-episodes``, the seeds from
``CONFIRM_SEED``, the same at every check and in every trial), and the target counts as reached
only if their mean reaches it: ``suite/confirm_return`` is what ``--stop-reward`` stops on and
``--as-test`` asks for. Otherwise training goes on, and the next crossing is checked the same way.

* **Which policy plays**: the policy whose figure judged the crossing. A Q-learner's (DQN,
  Ape-X) is its greedy one everywhere. A policy-gradient learner's (IMPALA, APPO) is its action
  distribution, sampled as it acts in training, where the training return judges (Pong), and its
  greedy policy where the greedy evaluation judges (cabs, any Gymnasium env); the other figure is
  beside (``suite/confirm_greedy_return``, ``suite/confirm_sampled_return``). A policy-gradient
  method trains the distribution, and its arg-max can play far worse (APPO on Pong) or far
  better (IMPALA on cabs, whose sampled policy keeps its entropy bonus's spread). A check also
  counts the episodes that policy played to the env's time limit (``suite/confirm_cut``): a
  greedy policy that loops from a few starts (Taxi's) fails a check by those alone.
* **When a check runs**: at each crossing of the target from below (the first included); while
  the judged figure stays at or above it, again once the training time since the last check is
  ``RECHECK_FACTOR`` times that check's seconds (a check then costs at most about a tenth of the
  wall-clock).
* **Off the clock**: a check's seconds are evaluation (``suite/eval_time_s``), not training, and
  the CPU accounting's span starts again after it (``callbacks.SuiteCallbacks``). What was in
  flight when it began (an env runner's sample request, batches queued for IMPALA's and APPO's
  learner thread) finishes meanwhile, off the clock, as during RLlib's own evaluation: at most
  about an iteration's work per check. The policy that plays is a copy of the learner's, taken
  as the check starts.
* **Kept with the trial**: the checks' state is in the algorithm's MetricsLogger as lifetime
  sums (as the clocks are), which RLlib saves with each checkpoint: a resumed or retried trial
  keeps its checks and whether its target was confirmed.

``--confirm-episodes 0`` turns it off: the first crossing then counts (the field's convention,
RLlib's tuned examples and release tests).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from sweeps.harness import keys
from sweeps.harness.values import number

CONFIRM_SEED = 2_000_000  # the checks' episodes are seeded CONFIRM_SEED + i (held-out: 1_000_000)
RECHECK_FACTOR = 10.0  # while above the target: a check again after 10x the last one's seconds

# Where the checks' state lives in the algorithm's MetricsLogger (lifetime sums of its changes).
METRICS_KEY = "suite_confirm"
_STATE = ("checks", "last_check_train_s", "last_check_s", "waiting", "confirmed")


@dataclass(frozen=True)
class Spec:
    """What a trial confirms: its target, how many seeded episodes a check plays, and the
    result key whose crossing starts one (a flat key, as Tune reads it)."""

    target: float
    episodes: int
    judged: str
    seed: int = CONFIRM_SEED

    @property
    def sampled(self) -> bool:
        """Whether a policy-gradient policy plays sampled: where the training return judges."""
        return self.judged == keys.flat(keys.RETURN_MEAN)


def spec(target: float | None, episodes: int, judged: keys.Key) -> Spec | None:
    """The trial's confirmation, or None where there is nothing to confirm (no target, or
    ``--confirm-episodes 0``)."""
    if target is None or episodes <= 0:
        return None
    return Spec(float(target), int(episodes), keys.flat(judged))


@dataclass
class Check:
    """One check's figures."""

    value: float  # the mean return of the policy that judges (module docstring)
    ci95: float  # half-width of its 95% interval
    greedy: float  # the greedy policy's mean return on the same episodes
    sampled: float  # the sampled policy's (NaN for a Q-learner)
    episodes: int
    seconds: float
    policy: str  # which of the two is ``value``: "greedy" or "sampled"
    cut: int = 0  # of its episodes, those that ended at the env's time limit (held_out_eval.Played)


def learner_module(algorithm: Any) -> Any:
    """A copy, on the CPU, of the default module as the (first) learner holds it: the freshest
    weights, fixed for the check (IMPALA's learner thread may update the learner's own while a
    check plays). The copy is made where the learner lives (a remote or GPU learner's module,
    DDP's wrapper removed, comes back as plain CPU tensors)."""
    for result in algorithm.learner_group.foreach_learner(_cpu_copy):
        if result.ok:
            return result.get()
    raise RuntimeError("no learner answered")


def _cpu_copy(learner: Any) -> Any:
    import copy

    from ray.rllib.core import DEFAULT_MODULE_ID

    module = learner.module[DEFAULT_MODULE_ID]
    module = module.unwrapped() if hasattr(module, "unwrapped") else module
    return copy.deepcopy(module).to("cpu")


def play_check(module: Any, env_id: str, env_config: dict, spec: Spec) -> Check:
    """The check's episodes, played by ``module``: greedy, and sampled for a module with an
    action distribution to sample; the one that judges is ``spec``'s (module docstring)."""
    from sweeps.harness.held_out_eval import ci95, play

    started = time.perf_counter()
    greedy = play(module, env_id, env_config, spec.episodes, spec.seed)
    sampled = play(module, env_id, env_config, spec.episodes, spec.seed, sampled=True)
    on_sampled = spec.sampled and sampled is not None
    judging = sampled if on_sampled else greedy
    value, half = ci95(judging)
    return Check(
        value=value,
        ci95=half,
        greedy=ci95(greedy)[0],
        sampled=ci95(sampled)[0] if sampled is not None else math.nan,
        episodes=spec.episodes,
        seconds=time.perf_counter() - started,
        policy="sampled" if on_sampled else "greedy",
        cut=sum(getattr(judging, "cut", ())),
    )


class Confirmation:
    """Decides after each training result whether a check runs, runs it, and returns what the
    result carries under ``suite`` (``figures``). ``play`` plays one check (a test may pass its
    own)."""

    def __init__(self, spec: Spec, play: Any = None) -> None:
        self.spec = spec
        self._play = play or self._play_learner

    def _play_learner(self, algorithm: Any) -> Check:
        config = algorithm.config
        try:
            return play_check(
                learner_module(algorithm), config.env, dict(config.env_config), self.spec
            )
        except Exception as e:  # the trial fails with why (error.txt), never confirms silently
            raise RuntimeError(
                f"the check of the target could not play {config.env}: {type(e).__name__}: {e} "
                "(--confirm-episodes 0 stops at the first crossing instead)"
            ) from e

    # --- the state, in the MetricsLogger --------------------------------------------------

    @staticmethod
    def _get(metrics: Any, name: str) -> float:
        value = number(metrics.peek((METRICS_KEY, name), default=0.0))
        return 0.0 if math.isnan(value) else value

    def _set(self, metrics: Any, name: str, value: float) -> None:
        change = float(value) - self._get(metrics, name)
        metrics.log_value((METRICS_KEY, name), change, reduce="lifetime_sum")

    def state(self, metrics: Any) -> dict[str, float]:
        return {name: self._get(metrics, name) for name in _STATE}

    # --- after each result ----------------------------------------------------------------

    def due(self, metrics: Any, judged: float, train_time_s: float) -> bool:
        """Whether the judged figure asks for a check now (and, below the target, re-arms the
        next crossing)."""
        state = self.state(metrics)
        if state["confirmed"] or math.isnan(judged):
            return False
        if judged < self.spec.target:
            if state["waiting"]:
                self._set(metrics, "waiting", 0.0)  # the next crossing checks again
            return False
        if not state["waiting"]:
            return True  # a crossing from below (or the first)
        since = train_time_s - state["last_check_train_s"]
        return since >= RECHECK_FACTOR * state["last_check_s"]

    def after_result(
        self, algorithm: Any, metrics: Any, judged: float, train_time_s: float
    ) -> tuple[dict[str, float], float]:
        """The figures this result carries, and the seconds a check took (0 without one)."""
        check = None
        if self.due(metrics, judged, train_time_s):
            started = time.perf_counter()
            check = self._play(algorithm)
            # all of it is evaluation: the module's copy and its transfer as well as the play
            check.seconds = max(check.seconds, time.perf_counter() - started)
        if check is not None:
            confirmed = check.value >= self.spec.target
            self._set(metrics, "checks", self._get(metrics, "checks") + 1)
            self._set(metrics, "last_check_train_s", train_time_s)
            self._set(metrics, "last_check_s", check.seconds)
            self._set(metrics, "waiting", 1.0)
            self._set(metrics, "confirmed", 1.0 if confirmed else 0.0)
        return self.figures(metrics, check), check.seconds if check else 0.0

    def figures(self, metrics: Any, check: Check | None) -> dict[str, float]:
        """``suite`` keys: the check's figures (NaN without a check this result), how many
        checks ran, and whether the target is confirmed (sticky: the trial stops there)."""
        nan = math.nan
        return {
            keys.CONFIRM_RETURN[-1]: check.value if check else nan,
            keys.CONFIRM_CI95[-1]: check.ci95 if check else nan,
            keys.CONFIRM_GREEDY_RETURN[-1]: check.greedy if check else nan,
            keys.CONFIRM_SAMPLED_RETURN[-1]: check.sampled if check else nan,
            keys.CONFIRM_SAMPLED[-1]: float(check.policy == "sampled") if check else nan,
            keys.CONFIRM_CUT[-1]: float(check.cut) if check else nan,
            keys.CONFIRM_EPISODES[-1]: float(self.spec.episodes),
            keys.CONFIRM_TARGET[-1]: self.spec.target,
            keys.CONFIRM_CHECKS[-1]: self._get(metrics, "checks"),
            keys.TARGET_CONFIRMED[-1]: self._get(metrics, "confirmed"),
        }
