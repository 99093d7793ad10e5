"""RLlib callback that adds the suite's own metrics to every training result.

The suite compares algorithms by *training* wall-clock, so evaluation time has to be measured and
taken out; and cab runs are judged against the env's exact optimum. Everything written here lives
under ``result["suite"]`` (keys in ``sweeps.harness.keys``).

The clocks are part of the trial's state: each result adds the iteration's training and
evaluation seconds to lifetime sums in the algorithm's MetricsLogger, which RLlib saves with every
checkpoint and restores with it (after ``--resume`` or a Tune retry), and the figures are read
back from there. What a restore costs (the iterations since that checkpoint, trained again) is
counted, as the time it takes; start-up, the restore itself (``on_checkpoint_loaded``) and
writing checkpoints (Tune's ``save_checkpoint`` calls between iterations) are not.
"""

from __future__ import annotations

import math
import time
from collections import deque
from time import time as wall_time  # when a game ended: one clock for every process of a machine
from typing import Any

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS

from envs import exact_optimum
from sweeps.algorithms import entropy_target, kl_lr, training_return
from sweeps.algorithms.apex.exploration import game_epsilon
from sweeps.harness import confirm as confirm_target
from sweeps.harness import cpu_time, eval_share, keys
from sweeps.harness.values import number
from sweeps.seams import checkpointing, replay


def _size_torch_threads(algorithm: Any) -> None:
    """Size torch's intra-op threads to the CPUs the driver (and a local learner) can use.

    Torch takes every core by default; on a small machine a learner with two threads fights the
    env runner for its core, and trains fewer steps/s than with one. Remote learners and env
    runners are Ray actors, which Ray already gives one OpenMP thread per CPU.

    RLlib's DQN samples and updates in turn (its ``training_step`` waits for the env runners'
    samples, then trains in the driver): while its local learner updates, the runners' CPUs are
    idle, so the learner takes those too (at most this machine's cores: runners may live on
    other nodes)."""
    import torch

    config = algorithm.config
    threads = int(config.num_cpus_for_main_process)
    if _samples_then_trains(algorithm) and config.num_learners == 0:
        threads += int(config.num_env_runners * config.num_cpus_per_env_runner)
    # at most the cores this process may use (taskset); one where Ray declares more CPUs than
    # the machine's cores (--num-cpus): every process of the trial then runs one thread
    threads = 1 if cpu_time.oversubscribed() else min(threads, cpu_time.cores())
    torch.set_num_threads(max(1, threads))


def _samples_then_trains(algorithm: Any) -> bool:
    """Whether the algorithm runs RLlib's own DQN ``training_step`` (synchronous sampling; the
    suite's columnar DQN keeps it); the suite's Ape-X subclasses DQN but samples while it
    trains."""
    from ray.rllib.algorithms.dqn import DQN

    cls = type(algorithm)
    # A Tune trial's algorithm is a Ray actor: Ray's subclass of the algorithm's class, its
    # methods wrapped (tracing), the original class kept as ``__ray_actor_class__``.
    cls = getattr(cls, "__ray_actor_class__", cls)
    return getattr(cls, "training_step", None) is DQN.training_step


# Where the clocks live in the algorithm's MetricsLogger, as lifetime sums (checkpointed with it
# and kept over its reductions); popped from each result, whose figures are under ``keys.SUITE``.
CLOCK = "suite_clock"
_WINDOW = "suite_return_window"  # the driver's window of training games (a checkpoint keeps it)
_CLOCK_TRAIN: tuple[str, str] = (CLOCK, "train_time_s")
_CLOCK_EVAL: tuple[str, str] = (CLOCK, "eval_time_s")


def training_clock_s(metrics: Any) -> float:
    """The trial's training seconds so far (evaluation excluded), as of its latest result."""
    return _peek(metrics, _CLOCK_TRAIN)


def _peek(metrics: Any, key: tuple[str, str]) -> float:
    value = number(metrics.peek(key, default=0.0))
    return 0.0 if math.isnan(value) else value


def learners_need_return(settings: dict[str, Any] | None) -> bool:
    """Whether ``learner_config_dict`` keys a schedule to the training return (the entropy
    target's, the learning rate's scale): then the driver hands it to the learners."""
    return entropy_target.keyed_by_return(settings) or kl_lr.keyed_by_return(settings)


class SuiteCallbacks(RLlibCallback):
    """Training wall-clock without evaluation, greedy return, % of optimum, throughput, and the
    confirmed target (``confirm``: ``sweeps/harness/confirm.py``; the runner passes it with
    ``functools.partial``, None: the first crossing counts)."""

    def __init__(self, confirm: confirm_target.Spec | None = None) -> None:
        super().__init__()
        self._confirm = confirm_target.Confirmation(confirm) if confirm is not None else None
        self._mark: float | None = None  # when the clocks were last advanced
        self._eval_started: float | None = None
        self._eval_time_s = 0.0  # evaluation since _mark
        self._saving_s = 0.0  # checkpoint writing since _mark
        self._greedy_return = math.nan
        self._training_return = math.nan  # on the driver: the latest RETURN_MEAN
        self._optimum: float | None = None
        # on the driver: the last training games to end over all runners, (end time, return)
        self._games: deque[tuple[float, float]] = deque(maxlen=20)
        self._cpu = cpu_time.Accounting()  # on the driver: the trial's processes' CPU time

    def on_algorithm_init(self, *, algorithm, metrics_logger=None, **kwargs) -> None:
        _size_torch_threads(algorithm)
        self._games = deque(maxlen=algorithm.config.metrics_num_episodes_for_smoothing)
        self._optimum = exact_optimum(algorithm.config.env, dict(algorithm.config.env_config))
        self._time_checkpoint_saving(algorithm)
        self._cpu.start(algorithm)
        # DQN's replay draws its batches from an unseeded RNG in RLlib: the run's seed sets it
        replay.seed_sampling(getattr(algorithm, "local_replay_buffer", None), algorithm.config.seed)
        # Start-up (building runners, learners, the DP above) is not training time.
        self._mark = time.perf_counter()

    def _time_checkpoint_saving(self, algorithm: Any) -> None:
        """Count the seconds Tune spends in ``algorithm.save_checkpoint`` (between iterations;
        one checkpoint every ``--checkpoint-freq`` iterations) so the clock leaves them out:
        writing checkpoints is not training (``sweeps.seams.checkpointing.time_saving``)."""

        def add(seconds: float) -> None:
            self._saving_s += seconds

        checkpointing.time_saving(algorithm, add)

    def on_checkpoint_loaded(self, *, algorithm, **kwargs) -> None:
        """The clocks came back with the MetricsLogger (a checkpoint written before they were
        saved has none: they then start again from 0); restoring is not training."""
        self._mark = time.perf_counter()
        self._eval_time_s = 0.0
        self._saving_s = 0.0
        self._cpu.restart_clock()
        saved = _pairs(algorithm.metrics.peek(_WINDOW, default=()))  # (none: from before it)
        if saved:
            self._games.clear()
            self._games.extend(saved)
            self._training_return = self._window_mean()

    def on_episode_end(
        self, *, episode, env_runner=None, metrics_logger=None, prev_episode_chunks=None, **kw
    ) -> None:
        """On an env runner: each training game that counts in the training return (with
        ``training_return_max_epsilon`` set, Ape-X's, only those played at or below that ε) is
        logged as (when it ended, its return), a list since the runner's last metrics, which
        RLlib merges over the runners for the driver (see ``_smoothed_return``). ``episode`` is
        only the last chunk since the runner's previous sample() call: the game's return adds
        the earlier chunks'."""
        if metrics_logger is None or env_runner is None or env_runner.config.in_evaluation:
            return
        if not self._counts_in_training_return(env_runner, kw.get("env_index")):
            return
        chunks = [*(prev_episode_chunks or []), episode]
        game = (wall_time(), float(sum(chunk.get_return() for chunk in chunks)))
        metrics_logger.log_value(keys.TRAINING_GAMES[-1], game, reduce="item_series")

    @staticmethod
    def _counts_in_training_return(env_runner: Any, env_index: int | None) -> bool:
        """Whether the game that ended counts in the training return: every game, unless the
        config sets ``training_return_max_epsilon`` (Ape-X) and the game played at a higher
        fixed ε (or at none known)."""
        cap = getattr(env_runner.config, "training_return_max_epsilon", None)
        if cap is None:
            return True
        epsilon = game_epsilon(env_runner, int(env_index or 0))
        return epsilon is not None and epsilon <= cap

    def _smoothed_return(self, result: dict, metrics: Any) -> None:
        """RETURN_MEAN := the mean return of the last ``metrics_num_episodes_for_smoothing``
        training games to end, over all env runners.

        RLlib 2.60's own figure is not that: its windows are merged per sample() result on the
        driver, so that an iteration in which two games ended can report a mean of three values;
        and each runner keeps a window of its own last N games (as did this suite's earlier
        rule, the mean over runners of each runner's last N), so that at R runners the figure
        spans R x N games, a window R times longer in env steps, which lags a rising policy the
        more, the more runners there are. Here the runners send each game that ended
        (``on_episode_end``), the driver keeps the last N in the order they ended, keeps RLlib's
        figure under ``RLLIB_RETURN_MEAN``, and leaves NaN until a game has ended. An iteration
        in which no game ended keeps the figure of the one before (the last N games are the
        same; on Pong, whose 32 games tend to end together, many iterations see none). The
        window is saved with the trial's checkpoints (``_WINDOW``): a restored trial goes on
        judging the same games, not the first one to end after the restore alone."""
        runners = result.get(ENV_RUNNER_RESULTS)
        if not isinstance(runners, dict):
            return
        if keys.RETURN_MEAN[-1] in runners:
            runners[keys.RLLIB_RETURN_MEAN[-1]] = runners[keys.RETURN_MEAN[-1]]
        games = _pairs(runners.pop(keys.TRAINING_GAMES[-1], None))  # (no column of a result)
        if games:
            self._games.extend(sorted(games))
            self._training_return = self._window_mean()
        runners[keys.RETURN_MEAN[-1]] = self._training_return
        if metrics is not None:  # (in the next result, taken out there: the clocks' way)
            metrics.log_value(_WINDOW, list(self._games), reduce="item")

    def _window_mean(self) -> float:
        return float(np.mean([ret for _, ret in self._games])) if self._games else math.nan

    def _advance_clocks(self, metrics: Any) -> tuple[float, float]:
        """Add the training and evaluation seconds since the last call to the lifetime sums and
        return the sums (training >= 1e-9 s); checkpoint writing since then counts in neither."""
        now = time.perf_counter()
        if self._mark is None:  # no on_algorithm_init (a test, or a restore without it)
            self._mark = now
        eval_s, self._eval_time_s = self._eval_time_s, 0.0
        saving_s, self._saving_s = self._saving_s, 0.0
        train_s = max(now - self._mark - eval_s - saving_s, 0.0)
        self._mark = now
        metrics.log_value(_CLOCK_TRAIN, train_s, reduce="lifetime_sum")
        metrics.log_value(_CLOCK_EVAL, eval_s, reduce="lifetime_sum")
        return max(_peek(metrics, _CLOCK_TRAIN), 1e-9), _peek(metrics, _CLOCK_EVAL)

    def on_evaluate_start(self, *, algorithm, metrics_logger=None, **kwargs) -> None:
        self._eval_started = time.perf_counter()

    def on_evaluate_end(self, *, algorithm, metrics_logger=None, evaluation_metrics=None, **kw):
        if self._eval_started is not None:
            self._eval_time_s += time.perf_counter() - self._eval_started
            self._eval_started = None

    def on_train_result(self, *, algorithm, metrics_logger=None, result: dict, **kwargs) -> None:
        result.pop(_WINDOW, None)  # (the last result's window: the clocks' way, below)
        self._smoothed_return(result, metrics_logger)
        settings = getattr(getattr(algorithm, "config", None), "learner_config_dict", None)
        training_return.share_training_return(
            algorithm, self._training_return, learners_need_return(settings)
        )
        train_time, eval_time = self._advance_clocks(metrics_logger)
        result.pop(CLOCK, None)  # RLlib's reduction of the sums, a result of its own otherwise
        result.pop(eval_share.Ledger.KEY, None)  # (the same: suite/ carries its figures)
        cpu = self._cpu.advance(metrics_logger)
        result.pop(cpu_time.METRICS_KEY, None)  # (the same)

        env_steps = number(keys.get(result, keys.ENV_STEPS_SAMPLED, 0))
        trained = keys.trained_steps(result, default=math.nan)
        played = eval_share.take_played(algorithm, result)  # (the periodic evaluation's)
        greedy = number(keys.get(result, keys.EVAL_RETURN_MEAN, math.nan))
        if not math.isnan(greedy):
            self._greedy_return = greedy
        loss = number(
            result.get(LEARNER_RESULTS, {}).get(DEFAULT_MODULE_ID, {}).get(Learner.TOTAL_LOSS_KEY)
        )

        # The search metric must exist from the first result on (Tune checks it), even before
        # the first episode ended.
        keys.set_default(result, keys.RETURN_MEAN, math.nan)

        suite = suite_figures(
            env_steps, train_time, trained, self._greedy_return, loss, cpu, self._optimum, eval_time
        )
        suite.update(eval_share.Ledger(metrics_logger).figures())
        suite[keys.TRIALS_IN_ACTOR[-1]] = getattr(algorithm, "trials_in_actor", 1)
        suite[keys.RETURN_WINDOW_GAMES[-1]] = len(self._games)
        if played:
            suite[keys.PERIODIC_ONCE[-1]] = 1.0
        result.pop(confirm_target.METRICS_KEY, None)  # (the checks' state: as the clocks')
        if self._confirm is not None:
            suite.update(self._check_target(algorithm, metrics_logger, result, train_time))
        result[keys.SUITE] = suite

    def _check_target(
        self, algorithm: Any, metrics: Any, result: dict, train_time: float
    ) -> dict[str, float]:
        """The confirmation's figures for this result; a check that ran is evaluation: its
        seconds leave the training clock at the next result, and the CPU accounting's span
        starts again after it."""
        judged = {
            keys.flat(keys.RETURN_MEAN): self._training_return,
            keys.flat(keys.GREEDY_RETURN): self._greedy_return,
        }.get(self._confirm.spec.judged, math.nan)
        figures, seconds = self._confirm.after_result(algorithm, metrics, judged, train_time)
        if seconds > 0:
            self._eval_time_s += seconds
            self._cpu.restart_clock()
        return figures


def _pairs(games: Any) -> list[tuple[float, float]]:
    """The (end time, return) pairs of a result's or a checkpoint's games. RLlib's
    ``MetricsLogger.compile`` hands a list of one item over as the item: one game alone comes as
    the pair itself (and a checkpoint may turn pairs into lists)."""
    if not isinstance(games, list | tuple) or not games:
        return []
    if not isinstance(games[0], list | tuple):
        games = [games]
    return [(float(end), float(ret)) for end, ret in games]


def suite_figures(
    env_steps: float,
    train_time: float,
    trained: float,
    greedy: float,
    loss: float,
    cpu: cpu_time.Summary | None,
    optimum: float | None,
    eval_time: float = math.nan,
) -> dict[str, Any]:
    """What a training result carries under ``suite`` (an RLlib algorithm's, from the callbacks
    above, and a single-process baseline's, ``sweeps/baselines/trainable.py``): the counters and
    rates over the training clock, the greedy return, the CPU figures and what they predict, and
    % of the optimum where the env has one."""
    suite: dict[str, Any] = {
        keys.ENV_STEPS[-1]: env_steps,
        keys.TRAIN_TIME_S[-1]: train_time,
        keys.EVAL_TIME_S[-1]: eval_time,  # (a baseline sets it after its checks)
        keys.ENV_STEPS_PER_S[-1]: env_steps / train_time,
        keys.LEARNER_STEPS_PER_S[-1]: trained / train_time,
        keys.GREEDY_RETURN[-1]: greedy,
        keys.LOSS[-1]: loss,
    }
    if cpu is not None and cpu.wall_s > 0:
        suite[keys.CPU[-1]] = cpu.figures()
        suite[keys.PREDICTED_TRAIN_TIME_S[-1]] = train_time * cpu.predicted_factor
    if optimum:
        suite[keys.OPTIMUM[-1]] = optimum
    if optimum and optimum > 0:  # (a share of a negative optimum reads backwards: none)
        suite[keys.PCT_OF_OPTIMUM[-1]] = 100.0 * greedy / optimum
    return suite


def with_confirmation(config: Any, spec: confirm_target.Spec | None) -> Any:
    """The config's ``SuiteCallbacks`` given the trial's confirmed target (None: the first
    crossing counts; the config as it was)."""
    import functools

    if spec is None:
        return config
    current = config.callbacks_class
    if not (isinstance(current, type) and issubclass(current, SuiteCallbacks)):
        raise TypeError(f"the config's callbacks are {current!r}, not the suite's")
    return config.callbacks(callbacks_class=functools.partial(current, confirm=spec))
