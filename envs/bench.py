"""Raw stepping speed of an env: the one loop every measurement of it uses, and
``python -m envs.bench [--seconds S]`` for the cab envs.

:func:`raw_env_rate` steps an env with random actions drawn in advance, resetting at episode
ends, in one process: the throughput benchmark's raw env rate, every run's machine speed
(``sweeps/harness/machine_speed.py``) and ``benchmarks/measure_scaling.py``'s ceiling. The command
steps each cab variant as constructed (no Gymnasium wrappers) and prints steps per second on one
core.
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def raw_env_rate(
    env: Any, seconds: float, seed: int = 0, windows: int = 1, reset: bool = True
) -> float:
    """Env steps per second of one process stepping ``env`` with random actions (drawn in
    advance), resetting at episode ends, for ``seconds``; a vector env (``num_envs``) counts
    each of its envs' steps and resets them itself. ``windows`` > 1: the fastest of that many
    equal windows (a moment's contention from another process does not count, a machine that
    is slow throughout does). ``reset=False``: an env measured before steps on from where it
    was (its reset is not timed either way)."""
    num_envs = getattr(env, "num_envs", None)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(4096 if num_envs is None else 256)]
    if reset:
        env.reset(seed=seed)
    steps, best = 0, 0.0
    for _ in range(windows):
        first, t0 = steps, time.perf_counter()
        deadline = t0 + seconds / windows
        while True:
            _, _, terminated, truncated, _ = env.step(actions[steps % len(actions)])
            steps += 1
            if num_envs is None and (terminated or truncated):
                env.reset()
            # a vector env's step is long enough to look at the clock after each one
            if (num_envs or (steps - first) % 16 == 0) and time.perf_counter() >= deadline:
                break
        best = max(best, (steps - first) * (num_envs or 1) / (time.perf_counter() - t0))
    return best


def main(argv: list[str] | None = None) -> None:
    from envs.cabs import CabsEnv

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per variant")
    args = parser.parse_args(argv)
    for name, requests in (("Cabs-v0 (base)", False), ("CabsRequests-v0 (requests)", True)):
        rate = raw_env_rate(CabsEnv(requests=requests), args.seconds)
        print(f"{name:28s} {rate:12,.0f} steps/s  (random actions, {args.seconds:g} s)")


if __name__ == "__main__":
    main()
