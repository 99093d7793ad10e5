"""The Pong workload: standard ALE Pong preprocessed in C++ (``envs/pong.py``), judged by the
training return against the returns 0, 10 and 18.

Trials are judged by the training return (the mean of the last 20 games: a greedy game is
thousands of single-env steps, so periodic greedy evaluation is off); in a benchmark each trial's
final policy then plays seeded greedy games. The report states the rules every Pong figure is
played by, and on a machine without a GPU where a target was missed, what to run on one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from sweeps.workloads.base import EnvFlags, Workload

if TYPE_CHECKING:
    from sweeps.harness.settings import Settings

# Games one env runner steps in one ale-py vector env (the V-trace recipe's; a sweep may set its
# own --num-envs-per-env-runner).
GAMES_PER_RUNNER = 32

# Sweep defaults every Pong sweep starts from (a sweep file adds its own budget), sized for a
# 2-core CPU machine: one env runner (more with --num-env-runners on a bigger box), trials judged by
# the training return (the mean of the last 20 games), so periodic greedy evaluation is off
# (--eval-interval N turns it on: a greedy game is thousands of single-env steps); a checkpoint
# every 30 iterations (30 s in benchmark mode) rather than every 5; --smoke runs one trial of a few
# hundred frames.
PONG_DEFAULTS: dict[str, Any] = {
    "num_env_runners": 1,
    "reduction_factor": 3,
    "eval_interval": 0,
    "eval_episodes": 1,
    "checkpoint_freq": 30,
}
PONG_SMOKE: dict[str, Any] = {"num_samples": 1, "stop_timesteps": 400}

# The rules every Pong figure is played by (envs/pong.py), stated where the figures are.
PONG_RULES = (
    "Pong, as played here: standard ALE Pong (default mode and difficulty, the minimal 6 "
    "actions), full games to 21, frame-skip 4 with the last two frames max-pooled, up to 30 "
    "no-ops at reset, **sticky actions off** (`repeat_action_probability` 0, as in RLlib's tuned "
    "Atari configs), 42x42 grayscale frames stacked 4. Returns are the game's own score (rewards "
    "are clipped for training only, and Pong's are ±1 anyway); the training return is the mean "
    "of the last 20 training games to end over all env runners (runs at more than one runner "
    "made before took the mean over the runners of each runner's own last 20: the scaling "
    "section names them)."
)

# What to run where Pong's targets are in reach (the seed articles' GPU-learner setting).
PONG_GPU_COMMAND = (
    "python -m sweeps.benchmark --env pong --algos impala,appo,apex --benchmark-seeds 3 "
    "--stop-train-time-s 3600 --num-env-runners 8"
)


class Pong(Workload):
    name = "pong"
    greedy_judged = False
    has_targets = True
    benchmark_final_episodes = 10  # seeded greedy games of each final policy (judged by training)
    confirm_episodes = 10  # full games confirm a crossing of the target (a game is ~2k steps)
    eval_share = 0.0  # periodic evaluation is off (judged by training); on where asked, uncapped
    raw_env_note = (
        " (on Pong: the vector env of games one runner steps in one call, ale-py's C++ "
        "preprocessing included)"
    )

    def configure(self, config: Any, args: Settings, **model: Any) -> Any:
        """Each env runner steps all its games in one ale-py vector env (the vector entry
        point), and the model is the suite's Atari net for 42x42 frames
        (``rllib_config.PONG_MODEL``; a larger ``dim`` in the env config takes the 64x64 net;
        ``model`` keys override it).
        Rewards are clipped for training only."""
        from envs import PONG
        from envs.pong import PONG_DEFAULTS as ENV_DEFAULTS
        from sweeps.workloads.rllib_config import atari_module, common, pong_model

        config = common(config, args).environment(PONG, clip_rewards=True)
        config.env_runners(gym_env_vectorize_mode="vector_entry_point")
        dim = {**ENV_DEFAULTS, **(config.env_config or {})}["dim"]
        return atari_module(config, {**pong_model(dim), **model})

    def env_spec(self, args: Settings) -> tuple[str, dict[str, Any]]:
        """One game, its frames as bytes (as RLlib's runners get them: ``atari_module``)."""
        from envs import PONG
        from envs.pong import BYTE_FRAMES

        return PONG, {"obs_dtype": BYTE_FRAMES}

    def atari(self, args: Settings) -> bool:
        return True

    def targets(self, args: EnvFlags) -> list[float]:
        from envs.pong import TARGETS

        return list(TARGETS)

    def add_benchmark_arguments(self, args: EnvFlags, algos: list[str]) -> None:
        named = "{flag}: for a Gymnasium env; --env {env} is a named workload"
        self.refuse(args, ("env_config", "target"), named)
        if args.variant is not None:
            raise ValueError("--variant: pong has no variants (only the cab env has)")

    def make_raw_env(self, args: Settings, num_envs: int | None = None) -> Any:
        from envs.pong import BYTE_FRAMES, make_pong

        return make_pong(num_envs=num_envs or GAMES_PER_RUNNER, obs_dtype=BYTE_FRAMES)

    def rules_note(self) -> list[str]:
        return [PONG_RULES, ""]

    def missed_note(self, runs: pd.DataFrame, reached_everywhere: bool) -> list[str]:
        """Without a GPU and short of the target: what the figures say, and what to run on a
        machine with one."""
        if runs["gpus"].fillna(0).max() > 0 or reached_everywhere:
            return []
        machine = _machine_words(runs)
        return [
            f"These runs had no GPU ({machine}): a target not reached here says how far CPU-only "
            "training gets within the budget, not how fast the algorithms reach it. On a machine "
            "with a GPU and at least 10 CPUs, measure time to 18 with:",
            "",
            f"```bash\n{PONG_GPU_COMMAND}\n```",
            "",
        ]


def _machine_words(runs: pd.DataFrame) -> str:
    """ "2 cores" (and the most CPUs Ray was told of, where a run had more runners than cores
    on purpose), or "2 CPUs" for runs recorded before the cores were."""
    cpus = runs["cpus"].dropna()
    cores = runs["cores"].dropna() if "cores" in runs else cpus.iloc[:0]
    if cores.empty:
        return f"{int(cpus.max()):,} CPUs" if not cpus.empty else "CPUs only"
    words = f"{int(cores.max()):,} cores"
    if not cpus.empty and cpus.max() > cores.max():
        words += f"; Ray was told of up to {int(cpus.max()):,} CPUs"
    return words


PONG = Pong()
