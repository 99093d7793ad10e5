"""Raw stepping speed of the cab envs: ``python -m envs.bench [--steps N]``.

Steps each variant (constructed directly, no Gymnasium wrappers) with pre-drawn random actions,
resetting on termination, and prints steps per second on one core.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from envs.cabs import NUM_ACTIONS, CabsEnv


def steps_per_second(requests: bool, steps: int, seed: int = 0) -> float:
    """Steps per second of ``steps`` random-action steps on one variant."""
    env = CabsEnv(requests=requests)
    actions = np.random.default_rng(seed).integers(NUM_ACTIONS, size=steps).tolist()
    env.reset(seed=seed)
    start = time.perf_counter()
    for action in actions:
        terminated = env.step(action)[2]
        if terminated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200_000, help="steps per variant")
    args = parser.parse_args(argv)
    for name, requests in (("Cabs-v0 (base)", False), ("CabsRequests-v0 (requests)", True)):
        rate = steps_per_second(requests, args.steps)
        print(f"{name:28s} {rate:12,.0f} steps/s  ({args.steps:,} random-action steps)")


if __name__ == "__main__":
    main()
