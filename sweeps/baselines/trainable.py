"""A Stable-Baselines3 algorithm as a Tune trial: what a user who picks SB3 runs, judged as the
suite judges its four.

One process, one thread (``torch.set_num_threads(1)``), the envs stepped in it one after another
(SB3's ``DummyVecEnv``): as a user runs ``python -m rl_zoo3.train``. ``model.learn`` runs once,
over the recipe's whole ``n_timesteps`` (its schedules, ε and learning rates, are fractions of
it), in a thread of its own that the trial pauses at each iteration's end: a callback after each
env step holds it there while the trial reports. Nothing of SB3's loop is copied or patched.

What each result carries is what the suite's callbacks put in an RLlib algorithm's
(``sweeps/harness/callbacks.py``), under the same keys (``sweeps/harness/keys.py``), so the
runner's stoppers, the progress line, the result files and the analysis read a baseline's trial
as any other:

* the training clock (``suite/train_time_s``): the seconds ``learn`` ran, evaluation and
  checkpoint writing excluded; the env steps sampled and trained;
* the training return: the mean of the last 20 training episodes' returns (SB3's ``Monitor``,
  before any wrapper that clips rewards), as the suite's ``metrics_num_episodes_for_smoothing``;
* the greedy return: every ``eval_interval`` iterations where ``eval_share`` of the training
  clock allows (``sweeps/harness/eval_share.py``, the four's rule), ``eval_episodes`` episodes
  played greedily side by side (``held_out_eval.play``), seeded by ``held_out_eval.periodic_seed``;
* the confirmed target (``sweeps/harness/confirm.py``): the same checks, on the same seeded
  episodes, as the four's, with the same ``Confirmation`` (its state in an RLlib
  ``MetricsLogger``, as there);
* the CPU accounting (``sweeps/harness/cpu_time.py``): the trial's one process.

A checkpoint holds SB3's own ``save`` (``policy.MODEL_FILE``), its replay buffer where it is
small, and the clocks; a restored trial goes on with ``learn(..., reset_num_timesteps=False)``.
"""

from __future__ import annotations

import json
import math
import pickle
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
from ray import tune

from sweeps.harness import confirm as confirm_target
from sweeps.harness import cpu_time, eval_share, keys
from sweeps.harness.callbacks import suite_figures

RETURN_WINDOW = 20  # training episodes in the training return (the suite's smoothing window)
REPLAY_SAVE_LIMIT_BYTES = 256 * 2**20  # a larger replay buffer is not checkpointed
STATE_FILE = "state.pkl"
REPLAY_FILE = "replay_buffer.pkl"
_CLOCK = ("suite_clock",)


class _Learning:
    """``model.learn`` in a thread of its own, run for a wall-clock slice at a time."""

    def __init__(self, model: Any, total_timesteps: int, reset: bool) -> None:
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.logger import Logger

        learning = self
        # SB3's default logger at verbose 0 writes nothing but makes an empty folder in the
        # system's temp dir on every learn(); one with no outputs makes none.
        model.set_logger(Logger(folder=None, output_formats=[]))

        class Pause(BaseCallback):
            def _on_step(self) -> bool:
                return learning._after_env_step()

        self.model = model
        self._callback = Pause()
        self._total = total_timesteps
        self._reset = reset
        self._until = 0.0
        self._go = threading.Event()
        self._paused = threading.Event()
        self._stop = False
        self.finished = False
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _after_env_step(self) -> bool:
        if time.perf_counter() >= self._until:
            self._paused.set()
            self._go.wait()
            self._go.clear()
        return not self._stop

    def _run(self) -> None:
        import torch

        torch.set_num_threads(1)
        try:
            self.model.learn(
                total_timesteps=self._total,
                callback=self._callback,
                reset_num_timesteps=self._reset,
                progress_bar=False,
            )
        except BaseException as e:  # raised in the trial's thread at the next slice
            self.error = e
        finally:
            self.finished = True
            self._paused.set()

    def run_for(self, seconds: float) -> None:
        """Let ``learn`` run until ``seconds`` have passed (then it holds at its next env step),
        or until it ends; re-raises what it raised."""
        if self.finished:
            return
        self._until = time.perf_counter() + seconds
        self._paused.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sb3-learn", daemon=True)
            self._thread.start()
        else:
            self._go.set()
        self._paused.wait()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        self._stop = True
        self._go.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


class BaselineTrainable(tune.Trainable):
    """One seed of a baseline (the param space: ``sweeps/baselines/config.py``)."""

    @classmethod
    def default_resource_request(cls, config: Any) -> Any:
        from ray.tune.execution.placement_groups import PlacementGroupFactory

        return PlacementGroupFactory([{"CPU": 1.0}])

    # --- building -----------------------------------------------------------------------------

    def setup(self, config: dict[str, Any]) -> None:
        import torch
        from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

        from envs import exact_optimum
        from sweeps.baselines.hyperparams import model_kwargs
        from sweeps.baselines.policy import model_class

        torch.set_num_threads(1)
        self.settings = config
        self.built = model_kwargs(config["hyperparams"])
        self.env_id, self.env_config = config["env"], dict(config.get("env_config") or {})
        self.seed = int(config.get("seed") or 0)
        self.vec_env = self._make_vec_env()
        self.model_cls = model_class(config["model_class"])
        self.model = self.model_cls(
            env=self.vec_env, seed=self.seed, device="cpu", verbose=0, **self.built.kwargs
        )
        self.learning = _Learning(self.model, self.built.n_timesteps, reset=True)
        self.metrics = MetricsLogger()
        self.optimum = exact_optimum(self.env_id, self.env_config)
        spec = config.get("confirm")
        self.confirmation = (
            confirm_target.Confirmation(confirm_target.Spec(**spec), play=self._play_check)
            if spec
            else None
        )
        self.returns: deque[float] = deque(maxlen=RETURN_WINDOW)
        self.seen_episodes = 0
        self.episodes_before = 0.0  # training episodes of the envs before a restore
        self.greedy_return = math.nan
        self.evaluations = 0
        self.cpu = cpu_time.Accounting(discover_processes=_this_process)
        self.cpu.start(self)

    def _make_vec_env(self) -> Any:
        """``n_envs`` of the env, each in SB3's ``Monitor`` (the training return: the game's own
        rewards), then the recipe's wrapper, stepped one after another in this process."""
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

        import envs
        from sweeps.baselines.policy import ObservedMask

        wrapper = self.built.env_wrapper
        mask = self.settings.get("action_mask")

        def one() -> Any:
            env = Monitor(envs.make(self.env_id, self.env_config))
            env = wrapper(env) if wrapper is not None else env
            return ObservedMask.wrap(env, *mask) if mask else env

        vec_env = DummyVecEnv([one for _ in range(self.built.n_envs)])
        if self.built.frame_stack:
            vec_env = VecFrameStack(vec_env, self.built.frame_stack)
        return vec_env

    # --- one iteration ------------------------------------------------------------------------

    def step(self) -> dict[str, Any]:
        started = time.perf_counter()
        self.learning.run_for(float(self.settings["iteration_s"]))
        train_s = time.perf_counter() - started
        self.metrics.log_value((*_CLOCK, "train_s"), train_s, reduce="lifetime_sum")
        self._collect_returns()
        train_time = max(self._clock("train_s"), 1e-9)
        eval_s = 0.0
        evaluation: dict[str, Any] = {}
        every = int(self.settings.get("eval_interval") or 0)
        ledger = eval_share.Ledger(self.metrics)
        share = float(self.settings.get("eval_share") or 0.0)
        # RLlib's rule (evaluation_interval): after every ``every``-th iteration, where the share
        # of the training clock allows (the four's rule: sweeps/harness/eval_share.py); and the last
        if every and (
            ((self.iteration + 1) % every == 0 and ledger.due(train_time, share))
            or self.learning.finished
        ):
            evaluation, eval_s = self._evaluate()
            ledger.spent(eval_s)
        cpu = self.cpu.advance(self.metrics)
        result = self._result(train_time, evaluation, cpu)
        if self.confirmation is not None:
            judged = {
                keys.flat(keys.RETURN_MEAN): self._training_return(),
                keys.flat(keys.GREEDY_RETURN): self.greedy_return,
            }.get(self.confirmation.spec.judged, math.nan)
            figures, seconds = self.confirmation.after_result(
                self, self.metrics, judged, train_time
            )
            result[keys.SUITE].update(figures)
            eval_s += seconds
        if eval_s:
            self.metrics.log_value((*_CLOCK, "eval_s"), eval_s, reduce="lifetime_sum")
            self.cpu.restart_clock()  # evaluation is not the training's CPU time
        result[keys.SUITE][keys.EVAL_TIME_S[-1]] = self._clock("eval_s")
        result[keys.SUITE].update(ledger.figures())
        result["done"] = self.learning.finished  # the recipe's n_timesteps ran out
        return result

    def _clock(self, name: str) -> float:
        return float(self.metrics.peek((*_CLOCK, name), default=0.0))

    def _collect_returns(self) -> None:
        """The training episodes that ended since the last result (SB3's Monitor's records)."""
        buffer = list(self.model.ep_info_buffer or [])
        total = int(self._episodes_lifetime())
        new = min(total - self.seen_episodes, len(buffer))
        for info in buffer[len(buffer) - new :] if new > 0 else []:
            self.returns.append(float(info["r"]))
        self.seen_episodes = total

    def _episodes_lifetime(self) -> float:
        """Training episodes ended, over the envs (their Monitors' records, and those of the
        envs before a restore)."""
        monitors = sum(len(r) for r in self.vec_env.env_method("get_episode_rewards"))
        return float(self.episodes_before + monitors)

    def _training_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else math.nan

    def _evaluate(self) -> tuple[dict[str, Any], float]:
        from sweeps.harness.held_out_eval import periodic_evaluation

        started = time.perf_counter()
        episodes = int(self.settings["eval_episodes"])
        figures = periodic_evaluation(
            self.policy(), self.env_id, self.env_config, episodes, self.seed, self.evaluations
        )
        self.evaluations += 1
        self.greedy_return = figures[keys.EPISODE_RETURN_MEAN]
        return {keys.ENV_RUNNER_RESULTS: figures}, time.perf_counter() - started

    def policy(self) -> Any:
        from sweeps.baselines.policy import BaselinePolicy

        return BaselinePolicy(self.model, self.settings.get("action_mask"))

    def _play_check(self, _: Any) -> confirm_target.Check:
        return confirm_target.play_check(
            self.policy(), self.env_id, self.env_config, self.confirmation.spec
        )

    def _trained_steps(self) -> float:
        """Samples trained on, lifetime, one per sample per pass: DQN's updates x batch, PPO's
        epochs x rollout. SB3 keeps its update count in ``_n_updates`` (logged as
        ``train/n_updates``; no public attribute)."""
        updates = float(getattr(self.model, "_n_updates", 0))
        if hasattr(self.model, "rollout_buffer"):  # on-policy: an update is an epoch
            return updates * self.model.n_steps * self.model.n_envs
        return updates * float(self.model.batch_size)

    def _result(self, train_time: float, evaluation: dict[str, Any], cpu: Any) -> dict[str, Any]:
        env_steps = float(self.model.num_timesteps)
        trained = self._trained_steps()
        recent = list(self.returns)
        training_return = self._training_return()
        suite = suite_figures(
            env_steps, train_time, trained, self.greedy_return, math.nan, cpu, self.optimum
        )
        result: dict[str, Any] = {
            keys.ENV_RUNNER_RESULTS: {
                keys.RETURN_MEAN[-1]: training_return,
                keys.RETURN_MIN[-1]: float(np.min(recent)) if recent else math.nan,
                keys.RETURN_MAX[-1]: float(np.max(recent)) if recent else math.nan,
                keys.ENV_STEPS_SAMPLED[-1]: env_steps,
                keys.EPISODES_LIFETIME[-1]: self._episodes_lifetime(),
            },
            keys.LEARNER_RESULTS: {
                keys.MODULE_STEPS_TRAINED[1]: {keys.MODULE_STEPS_TRAINED[-1]: trained}
            },
            keys.SUITE: suite,
            "baseline": {
                "updates": float(getattr(self.model, "_n_updates", 0)),
                "updates_per_s": float(getattr(self.model, "_n_updates", 0)) / train_time,
                "exploration_rate": float(getattr(self.model, "exploration_rate", math.nan)),
            },
        }
        if evaluation:
            result[keys.EVAL_RETURN_MEAN[0]] = evaluation
            suite[keys.PERIODIC_ONCE[-1]] = 1.0
        return result

    # --- checkpoints --------------------------------------------------------------------------

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        from sweeps.baselines.policy import BASELINE_FILE, MODEL_FILE

        folder = Path(checkpoint_dir)
        self.model.save(folder / MODEL_FILE)
        info = {
            "library": "stable-baselines3",
            "class": self.settings["model_class"],
            "algo": self.settings["algo"],
            "num_timesteps": int(self.model.num_timesteps),
            "action_mask": self.settings.get("action_mask"),
        }
        (folder / BASELINE_FILE).write_text(json.dumps(info, indent=1) + "\n")
        buffer = getattr(self.model, "replay_buffer", None)
        if buffer is not None and _nbytes(buffer) <= REPLAY_SAVE_LIMIT_BYTES:
            self.model.save_replay_buffer(folder / REPLAY_FILE)
        state = {
            "metrics": self.metrics.get_state(),
            "returns": list(self.returns),
            "seen_episodes": self.seen_episodes,
            "episodes": self._episodes_lifetime(),
            "greedy_return": self.greedy_return,
            "evaluations": self.evaluations,
        }
        (folder / STATE_FILE).write_bytes(pickle.dumps(state))

    def load_checkpoint(self, checkpoint_dir: str) -> None:
        from sweeps.baselines.policy import MODEL_FILE, load_model

        folder = Path(checkpoint_dir)
        self.learning.stop()
        self.model = load_model(self.model_cls, folder / MODEL_FILE, env=self.vec_env, device="cpu")
        if (folder / REPLAY_FILE).exists():
            self.model.load_replay_buffer(folder / REPLAY_FILE)
        remaining = max(self.built.n_timesteps - int(self.model.num_timesteps), 0)
        self.learning = _Learning(self.model, remaining, reset=False)
        state = pickle.loads((folder / STATE_FILE).read_bytes())
        self.metrics.set_state(state["metrics"])
        self.returns = deque(state["returns"], maxlen=RETURN_WINDOW)
        self.greedy_return = state["greedy_return"]
        self.evaluations = state["evaluations"]
        # The envs' Monitors go on from where they are; the count from the checkpoint's.
        self.episodes_before = 0.0
        monitors = self._episodes_lifetime()
        self.episodes_before = float(state.get("episodes", monitors)) - monitors
        self.seen_episodes = int(self._episodes_lifetime())
        self.cpu.restart_clock()

    def cleanup(self) -> None:
        self.learning.stop()
        self.vec_env.close()


def _this_process(_: Any) -> tuple[dict[str, int], int]:
    """The trial's processes: this one (learning, sampling and evaluation, all in it)."""
    import os

    return {"driver": os.getpid()}, 0


def _nbytes(buffer: Any) -> int:
    return sum(
        getattr(buffer, name).nbytes
        for name in ("observations", "next_observations", "actions", "rewards", "dones")
        if isinstance(getattr(buffer, name, None), np.ndarray)
    )
