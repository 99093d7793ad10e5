"""The env family's runs of record, as data: the four with the generic defaults as they stand (the
*before* of the defaults issue: tuned on CartPole-v1 alone), and Stable-Baselines3's DQN beside
them, on every env of ``sweeps/env_family.py``, 3 seeds each, one run per (env, algorithm, seed).

Each run is a few minutes (its env's budget: 120-1,200 s of training), so the queue
(``benchmarks/records.py``) fits them in the hours the long Pong runs leave
(``python -m benchmarks.pong_records`` takes them after Pong's), or runs them alone. A run is
*collected* once its table ``results/gym/before/<name>.csv.gz`` exists (each committed as it
is); once an env's runs are all collected, the family report over every collected run is
regenerated, the held-out envs apart: ``results/gym/before/REPORT.md``. The cheapest envs come
first, all their seeds before the next env's, so that each env's row is whole as soon as it can
be.

The before-runs are the defaults as they stood when the first began
(``results/gym/before/DEFAULTS.json``), one algorithm's apart from another's: once an
algorithm's defaults in ``sweeps/gym_family.py`` change, the queue skips its before-runs not yet
made and says why (run those from a checkout of the commit the file names); the others' go on.
The *after*-runs are the same runs of the four with the defaults the family's studies tuned
(``benchmarks/family_tune.py``), in ``results/gym/after/``, one algorithm's apart from another's
too: the queue skips an algorithm's until ``--begin-after ALGO`` records its defaults
(``results/gym/after/DEFAULTS.json``), and holds them to it as the before-runs to theirs; one
algorithm's after-runs may go while another's study is still running. An algorithm whose defaults
its study left as they were has no after-runs of its own: its before-runs are the same runs, and
serve as both (the family report shows them once, and says so). The baseline is run once, with
the before.

LunarLander and the MinAtar games need the ``family`` install extra (``pip install -e
".[family]"``); where it is missing, their runs are skipped and say so.

How to run
----------
    python -m benchmarks.family_records                       # every run: status, command
    python -m benchmarks.family_records --hours 1 --dry-run   # what fits in an hour
    nohup python -m benchmarks.family_records --hours 1 --commit > family.log 2>&1 &
    python -m benchmarks.family_records --begin-after apex  # its tuned defaults committed: go

Results to expect
-----------------
``results/gym/before/<name>.csv.gz`` per run and ``results/gym/before/REPORT.md`` over them: per
env, the seeds that reached its target, time and env steps to it, the collapse flag, and across
the family how often each algorithm was fastest. Once after-runs are in: ``results/gym/after/``,
and the family report ``results/gym/REPORT.md`` (the four tuned, the baseline, and each of the
four before its tuning as "<algo> (before)" in the same tables).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks import records
from benchmarks.records import Places
from sweeps.benchmark import ALGOS
from sweeps.env_family import FAMILY, HELD_OUT, TUNING, FamilyEnv, missing
from sweeps.harness.files import atomic_write_text
from sweeps.workloads import for_env

# The generic defaults as they stand: run before the family tunes them; the tuned ones are the
# next stage, in a folder of their own, once it has begun (``--begin-after ALGO``).
STAGE = "before"
AFTER = "after"
FAMILY_RESULTS = Path("results/gym")  # the family report: after beside before, and the baseline
RESULTS = FAMILY_RESULTS / STAGE
AFTER_RESULTS = FAMILY_RESULTS / AFTER
BASELINE = "sb3-dqn"  # the baseline of the defaults issue: rl-zoo3's tuned DQN
SEEDS = (0, 1, 2)
# A family run's wall-clock per training second (periodic greedy evaluation within 25% of the
# training clock, and the trial's start-up) and what each run adds (Ray's start, the report).
WALL_PER_TRAIN_S = 1.5
FIXED_S = 300.0


@functools.cache
def _why_not(env: str) -> str | None:
    """Why the family's env ``env`` (its id) cannot be built here (one line), or None."""
    problems = missing([FAMILY[env]])
    return problems[0] if problems else None


# The generic defaults the before-runs run with (``sweeps/gym_family.py`` as it stood when they
# began), as data: once the defaults change, a before-run not yet made would not be the before.
BEFORE_DEFAULTS = Path(__file__).resolve().parents[1] / RESULTS / "DEFAULTS.json"
# ... and those the after-runs run with, each algorithm's written when its after stage begins.
AFTER_DEFAULTS = Path(__file__).resolve().parents[1] / AFTER_RESULTS / "DEFAULTS.json"


def generic_defaults() -> dict[str, Any]:
    """What ``sweeps/gym_family.py`` gives every run of the four on a generic env (its tuned
    settings, fragment lengths and hidden layers, and Ape-X's two-core layout), as JSON holds
    it."""
    from sweeps import gym_family
    from sweeps.algorithms.apex.config import TWO_CORE_APEX

    now = {
        "tuned": gym_family.TUNED,
        "fragment": gym_family.FRAGMENT,
        "hiddens": gym_family.HIDDENS,
        "apex_layout": TWO_CORE_APEX,
    }
    return json.loads(json.dumps(now, sort_keys=True))


def of_algo(defaults: dict[str, Any], algo: str) -> dict[str, Any]:
    """What of the generic defaults (as ``generic_defaults`` gives them, or a DEFAULTS.json holds
    them) the runs of ``algo`` use: its tuned settings, its fragment, the hidden layers (one for
    all, or one per algorithm), and Ape-X's layout for Ape-X."""
    hiddens = defaults["hiddens"]
    mine = {
        "tuned": defaults["tuned"][algo],
        "fragment": defaults["fragment"][algo],
        "hiddens": hiddens[algo] if isinstance(hiddens, dict) else hiddens,
    }
    if algo == "apex":
        mine["apex_layout"] = defaults["apex_layout"]
    return mine


def recorded_defaults(stage: str, algo: str) -> dict[str, Any] | None:
    """The defaults ``algo``'s runs at ``stage`` run with (``of_algo``): the before-runs' from
    ``BEFORE_DEFAULTS`` (one record for the four), the after-runs' from ``AFTER_DEFAULTS`` (one
    per algorithm, written as its after stage begins); None before its stage has begun."""
    if stage == STAGE:
        if not BEFORE_DEFAULTS.is_file():
            return None
        return of_algo(json.loads(BEFORE_DEFAULTS.read_text())["defaults"], algo)
    begun = json.loads(AFTER_DEFAULTS.read_text()) if AFTER_DEFAULTS.is_file() else {}
    return begun[algo]["defaults"] if algo in begun else None


@functools.cache
def _defaults_changed(stage: str, algo: str) -> str | None:
    """Why a run of ``algo`` (one of the four) at ``stage`` cannot run now: its defaults are not
    those its stage ran with (``BEFORE_DEFAULTS``, ``AFTER_DEFAULTS``), or its after stage has not
    begun; None where they are."""
    path, folder = (BEFORE_DEFAULTS, RESULTS) if stage == STAGE else (AFTER_DEFAULTS, AFTER_RESULTS)
    recorded = recorded_defaults(stage, algo)
    if recorded is None:
        return (
            f"{algo}'s {stage} stage has not begun: once its study has tuned its defaults in "
            "sweeps/gym_family.py (or left them), `python -m benchmarks.family_records "
            f"--begin-after {algo}` records those it runs with"
        )
    if recorded == of_algo(generic_defaults(), algo):
        return None
    return (
        f"{algo}'s generic defaults are no longer those its {stage}-runs ran with ({path.name}"
        f" in {folder}): run it from a checkout of the commit named there"
    )


@functools.cache
def left_as_they_were(algo: str) -> bool:
    """Whether ``algo``'s after stage has begun with the defaults of its before-runs (its study
    left them): its before-runs then serve as its after-runs."""
    after = recorded_defaults(AFTER, algo)
    return after is not None and after == recorded_defaults(STAGE, algo)


def clear() -> None:
    """Forget what was read of the stages' defaults (they were just written, or a test swapped
    them)."""
    _defaults_changed.cache_clear()
    left_as_they_were.cache_clear()


def begin_after(algos: Sequence[str]) -> list[str]:
    """Record each of ``algos``' defaults as they stand as its after stage's (``AFTER_DEFAULTS``),
    from which its after-runs are made (where they are still its before-runs', those serve as
    its after-runs), one line each; a ValueError, with nothing written, where one is not of the
    four or its after stage has begun already."""
    import subprocess

    begun = json.loads(AFTER_DEFAULTS.read_text()) if AFTER_DEFAULTS.is_file() else {}
    for algo in algos:
        if algo not in ALGOS:
            raise ValueError(f"--begin-after: {algo!r} is not one of {', '.join(ALGOS)}")
        if algo in begun:
            raise ValueError(
                f"{algo}'s after stage has begun already ({begun[algo]['commit']}): "
                f"{AFTER_DEFAULTS}"
            )
    head = subprocess.run(
        ["git", "log", "-1", "--format=%h (%cs)"], capture_output=True, text=True, check=False
    ).stdout.strip()
    lines = []
    for algo in dict.fromkeys(algos):
        begun[algo] = {"commit": head or "unknown", "defaults": of_algo(generic_defaults(), algo)}
        same = begun[algo]["defaults"] == recorded_defaults(STAGE, algo)
        lines.append(
            f"{algo}'s after stage begins with its defaults of {begun[algo]['commit']} "
            f"({AFTER_DEFAULTS})"
            + (
                ": its study left them as they were, so its before-runs serve as its after-runs"
                if same
                else ""
            )
        )
    AFTER_DEFAULTS.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(AFTER_DEFAULTS, json.dumps(begun, indent=2, sort_keys=True) + "\n")
    clear()
    return lines + [f"{r.why}: the next queue regenerates it" for r in behind(Places())]


@dataclass(frozen=True)
class FamilyRun:
    """One seed of one algorithm on one env of the family, as ``python -m sweeps.benchmark``
    runs it."""

    env: FamilyEnv
    algo: str
    seed: int
    stage: str = STAGE  # the four's: before (the defaults as they stood) or after (the tuned)
    issues: str = "64"
    rate: bool = False
    one_core: bool = False
    wall_per_train_s: float = WALL_PER_TRAIN_S
    fixed: float = FIXED_S  # what it adds to its budget (``fixed_s``)
    final_episodes: int = 0  # greedy evaluation runs throughout: no final games

    @property
    def prefix(self) -> str:
        stage = "" if self.algo == BASELINE else f"{self.stage}-"
        return f"family-{stage}{self.algo}-s{self.seed}"

    @property
    def name(self) -> str:
        return f"{self.prefix}-{self.env.slug}"  # as FamilyEnv.benchmark_argv names it

    @property
    def group(self) -> str:
        """An env's runs of one stage (the baseline's with the before): the stage's report (and
        its charts) regenerates once all of them are in."""
        return f"{self.results}:{self.env.env}"

    @property
    def budget_s(self) -> float:
        """Its env's budget; none for an after-run that a before-run serves (never run)."""
        return 0.0 if self.serves is not None else self.env.budget_s

    @property
    def fixed_s(self) -> float:
        return 0.0 if self.serves is not None else self.fixed

    @property
    def results(self) -> Path:
        """Its stage's folder (the baseline's runs: the before's, made once)."""
        return RESULTS if self.algo == BASELINE or self.stage == STAGE else AFTER_RESULTS

    @property
    def serves(self) -> FamilyRun | None:
        """The before-run that serves as this after-run, where its study left its algorithm's
        defaults as they were (the same run: it is made once, in the before stage); else None."""
        if self.stage == AFTER and self.algo != BASELINE and left_as_they_were(self.algo):
            return replace(self, stage=STAGE)
        return None

    def table(self, at: Places) -> Path:
        """Its collected table (an after-run served by a before-run: that run's)."""
        if self.serves is not None:
            return self.serves.table(at)
        return at / self.results / f"{self.name}.csv.gz"

    def unavailable(self, at: Places | None = None) -> str | None:
        if self.serves is not None:
            if _defaults_changed(AFTER, self.algo):  # (left as they were, then changed)
                return _defaults_changed(AFTER, self.algo)
            return (
                f"its study left {self.algo}'s defaults as they were: its before-run "
                f"{self.serves.name} serves as this one (made in the before stage)"
            )
        if self.algo != BASELINE and _defaults_changed(self.stage, self.algo):  # (the baseline's
            return _defaults_changed(self.stage, self.algo)  # hyperparameters are its own)
        return _why_not(self.env.env)

    def command(self, storage: Path) -> list[str]:
        passed = ["--algos", self.algo, "--benchmark-seeds", "1", "--seed", str(self.seed)]
        argv = self.env.benchmark_argv(self.prefix, 1.0, [*passed, "--storage-path", str(storage)])
        return [sys.executable, "-m", "sweeps.benchmark", *argv]

    def resume_command(self, folder: Path) -> list[str]:
        module = for_env(self.env.env).sweep_module(self.algo)
        return [sys.executable, "-m", module, "--resume", str(folder)]

    def report(self, at: Places) -> tuple[list[str], list[str]]:
        if self.stage == AFTER and self.algo != BASELINE:
            return final_report_command(at), records.report_paths(at / FAMILY_RESULTS)
        return report_command(at / RESULTS), records.report_paths(at / RESULTS)

    def commit_message(self, shown: str) -> str:
        return f"Env family run of record {self.name} (issue {self.issues}), collected: {shown}"


def report_command(folder: Path) -> list[str]:
    """The family report over every collected table in ``folder``, the held-out envs apart."""
    tables = sorted(str(p) for p in folder.glob("family-*.csv.gz"))
    held_out = ["--held-out", *(e.env for e in HELD_OUT)]
    return [sys.executable, "-m", "analysis", "report", *tables, *held_out, "--out", str(folder)]


def final_report_command(at: Places) -> list[str]:
    """The family report (``results/gym/REPORT.md``): the four with the tuned defaults and the
    baseline, the four's before-runs beside them in the same tables (``--before``), the held-out
    envs apart. An algorithm the studies left as it was shows once: its before-runs as its own."""
    after = sorted(str(p) for p in (at / AFTER_RESULTS).glob("family-*.csv.gz"))
    baseline = sorted(str(p) for p in (at / RESULTS).glob(f"family-{BASELINE}-*.csv.gz"))
    before, serving = [], []  # (an algorithm the studies left: its before-runs, once, as its own)
    for path in sorted((at / RESULTS).glob(f"family-{STAGE}-*.csv.gz")):
        rest = path.name.removeprefix(f"family-{STAGE}-")
        algo = next((a for a in ALGOS if rest.startswith(f"{a}-s")), None)
        (serving if algo and left_as_they_were(algo) else before).append(str(path))
    after += serving
    held_out = ["--held-out", *(e.env for e in HELD_OUT)]
    before_ = ["--before", *before] if before else []
    inputs = [*after, *baseline, *before_, *held_out]
    return [sys.executable, "-m", "analysis", "report", *inputs, "--out", str(at / FAMILY_RESULTS)]


def reported(report: Path) -> set[str] | None:
    """The names of the tables a report was made from (its first lines give the command that
    made it, ``analysis.report``); None where there is no report."""
    if not report.is_file():
        return None
    for line in report.read_text().splitlines()[:12]:
        if line.startswith("Generated by `python -m analysis report "):
            return {Path(word).name for word in line.split() if word.endswith(".csv.gz")}
    return set()


def behind(at: Places, plan: Sequence[FamilyRun] | None = None) -> list[records.Refresh]:
    """The family's reports behind their runs, to regenerate: a report with a run collected since
    it was made whose group is whole (as ``records.execute`` regenerates one as a group's last run
    is collected). This catches the runs collected without running: an after-run that its
    before-run serves is collected when that is, or when ``--begin-after`` says the study left
    its algorithm as it was. The queue regenerates them at its end."""
    plan = PLAN if plan is None else plan
    found = []
    for stage, folder, command in (
        (STAGE, at / RESULTS, report_command(at / RESULTS)),
        (AFTER, at / FAMILY_RESULTS, final_report_command(at)),
    ):
        runs: dict[str, list[FamilyRun]] = {}  # a table's runs (a serving before-run's: two)
        for run in plan:
            if run.stage == stage:
                runs.setdefault(run.table(at).name, []).append(run)
        inputs = {Path(word).name for word in command if word.endswith(".csv.gz")}
        new = sorted((inputs - (reported(folder / "REPORT.md") or set())) & set(runs))
        groups = {run.group for name in new for run in runs[name]}
        whole = [g for g in groups if records.group_whole(g, plan, at)]
        if whole:
            why = f"{folder / 'REPORT.md'} is behind {len(new)} collected run(s)"
            found.append(records.Refresh(command, records.report_paths(folder), why))
    return found


def _stage(stage: str, algos: Sequence[str]) -> tuple[FamilyRun, ...]:
    """A stage's runs: the cheapest envs first, each env's seeds whole before the next env's."""
    return tuple(
        FamilyRun(env, algo, seed, stage)
        for env in sorted((*TUNING, *HELD_OUT), key=lambda e: e.budget_s)
        for seed in SEEDS
        for algo in algos
    )


# The before-runs (with the baseline beside them), then the after-runs of the four: each skipped,
# and saying why, until its algorithm's after stage has begun.
PLAN: tuple[FamilyRun, ...] = (*_stage(STAGE, (*ALGOS, BASELINE)), *_stage(AFTER, ALGOS))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--begin-after" in argv:  # (the queue's own flags are records.build_parser's)
        at = argv.index("--begin-after")
        algos = [a for a in (argv[at + 1] if at + 1 < len(argv) else "").split(",") if a]
        try:
            if not algos:
                four = ",".join(ALGOS)
                raise ValueError(f"--begin-after needs one or more of {four} (comma-separated)")
            for line in begin_after(algos):
                print(f"[records] {line}")
        except ValueError as e:
            print(f"python -m benchmarks.family_records: error: {e}", file=sys.stderr)
            return 2
        return 0
    parser = functools.partial(records.build_parser, "python -m benchmarks.family_records", __doc__)
    return records.main(PLAN, argv, parser, behind)


if __name__ == "__main__":
    sys.exit(main())
