"""The sweep's wall-clock cap (``--time-budget-s``), and a sweep cut short by it, said plainly.

The cap is a safety net, not the budget: a sweep's work is its trials × env steps (ASHA prunes by
env steps), and the cap stops it only where the machine is slower than planned. When the sweep's
clock (every run of it, a resume's included) reaches the cap, ``WallClockCap`` stops the sweep
as a Ctrl-C does (``recovery.on_stop_signal``: Tune's SIGUSR1 stop, which saves the experiment
state with the running trials at their last checkpoints and the searcher and scheduler as they
are) and sets ``CUT_SHORT``. The run record says how many of the planned trials ran
(``CutShort``), the summary says so on its first line with the command that finishes the same
search, and ``--resume <folder> --time-budget-s N`` does: the cut trials go on from their
checkpoints and the searcher draws the rest, as after any interruption.

Not Tune's ``TuneConfig(time_budget_s=...)``: when its ``TimeoutStopper`` fires, Tune marks the
searcher finished and the running trials terminated (``TuneController._stop_experiment_if_needed``
in Ray 2.60.0), so a resumed sweep draws no new trial and the cut trials stay cut; and the
stopper's remaining budget is restored with the experiment state, so a resume could not be
given more. Sweeps recorded with Tune's budget resume under it as they began.
"""

from __future__ import annotations

import datetime as dt
import math
import signal
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray.tune.callback import Callback
from ray.tune.experiment import Trial

from sweeps.harness.settings import Settings

if TYPE_CHECKING:
    from sweeps.harness.record import RunRecord
    from sweeps.harness.sweep import Cost, Sweep

# Set when the cap stopped the sweep. Module-level, as recovery.INTERRUPTED: Tune pickles the
# callbacks into tuner.pkl and a resumed sweep runs the unpickled copies.
CUT_SHORT = threading.Event()
# This call's cap on the sweep's whole clock (seconds; None: no cap), set by the runner before
# Tune starts: a resume's --time-budget-s replaces the recorded one, which the pickled callback
# could not learn otherwise.
_CAP_S: list[float | None] = [None]
# What the sweep had run when the cap stopped it (WallClockCap, at the cut), and the ids of the
# trials running then (one whose last result was already on its way ends after the cut).
_AT_CUT: list[CutShort | None] = [None]
_RUNNING_AT_CUT: set[str] = set()
# A larger budget is suggested with this margin over the extrapolated need, in whole minutes.
# Generous on purpose: the search's work ends it, the cap only stops a hang, and a resume on a
# busier or slower machine than the first run's (this box's speed varies 2.5-3x) that is cut
# short again costs the user a second resume.
RESUME_MARGIN = 2.0
# The default cap is at least this many times the plan's predicted wall-clock: a safety net for
# a machine slower than predicted, never the budget itself.
CAP_MARGIN = 1.5
# The flags that set a search's work besides its trial count: a measured cost predicts only a
# search with the same (the trial count scales it).
WORK_FLAGS = (
    "variant",
    "scheduler",
    "stop_timesteps",
    "grace_period",
    "reduction_factor",
    "stop_reward",
    "stop_train_time_s",
    "num_env_runners",
    "num_envs_per_env_runner",
    "max_concurrent_trials",
    "eval_interval",
    "eval_episodes",
    "eval_share",
    "final_episodes",
)


@dataclass
class CutShort:
    """How far a sweep got before its cap: trials planned, ended (completed, pruned or errored),
    running at the cut (they go on from their checkpoints at --resume) and never started; the
    sweep's clock and its cap (seconds)."""

    planned: int
    ended: int
    running: int
    elapsed_s: float
    budget_s: float

    @property
    def ran(self) -> int:
        return self.ended + self.running

    @property
    def never_started(self) -> int:
        return max(self.planned - self.ran, 0)

    def suggested_budget_s(self) -> float:
        """A cap that should finish the search: the clock so far plus the trials not ended at
        the mean clock per ended trial (a trial still running counts half), with a margin,
        rounded up to a minute. ASHA prunes later trials earlier, so the mean over the first
        ones is on the generous side."""
        done = self.ended + 0.5 * self.running
        per_trial = self.elapsed_s / max(done, 1.0)
        need = self.elapsed_s + (self.planned - done) * per_trial
        return 60.0 * math.ceil(need * RESUME_MARGIN / 60.0)

    def line(self) -> str:
        """The summary's first line: "cut short: 9 of 24 trials ran ..."."""
        parts = [f"{self.ended} ended"]
        if self.running:
            parts.append(f"{self.running} stopped mid-trial, to go on at --resume")
        parts.append(f"{self.never_started} never started")
        return (
            f"cut short: {self.ran} of {self.planned} trials ran ({', '.join(parts)}); the "
            f"sweep's {clock(self.budget_s)} wall-clock cap ran out at {clock(self.elapsed_s)}"
        )

    def resume_command(self, sweep_name: str, experiment: str) -> str:
        """The command that finishes the same search."""
        return (
            f"python sweeps/{sweep_name}.py --resume {experiment} "
            f"--time-budget-s {self.suggested_budget_s():.0f}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ran": self.ran, "never_started": self.never_started}


def arm(cap_s: float | None) -> None:
    """This call's cap (the runner's, before Tune starts); clears a previous call's cut."""
    _CAP_S[0] = cap_s
    _AT_CUT[0] = None
    _RUNNING_AT_CUT.clear()
    CUT_SHORT.clear()


def disarm() -> None:
    """No cap any more (the runner's, when its call ends; what the sweep ran stays readable)."""
    _CAP_S[0] = None


def cap_s(default: float | None = None) -> float | None:
    """The armed cap; ``default`` where none is armed (a callback outside the runner)."""
    return default if _CAP_S[0] is None else _CAP_S[0]


def at_cut() -> CutShort | None:
    """What the sweep had run when its cap stopped it (None: it was not cut)."""
    return _AT_CUT[0] if CUT_SHORT.is_set() else None


class SweepClock(Callback):
    """A Tune callback that keeps the sweep's wall-clock: a resumed sweep's goes on from the runs
    before, as Tune counts its ``time_budget_s`` (the seconds so far are this callback's state,
    which Tune saves with its experiment state and hands back on a resume)."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._elapsed_before_s = 0.0  # the runs before this one (a resumed sweep)

    def setup(self, **info: Any) -> None:
        self._start = time.monotonic()

    def elapsed_s(self) -> float:
        """The sweep's wall-clock so far, the runs before a resume included."""
        return self._elapsed_before_s + time.monotonic() - self._start

    def get_state(self) -> dict[str, Any]:
        return {"elapsed_s": self.elapsed_s()}

    def set_state(self, state: dict[str, Any]) -> None:
        self._elapsed_before_s = float(state.get("elapsed_s", 0.0))
        self._start = time.monotonic()


class WallClockCap(SweepClock):
    """Stops the sweep, as a Ctrl-C does, once its clock (``SweepClock``) reaches the armed cap
    (``arm``). ``planned``: the trials the sweep plans."""

    def __init__(self, planned: int) -> None:
        super().__init__()
        self._planned = planned

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        cap = _CAP_S[0]
        if cap is None or CUT_SHORT.is_set() or self.elapsed_s() < cap:
            return
        from sweeps.harness import recovery

        if recovery.INTERRUPTED.is_set():  # a Ctrl-C got there first: an interruption
            return
        ended = sum(t.status in (Trial.TERMINATED, Trial.ERROR) for t in trials)
        running = [t.trial_id for t in trials if t.status in (Trial.RUNNING, Trial.PAUSED)]
        _AT_CUT[0] = CutShort(self._planned, ended, len(running), self.elapsed_s(), cap)
        _RUNNING_AT_CUT.update(running)
        CUT_SHORT.set()
        print(f"[sweep] {_AT_CUT[0].line()}; stopping as a Ctrl-C stops it", flush=True)
        # Tune's own stop (ray.tune.tune._setup_signal_catching): it saves the experiment state
        # and returns; the trials stay resumable.
        signal.raise_signal(signal.SIGUSR1)

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any):
        _ended_after_cut(trial)

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any):
        _ended_after_cut(trial)


def _ended_after_cut(trial: Trial) -> None:
    """A trial counted running at the cut whose last result, on its way then, ended it while
    Tune stopped: ended, not to go on at --resume (Tune's stop at the end of an experiment
    calls no ``on_trial_complete``, so only a trial that really ended comes here)."""
    cut = _AT_CUT[0]
    if cut is None or trial.trial_id not in _RUNNING_AT_CUT:
        return
    _RUNNING_AT_CUT.discard(trial.trial_id)
    _AT_CUT[0] = replace(cut, ended=cut.ended + 1, running=cut.running - 1)


def clock(seconds: float) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour."""
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


# ------------------------------------------------------------------------------------------------
# The plan: the search's work, its predicted wall-clock on this machine, and the cap's default
# ------------------------------------------------------------------------------------------------


@dataclass
class Prediction:
    """The search's wall-clock predicted on this machine, and what it rests on; ``low`` and
    ``high``: the same at the least and the most work a measured search of it ran (None where
    the costs did not count their env steps)."""

    seconds: float
    basis: str
    low: float | None = None
    high: float | None = None


def work(args: Settings) -> dict[str, Any]:
    """The flags that set the search's work, as a measured ``Cost`` records them."""
    return {"num_samples": args.num_samples, **{k: getattr(args, k) for k in WORK_FLAGS}}


def nearest(costs: tuple[Cost, ...], cores: int, cpu: str = "") -> tuple[Cost, ...]:
    """The costs measured on the core count nearest this machine's (the larger on a tie), and
    among those, the ones measured on this CPU model. CPU work per env step is not fixed across
    core counts (a run squeezed onto fewer cores than it has busy processes spends more CPU on
    the same work), nor is the raw env rate a measure of the whole run's speed across CPU models
    (it times the env's steps, not the learner's): a measurement on the same count and model
    beats a scaled one (results/cabs/OVERHEAD.md)."""

    def distance(c: Cost) -> tuple[int, bool, int]:
        return abs(c.cores - cores), bool(cpu) and c.cpu != cpu, -c.cores

    best = min(map(distance, costs))
    return tuple(c for c in costs if distance(c) == best)


def predict(
    sweep: Sweep, args: Settings, speed: float | None, cores: int, cpu: str = ""
) -> tuple[Prediction | None, str]:
    """The search's wall-clock on this machine, from the measured costs of the same search on
    the nearest core count and CPU model (``nearest``). Each one's wall-clock and busy seconds
    are scaled by the machine's speed (the raw env rate, measured at the start: one process's
    speed, ``cost.raw_env_rate / speed``) and its cores (the busy seconds spread over
    ``cores``, never below the measured wall-clock: trials run one after another):
    ``max(wall, busy / cores) × rate ratio``, per env step the search ran, averaged over those
    costs; times the work of the search, which the flags do not fix (ASHA promotes more or
    fewer trials as the seed goes): the mean env steps of every measured search of it, on any
    machine (env steps compare everywhere), the least and the most giving the range; per trial
    planned. Costs that did not count their env steps scale their wall-clock alone. None and
    why where there is nothing to predict from."""
    costs = sweep.costs.get(args.variant or "")
    if not costs:
        return None, "no measured cost for this search (Sweep.costs)"
    if speed is None or speed <= 0:
        return None, "the machine's speed was not measured"
    group = nearest(costs, cores, cpu)
    wanted, measured = work(args), dict(group[0].work)
    differs = [k for k in WORK_FLAGS if wanted.get(k) != measured.get(k)]
    if differs:
        names = ", ".join("--" + k.replace("_", "-") for k in differs)
        return None, f"measured for the default search only ({names} differ)"

    def here(c: Cost) -> float:  # the cost's search on this machine, its work as it came out
        return max(c.wall_s, c.busy_s / max(cores, 1)) * c.raw_env_rate / speed

    per_trial = args.num_samples / max(int(measured.get("num_samples") or 1), 1)
    runs = "; ".join(
        f"{clock(c.wall_s)} for {c.work.get('num_samples')} trials"
        + (f" and {c.env_steps:,.0f} env steps" if c.env_steps else "")
        + f" on {c.cores} core(s) at {c.raw_env_rate:,.0f} raw env steps/s ({c.source})"
        for c in group
    )
    steps = [c.env_steps for c in costs if c.env_steps and dict(c.work) == measured]
    if steps and all(c.env_steps for c in group):
        per_step = sum(here(c) / c.env_steps for c in group) / len(group)
        mean = sum(steps) / len(steps)
        prediction = Prediction(
            per_step * mean * per_trial,
            f"measured {runs}; the work: {mean:,.0f} env steps, the mean of the {len(steps)} "
            f"searches measured ({min(steps):,.0f}-{max(steps):,.0f}: ASHA's promotions vary "
            "with the seed)",
            per_step * min(steps) * per_trial,
            per_step * max(steps) * per_trial,
        )
    else:
        seconds = sum(map(here, group)) / len(group) * per_trial
        prediction = Prediction(seconds, f"measured {runs}")
    if cpu and group[0].cpu and group[0].cpu != cpu:
        prediction.basis += (
            f"; measured on another CPU model ({group[0].cpu}): a rough figure, the raw env "
            "rate times the env, not the learner"
        )
    return prediction, ""


def search_env_steps(folder: str | Path) -> float:
    """The env steps a sweep's trials ran, summed: each trial folder's last whole result row (a
    driver killed mid-write leaves a torn last line, passed over)."""
    from ray.air.constants import EXPR_RESULT_FILE

    from sweeps.harness import keys
    from sweeps.harness.files import json_lines

    total = 0.0
    for result in Path(folder).glob(f"*/{EXPR_RESULT_FILE}"):
        rows, _ = json_lines(result.read_text(errors="replace"))
        if rows:
            total += float(keys.get(rows[-1], keys.ENV_STEPS, 0) or 0)
    return total


def cost_from_record(record: RunRecord, source: str) -> Cost:
    """A sweep's measured cost, from its run record (a finished default search, resumed or
    not): what a sweep file's ``costs`` holds, printed by ``python -m sweeps.harness.budget
    <sweep folder>``."""
    from sweeps.harness.cli import RECORDED_BEFORE
    from sweeps.harness.sweep import Cost

    start, end = record.started_at, record.ended_at
    if record.status != "finished" or not start or not end or record.args is None:
        raise ValueError(f"{source}: not a finished sweep (status {record.status!r})")
    machine = record.machine
    if machine.busy_s is None or not machine.raw_env_steps_per_s_at_start:
        raise ValueError(f"{source}: its record has no busy seconds or machine speed")
    return Cost(
        wall_s=_wall_s(record),
        busy_s=float(machine.busy_s),
        raw_env_rate=float(machine.raw_env_steps_per_s_at_start),
        cores=int(machine.cores or 0),
        work=work(Settings.from_dict({**RECORDED_BEFORE, **record.args}, strict=False)),
        source=source,
        cpu=machine.cpu_model or "",
        env_steps=search_env_steps(source),
    )


def _wall_s(record: RunRecord) -> float:
    """The sweep's wall-clock, start to summary, less the pauses between its runs (a resumed
    sweep: each resume's start less where the run before ended; its own start-up counts)."""
    when = dt.datetime.fromisoformat
    wall = (when(record.ended_at) - when(record.started_at)).total_seconds()
    for resume in record.resumes or []:
        if resume.get("previous_ended_at") and resume.get("at"):
            wall -= (when(resume["at"]) - when(resume["previous_ended_at"])).total_seconds()
    return wall


def default_cap(given_s: float | None, prediction: Prediction | None) -> float | None:
    """The cap where none was given: the sweep's default, raised to ``CAP_MARGIN`` × the
    predicted wall-clock where that is longer (rounded up to a minute)."""
    if prediction is None or given_s is None:
        return given_s
    return max(given_s, 60.0 * math.ceil(CAP_MARGIN * prediction.seconds / 60.0))


def plan_lines(
    sweep: Sweep, args: Settings, speed: float | None, cores: int, cpu: str = ""
) -> list[str]:
    """The search's work and its predicted wall-clock on this machine, printed before the first
    trial; a new sweep whose cap was not given gets its default from the prediction
    (``default_cap``, set on ``args``). Nothing for a benchmark (no cap by default) or a
    resume (its cap is the recorded one, or the one given)."""
    if args.benchmark_seeds or args.resume:
        return []
    from sweeps.harness.dry_run import asha_rungs

    lines = [
        f"[plan] the search: {args.num_samples} trials of up to {args.stop_timesteps:,} env "
        "steps each"
    ]
    if args.scheduler == "asha":
        rungs = asha_rungs(
            {
                "grace_period": min(args.grace_period, args.stop_timesteps),
                "max_t": args.stop_timesteps,
                "reduction_factor": args.reduction_factor,
            }
        )
        lines[0] += (
            "; ASHA judges them at " + ", ".join(f"{r:,}" for r in rungs) + " env steps (the "
            "budget is this work: a slower machine runs the same search, slower)"
        )
    prediction, why = predict(sweep, args, speed, cores, cpu)
    where = f"{speed:,.0f} raw env steps/s, {cores} core(s)" if speed else f"{cores} core(s)"
    if prediction is None:
        lines.append(f"[plan] predicted wall-clock on this machine ({where}): none, {why}")
    else:
        span = ""
        if prediction.low is not None and prediction.high is not None:
            span = f", {clock(prediction.low)}-{clock(prediction.high)} by the work measured"
        lines.append(
            f"[plan] predicted wall-clock on this machine ({where}): "
            f"{clock(prediction.seconds)}{span} ({prediction.basis})"
        )
    cap = args.time_budget_s
    if args.cap_from_plan:
        args.time_budget_s = default_cap(cap, prediction)
        if args.time_budget_s != cap:
            lines.append(
                f"[plan] wall-clock cap {clock(args.time_budget_s)}: the default {clock(cap)} "
                f"raised to {CAP_MARGIN:g}x the prediction on this slower machine"
            )
            return lines
    if args.time_budget_s is None:
        lines.append("[plan] no wall-clock cap: the search runs to its end")
    elif prediction is not None and prediction.seconds > args.time_budget_s:
        fits = 60.0 * math.ceil(CAP_MARGIN * prediction.seconds / 60.0)
        lines.append(
            f"[plan] wall-clock cap {clock(args.time_budget_s)} is below the prediction: the "
            f"search will likely be cut short (--time-budget-s {fits:.0f} fits it)"
        )
    else:
        fits = "the search fits it" if prediction is not None else "a safety net"
        lines.append(f"[plan] wall-clock cap {clock(args.time_budget_s)}: {fits}")
    return lines


if __name__ == "__main__":  # python -m sweeps.harness.budget runs/<sweep>: its cost, as data
    import sys

    from sweeps.harness.record import RECORD_FILE, RunRecord

    for folder in sys.argv[1:]:
        try:
            print(repr(cost_from_record(RunRecord.read(f"{folder}/{RECORD_FILE}"), folder)))
        except (OSError, ValueError) as e:  # no record, or not a finished default search
            sys.exit(f"error: {e}")
