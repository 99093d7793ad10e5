"""Greedy (and sampled) evaluation of each trial's final policy on fixed, seeded episodes.

How to run
----------
    python -m sweeps.evaluate runs/benchmark/pong-cpu                 # every trial below it
    python -m sweeps.evaluate runs/<sweep folder> --episodes 100 --seed 1000000
    python -m sweeps.evaluate runs/benchmark/pong-cpu --episodes 10 --sampled   # IMPALA, APPO

For every trial folder under the given run folders (a sweep, a benchmark configuration, or a
benchmark holding several), this loads the RLModule of the trial's last checkpoint, plays
``--episodes`` episodes greedily (the module's greedy action: the arg-max of its action
distribution inputs, or of its Q-values) on the env and env config the trial trained on, the
episodes seeded ``--seed``, ``--seed+1``, ... (the same episodes for every trial), all at once with
inference batched over them, and writes ``final_evaluation.json`` into the trial folder: each
episode's return, their mean and a 95% confidence interval (Student's t). ``python -m analysis
report`` shows it beside the training return.

With ``--sampled``, a trial whose module acts by an action distribution (IMPALA, APPO, PPO) also
plays the same episodes with its actions drawn from that distribution, as its env runners act in
training (torch's generator seeded ``--seed``): the record's ``sampled`` part, shown in the
report beside the greedy figure. A policy-gradient method trains the distribution, not its
arg-max, and the two can differ by much: an arg-max policy can lock into a rally it never ends.
Q-learners (DQN, Ape-X) act greedily by design and play greedy episodes only.

On the cab env the same episodes are also played by the reference policies (random, the
direct-ride heuristic, the exact DP optimum: ``envs.policies.reference_episode_returns``), and
the record holds the **held-out % of optimum**: the policy's mean return over the episodes as a
percentage of the optimal policy's mean return over the *same* episodes, with a paired 95%
interval (the per-episode gap to the optimum, Student's t); the references get the same
figure. Its seeds (``HELD_OUT_SEED`` on) are never used in training or in the periodic
evaluation (trials are seeded 0, 1, ...; RLlib seeds their envs from those). A sweep runs this
at its end on its best trials and picks the best by it (``sweeps/harness/outcome.py``, the
runner's summarise step); the benchmark runs it after each run.

On the cab env's base variant the record also holds the **exact** figure (``exact``): a module
that sees ``(location, hour, day)`` only has one greedy action per state, so its policy is
evaluated by dynamic programming over the month, without episodes or noise, the heuristic's
too, with how much of the optimum each loses in the month's last 48 hours
(``envs.optimum.evaluate_policy``). A policy blind to the month's clock loses nearly all it
loses there: it cannot play the month's end (short rides, then a long one that is paid in full).

Results to expect
-----------------
A second or two per trial for 100 cab episodes; on Pong about a minute for 5 games on 2 cores
(a game is 1,000-5,000 agent steps).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sweeps.harness.cli import count
from sweeps.harness.errors import OneLineErrorParser, UsageError
from sweeps.harness.files import HELD_OUT_SEED
from sweeps.harness.held_out_eval import describe, evaluate_trial


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
    p.add_argument(
        "--sampled",
        action="store_true",
        help="also play the episodes with actions sampled from the policy's distribution "
        "(IMPALA, APPO, PPO; Q-learners play greedy episodes only)",
    )
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
        how = "greedy and sampled" if args.sampled else "greedy"
        print(f"{step}: {args.episodes} {how} episodes", flush=True)
        try:
            record = evaluate_trial(trial_dir, args.episodes, args.seed, args.sampled)
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
