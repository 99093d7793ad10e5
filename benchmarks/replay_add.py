"""Cost of adding running episodes to the replay: RLlib's prioritized episode buffer against the
suite's (``sweeps/algorithms/growing_replay.py``), which grows stored episodes in place.

Builds ``--games`` Pong-sized games (42x42x4 uint8 frames) of ``--steps`` steps, cuts them into
``--chunk``-step chunks the way one env runner hands them over (all games one chunk each per
round), and times adding every round to each buffer (capacity 100k, no Ray).

How to run
----------
    python benchmarks/replay_add.py --steps 1000 --chunk 32
    python benchmarks/replay_add.py --steps 3000 --chunk 32

Results to expect
-----------------
The time per 256 env steps added, per buffer; RLlib's grows with the games' length, the suite's
does not. Figures quoted in the project's notes come from runs of this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence


def rounds(steps: int, chunk: int, games: int) -> list[list]:
    import gymnasium as gym
    import numpy as np
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    obs_space = gym.spaces.Box(0, 255, (42, 42, 4), np.uint8)
    frames = np.random.default_rng(0).integers(0, 255, (64, 42, 42, 4), dtype=np.uint8)
    episodes = [
        SingleAgentEpisode(
            id_=str(i), observation_space=obs_space, action_space=gym.spaces.Discrete(6)
        )
        for i in range(games)
    ]
    for e in episodes:
        e.add_env_reset(observation=frames[0])
    out = []
    for t in range(steps):
        for e in episodes:
            e.add_env_step(
                observation=frames[t % 64], action=1, reward=0.0, terminated=t == steps - 1
            )
        if (t + 1) % chunk == 0 or t == steps - 1:
            out.append([e.to_numpy() for e in episodes])
            if t < steps - 1:
                episodes = [e.cut() for e in episodes]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="steps per game")
    parser.add_argument("--chunk", type=int, default=32, help="steps per chunk (fragment)")
    parser.add_argument("--games", type=int, default=8, help="games stepped side by side")
    args = parser.parse_args(argv)
    if min(args.steps, args.chunk, args.games) < 1:
        parser.error("--steps, --chunk and --games must be at least 1")

    from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import (
        PrioritizedEpisodeReplayBuffer,
    )

    from sweeps.algorithms.growing_replay import GrowingPrioritizedEpisodeReplayBuffer

    data = rounds(args.steps, args.chunk, args.games)
    env_steps = args.steps * args.games
    for cls in (PrioritizedEpisodeReplayBuffer, GrowingPrioritizedEpisodeReplayBuffer):
        buffer = cls(capacity=100_000, alpha=0.5)
        started = time.perf_counter()
        for chunks in data:
            buffer.add(chunks)
        seconds = time.perf_counter() - started
        print(
            f"{cls.__name__}: {args.games} games of {args.steps} steps in {args.chunk}-step "
            f"chunks: {seconds:.2f} s, {1e3 * seconds / (env_steps / 256):.1f} ms per 256 env steps"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
