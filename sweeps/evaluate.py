"""Greedy evaluation of each trial's final policy on fixed, seeded episodes.

How to run
----------
    python -m sweeps.evaluate runs/benchmark/pong-cpu                 # every trial below it
    python -m sweeps.evaluate runs/<sweep folder> --episodes 50 --seed 1000

For every trial folder under the given run folders (a sweep, a benchmark configuration, or a
benchmark holding several), this loads the RLModule of the trial's last checkpoint, plays
``--episodes`` episodes greedily (the module's greedy action: the arg-max of its action
distribution inputs, or of its Q-values) on the env and env config the trial trained on, the
episodes seeded ``--seed``, ``--seed+1``, ... (the same episodes for every trial), all at once with
inference batched over them, and writes ``final_evaluation.json`` into the trial folder: each
episode's return, their mean and a 95% confidence interval (Student's t). ``python -m analysis
report`` shows it beside the training return. The benchmark runs it on Pong after each run.

Results to expect
-----------------
A few seconds per trial on the cab env; on Pong about a minute for 5 games on 2 cores (a game is
1,000-5,000 agent steps).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sweeps.harness.cli import count
from sweeps.harness.common import EVALUATION_FILE, OneLineErrorParser, UsageError, atomic_write_text

# Student's t at 97.5% for 1..30 degrees of freedom (a 95% two-sided interval); 1.96 beyond.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (NaN for fewer than 2 values)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return (float(v.mean()) if len(v) else math.nan), math.nan
    t = _T975[len(v) - 2] if len(v) - 1 <= len(_T975) else 1.96
    return float(v.mean()), float(t * v.std(ddof=1) / math.sqrt(len(v)))


def last_checkpoint(trial_dir: Path) -> Path | None:
    checkpoints = sorted(trial_dir.glob("checkpoint_*"))
    return checkpoints[-1] if checkpoints else None


def load_module(checkpoint: Path) -> Any:
    from ray.rllib.core import (
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
        DEFAULT_MODULE_ID,
    )
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = checkpoint.resolve() / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE
    return RLModule.from_checkpoint(path / DEFAULT_MODULE_ID)


def greedy_actions(module: Any, obs: Any) -> np.ndarray:
    """The module's greedy action for each observation of a batch."""
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import convert_to_torch_tensor

    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: convert_to_torch_tensor(obs)})
    if Columns.ACTIONS in out:
        return np.asarray(out[Columns.ACTIONS])
    return out[Columns.ACTION_DIST_INPUTS].argmax(dim=-1).numpy()


def play(module: Any, env_id: str, env_config: dict, episodes: int, seed: int) -> list[float]:
    """Returns of ``episodes`` greedy episodes, the i-th reset with seed ``seed + i``, played
    side by side in one vector env (each sub-env's first episode counts)."""
    import gymnasium as gym

    import envs

    vector_env = gym.vector.SyncVectorEnv(
        [lambda: envs.make(env_id, env_config) for _ in range(episodes)],
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )
    obs, _ = vector_env.reset(seed=[seed + i for i in range(episodes)])
    returns = np.zeros(episodes)
    running = np.ones(episodes, dtype=bool)
    while running.any():
        obs, reward, terminated, truncated, _ = vector_env.step(greedy_actions(module, obs))
        returns += np.where(running, reward, 0.0)
        running &= ~(terminated | truncated)
    vector_env.close()
    return returns.tolist()


def evaluate_trial(trial_dir: Path, episodes: int, seed: int) -> dict[str, Any] | None:
    """Evaluate one trial's last checkpoint and write EVALUATION_FILE; None without one."""
    checkpoint = last_checkpoint(trial_dir)
    if checkpoint is None:
        return None
    params = json.loads((trial_dir / "params.json").read_text())
    env_id, env_config = params["env"], dict(params.get("env_config") or {})
    started = time.perf_counter()
    returns = play(load_module(checkpoint), env_id, env_config, episodes, seed)
    mean, half_width = ci95(returns)
    record = {
        "checkpoint": checkpoint.name,
        "env": env_id,
        "env_config": env_config,
        "policy": "greedy (arg-max of the module's action distribution inputs or Q-values)",
        "episodes": episodes,
        "seeds": [seed + i for i in range(episodes)],
        "returns": returns,
        "mean": mean,
        "ci95_half_width": half_width,
        "seconds": round(time.perf_counter() - started, 1),
    }
    atomic_write_text(trial_dir / EVALUATION_FILE, json.dumps(record, indent=1) + "\n")
    return record


def trial_dirs(folders: Sequence[Path]) -> list[Path]:
    """Trial folders (holding params.json) at or below ``folders``."""
    found = []
    for folder in folders:
        found += [p.parent for p in sorted(folder.rglob("params.json"))]
    return found


def build_parser() -> OneLineErrorParser:
    p = OneLineErrorParser(
        prog="python -m sweeps.evaluate",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("folders", nargs="+", type=Path, help="run folders (sweep or benchmark)")
    p.add_argument("--episodes", type=count(1), default=5, help="greedy episodes per trial")
    p.add_argument("--seed", type=count(0), default=1_000_000, help="seed of the first episode")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        parser.error(f"not a folder: {', '.join(missing)}")
    trials = trial_dirs(args.folders)
    if not trials:
        folders = ", ".join(map(str, args.folders))
        parser.error(f"no trial folders (with params.json) under {folders}")
    import envs

    envs.register_envs()
    for k, trial_dir in enumerate(trials, start=1):
        step = f"[evaluate] ({k}/{len(trials)}) {trial_dir}"
        print(f"{step}: {args.episodes} greedy episodes", flush=True)
        try:
            record = evaluate_trial(trial_dir, args.episodes, args.seed)
        except (UsageError, ValueError, OSError) as err:
            print(f"[evaluate] {trial_dir}: skipped ({err})", file=sys.stderr, flush=True)
            continue
        if record is None:
            print(f"[evaluate] {trial_dir}: no checkpoint, skipped", flush=True)
            continue
        mean, half = record["mean"], record["ci95_half_width"]
        print(
            f"{step}: mean {mean:.2f} ± {half:.2f} (95% CI) over {args.episodes} episodes, "
            f"{record['checkpoint']}, {record['seconds']} s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
