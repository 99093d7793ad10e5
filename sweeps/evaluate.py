"""Greedy evaluation of each trial's final policy on fixed, seeded (held-out) episodes.

How to run
----------
    python -m sweeps.evaluate runs/benchmark/pong-cpu                 # every trial below it
    python -m sweeps.evaluate runs/<sweep folder> --episodes 100 --seed 1000000

For every trial folder under the given run folders (a sweep, a benchmark configuration, or a
benchmark holding several), this loads the RLModule of the trial's last checkpoint, plays
``--episodes`` episodes greedily (the module's greedy action: the arg-max of its action
distribution inputs, or of its Q-values) on the env and env config the trial trained on, the
episodes seeded ``--seed``, ``--seed+1``, ... (the same episodes for every trial), all at once with
inference batched over them, and writes ``final_evaluation.json`` into the trial folder: each
episode's return, their mean and a 95% confidence interval (Student's t). ``python -m analysis
report`` shows it beside the training return.

On the cab env the same episodes are also played by the reference policies (random, the
direct-ride heuristic, the exact DP optimum: ``envs.policies.reference_episode_returns``), and
the record holds the **held-out % of optimum**: the policy's mean return over the episodes as a
percentage of the optimal policy's mean return over the *same* episodes, with a paired 95%
interval (the per-episode gap to the optimum, Student's t); the references get the same
figure. Its seeds (``HELD_OUT_SEED`` on) are never used in training or in the periodic
evaluation (trials are seeded 0, 1, ...; RLlib seeds their envs from those). A sweep runs this
at its end on its best trials and picks the best by it (``sweeps/harness/runner.py``); the
benchmark runs it after each run.

Results to expect
-----------------
A second or two per trial for 100 cab episodes; on Pong about a minute for 5 games on 2 cores
(a game is 1,000-5,000 agent steps).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sweeps.harness.cli import count
from sweeps.harness.common import (
    EVALUATION_FILE,
    HELD_OUT_SEED,
    OneLineErrorParser,
    UsageError,
    atomic_write_text,
)

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


@functools.lru_cache(maxsize=8)
def _cab_references(env_config_json: str, episodes: int, seed: int) -> dict[str, list[float]]:
    from envs.policies import reference_episode_returns

    return reference_episode_returns(json.loads(env_config_json), episodes, seed)


def cab_config(env_id: str, env_config: dict) -> dict | None:
    """The cab env config (``tm_seed``, ``requests``) of ``env_id``, or None for other envs."""
    import envs

    if env_id not in (envs.CABS, envs.CABS_REQUESTS):
        return None
    return {"tm_seed": int(env_config.get("tm_seed", 0)), "requests": env_id == envs.CABS_REQUESTS}


def pct_of_optimum(returns: Sequence[float], optimal: Sequence[float]) -> tuple[float, float]:
    """``returns`` as % of the optimal policy's returns on the same episodes: 100 x mean /
    mean optimal, and the half-width of its paired 95% interval (Student's t over the
    per-episode gaps ``returns - optimal``, divided by the optimal mean)."""
    optimal_mean = float(np.mean(optimal))
    gap, half = ci95(np.asarray(returns, dtype=float) - np.asarray(optimal, dtype=float))
    return 100.0 * (1.0 + gap / optimal_mean), 100.0 * half / abs(optimal_mean)


def held_out_record(
    returns: Sequence[float], env_id: str, env_config: dict, seed: int
) -> dict[str, Any]:
    """The held-out figure of a policy's ``returns`` on the episodes seeded ``seed``, ... : mean,
    95% interval and, on the cab env, % of the optimum with the reference policies on the same
    episodes (mean and % of optimum each)."""
    episodes = len(returns)
    mean, half_width = ci95(returns)
    record: dict[str, Any] = {
        "env": env_id,
        "env_config": env_config,
        "policy": "greedy (arg-max of the module's action distribution inputs or Q-values)",
        "episodes": episodes,
        "seeds": [seed + i for i in range(episodes)],
        "returns": list(map(float, returns)),
        "mean": mean,
        "ci95_half_width": half_width,
    }
    cab = cab_config(env_id, env_config)
    if cab is not None:
        from envs.optimum import optimum_value

        refs = _cab_references(json.dumps(cab, sort_keys=True), episodes, seed)
        pct, pct_half = pct_of_optimum(returns, refs["optimum"])
        variant = "requests" if cab["requests"] else "base"
        record.update(
            pct_of_optimum=pct,
            pct_ci95_half_width=pct_half,
            exact_optimum=float(optimum_value(variant, tm_seed=cab["tm_seed"])),
            references={
                name: {
                    "mean": float(np.mean(values)),
                    "pct_of_optimum": pct_of_optimum(values, refs["optimum"])[0],
                }
                for name, values in refs.items()
            },
        )
    return record


def evaluate_module(
    module: Any, env_id: str, env_config: dict, episodes: int, seed: int
) -> dict[str, Any]:
    """:func:`held_out_record` of ``module``'s greedy policy (in memory, e.g. a learner's)."""
    started = time.perf_counter()
    record = held_out_record(
        play(module, env_id, env_config, episodes, seed), env_id, env_config, seed
    )
    record["seconds"] = round(time.perf_counter() - started, 1)
    return record


def evaluate_trial(trial_dir: Path, episodes: int, seed: int) -> dict[str, Any] | None:
    """Evaluate one trial's last checkpoint and write EVALUATION_FILE; None without one."""
    checkpoint = last_checkpoint(trial_dir)
    if checkpoint is None:
        return None
    params = json.loads((trial_dir / "params.json").read_text())
    env_id, env_config = params["env"], dict(params.get("env_config") or {})
    started = time.perf_counter()
    record = {
        "checkpoint": checkpoint.name,
        **evaluate_module(load_module(checkpoint), env_id, env_config, episodes, seed),
    }
    record["seconds"] = round(time.perf_counter() - started, 1)
    atomic_write_text(trial_dir / EVALUATION_FILE, json.dumps(record, indent=1) + "\n")
    return record


def describe(record: dict[str, Any]) -> str:
    """One line: the held-out mean with its interval, and % of optimum where known."""
    text = (
        f"mean {record['mean']:.1f} ± {record['ci95_half_width']:.1f} (95% CI) over "
        f"{record['episodes']} held-out episodes"
    )
    if "pct_of_optimum" in record:
        text += (
            f" = {record['pct_of_optimum']:.2f}% ± {record['pct_ci95_half_width']:.2f} of the "
            "optimum on the same episodes"
        )
    return text


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
    p.add_argument("--seed", type=count(0), default=HELD_OUT_SEED, help="seed of the first episode")
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
        print(
            f"{step}: {describe(record)}, {record['checkpoint']}, {record['seconds']} s", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
