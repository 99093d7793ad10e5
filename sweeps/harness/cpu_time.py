"""CPU time per process of a trial, and the wall-clock it predicts on a machine with a core each.

Why: this project's machines have 2 cores, and the suite is about scale. A trial with N env
runners and a learner is N+1 busy processes (and Ape-X's replay shards, IMPALA's aggregators); on
2 cores they take turns, and everything runs in slow motion: the order of samples and updates, so
the env steps to a target, stays close to that of a machine with a core per process, but each
second of it takes longer. How much longer the kernel knows. For every thread it keeps the time
spent running on a core and the time spent *runnable but waiting for one* (``/proc/<pid>/task/
<tid>/schedstat``, the scheduler's own accounting, in the process's threads). Where each busy
process is slowed by the same factor ``s`` (a process that sleeps waiting for another sleeps ``s``
times longer too), a process that ran ``r`` seconds waited ``(s - 1) r`` for a core, so

    s = 1 + waited / ran   (summed over the trial's processes),   predicted wall = wall / s.

The prediction is for a machine with a core per process of the trial (and at least one per CPU
bundle it asks Ray for: ``cores_predicted``), never below what the busiest process alone needs
(its running time, spread over as many cores as its threads were seen to use at once: its
utilisation rounded up) nor below what the trial's processes together need of those cores:
``predicted_wall = max(wall / s, busiest / k, trial / cores)`` (:func:`predicted_factor`).
``docs/scaling.md`` writes the model down, where it fails (synchronous DQN, memory bandwidth, a
network between nodes, a GPU learner) and how it was checked (one core against two).

What is read, at the trial's start and with every result (``SuiteCallbacks``): every process of
the trial on this node: the trial's own (the driver; with ``num_learners`` 0 the learner too),
each env runner, each remote learner, IMPALA's aggregator actors and Ape-X's replay shards. A
process on another node of a cluster is not read (its /proc is elsewhere): ``unmeasured`` counts
them. The sums live in the algorithm's MetricsLogger as lifetime sums (checkpointed, restored
with it); a process restarted after a fault is a new process, read from its own start. Besides
the trial's processes, the machine's busy time over the same cores (``/proc/stat``: everything,
Ray's own processes and Tune's driver included) and the time the hypervisor took from them
(steal). Where /proc does not exist (not Linux) nothing is read and no figure is reported.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sweeps.harness.values import number
from sweeps.seams.env_runner import aggregator_actors

# Where the sums live in the algorithm's MetricsLogger (popped from each result: the figures
# below go under result["suite"]["cpu"]).
METRICS_KEY = "suite_cpu"
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# The environment variable the runner sets (before Ray starts its processes, which inherit it)
# when Ray declares more CPUs than this machine's cores: every process of a trial then runs one
# thread (``one_thread_per_process``).
OVERSUBSCRIBED_ENV = "SUITE_OVERSUBSCRIBED"


def cores() -> int:
    """The cores this process may run on (``taskset``/cgroup affinity), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def oversubscribed() -> bool:
    """Whether the runner said this run declares more CPUs than the cores it has."""
    return os.environ.get(OVERSUBSCRIBED_ENV, "") not in ("", "0")


@dataclass(frozen=True)
class Reading:
    """One process's threads, summed: seconds running on a core, seconds runnable but waiting."""

    ran_s: float
    waited_s: float


def read_process(pid: int, proc: str = "/proc") -> Reading | None:
    """The kernel's scheduler accounting of ``pid``'s threads (``schedstat``: ns on a core, ns
    waiting on a run queue), summed over its live threads; None when the process is gone."""
    ran = waited = 0
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"{proc}/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
        except OSError:  # a thread that ended since the listing
            continue
        ran += int(fields[0])
        waited += int(fields[1])
    return Reading(ran / 1e9, waited / 1e9)


def read_machine(cpus: Iterable[int], proc: str = "/proc") -> tuple[float, float] | None:
    """(busy seconds, stolen seconds) summed over ``cpus`` since boot (``/proc/stat``: user,
    nice, system, irq and softirq are busy; steal is time the hypervisor gave elsewhere); None
    where there is no /proc/stat."""
    wanted = {f"cpu{c}" for c in cpus}
    busy = steal = 0
    try:
        with open(f"{proc}/stat") as f:
            for line in f:
                name, *values = line.split()
                if name not in wanted:
                    continue
                ticks = [int(v) for v in values]
                busy += ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
                steal += ticks[7] if len(ticks) > 7 else 0
    except OSError:
        return None
    return busy / _TICKS_PER_S, steal / _TICKS_PER_S


def affinity() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


# ------------------------------------------------------------------------------------------------
# The trial's processes
# ------------------------------------------------------------------------------------------------


def _here() -> tuple[str, int]:
    import ray

    return ray.get_runtime_context().get_node_id(), os.getpid()


def _runner_here(env_runner: Any) -> tuple[int, str, int]:
    return (int(env_runner.worker_index), *_here())


def _learner_here(learner: Any) -> tuple[str, int]:
    return _here()


def discover(algorithm: Any) -> tuple[dict[str, int], int]:
    """The trial's processes on this node, ``{slot: pid}`` (slots: ``driver``, ``env_runner_<i>``,
    ``eval_runner_<i>``, ``learner_<i>``, ``aggregator_<i>``, ``replay_shard_<i>``), and how many
    of its processes live on other nodes (not read)."""
    import ray

    node, pid = _here()
    slots: dict[str, int] = {"driver": pid}
    elsewhere = 0

    def add(prefix: str, found: Iterable[tuple[int, str, int]]) -> None:
        nonlocal elsewhere
        for index, where, process in found:
            if where == node:
                slots[f"{prefix}_{index}"] = int(process)
            else:
                elsewhere += 1

    for prefix, group in (
        ("env_runner", getattr(algorithm, "env_runner_group", None)),
        ("eval_runner", getattr(algorithm, "eval_env_runner_group", None)),
    ):
        if group is not None and group.num_remote_env_runners() > 0:
            add(prefix, group.foreach_env_runner(_runner_here, local_env_runner=False))
    learners = getattr(algorithm, "learner_group", None)
    if learners is not None and not learners.is_local:
        found = learners.foreach_learner(_learner_here)
        add("learner", [(i + 1, *r.get()) for i, r in enumerate(found) if r.ok])
    # IMPALA's/APPO's aggregator actors (seam: sweeps.seams.env_runner.aggregator_actors).
    aggregators = aggregator_actors(algorithm)
    if aggregators is not None:
        found = aggregators.foreach_actor(lambda actor: _here())
        add("aggregator", [(i + 1, *r.get()) for i, r in enumerate(found) if r.ok])
    handles = getattr(algorithm, "replay_shards", None)  # Ape-X's (sweeps/algorithms/apex)
    if handles:
        pids = ray.get([s.ping.remote() for s in handles])
        add("replay_shard", [(i + 1, node, p) for i, p in enumerate(pids)])
    return slots, elsewhere


def trial_cpus(config: Any) -> float:
    """The CPUs one trial asks Ray for (its bundles, as placement plans them): the cores of the
    machine the prediction is for."""
    try:
        bundles = config.algo_class.default_resource_request(config).bundles
        return max(sum(float(b.get("CPU", 0.0)) for b in bundles), 1.0)
    except Exception:  # an algorithm without RLlib's resource request
        return 1.0 + float(getattr(config, "num_env_runners", 0) or 0)


# ------------------------------------------------------------------------------------------------
# The accounting, carried by the suite's callback
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """A trial's CPU accounting so far (lifetime sums over the span it was read)."""

    wall_s: float  # wall-clock over which it was read
    ran_s: dict[str, float]  # slot -> seconds on a core
    waited_s: dict[str, float]  # slot -> seconds runnable, waiting for a core
    machine_s: float  # the machine's busy seconds on this run's cores (everything)
    steal_s: float
    cores: int
    trial_cpus: float
    unmeasured: int  # the trial's processes on other nodes

    @property
    def trial_s(self) -> float:
        return sum(self.ran_s.values())

    @property
    def busiest(self) -> str:
        return max(self.ran_s, key=lambda slot: self.ran_s[slot]) if self.ran_s else ""

    @property
    def slowdown(self) -> float:
        """How much slower than on a core of its own each busy process ran: 1 + waited / ran."""
        ran = self.trial_s
        return 1.0 + sum(self.waited_s.values()) / ran if ran > 0 else 1.0

    @property
    def cores_predicted(self) -> float:
        """The cores of the predicted machine: one per process of the trial, and at least one
        per CPU bundle (Ape-X's replay shards are processes without a bundle of their own)."""
        return max(self.trial_cpus, float(len(self.ran_s)))

    @property
    def predicted_wall_s(self) -> float:
        """The span's wall-clock on a machine with a core per process (module docstring)."""
        return self.predicted_factor * self.wall_s

    @property
    def predicted_factor(self) -> float:
        """predicted wall / measured wall: what a measured time becomes on a core each."""
        return predicted_factor(
            self.wall_s,
            self.slowdown,
            self.ran_s.get(self.busiest, 0.0),
            self.trial_s,
            self.cores_predicted,
        )

    def figures(self) -> dict[str, Any]:
        """What a result carries under ``suite/cpu`` (seconds; per slot under ``ran_s``)."""
        busiest = self.busiest
        return {
            "wall_s": self.wall_s,
            "trial_s": self.trial_s,
            "waited_s": sum(self.waited_s.values()),
            "machine_s": self.machine_s,
            "steal_s": self.steal_s,
            "cores": self.cores,
            "trial_cpus": self.trial_cpus,
            "cores_predicted": self.cores_predicted,
            "processes": len(self.ran_s),
            "unmeasured": self.unmeasured,
            "busiest": busiest,
            "busiest_s": self.ran_s.get(busiest, 0.0),
            "busiest_utilisation": self.ran_s.get(busiest, 0.0) / self.wall_s
            if self.wall_s > 0
            else 0.0,
            "slowdown": self.slowdown,
            "predicted_factor": self.predicted_factor,
            "ran_s": dict(sorted(self.ran_s.items())),
            "waited_by_s": dict(sorted(self.waited_s.items())),
        }


# What bounds a prediction (:func:`predicted_bounds`): every process slowed alike by sharing the
# cores (none waits for another on a core each), the busiest process's own CPU work, or the
# predicted machine's cores.
SHARING, BUSIEST, CORES = "sharing", "busiest", "cores"


def predicted_bounds(
    wall_s: float,
    slowdown: float,
    busiest_s: float,
    trial_s: float = math.nan,
    cores_predicted: float = math.nan,
) -> dict[str, float]:
    """The model's bounds on the predicted wall-clock (module docstring), each as a ratio to the
    measured one: ``wall / s`` (SHARING), ``busiest / k`` (BUSIEST), ``trial / cores`` (CORES,
    only with the trial's figures). The prediction is the largest; none where the figures can't
    predict (no wall-clock or slowdown: the prediction is the measurement).

    ``k``: the cores the busiest process's threads ran on at once, at least: its running time
    over the wall-clock rounded up (a process that ran more than one core's worth had more than
    one thread busy at a time: synchronous DQN's local learner, given the runners' CPUs for its
    torch threads while they wait), at most the predicted machine's cores. A process that never
    ran more than one core's worth gets one. The last bound keeps the machine physical: the trial's
    processes can't run more than its cores. Without the trial's figures (``trial_s``, the cores:
    NaN), the busiest process gets one core."""
    if not wall_s > 0 or not slowdown > 0:
        return {}
    bounds = {SHARING: 1.0 / slowdown}
    busiest = busiest_s / wall_s if busiest_s > 0 else 0.0
    k = 1
    if cores_predicted >= 1 and trial_s > 0:  # False for NaN: one core
        bounds[CORES] = trial_s / cores_predicted / wall_s
        k = min(max(math.ceil(busiest - 1e-9), 1), math.floor(cores_predicted))
    bounds[BUSIEST] = busiest / k
    return bounds


def predicted_factor(*figures: float) -> float:
    """The ratio of the predicted wall-clock to the measured one: the largest of
    :func:`predicted_bounds` (same arguments), 1 where they can't predict. Analysis derives
    every predicted time from a result's figures with it, so runs recorded before a change of the
    model are read by the model now."""
    return max(predicted_bounds(*figures).values(), default=1.0)


def bound_by(*figures: float) -> str:
    """Which of :func:`predicted_bounds` (same arguments) the prediction is: SHARING, BUSIEST or
    CORES ('' where the figures can't predict; on a tie, the first of SHARING, CORES, BUSIEST:
    one process bounds it only where its own work alone is the largest)."""
    bounds = predicted_bounds(*figures)
    return max(bounds, key=bounds.__getitem__, default="")


class Accounting:
    """Reads the trial's processes between results and logs the differences as lifetime sums.

    ``start(algorithm)`` once the trial is built (its processes exist), ``advance(metrics)`` with
    each result: returns the ``Summary`` so far, or None where nothing can be read."""

    def __init__(self, discover_processes: Any = None) -> None:
        # algorithm -> ({slot: pid}, processes elsewhere); RLlib's processes by default (a
        # single-process baseline: its own, sweeps/baselines/trainable.py)
        self._discover = discover_processes or discover
        self._slots: dict[str, int] = {}
        self._last: dict[str, tuple[int, Reading]] = {}  # slot -> (pid, reading)
        self._machine: tuple[float, float] | None = None
        self._mark: float | None = None
        self._cpus = affinity()
        self._trial_cpus = 1.0
        self._unmeasured = 0
        self._stale = False  # a process was gone: find them again at the next result
        self._algorithm: Any = None

    @property
    def available(self) -> bool:
        return os.path.isdir("/proc/self/task")

    def start(self, algorithm: Any) -> None:
        if not self.available:
            return
        self._algorithm = algorithm
        self._trial_cpus = trial_cpus(algorithm.config)
        self._find()
        self._machine = read_machine(self._cpus)
        self._mark = time.perf_counter()

    def _find(self) -> None:
        try:
            self._slots, self._unmeasured = self._discover(self._algorithm)
        except Exception:  # a runner lost while asked: the rest next time
            self._slots = {"driver": os.getpid()}
            self._stale = True
            return
        self._stale = False
        for slot, pid in self._slots.items():
            if slot not in self._last or self._last[slot][0] != pid:
                # A process seen for the first time counts from now (its start-up is not the
                # trial's training) unless it replaced one of the same slot (a restart: its whole
                # life since is the fault's cost, read from its start).
                reading = read_process(pid)
                restarted = slot in self._last
                base = Reading(0.0, 0.0) if restarted or reading is None else reading
                self._last[slot] = (pid, base)

    def restart_clock(self) -> None:
        """After a restore (or a check of the target): the span since the last reading is not
        the trial's training. Nothing where the accounting never started."""
        if self._mark is None:
            return
        self._mark = time.perf_counter()
        for slot, (pid, _) in list(self._last.items()):
            reading = read_process(pid)
            if reading is not None:
                self._last[slot] = (pid, reading)
        self._machine = read_machine(self._cpus) or self._machine

    def advance(self, metrics: Any) -> Summary | None:
        if self._mark is None:
            return None
        if self._stale:
            self._find()
        now = time.perf_counter()
        metrics.log_value((METRICS_KEY, "wall_s"), now - self._mark, reduce="lifetime_sum")
        self._mark = now
        for slot, pid in self._slots.items():
            reading = read_process(pid)
            if reading is None:  # gone (a fault): its replacement is found next time
                self._stale = True
                continue
            _, before = self._last.get(slot, (pid, reading))
            self._last[slot] = (pid, reading)
            ran = max(reading.ran_s - before.ran_s, 0.0)
            waited = max(reading.waited_s - before.waited_s, 0.0)
            metrics.log_value((METRICS_KEY, "ran", slot), ran, reduce="lifetime_sum")
            metrics.log_value((METRICS_KEY, "waited", slot), waited, reduce="lifetime_sum")
        machine = read_machine(self._cpus)
        if machine is not None and self._machine is not None:
            busy, steal = (max(a - b, 0.0) for a, b in zip(machine, self._machine, strict=True))
            metrics.log_value((METRICS_KEY, "machine_s"), busy, reduce="lifetime_sum")
            metrics.log_value((METRICS_KEY, "steal_s"), steal, reduce="lifetime_sum")
            self._machine = machine
        return self.summary(metrics)

    def summary(self, metrics: Any) -> Summary:
        sums = metrics.peek(METRICS_KEY, default={}) or {}
        return Summary(
            wall_s=number(sums.get("wall_s", 0.0)),
            ran_s=_numbers(sums.get("ran", {})),
            waited_s=_numbers(sums.get("waited", {})),
            machine_s=number(sums.get("machine_s", 0.0)),
            steal_s=number(sums.get("steal_s", 0.0)),
            cores=len(self._cpus),
            trial_cpus=self._trial_cpus,
            unmeasured=self._unmeasured,
        )


def _numbers(values: Mapping[str, Any]) -> dict[str, float]:
    return {str(k): number(v) for k, v in values.items()}


# ------------------------------------------------------------------------------------------------
# The run's sums (run.json "cpu")
# ------------------------------------------------------------------------------------------------


def role(slot: str) -> str:
    """``env_runner_3`` -> ``env_runner``: what kind of process a slot is."""
    head, _, index = slot.rpartition("_")
    return head if index.isdigit() else slot


def run_summary(trials: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The run record's CPU sums: over every trial's last ``suite/cpu`` figures, seconds on a
    core per kind of process, the trials' wall-clock, the machine's busy seconds over the same
    spans, and the sweep's own driver process (Tune's loop, this process); None where no trial
    was read."""
    import resource

    by_role: dict[str, float] = {}
    wall = machine = steal = 0.0
    read = 0
    for figures in trials:
        if not figures:
            continue
        read += 1
        wall += number(figures.get("wall_s", 0.0))
        machine += number(figures.get("machine_s", 0.0))
        steal += number(figures.get("steal_s", 0.0))
        for slot, seconds in (figures.get("ran_s") or {}).items():
            by_role[role(slot)] = by_role.get(role(slot), 0.0) + number(seconds)
    if not read:
        return None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "trials_read": read,
        "wall_s": round(wall, 3),
        "ran_s": {k: round(v, 3) for k, v in sorted(by_role.items())},
        "trial_s": round(sum(by_role.values()), 3),
        "machine_s": round(machine, 3),
        "steal_s": round(steal, 3),
        "sweep_driver_s": round(usage.ru_utime + usage.ru_stime, 3),
        "cores": cores(),
    }
