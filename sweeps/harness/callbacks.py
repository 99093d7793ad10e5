"""RLlib callback that adds the suite's own metrics to every training result.

The suite compares algorithms by *training* wall-clock, so evaluation time has to be measured and
taken out; and cab runs are judged against the env's exact optimum. Everything written here lives
under ``result["suite"]`` (keys in ``sweeps.harness.keys``).
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS

from sweeps.harness import keys
from sweeps.harness.common import number


def _cab_optimum(env_id: Any, env_config: dict) -> float | None:
    """Exact optimal expected return when the env is a cab env, else None."""
    import envs

    if env_id not in (envs.CABS, envs.CABS_REQUESTS):
        return None
    from envs.optimum import optimum_value

    variant = "requests" if env_id == envs.CABS_REQUESTS else "base"
    return float(optimum_value(variant, tm_seed=int(env_config.get("tm_seed", 0))))


def _one_torch_thread_per_cpu(config: Any) -> None:
    """Size torch's intra-op threads to the CPUs the driver (and a local learner) was given.

    Torch takes every core by default; on a small machine a learner with two threads fights the
    env runner for its core (on 2 cores, Pong's APPO/IMPALA learner with one thread trains ~1.3x
    as many steps/s). Remote learners and env runners are Ray actors, which Ray already gives one
    OpenMP thread per CPU."""
    import torch

    torch.set_num_threads(max(1, int(config.num_cpus_for_main_process)))


class SuiteCallbacks(RLlibCallback):
    """Training wall-clock without evaluation, greedy return, % of optimum, throughput."""

    def __init__(self) -> None:
        super().__init__()
        self._t_start: float | None = None
        self._eval_started: float | None = None
        self._eval_time_s = 0.0
        self._greedy_return = math.nan
        self._optimum: float | None = None
        self._returns: deque[float] = deque(maxlen=20)  # on an env runner: its last returns

    def on_algorithm_init(self, *, algorithm, metrics_logger=None, **kwargs) -> None:
        _one_torch_thread_per_cpu(algorithm.config)
        self._optimum = _cab_optimum(algorithm.config.env, dict(algorithm.config.env_config))
        # Start-up (building runners, learners, the DP above) is not training time.
        self._t_start = time.perf_counter()

    def on_episode_end(
        self, *, episode, env_runner=None, metrics_logger=None, prev_episode_chunks=None, **kw
    ) -> None:
        """On an env runner: the mean return of its last ``metrics_num_episodes_for_smoothing``
        training episodes, logged at every episode end (see ``_smoothed_return``). ``episode`` is
        only the last chunk since the runner's previous sample() call: the game's return adds
        the earlier chunks'."""
        if metrics_logger is None or env_runner is None or env_runner.config.in_evaluation:
            return
        window = env_runner.config.metrics_num_episodes_for_smoothing
        if self._returns.maxlen != window:
            self._returns = deque(self._returns, maxlen=window)
        chunks = [*(prev_episode_chunks or []), episode]
        self._returns.append(float(sum(chunk.get_return() for chunk in chunks)))
        metrics_logger.log_value(
            keys.RETURN_MEAN_LAST_N[-1], float(np.mean(self._returns)), reduce="mean", window=1
        )

    def _smoothed_return(self, result: dict) -> None:
        """RETURN_MEAN := the runners' mean return of their last N training games.

        RLlib 2.60's own figure is not that: its windows are merged per sample() result on the
        driver (an iteration in which two Pong games ended reports -20.33 = a mean of three
        values; on CartPole it ran 30-60% above the true 20-game mean). Each runner keeps its
        last N returns (``on_episode_end``); the driver gets each runner's latest mean (averaged
        over the episode ends of the iteration, and over runners), keeps RLlib's figure under
        ``RLLIB_RETURN_MEAN`` and leaves NaN until a game has ended."""
        runners = result.get(ENV_RUNNER_RESULTS)
        if not isinstance(runners, dict):
            return
        if keys.RETURN_MEAN[-1] in runners:
            runners[keys.RLLIB_RETURN_MEAN[-1]] = runners[keys.RETURN_MEAN[-1]]
        runners[keys.RETURN_MEAN[-1]] = number(runners.get(keys.RETURN_MEAN_LAST_N[-1], math.nan))

    def on_evaluate_start(self, *, algorithm, metrics_logger=None, **kwargs) -> None:
        self._eval_started = time.perf_counter()

    def on_evaluate_end(self, *, algorithm, metrics_logger=None, evaluation_metrics=None, **kw):
        if self._eval_started is not None:
            self._eval_time_s += time.perf_counter() - self._eval_started
            self._eval_started = None

    def on_train_result(self, *, algorithm, metrics_logger=None, result: dict, **kwargs) -> None:
        if self._t_start is None:  # restored without on_algorithm_init
            self._t_start = time.perf_counter()
        self._smoothed_return(result)
        wall = time.perf_counter() - self._t_start
        train_time = max(wall - self._eval_time_s, 1e-9)

        env_steps = number(keys.get(result, keys.ENV_STEPS_SAMPLED, 0))
        trained = number(keys.get(result, keys.ENV_STEPS_TRAINED, math.nan))
        greedy = number(keys.get(result, keys.EVAL_RETURN_MEAN, math.nan))
        if not math.isnan(greedy):
            self._greedy_return = greedy
        loss = number(
            result.get(LEARNER_RESULTS, {}).get(DEFAULT_MODULE_ID, {}).get(Learner.TOTAL_LOSS_KEY)
        )

        # The search metric must exist from the first result on (Tune checks it), even before
        # the first episode ended.
        keys.set_default(result, keys.RETURN_MEAN, math.nan)

        suite = {
            keys.ENV_STEPS[-1]: env_steps,
            keys.TRAIN_TIME_S[-1]: train_time,
            keys.EVAL_TIME_S[-1]: self._eval_time_s,
            keys.ENV_STEPS_PER_S[-1]: env_steps / train_time,
            keys.LEARNER_STEPS_PER_S[-1]: trained / train_time,
            keys.GREEDY_RETURN[-1]: self._greedy_return,
            keys.LOSS[-1]: loss,
        }
        if self._optimum:
            suite[keys.OPTIMUM[-1]] = self._optimum
            suite[keys.PCT_OF_OPTIMUM[-1]] = 100.0 * self._greedy_return / self._optimum
        result[keys.SUITE] = suite
