"""Tune one algorithm's generic defaults on the env family: an Optuna study whose objective is how
many (env, seed) pairs reach their env's target, then how fast.

Each trial draws the algorithm's generic search space (``SAMPLERS`` in ``sweeps/gym_family.py``)
and runs the benchmark with those values (``--set``) on every tuning env of
``sweeps/env_family.py`` (``TUNING``; the held-out envs are never run here), the cheapest budget
first, each run stopping at its env's confirmed target. Its score: the pairs that reached their
target, plus the mean over all pairs of the share of the budget left when they did (0 for a miss):
one pair more always beats any speed, and time breaks ties. Optuna's median pruner stops a trial
whose score so far, env by env, falls below the median of earlier trials at the same env. The
defaults as they stand run first, with the same seeds and budgets: the "before".

How to run
----------
    python -m benchmarks.family_tune --algo appo --trials 20 --budget-scale 0.5 --dry-run
    python -m benchmarks.family_tune --algo appo --trials 20 --budget-scale 0.5

The same command run again goes on: the study is a journal file, each trial's benchmark runs
are reused where they finished, and a trial a killed run left open is closed as failed (a run of
the defaults that a kill left unfinished is named, with how to continue it).

Results to expect
-----------------
``<storage-path>/<name>/``: ``study.journal`` (the Optuna study; ``optuna-dashboard`` reads it),
one benchmark folder per trial and env (``defaults-<env>``, ``t<N>-<env>``), and ``BEST.json``:
the best trial's ``--set`` values and score beside the defaults' score.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.env_family import HELD_OUT, FamilyEnv, chosen, env_list
from sweeps.harness.cli import count, positive_float
from sweeps.harness.errors import OneLineErrorParser

ALGOS = ("dqn", "apex", "impala", "appo")
BEST_FILE = "BEST.json"


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser.of_command("python -m benchmarks.family_tune", __doc__)
    p.add_argument("--algo", choices=ALGOS, required=True, help="the algorithm to tune")
    p.add_argument("--trials", type=count(1), default=20, help="trials (default: %(default)s)")
    p.add_argument(
        "--benchmark-seeds", type=count(1), default=1, help="seeds per env (default: %(default)s)"
    )
    p.add_argument("--seed", type=count(0), default=0, help="first seed, and Optuna's (default: 0)")
    p.add_argument(
        "--budget-scale",
        type=positive_float,
        default=1.0,
        help="each env's budget times this (default: %(default)s)",
    )
    p.add_argument(
        "--envs",
        type=env_list,
        help="comma-separated tuning envs (default: all of them)",
    )
    p.add_argument("--storage-path", default="runs/family-tune", help="(default: %(default)s)")
    p.add_argument("--name", help="study folder under --storage-path (default: <algo>)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    return p


def tuning_envs(names: Sequence[str] | None) -> list[FamilyEnv]:
    """The tuning envs asked for, cheapest budget first; a ValueError for a held-out env or one
    not in the family."""
    held_out = [n for n in names or () if n in {e.env for e in HELD_OUT}]
    if held_out:
        raise ValueError(f"--envs: {', '.join(held_out)} held out: never tuned on")
    return sorted(chosen(names, held_out=False), key=lambda e: e.budget_s)


def set_texts(params: dict[str, Any]) -> list[str]:
    """A sampler's config values as ``--set KEY=JSON`` texts; ``a/b`` keys (a setting inside a
    dict setting, as Tune's param space writes them) become ``a={"b": ...}``, which RLlib merges
    into the dict it has."""
    nested: dict[str, Any] = {}
    for key, value in params.items():
        head, slash, rest = key.partition("/")
        if slash:
            nested.setdefault(head, {})[rest] = value
        else:
            nested[key] = value
    return [f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(nested.items())]


def score(pairs: Sequence[tuple[bool, float, float]]) -> float:
    """``pairs``: (reached, seconds to the target, budget seconds). The pairs that reached it
    plus the mean share of the budget left when they did (module docstring)."""
    if not pairs:
        return 0.0
    left = [max(0.0, 1.0 - t / b) if hit and b > 0 else 0.0 for hit, t, b in pairs]
    return sum(hit for hit, _, _ in pairs) + sum(left) / len(left) * 0.999


def outcomes(folder: Path, budget_s: float) -> list[tuple[bool, float, float]]:
    """Each seed of the benchmark in ``folder``: whether it reached its target (the report's
    rule: the confirmed target where the runs confirm it) and when; none where nothing ran."""
    from analysis.collect import collect
    from analysis.workload import workloads
    from sweeps.harness.errors import UsageError

    try:
        runs = collect([str(folder)]).runs
    except UsageError:  # the benchmark wrote no run (refused before its first)
        return []
    if runs.empty:
        return []
    (w,) = workloads(runs)
    ttt = w.ttt
    rows = ttt[(ttt["signal"] == w.signal) & (ttt["target"] == w.target)]
    return [(bool(r["reached"]), float(r["train_time_s"]), budget_s) for _, r in rows.iterrows()]


@dataclass(frozen=True)
class Study:
    """One study: its settings (the flags, checked), and the benchmark of a setting on each
    env, in the study's folder."""

    algo: str
    trials: int
    seeds: int  # --benchmark-seeds
    seed: int
    scale: float  # --budget-scale
    envs: tuple[FamilyEnv, ...]
    name: str
    folder: Path

    def benchmark_argv(self, tag: str, env: FamilyEnv, sets: Sequence[str]) -> list[str]:
        passed = [
            *("--algos", self.algo, "--benchmark-seeds", str(self.seeds)),
            *("--seed", str(self.seed), "--storage-path", str(self.folder)),
            *[x for text in sets for x in ("--set", text)],
        ]
        return env.benchmark_argv(tag, self.scale, passed)

    def evaluate(self, tag: str, sets: Sequence[str], trial: Any = None) -> float:
        """The score of ``sets`` over the envs; with an Optuna ``trial``, reported env by env
        and pruned where it falls behind (``optuna.TrialPruned``)."""
        import optuna

        from sweeps import benchmark

        pairs: list[tuple[bool, float, float]] = []
        for step, env in enumerate(self.envs):
            argv = self.benchmark_argv(tag, env, sets)
            print(f"[tune] {tag} on {env.env}: python -m sweeps.benchmark {shlex.join(argv)}")
            benchmark.main(argv)  # a failed run counts as its seeds missing
            budget = env.budget_s * self.scale
            found = outcomes(self.folder / f"{tag}-{env.slug}", budget)
            pairs += found or [(False, 0.0, 1.0)] * self.seeds
            print(f"[tune] {tag}: {sum(p[0] for p in pairs)}/{len(pairs)} pairs so far", flush=True)
            if trial is not None:
                trial.report(score(pairs), step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        return score(pairs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        envs = tuning_envs(args.envs)
    except ValueError as e:
        parser.error(str(e))
    name = args.name or args.algo
    folder = Path(args.storage_path).expanduser() / name
    study = Study(
        args.algo, args.trials, args.benchmark_seeds, args.seed, args.budget_scale,
        tuple(envs), name, folder,
    )  # fmt: skip
    per_trial = sum(e.budget_s for e in envs) * study.scale * study.seeds
    print(
        f"[tune] {study.algo} on {len(envs)} envs ({', '.join(e.env for e in envs)}), "
        f"{study.seeds} seed(s) each: at most {per_trial:,.0f} s of training per trial, "
        f"{study.trials} trials and the defaults; folder {folder}",
        flush=True,
    )
    if args.dry_run:
        for env in envs:
            command = shlex.join(study.benchmark_argv("t0", env, []))
            print(f"  python -m sweeps.benchmark {command}")
        return 0
    return _tune(study)


def _tune(runs: Study) -> int:
    import optuna
    from optuna.trial import TrialState

    from sweeps.gym_family import SAMPLERS
    from sweeps.harness import storage
    from sweeps.harness.files import atomic_write_text
    from sweeps.harness.recovery import close_stale_study_trials

    runs.folder.mkdir(parents=True, exist_ok=True)
    url = str(runs.folder / "study.journal")
    name = runs.name
    study = optuna.create_study(
        study_name=name,
        storage=storage.optuna_storage(url),
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=runs.seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3),
        load_if_exists=True,
    )
    close_stale_study_trials(url, name)  # a trial a killed run left open
    before = runs.evaluate("defaults", [])
    done = (TrialState.COMPLETE, TrialState.PRUNED)
    while len(study.get_trials(deepcopy=False, states=done)) < runs.trials:
        trial = study.ask()
        sets = set_texts(SAMPLERS[runs.algo](trial))
        trial.set_user_attr("set", sets)
        try:
            study.tell(trial, runs.evaluate(f"t{trial.number}", sets, trial))
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
    best = study.best_trial
    record = {
        "algo": runs.algo,
        "envs": [e.env for e in runs.envs],
        "defaults_score": before,
        "best_trial": best.number,
        "best_score": best.value,
        "best_set": best.user_attrs.get("set", []),
        # Below the defaults' score, the search found nothing better: keep the defaults.
        "better_than_defaults": best.value > before,
        "command": shlex.join(["python", "-m", "benchmarks.family_tune", *sys.argv[1:]]),
    }
    atomic_write_text(runs.folder / BEST_FILE, json.dumps(record, indent=2) + "\n")
    verdict = "better than" if best.value > before else "no better than: keep"
    print(
        f"[tune] best: trial {best.number}, score {best.value:.3f}, {verdict} the defaults "
        f"({before:.3f}); {runs.folder / BEST_FILE}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
