"""The Pong runs of record, as data; the queue that runs them is ``benchmarks/records.py``.

The scaling issue (the four at 1 and 4 env runners, Ape-X at 10, IMPALA at 13, 3 seeds each), the
confirmed-target issue (the four at one runner, 3 seeds) and the baseline issue (SB3's PPO) all
stand on Pong runs of 1 to 4 hours each, run alone on a 2-core machine, one at a time, each seed's
collected rows committed as it finishes. ``PLAN`` lists them in the order they serve the most;
one run serves every issue it names. A run is *collected* once its table
``results/pong/confirmed/<name>.csv.gz`` exists; the report over all of them is the Pong report,
``results/pong/REPORT.md``. After them the queue takes the env family's runs of record
(``benchmarks/family_records.py``: minutes each), so that the hours a Pong run leaves are used.

How to run
----------
    python -m benchmarks.pong_records                     # every run: status, issues, command
    python -m benchmarks.pong_records --hours 2.5 --dry-run   # what fits in 2.5 hours, and why
    nohup python -m benchmarks.pong_records --hours 2.5 --commit > records.log 2>&1 &

With ``--hours`` it runs, in order, each run not yet collected whose worst case fits in the hours
left: its training budget (what an interrupted run still has of it) times ``WALL_PER_TRAIN_S``,
plus ``FIXED_S`` for start-up, the final games and the report (``benchmarks/records.py`` says how
the queue stops at the end of its hours, resumes an interrupted run and commits). Nothing else may
run beside it: the runs time training on the whole machine.

The *rate runs* (``rate=True`` in ``PLAN``) are one sitting: every configuration of the scaling
table for a few minutes, one after another on the same machine, whose env steps/s the report
sets against the runs' env steps to 18 (``docs/scaling.md``, "Seconds on one machine"). The
queue starts them only where all that are left fit in its hours (never with ``--fill``), and
regenerates the report once, after the last. A sitting cut short (Ctrl-C) goes on in the next
queue, on that stretch's machine: another sitting, whose ratios with the first the report does
not take; remove ``results/pong/rates/`` to measure them all again.

Results to expect
-----------------
``results/pong/confirmed/<name>.csv.gz`` per run, ``results/pong/REPORT.md`` over all of them
(the earlier runs of record, stopped at the first crossing of 18: ``results/pong/first-crossing/``);
the rate runs' tables in ``results/pong/rates/``; the one-core check runs (``docs/scaling.md``)
go to ``results/scaling/``, with Ape-X's two-core runs in their sitting (right after each, on the
same box: ``sitting=True``), and ``results/scaling/CHECK.md`` is regenerated over them and their
two-core runs of record after each (``python -m analysis scaling-check``).
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.scaling_check import CHECK_MD, CHECK_RUNS, SITTING_S, span
from benchmarks import family_records, records
from benchmarks.records import Places
from sweeps.workloads.pong import PONG

RESULTS = Path("results/pong/confirmed")
RATES = Path("results/pong/rates")  # beside RESULTS: the rate runs' tables
REPORT = Path("results/pong")
CHECKS = Path("results/scaling")
# A run's wall-clock per second of its training budget (periodic greedy games and the trial's
# start-up, off the training clock; the committed runs: 1.01-1.06), and what every run adds.
WALL_PER_TRAIN_S = 1.1
FIXED_S = 900.0
# A rate run's start-up (13 runners on 2 cores: ~2 minutes) and collection: no final games.
RATE_FIXED_S = 240.0
# A check's two-core run in its one-core run's sitting: its training budget (to the same env steps
# as the one-core run's first ~1.4M: the prediction of time checked on one box, not the spread of
# env steps to 18 from run to run). How soon after the one-core run it must start: the check's
# own rule (analysis.scaling_check.SITTING_S).
SITTING_BUDGET_S = 1800


@dataclass(frozen=True)
class RecordRun:
    """One seed of one configuration, as ``python -m sweeps.benchmark`` runs it."""

    algo: str
    seed: int
    runners: int | None  # None: a single-process baseline
    budget_s: int  # --stop-train-time-s
    issues: str  # the issues it serves, "58 59"
    cpus: int = 2  # --num-cpus: Ray's CPUs, more than the cores on purpose beyond one runner
    one_core: bool = False  # the scaling check: the whole run pinned to one core
    # The check's two-core run in its one-core run's sitting: right after it, on the same box
    # (the runs of record it is also set against ran in other stretches, on boxes of other speed)
    sitting: bool = False
    stop_timesteps: int | None = None
    named: str | None = None  # the table's name where an earlier run chose it
    # A rate run (docs/scaling.md): a short run of the configuration whose env steps/s on a core
    # per process give the report's time on one machine; all of them in one sitting.
    rate: bool = False
    wall_per_train_s: float = WALL_PER_TRAIN_S

    @property
    def name(self) -> str:
        if self.named:
            return self.named
        if self.one_core:
            return f"pong-check-1core-{self.algo}-s{self.seed}"
        if self.sitting:
            return f"pong-check-2core-{self.algo}-s{self.seed}"
        runners = "" if self.runners is None else f"-r{self.runners}"
        if self.rate:
            return f"pong-rate-{self.algo}{runners}"
        return f"pong-conf-{self.algo}{runners}-s{self.seed}"

    @property
    def group(self) -> str | None:
        """The rate runs' sitting regenerates the report once, after its last run."""
        return "rates" if self.rate else None

    @property
    def fixed_s(self) -> float:
        """What the run adds to its training budget at most: start-up, final games, report."""
        return RATE_FIXED_S if self.rate or self.sitting else FIXED_S

    @property
    def final_episodes(self) -> int:
        """The check runs and the rate runs play no final games (``--final-episodes 0``)."""
        return 0 if self._checks or self.rate else PONG.benchmark_final_episodes

    @property
    def _checks(self) -> bool:
        """One of the check's runs (``results/scaling/``), on one core or in one's sitting."""
        return self.one_core or self.sitting

    def table(self, at: Places) -> Path:
        if self.rate:
            return at / RATES / f"{self.name}.csv.gz"
        return at / (CHECKS if self._checks else RESULTS) / f"{self.name}.csv.gz"

    def unavailable(self, at: Places | None = None) -> str | None:
        """Atari's ROMs come with the project's own dependencies; a sitting run waits for its
        one-core run, and runs only in its sitting (``SITTING_S`` after it at most)."""
        if not self.sitting:
            return None
        checked = RecordRun(self.algo, self.seed, self.runners, 7200, "58", one_core=True)
        table = checked.table(at or Places())
        if not table.exists():
            return f"its one-core run ({checked.name}) is not collected yet"
        ended = ended_at(table)
        if not ended or time.time() - ended > SITTING_S:
            return (
                f"its one-core run ({checked.name}) ended more than {SITTING_S / 3600:g} h ago: it "
                "would not share its box now (run both again to check them in one sitting)"
            )
        return None

    def benchmark_argv(self, storage: Path) -> list[str]:
        argv = ["--env", "pong", "--algos", self.algo, "--benchmark-seeds", "1"]
        argv += ["--seed", str(self.seed), "--num-cpus", str(self.cpus)]
        if self.runners is not None:
            argv += ["--num-env-runners", str(self.runners)]
        argv += ["--stop-train-time-s", str(self.budget_s)]
        if self.stop_timesteps is not None:
            argv += ["--stop-timesteps", str(self.stop_timesteps)]
        if self._checks or self.rate:
            argv += ["--final-episodes", "0"]
        return [*argv, "--storage-path", str(storage), "--name", self.name]

    def command(self, storage: Path) -> list[str]:
        return [*self._pin, sys.executable, "-m", "sweeps.benchmark", *self.benchmark_argv(storage)]

    def resume_command(self, folder: Path) -> list[str]:
        """The sweep command that goes on from a killed run's last checkpoint with its recorded
        settings (as the benchmark says when asked to reuse it), pinned as the run was."""
        module = PONG.sweep_module(self.algo)
        return [*self._pin, sys.executable, "-m", module, "--resume", str(folder)]

    @property
    def _pin(self) -> list[str]:
        return ["taskset", "-c", "0"] if self.one_core else []

    def report(self, at: Places) -> tuple[list[str], list[str]] | None:
        """The Pong report; after a check run, the check's (``check_command``)."""
        if self._checks:
            return check_command(at), [str(at / CHECKS / CHECK_MD)]
        return report_command(at / RESULTS, at / REPORT), records.report_paths(at / REPORT)

    def partner(self) -> RecordRun | None:
        """A check run's two-core run of record: the run of the same seed and runners."""
        return next(
            (
                r
                for r in PLAN
                if (r.algo, r.seed, r.runners, r.cpus) == (self.algo, self.seed, self.runners, 2)
                and not (r._checks or r.rate)
            ),
            None,
        )

    def commit_message(self, shown: str) -> str:
        return f"Pong run of record {self.name} (issues {self.issues}), collected: {shown}"


def _seeds(algo: str, runners: int | None, budget_s: int, issues: str, **kw) -> list[RecordRun]:
    return [RecordRun(algo, seed, runners, budget_s, issues, **kw) for seed in range(3)]


PLAN: tuple[RecordRun, ...] = (
    # The four at one runner, to a confirmed 18: the confirmed-target issue and the scaling
    # table's first column. Seeds run at 3,600 s first and missed are run again at 5,400 s.
    RecordRun("apex", 0, 1, 3600, "58 59", named="pong-conf-apex-s0"),
    RecordRun("apex", 1, 1, 5400, "58 59"),
    RecordRun("apex", 2, 1, 5400, "58 59"),
    RecordRun("appo", 0, 1, 3600, "58 59", named="pong-conf-appo-s0"),
    RecordRun("appo", 1, 1, 5400, "58 59"),
    RecordRun("appo", 2, 1, 3600, "58 59", named="pong-conf-appo-s2"),
    *_seeds("impala", 1, 5400, "58 59"),
    # The library a user would pick instead: one seed, budgeted as the four.
    RecordRun("sb3-ppo", 0, None, 5400, "60"),
    # Synchronous DQN is the slowest of the four (68 min to a training return of 18 on the
    # fastest box so far): a longer budget.
    *_seeds("dqn", 1, 7200, "58 59"),
    # The baseline again, budgeted as DQN (seed 0, at the four's 5,400 s, ended short of 18 and
    # still rising): a second seed, so that "is Ray worth it" rests on more than one.
    RecordRun("sb3-ppo", 1, None, 7200, "60"),
    # Four runners on two cores (Ray told 5 CPUs): env steps to 18 measured, time predicted.
    *_seeds("apex", 4, 5400, "58", cpus=5),
    RecordRun("appo", 0, 4, 5400, "58", cpus=5),
    # The rate runs: every configuration of the scaling table for a few minutes, one after
    # another on one machine (docs/scaling.md, "Seconds on one machine"): the runs of record ran
    # on the machine each stretch had, and their seconds compare across runs only roughly.
    # Each is measured over the second half of its training clock: Ape-X learns only after
    # 50,000 env steps, which take longer at 4 and 10 runners on 2 cores.
    *[
        RecordRun(
            algo, 0, runners, 300 if algo == "apex" else 240, "58", cpus=runners + 1, rate=True
        )
        for runners in (1, 4)
        for algo in ("apex", "appo", "impala", "dqn")
    ],
    RecordRun("apex", 0, 10, 600, "58", cpus=11, rate=True),
    RecordRun("impala", 0, 13, 300, "58", cpus=14, rate=True),
    *[RecordRun("appo", s, 4, 5400, "58", cpus=5) for s in (1, 2)],
    # The check that the time predicted on a core per process holds (docs/scaling.md): one runner
    # on one core predicts it on two (the 2-core runs are the one-runner runs above, seed for
    # seed). Before the other four-runner runs, whose predicted times rest on it.
    # Ape-X's each with a two-core run right after it, on the same box (``sitting``; APPO's
    # one-core runs came before it).
    *[RecordRun("appo", s, 1, 7200, "58", one_core=True) for s in (0, 1)],
    *[
        run
        for s in (0, 1)
        for run in (
            RecordRun("apex", s, 1, 7200, "58", one_core=True),
            RecordRun("apex", s, 1, SITTING_BUDGET_S, "58", sitting=True),
        )
    ],
    # IMPALA at 4 runners: seed 0 ran 5,400 s (4.84M env steps at ~900 env steps/s on 2 cores)
    # and its training games crossed 18 only at 4.60M, 270 s before its end, too late for a check
    # to confirm it (results/pong/confirmed/pong-conf-impala-r4-s0); the one-runner seeds needed
    # 3.4M-3.6M to cross. Seeds 1 and 2 get 7,200 s (about 6.4M env steps; worst case 2.45 h,
    # within a stretch): the Kaplan-Meier median takes each seed censored at its own budget.
    RecordRun("impala", 0, 4, 5400, "58", cpus=5),
    *[RecordRun("impala", s, 4, 7200, "58", cpus=5) for s in (1, 2)],
    *_seeds("dqn", 4, 7200, "58", cpus=5),
    # The source articles at their own scale: Ape-X with 10 actors, IMPALA with 13 workers.
    # Each within a working stretch (records.STRETCH_RUN_S): IMPALA's 13 runners sampled 542 env
    # steps/s on 2 cores in the rate sitting (results/pong/rates/), so 7,600 s hold about 4.1M
    # env steps, about what IMPALA needed to 18 at one runner (3.6M-4.4M on the seeds that
    # reached it); a seed that needs more is censored there, a miss the report shows as one.
    *_seeds("apex", 10, 7200, "58", cpus=11, stop_timesteps=5_000_000),
    *_seeds("impala", 13, 7600, "58", cpus=14, stop_timesteps=5_000_000),
)


def ended_at(table: Path) -> float | None:
    """When a collected run's training ended (seconds since the epoch, ``scaling_check.span``);
    None where its table holds no start or no result's time."""
    import pandas as pd

    try:
        ended = span(pd.read_csv(table, usecols=["started_at", "time_total_s"]))[1]
    except (OSError, ValueError, EOFError):
        return None
    return ended if math.isfinite(ended) else None


def report_command(results: Path, out: Path | None = None) -> list[str]:
    """The report over every collected table in ``results``, written to ``out`` (default: there),
    with the rate runs collected beside them (``--rates``)."""
    tables = sorted(str(p) for p in results.glob("pong-conf-*.csv.gz"))
    rates = sorted(str(p) for p in (results.parent / RATES.name).glob("pong-rate-*.csv.gz"))
    out = results if out is None else out
    rated = ["--rates", *rates] if rates else []
    return [sys.executable, "-m", "analysis", "report", *tables, *rated, "--out", str(out)]


def check_command(at: Places) -> list[str]:
    """``analysis scaling-check`` over the one-core runs collected so far and their two-core
    partners (``RecordRun.partner``), beside the runs it read before (its runs table: the cab
    env's checks and the earlier Pong probes, which live nowhere else), to ``CHECK.md``."""
    checks = [r for r in PLAN if r._checks and r.table(at).exists()]
    partners = [p for p in (c.partner() for c in checks) if p is not None and p.table(at).exists()]
    before = at / CHECKS / CHECK_RUNS
    tables = ([before] if before.exists() else []) + [r.table(at) for r in (*checks, *partners)]
    tables = list(dict.fromkeys(tables))  # a sitting run and its one-core run: one partner
    command = [sys.executable, "-m", "analysis", "scaling-check", *map(str, tables)]
    return [*command, "--out", str(at / CHECKS)]


# Pong's runs, then the env family's in the hours they leave.
QUEUE: tuple[records.Planned, ...] = (*PLAN, *family_records.PLAN)


def main(argv: Sequence[str] | None = None) -> int:
    parser = functools.partial(records.build_parser, "python -m benchmarks.pong_records", __doc__)
    return records.main(QUEUE, argv, parser, family_records.behind)


if __name__ == "__main__":
    sys.exit(main())
