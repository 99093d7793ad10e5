"""Tune one algorithm's generic defaults on the env family: an Optuna study whose objective is how
many (env, seed) pairs reach their env's target, then how fast. (Over 500 lines: the study's
command, its runs and its Optuna loop, read top to bottom; its page is ``family_study.py``, its
stop by a signal ``stopping.py``.)

Each trial draws the algorithm's generic search space (``SAMPLERS`` in ``sweeps/gym_family.py``)
and runs the benchmark with those values (``--set``) on every tuning env of
``sweeps/env_family.py`` (``TUNING``; the held-out envs are never run here), the cheapest budget
first, each run stopping at its env's confirmed target. Its score: the pairs that reached their
target, plus the mean over all pairs of the share of the budget left when they did (0 for a miss):
one pair more always beats any speed, and time breaks ties. A trial is pruned (``PairsPruner``)
once it has reached fewer pairs, env by env, than the median complete trial had at the same env:
never for speed alone (Optuna's median pruner on the score pruned trials that reached CartPole
late in its budget, before any env that sets trials apart had run: ``results/gym/tune/apex``).
The defaults as they stand run first, with the same seeds and budgets: the "before".

How to run
----------
    python -m benchmarks.family_tune --algo appo --trials 20 --budget-scale 0.5 --dry-run  # and
    # where the study stands: trials done, the one tried again first, at most how long the rest
    nohup python -m benchmarks.family_tune --algo appo --trials 20 --budget-scale 0.5 \
        --hours 2.5 --commit > tune.log 2>&1 &

``--enqueue '{"hp/lr": 0.0003}'`` asks a trial with those values first (a probe's lead: the names
are the search space's, ``SAMPLERS`` in ``sweeps/gym_family.py``; the others are drawn), once
however often the command runs.

A study outlives its work tree: its journal and each finished run's collected table are kept in
``--record`` (committed one by one with ``--commit``), and the same command run again, on this
tree or a fresh checkout, goes on from them. A run whose table is there is never run again; a
trial that a kill, or ``--hours``, left unfinished is tried again with its own values (at most
``MAX_TRIES`` times), so the runs it finished count. With ``--hours`` no run starts whose worst
case (its budget, the family runs' wall-clock per training second, start-up) would end after
them. The defaults' runs are the family's runs of record where those are collected
(``results/gym/before``, seed for seed: a run that reached its target after the scaled budget
counts as a miss), run here only where they are not; that holds while the study's defaults are
those the runs of record ran with. A study keeps the defaults it began on (its journal's
``defaults``): once the algorithm's defaults in ``sweeps/gym_family.py`` differ from them (the
study's verdict committed), its command runs no more trials (a new study: ``--name``), and a
finished study's command runs nothing at all.

To stop it before its hours: ``kill PID`` (SIGTERM), or Ctrl-C at its terminal. The tuner stops
its running sweep cleanly and leaves the trial unfinished, to be tried again by the next
command; the stopped run (never collected) is set aside as ``<folder>.unfinished-<time>`` and
made again. A run that a signal stopped is never counted as a miss.

Results to expect
-----------------
``<record>/<name>/`` (``results/gym/tune/<algo>`` by default): ``study.journal`` (the Optuna
study; ``optuna-dashboard`` reads it), one collected table per trial and env
(``defaults-<env>.csv.gz``, ``t<N>-<env>.csv.gz``; ``python -m analysis report`` reads them), and
``STUDY.md``: every trial so far, what each env gave it and its values
(``benchmarks/family_study.py``; regenerated with each commit, or by the same command with
``--page``), and ``BEST.json``: the best trial's ``--set`` values and score beside the defaults'
score. Tune's own files stay in ``<storage-path>/<name>/`` (one benchmark folder per trial and
env).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import shlex
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import family_records, records, stopping
from benchmarks.family_study import PAGE, outcomes, page, score
from sweeps.env_family import HELD_OUT, FamilyEnv, chosen, env_list
from sweeps.harness.cli import count, positive_float
from sweeps.harness.errors import OneLineErrorParser

ALGOS = ("dqn", "apex", "impala", "appo")
BEST_FILE = "BEST.json"
JUDGED_BY = "judged_by"  # the study's user attribute: Study.judged_by of its first command
# ... and the algorithm's generic defaults it began on (family_records.of_algo), which its trials'
# values are drawn over and its "defaults" row is: a study without it began on the before-runs'.
DEFAULTS = "defaults"
JOURNAL = "study.journal"
RECORD = Path("results/gym/tune")  # the studies' committed record, one folder each
MAX_TRIES = 3  # a trial's tries, counting the runs that a kill or --hours cut short


class OutOfHours(Exception):
    """The next run would end after ``--hours``, or a run was stopped before its end: the trial
    is left unfinished, to be tried again (with the runs it finished) by the next command."""


def _unfinished(folder: Path) -> bool:
    """Whether ``folder`` holds a benchmark that did not finish: a sweep whose run record is not
    finished (or failed), or none at all. A finished one the benchmark reuses as it is."""
    from sweeps.benchmark import REUSABLE

    if not folder.exists():
        return False
    records = list(folder.glob("*/run.json"))
    try:
        statuses = [json.loads(r.read_text()).get("status") for r in records]
    except (OSError, ValueError):  # a record cut mid-write
        return True
    return not statuses or any(status not in REUSABLE for status in statuses)


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
    p.add_argument(
        "--storage-path",
        default="runs/family-tune",
        help="Tune's files, a folder per study (default: %(default)s)",
    )
    p.add_argument(
        "--record",
        default=str(RECORD),
        help="the studies' record, a folder per study: the journal, each run's collected table, "
        "BEST.json (default: %(default)s)",
    )
    p.add_argument("--name", help="the study's folder's name (default: <algo>)")
    p.add_argument(
        "--hours",
        type=positive_float,
        help="start no run whose worst case ends after these hours (the same command goes on)",
    )
    p.add_argument(
        "--commit", action="store_true", help="commit the journal and each run's table as it is"
    )
    p.add_argument(
        "--enqueue",
        type=_hp_values,
        action="append",
        default=[],
        metavar="JSON",
        help="a trial to try first, as the search space's names and values, e.g. "
        "'{\"hp/lr\": 0.0003}' (names left out are drawn as usual); repeatable; asked once "
        "however often the command runs",
    )
    p.add_argument(
        "--page",
        action="store_true",
        help=f"regenerate the study's page ({PAGE} in its record) from its journal and tables, "
        "run nothing",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    return p


def _hp_values(text: str) -> dict[str, Any]:
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(values, dict) or not values:
        raise argparse.ArgumentTypeError(f"a JSON object of names and values, got {text!r}")
    return values


def _within(dist: Any, value: Any) -> bool:
    from optuna.distributions import CategoricalDistribution

    if isinstance(dist, CategoricalDistribution):
        return value in dist.choices
    from optuna.distributions import IntDistribution

    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    whole = not isinstance(dist, IntDistribution) or (number and float(value).is_integer())
    return number and whole and dist.low <= value <= dist.high


def check_enqueued(algo: str, values: dict[str, Any]) -> None:
    """A ValueError naming what in ``values`` the algorithm's search space (``SAMPLERS``) does
    not hold: a name it has not, or a value outside its range or choices."""
    from sweeps.gym_family import SAMPLERS
    from sweeps.harness.space import ask_trial

    trial, _ = ask_trial(SAMPLERS[algo])  # (its distributions describe the space)
    space = trial.distributions
    for name, value in values.items():
        dist = space.get(name)
        if dist is None:
            raise ValueError(f"--enqueue: {algo}'s space has no {name!r} ({', '.join(space)})")
        if not _within(dist, value):
            raise ValueError(f"--enqueue: {name}={value!r} is outside {algo}'s space: {dist}")


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


def collected(folder: Path, table: Path) -> bool:
    """Collect the benchmark in ``folder`` into ``table``; False where it wrote no run (refused
    before its first, or stopped before it)."""
    from analysis.collect import collect, write_runs_csv
    from sweeps.harness.errors import UsageError

    try:
        runs = collect([str(folder)]).runs
    except UsageError:
        return False
    if runs.empty:
        return False
    table.parent.mkdir(parents=True, exist_ok=True)
    write_runs_csv(runs, table)
    return True


def worst_case_s(env: FamilyEnv, scale: float) -> float:
    """The longest one benchmark of ``env`` takes at ``scale`` times its budget (its seeds: that
    many budgets), as the family's runs of record count it."""
    return env.budget_s * scale * family_records.WALL_PER_TRAIN_S + family_records.FIXED_S


def unfinished(trials: Sequence[Any]) -> list[Any]:
    """The trials a kill or ``--hours`` left unfinished (FAIL; RUNNING in a journal whose writer
    was killed, closed as FAIL when the study opens) that are tried again: one per tag, not
    settled by a later try, tried fewer than ``MAX_TRIES`` times, and not a repeat of values a
    trial has already been judged on (a sampler that repeated a draw: see ``_sampler``)."""
    from optuna.trial import TrialState

    cut = (TrialState.FAIL, TrialState.RUNNING)
    failed = Counter(t.user_attrs.get("tag") for t in trials if t.state in cut)
    settled = {t.user_attrs.get("tag") for t in trials if t.state not in cut}
    judged = [t.params for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    found = []
    for t in trials:
        tag = t.user_attrs.get("tag")
        if t.state not in cut or not tag or tag in settled or failed[tag] >= MAX_TRIES:
            continue
        if t.params in judged:
            continue
        settled.add(tag)
        found.append(t)
    return found


def retry_unfinished(study: Any, filled: dict[str, Any] | None = None) -> list[str]:
    """Ask again for each trial that a kill or ``--hours`` left unfinished (``unfinished``), with
    its values and its tag, so that the runs it finished are reused. ``filled``: the values of
    parameters the space drew after the trial was drawn (``gym_family.BEFORE_SEARCHED``), which
    its runs ran with. Returns the tags asked again."""
    again = []
    for t in unfinished(study.get_trials(deepcopy=False)):
        values = {**{k: v for k, v in (filled or {}).items() if k not in t.params}, **t.params}
        study.enqueue_trial(values, user_attrs={"tag": t.user_attrs["tag"]})
        again.append(t.user_attrs["tag"])
    return again


@dataclass(frozen=True)
class Study:
    """One study: its settings (the flags, checked), Tune's files of a setting's benchmark on each
    env (``folder``), and the study's record (``record``: its journal and collected tables)."""

    algo: str
    trials: int
    seeds: int  # --benchmark-seeds
    seed: int
    scale: float  # --budget-scale
    envs: tuple[FamilyEnv, ...]
    name: str
    folder: Path
    record: Path
    commit: bool = False
    deadline: float | None = None  # time.monotonic() of --hours' end
    enqueued: tuple[dict[str, Any], ...] = ()  # --enqueue: trials to try first
    command: str = "python -m benchmarks.family_tune"  # as given: the page names it

    def benchmark_argv(self, tag: str, env: FamilyEnv, sets: Sequence[str]) -> list[str]:
        passed = [
            *("--algos", self.algo, "--benchmark-seeds", str(self.seeds)),
            *("--seed", str(self.seed), "--storage-path", str(self.folder)),
            *[x for text in sets for x in ("--set", text)],
        ]
        return env.benchmark_argv(tag, self.scale, passed)

    def judged_by(self) -> dict[str, Any]:
        """The settings a trial's score depends on: the journal keeps its first command's, and
        a command that would judge the same study by others is refused (``differs``)."""
        return {
            "algo": self.algo,
            "budget_scale": self.scale,
            "benchmark_seeds": self.seeds,
            "seed": self.seed,
            "envs": [e.env for e in self.envs],
        }

    def differs(self) -> str | None:
        """How this command's ``judged_by`` differs from the one its study's journal recorded,
        as one line naming the flags to give; None where they agree, or where there is no study
        yet. Read as the journal is (a tuner may be appending to it)."""
        import optuna

        from sweeps.harness import storage

        journal = self.record / JOURNAL
        if not journal.is_file():
            return None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            url = storage.optuna_storage(str(journal), read_only=True)
            study = optuna.load_study(study_name=self.name, storage=url)
        except KeyError:  # (another study's journal: create_study adds this one to it)
            return None
        recorded = study.user_attrs.get(JUDGED_BY)
        if not recorded:
            if not study.get_trials(deepcopy=False):
                return None  # (the first command records its own)
            return (
                f"the study {self.name!r} in {self.record} has trials but does not say what "
                f"judged them (its {JUDGED_BY!r} attribute, recorded by the first command "
                "since the tuner keeps it): record it with the flags its trials ran with "
                "(study.set_user_attr), or --name for a new study"
            )
        flags = {"budget_scale": "--budget-scale", "benchmark_seeds": "--benchmark-seeds"}
        flags |= {"seed": "--seed", "envs": "--envs", "algo": "--algo"}
        now = self.judged_by()
        changed = [k for k in now if k in recorded and recorded[k] != now[k]]
        if not changed:
            return None
        shown = ", ".join(
            f"{flags[k]} {','.join(recorded[k]) if k == 'envs' else recorded[k]} "
            f"(this command: {','.join(now[k]) if k == 'envs' else now[k]})"
            for k in changed
        )
        return (
            f"the study {self.name!r} in {self.record} was judged with {shown}: give the same "
            "(the envs in the same order: the pruner compares trials env by env), or --name for "
            "a new study"
        )

    def table(self, tag: str, env: FamilyEnv) -> Path:
        """Where ``tag``'s benchmark on ``env`` is collected, in the record."""
        return self.record / f"{tag}-{env.slug}.csv.gz"

    def recorded(self, tag: str, env: FamilyEnv) -> Path | None:
        """The collected table of ``tag``'s benchmark on ``env``, where there is one: the study's
        own, or for the defaults at one seed the family's run of record of that seed (while the
        algorithm's defaults are still those its before-runs ran with)."""
        table = self.table(tag, env)
        if table.is_file():
            return table
        if tag == "defaults" and self.seeds == 1 and self.began_on_before():
            run = family_records.FamilyRun(env, self.algo, self.seed)
            of_record = run.table(family_records.Places())
            return of_record if of_record.is_file() else None
        return None

    @functools.cached_property
    def began_on(self) -> dict[str, Any]:
        """The algorithm's generic defaults this study began on (``DEFAULTS`` in its journal; a
        study with trials recorded before the tuner kept them began on the before-runs'); a
        study without trials yet, those that stand now."""
        import optuna

        from sweeps.harness import storage

        journal = self.record / JOURNAL
        now = family_records.of_algo(family_records.generic_defaults(), self.algo)
        if not journal.is_file():
            return now
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        url = storage.optuna_storage(str(journal), read_only=True)
        try:
            study = optuna.load_study(study_name=self.name, storage=url)
        except KeyError:  # (another study's journal: this one not begun)
            return now
        if DEFAULTS in study.user_attrs:
            return study.user_attrs[DEFAULTS]
        before = family_records.recorded_defaults(family_records.STAGE, self.algo)
        return before if study.get_trials(deepcopy=False) and before is not None else now

    def began_on_before(self) -> bool:
        """Whether the study began on the defaults the family's before-runs ran with: those runs
        are then its defaults' runs."""
        return self.began_on == family_records.recorded_defaults(family_records.STAGE, self.algo)

    def defaults_moved(self) -> str | None:
        """Why no more trials run (one line): the algorithm's defaults now differ from those the
        study began on, which its trials are drawn over; None where they are the same."""
        now = family_records.of_algo(family_records.generic_defaults(), self.algo)
        if now == self.began_on:
            return None
        return (
            f"{self.algo}'s generic defaults in sweeps/gym_family.py are no longer those the study "
            f"{self.name!r} began on (its trials' values are drawn over those): it runs no more "
            "trials; --name for a new study of the defaults as they stand"
        )

    def run(self, tag: str, env: FamilyEnv, sets: Sequence[str]) -> Path | None:
        """Run ``tag``'s benchmark on ``env`` and collect it into the record (committed with
        ``commit``); None where it wrote no run. OutOfHours where it might end after
        ``deadline``."""
        from sweeps import benchmark

        if stopping.STOPPING.is_set():
            raise OutOfHours(f"by a signal: before {tag} on {env.env}")
        need = worst_case_s(env, self.scale * self.seeds)  # (its seeds one after another)
        if self.deadline is not None and time.monotonic() + need > self.deadline:
            raise OutOfHours(
                f"at the end of the hours: {tag} on {env.env} takes up to {need / 3600:.1f} h"
            )
        argv = self.benchmark_argv(tag, env, sets)
        folder = self.folder / f"{tag}-{env.slug}"
        if _unfinished(folder):  # a run stopped before its end, never collected: not resumed
            aside = folder.with_name(f"{folder.name}.unfinished-{time.strftime('%Y%m%d-%H%M%S')}")
            folder.rename(aside)
            print(f"[tune] {tag} on {env.env}: its unfinished run set aside in {aside}")
        print(f"[tune] {tag} on {env.env}: python -m sweeps.benchmark {shlex.join(argv)}")
        if benchmark.main(argv) == benchmark.INTERRUPTED_RC:  # else a failed run is a miss
            raise OutOfHours(f"by a signal: {tag} on {env.env} stopped before its end")
        table = self.table(tag, env)
        if not collected(self.folder / f"{tag}-{env.slug}", table):
            return None
        self.save(f"{tag} on {env.env}", table)
        return table

    def write_page(self) -> Path | None:
        """The study's page (``STUDY.md``, ``benchmarks/family_study.py``) from its journal and
        tables as they are; None before the journal exists."""
        import optuna

        from sweeps.harness import storage
        from sweeps.harness.files import atomic_write_text

        journal = self.record / JOURNAL
        if not journal.is_file():
            return None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        url = storage.optuna_storage(str(journal))
        study = optuna.load_study(study_name=self.name, storage=url)
        trials = study.get_trials()
        text = page(
            self.name, self.envs, self.scale, trials, self.recorded, self.command, self.algo
        )
        atomic_write_text(self.record / PAGE, text)
        return self.record / PAGE

    def progress(self) -> str:
        """Where the study stands (one line, for a dry run): its trials done (complete, pruned),
        one running or left unfinished by a kill or ``--hours`` (tried again next), the defaults'
        runs not on record, and at most how long the rest takes; or that it is done, or can run
        no more trials. Read from the journal without writing."""
        import optuna
        from optuna.trial import TrialState

        from sweeps.harness import storage

        journal = self.record / JOURNAL
        trials = []
        if journal.is_file():
            optuna.logging.set_verbosity(optuna.logging.WARNING)
            url = storage.optuna_storage(str(journal), read_only=True)
            try:
                trials = optuna.load_study(study_name=self.name, storage=url).get_trials()
            except KeyError:  # (another study's journal: this one not begun)
                trials = []
        states = Counter(t.state for t in trials)
        done = states[TrialState.COMPLETE] + states[TrialState.PRUNED]
        if done >= self.trials and (self.record / BEST_FILE).is_file():
            return f"[tune] the study is done ({done} trials): {self.record / BEST_FILE}"
        moved = self.defaults_moved()
        if moved:
            return f"[tune] so far: {done} of {self.trials} trials done; {moved}"
        again = [t.user_attrs["tag"] for t in unfinished(trials)]
        runs = [e for e in self.envs if self.recorded("defaults", e) is None]
        per_trial = sum(worst_case_s(e, self.scale * self.seeds) for e in self.envs)
        left = max(self.trials - done, 0)
        hours = left * per_trial + sum(worst_case_s(e, self.scale * self.seeds) for e in runs)
        return (
            f"[tune] so far: {done} of {self.trials} trials done ({states[TrialState.COMPLETE]} "
            f"complete, {states[TrialState.PRUNED]} pruned)"
            + (f"; running or cut short (tried again first): {', '.join(again)}" if again else "")
            + (f"; the defaults' runs to make: {', '.join(e.env for e in runs)}" if runs else "")
            + f"; left: at most {hours / 3600:.1f} h (a pruned trial ends sooner, a trial "
            "cut short goes on from the runs it finished)"
        )

    def save(self, what: str, *paths: Path) -> None:
        """Regenerate the study's page; commit it, the journal and ``paths`` (with
        ``commit``)."""
        try:
            self.write_page()
        except Exception as e:  # (a view of the study: drawing it never stops the study)
            print(f"[tune] the study's page was not written: {type(e).__name__}: {e}", flush=True)
        if not self.commit:
            return
        files = [str(p) for p in (self.record / JOURNAL, self.record / PAGE, *paths) if p.exists()]
        rc = records.commit_paths(files, f"Family tuning of {self.algo} (issue 64): {what}")
        if rc != 0:
            print(f"[tune] committing {what} failed (exit {rc}); it stays in {self.record}")

    def evaluate(self, tag: str, sets: Sequence[str], trial: Any = None) -> float:
        """The score of ``sets`` over the envs; with an Optuna ``trial``, reported env by env
        and pruned where it falls behind (``optuna.TrialPruned``)."""
        import optuna

        pairs: list[tuple[bool, float, float]] = []
        for step, env in enumerate(self.envs):
            table = self.recorded(tag, env) or self.run(tag, env, sets)
            found = outcomes(table, env.budget_s * self.scale) if table else []
            pairs += found or [(False, 0.0, 1.0)] * self.seeds
            print(f"[tune] {tag}: {sum(p[0] for p in pairs)}/{len(pairs)} pairs so far", flush=True)
            if trial is not None:
                trial.report(score(pairs), step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        return score(pairs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv_given = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv_given)
    try:
        envs = tuning_envs(args.envs)
    except ValueError as e:
        parser.error(str(e))
    try:
        for values in args.enqueue:
            check_enqueued(args.algo, values)
    except ValueError as e:
        parser.error(str(e))
    name = args.name or args.algo
    folder = Path(args.storage_path).expanduser() / name
    deadline = None if args.hours is None else time.monotonic() + args.hours * 3600
    study = Study(
        args.algo, args.trials, args.benchmark_seeds, args.seed, args.budget_scale,
        tuple(envs), name, folder, Path(args.record).expanduser() / name, args.commit, deadline,
        tuple(args.enqueue), shlex.join(["python", "-m", "benchmarks.family_tune", *argv_given]),
    )  # fmt: skip
    per_trial = sum(e.budget_s for e in envs) * study.scale * study.seeds
    print(
        f"[tune] {study.algo} on {len(envs)} envs ({', '.join(e.env for e in envs)}), "
        f"{study.seeds} seed(s) each: at most {per_trial:,.0f} s of training per trial, "
        f"{study.trials} trials and the defaults; record {study.record}, Tune's files {folder}",
        flush=True,
    )
    why = study.differs()
    if why:
        parser.error(why)
    if args.page:
        written = study.write_page()
        if written is None:
            parser.error(f"no study in {study.record} (its {JOURNAL} is missing)")
        print(f"[tune] {written}")
        return 0
    if args.dry_run:
        for env in envs:
            command = shlex.join(study.benchmark_argv("t0", env, []))
            print(f"  python -m sweeps.benchmark {command}")
        print(study.progress(), flush=True)
        return 0
    with stopping.on_signal("tune"):
        return _tune(study)


def pairs_so_far(value: float) -> int:
    """The pairs reached in a score (``family_study.score``: the pairs plus a share under 1)."""
    return math.floor(value + 1e-9)


class PairsPruner:
    """Optuna's pruner interface (``prune(study, trial)``): prune where the trial has reached
    fewer pairs at its last env than the median of the complete trials at that env, once
    ``startup`` trials are complete. Trials report their score so far (``Study.evaluate``),
    whose whole part is the pairs; the share of the budget left (speed) never prunes."""

    def __init__(self, startup: int = 3) -> None:
        self.startup = startup

    def prune(self, study: Any, trial: Any) -> bool:
        import statistics

        from optuna.trial import TrialState

        step = trial.last_step
        if step is None:
            return False
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        earlier = [
            pairs_so_far(t.intermediate_values[step]) for t in done if step in t.intermediate_values
        ]
        if len(done) < self.startup or not earlier:
            return False
        return pairs_so_far(trial.intermediate_values[step]) < statistics.median(earlier)


def _sampler(seed: int, asked: int) -> Any:
    """The study's TPE sampler, seeded by ``--seed`` and the trials the study has asked so far.
    A sampler seeded by ``--seed`` alone restarts its random stream with each command, and its
    first random draws (TPE's first 10 trials are random) repeat the first command's: the study
    asked trial 1's values again as its trial 4. Seeded this way the draws follow from the seed
    and the study's history, and differ between commands."""
    import optuna

    return optuna.samplers.TPESampler(seed=(seed * 1_000_003 + asked) % 2**32)


def _tune(runs: Study) -> int:
    import optuna
    from optuna.trial import TrialState

    from sweeps.gym_family import BEFORE_SEARCHED, SAMPLERS
    from sweeps.harness import storage
    from sweeps.harness.files import atomic_write_text
    from sweeps.harness.recovery import close_stale_study_trials
    from sweeps.harness.space import ask_trial

    runs.record.mkdir(parents=True, exist_ok=True)
    url = str(runs.record / JOURNAL)
    name = runs.name
    study = optuna.create_study(
        study_name=name,
        storage=storage.optuna_storage(url),
        direction="maximize",
        pruner=PairsPruner(),
        load_if_exists=True,
    )
    done = (TrialState.COMPLETE, TrialState.PRUNED)
    finished = len(study.get_trials(deepcopy=False, states=done)) >= runs.trials
    if finished and (runs.record / BEST_FILE).is_file():  # (nothing written: its defaults and
        print(f"[tune] the study is done: {runs.record / BEST_FILE}; nothing to run", flush=True)
        return 0  # the algorithm's may differ by now)
    if not study.get_trials(deepcopy=False):  # a new study: main refuses others from now on
        study.set_user_attr(JUDGED_BY, runs.judged_by())
        study.set_user_attr(DEFAULTS, runs.began_on)
    moved = runs.defaults_moved()
    if moved:
        print(f"python -m benchmarks.family_tune: error: {moved}", file=sys.stderr, flush=True)
        return 2
    study.sampler = _sampler(runs.seed, len(study.get_trials(deepcopy=False)))
    close_stale_study_trials(url, name)  # a trial a killed run left open
    for values in runs.enqueued:  # once: the same values again are not asked twice
        study.enqueue_trial(values, skip_if_exists=True)
    space = ask_trial(SAMPLERS[runs.algo])[0].distributions
    again = retry_unfinished(study, {k: v for k, v in BEFORE_SEARCHED.items() if k in space})
    if again:
        print(f"[tune] tried again, with the runs they finished: {', '.join(again)}", flush=True)
    trial = None
    try:
        before = runs.evaluate("defaults", [])
        while len(study.get_trials(deepcopy=False, states=done)) < runs.trials:
            trial = study.ask()
            tag = trial.user_attrs.get("tag") or f"t{trial.number}"
            trial.set_user_attr("tag", tag)
            sets = set_texts(SAMPLERS[runs.algo](trial))
            trial.set_user_attr("set", sets)
            try:
                study.tell(trial, runs.evaluate(tag, sets, trial))
            except optuna.TrialPruned:
                study.tell(trial, state=TrialState.PRUNED)
            runs.save(f"trial {tag} told")
            trial = None
    except OutOfHours as e:
        if trial is not None:  # tried again, with its runs, by the next command
            study.tell(trial, state=TrialState.FAIL)
            runs.save(f"trial {trial.user_attrs['tag']} stopped: {e}")
        finished = len(study.get_trials(deepcopy=False, states=done))
        print(
            f"[tune] stopped {e}; {finished} of {runs.trials} trials "
            "done. The same command goes on.",
            flush=True,
        )
        return 0
    best = study.best_trial
    record = {
        "algo": runs.algo,
        "envs": [e.env for e in runs.envs],
        "defaults_score": before,
        "best_trial": best.number,
        "best_tag": best.user_attrs.get("tag", f"t{best.number}"),
        "best_score": best.value,
        "best_set": best.user_attrs.get("set", []),
        # Below the defaults' score, the search found nothing better: keep the defaults.
        "better_than_defaults": best.value > before,
        "command": runs.command,
    }
    atomic_write_text(runs.record / BEST_FILE, json.dumps(record, indent=2) + "\n")
    runs.save("the best trial", runs.record / BEST_FILE)
    verdict = "better than" if best.value > before else "no better than: keep"
    print(
        f"[tune] best: trial {best.number}, score {best.value:.3f}, {verdict} the defaults "
        f"({before:.3f}); {runs.record / BEST_FILE}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
