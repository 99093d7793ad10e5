"""Whole nodes lost, on a local multi-node cluster (issue 63): worker nodes killed at random, and
the head lost with the driver.

The cluster is built on this machine as Ray's own tests build one (``ray.cluster_utils.Cluster``):
a head and ``--workers`` worker nodes of 1 CPU each, every node its own raylet. The sweep runs on
it with ``--address``, as on a real cluster.

* ``nodes``: Tune's release test in shape
  (``release/tune_tests/fault_tolerance_tests/workloads/test_tune_worker_fault_tolerance.py``):
  after ``--warmup-s``, every ``--interval-s`` each worker node dies with probability
  ``--kill-p`` (``Cluster.remove_node(allow_graceful=False)``: its raylet and every worker
  process on it killed, as a lost machine looks to Ray), and a fresh node of the same size
  joins ``--replace-after-s`` later. No kill once the sweep's trials have sampled
  ``KILL_BEFORE_SHARE`` of their env steps (a kill in a trial's last iteration is not a restore
  to check).
* ``head``: after ``--warmup-s`` the driver (its process group) and the whole cluster are
  killed; a new cluster is started and the sweep's own ``--resume`` finishes it from its folder.

Checked, from the sweep's folder alone (``checks.check_sweep``, as for the other faults): every
trial finished exactly once, no row twice, no iteration missing, training clocks continued
(a restore from iteration 0 would repeat iterations and set the clock back); and here also that
each trial's final iteration and metric in Tune's experiment state are those of its last row
(``final_agrees``). Throughput after a fault: each trial's env steps/s over its training clock
before the first kill and after the last one, and with ``--baseline`` against the same trial in
a fault-free sweep of the same seed on the same cluster over the same env steps
(``rates_around``, ``throughput.py``; a random-search sweep runs the same trials in both).
"""

from __future__ import annotations

import functools
import math
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from benchmarks.faultlab.checks import check_sweep, json_lines
from benchmarks.faultlab.common import KILL_BEFORE_SHARE
from benchmarks.faultlab.procs import SweepProcesses, start_sweep

# The sweep's trials retry on a lost node as often as it takes (Tune's release test: -1).
MAX_FAILURES = 50


class LocalCluster:
    """A head and ``workers`` worker nodes of ``cpus_per_worker`` CPU(s) each, on this machine."""

    def __init__(self, workers: int, head_cpus: int = 1, cpus_per_worker: int = 1) -> None:
        from ray.cluster_utils import Cluster

        self.cpus_per_worker = cpus_per_worker
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": head_cpus, "include_dashboard": False},
        )
        for _ in range(workers):
            self.add_worker()
        self.cluster.wait_for_nodes()

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_worker(self) -> Any:
        return self.cluster.add_node(num_cpus=self.cpus_per_worker)

    def workers(self) -> list[Any]:
        return list(self.cluster.worker_nodes)

    def kill(self, node: Any) -> None:
        """The node's raylet and its workers, SIGKILLed (no graceful drain)."""
        self.cluster.remove_node(node, allow_graceful=False)

    def shutdown(self) -> None:
        self.cluster.shutdown()


class NodeKiller:
    """After ``warmup_s``, every ``interval_s``: each worker node dies with probability ``p``
    and a fresh one joins ``replace_after_s`` later; while ``allowed()`` (the trials' share of
    their budget) holds, up to ``max_kills`` in all. ``kills``: when and which node.

    Driven by ``tick()`` from the main thread, not a thread of its own: ``Cluster.add_node``
    starts a Ray node, which sets a SIGTERM handler, and Python allows that in the main thread
    only (from a thread the replacement never joined, the exception died with the thread, and
    the trial waited for a CPU that never came, with no error anywhere)."""

    def __init__(
        self,
        cluster: LocalCluster,
        rng: random.Random,
        *,
        p: float,
        interval_s: float,
        warmup_s: float,
        replace_after_s: float,
        allowed: Any = None,
        max_kills: int | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.max_kills = max_kills
        self.cluster, self.rng, self.p = cluster, rng, p
        self.interval_s, self.replace_after_s = interval_s, replace_after_s
        self.allowed = allowed or (lambda: True)
        self.kills: list[dict[str, Any]] = []
        self.clock = clock
        self.t0 = clock()
        self.next_draw = self.t0 + warmup_s + interval_s
        self.replacements: list[float] = []  # when each lost node's successor joins

    def tick(self) -> bool:
        """Kill and replace what is due now; False (``SweepProcesses.watch`` goes on)."""
        now = self.clock()
        due = [t for t in self.replacements if t <= now]
        for _ in due:
            self.cluster.add_worker()
        self.replacements = [t for t in self.replacements if t > now]
        if now < self.next_draw:
            return False
        self.next_draw = now + self.interval_s
        # A node is drawn only once its predecessor's successor has joined (one at a time).
        if self.replacements or not self.allowed():
            return False
        lost = [n for n in self.cluster.workers() if self.rng.random() < self.p]
        if self.max_kills is not None:
            lost = lost[: max(self.max_kills - len(self.kills), 0)]
        for node in lost:
            self.kills.append(
                {"at_s": round(now - self.t0, 2), "at_unix": time.time(), "node_id": node.node_id}
            )
            self.cluster.kill(node)
            self.replacements.append(now + self.replace_after_s)
        return False


def final_agrees(folder: Path) -> list[str]:
    """Problems where a trial's last row (result.json) and Tune's record of it (the experiment
    state's last result) disagree on the iteration or the sweep's metric."""
    import json

    from sweeps.harness.record import RECORD_FILE, RunRecord

    metric = RunRecord.read(folder / RECORD_FILE).metric or ""
    states = sorted(folder.glob("experiment_state-*.json"))
    if not states:
        return ["no Tune experiment state"]
    problems = []
    for item in json.loads(states[-1].read_text()).get("trial_data", []):
        trial = json.loads(item[0])
        last = _last_result(item[1] if len(item) > 1 else None)
        trial_id = trial["trial_id"]
        rows = [r for d in folder.glob(f"*_{trial_id}") for r in json_lines(d / "result.json")[0]]
        if not rows or not last:
            problems.append(f"{trial_id}: no last result to compare")
            continue
        row = rows[-1]
        if row.get("training_iteration") != last.get("training_iteration"):
            problems.append(
                f"{trial_id}: last row at iteration {row.get('training_iteration')}, Tune's "
                f"record at {last.get('training_iteration')}"
            )
        ours, theirs = _flat_get(row, metric), _flat_get(last, metric)
        if not _same(ours, theirs):
            problems.append(f"{trial_id}: {metric} {ours} in the last row, {theirs} in Tune's")
    return problems


def _last_result(run_metadata: Any) -> dict[str, Any]:
    """A trial's last result as Tune's experiment state holds it (Ray 2.60: each entry of
    ``trial_data`` is a pair, the trial's state and its run metadata, JSON strings, the last
    result under the latter's ``last_result``)."""
    import json

    meta = json.loads(run_metadata) if isinstance(run_metadata, str) else run_metadata
    last = (meta or {}).get("last_result") or {}
    return json.loads(last) if isinstance(last, str) else last


def _flat_get(row: dict[str, Any], metric: str) -> Any:
    if metric in row:
        return row[metric]
    value: Any = row
    for part in metric.split("/"):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _same(a: Any, b: Any) -> bool:
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-9)


def rates_around(
    folder: Path, kills: list[dict[str, Any]], fault_free: Path | None = None
) -> list[dict[str, Any]]:
    """Per trial that ran across the kills: env steps per training second before the first kill
    and after the last (``throughput.around_faults``); with the fault-free sweep of the same
    seed (``fault_free``), the same trial's rate there over the same env steps."""
    from benchmarks.faultlab.throughput import around_faults

    twins = {key: d for d, key in _trials_by_config(fault_free).items()} if fault_free else {}
    out = []
    for trial_dir, key in _trials_by_config(folder).items():
        twin = twins.get(key)
        rates = around_faults(
            json_lines(trial_dir / "result.json")[0],
            [k["at_unix"] for k in kills],
            fault_free=json_lines(twin / "result.json")[0] if twin else None,
        )
        if rates is not None:
            out.append({"trial": trial_dir.name, **rates})
    return out


def _trials_by_config(folder: Path) -> dict[Path, str]:
    """A sweep's trial folders, each with what makes the trial that trial (its searched draws
    and its seed): a trial of a random-search sweep and its twin in the fault-free sweep of the
    same seed share it."""
    import json

    out = {}
    for trial_dir in sorted(d for d in folder.iterdir() if (d / "result.json").is_file()):
        try:
            params = json.loads((trial_dir / "params.json").read_text())
        except (OSError, ValueError):
            continue
        out[trial_dir] = json.dumps([params.get("hp"), params.get("seed")], sort_keys=True)
    return out


def _budget_share(folder: Path, budget: float) -> float:
    """The share of its env-step budget that the trial reporting last has sampled (0 before any
    trial reported): a sweep's trials come one after another, and each gets its kills."""
    from sweeps.harness import keys

    results = [p for p in folder.glob("*/result.json") if p.stat().st_size]
    if not results or not budget:
        return 0.0
    rows = json_lines(max(results, key=lambda p: p.stat().st_mtime))[0]
    return float(keys.get(rows[-1], keys.ENV_STEPS, 0) or 0) / budget if rows else 0.0


def _checked(folder: Path) -> dict[str, Any]:
    """``check_sweep``'s checks of the sweep in ``folder``, and each trial's last row against
    Tune's record of it (``final_agrees``: its problems under ``final_disagrees``)."""
    check = check_sweep(folder)
    check["final_disagrees"] = disagree = final_agrees(folder)
    if disagree:
        check["ok"] = False
        check["problems"].extend(disagree)
    return check


def node_kills(
    sweep: str,
    argv: list[str],
    folder: Path,
    *,
    rng: random.Random,
    workers: int,
    p: float,
    interval_s: float,
    warmup_s: float,
    replace_after_s: float,
    budget: float,
    log: Path,
    max_kills: int | None = None,
    twin: Path | None = None,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """``sweep`` on a new local cluster with random worker-node kills (none before its trials
    sample, none in their last stretch); what happened, checked. ``twin``: the folder of the
    same sweep run fault-free, for the trials' throughput at the same env steps."""
    cluster = LocalCluster(workers)
    try:
        t0 = time.monotonic()
        proc = start_sweep(sweep, [*argv, "--address", cluster.address], log)
        killer = NodeKiller(
            cluster,
            rng,
            p=p,
            interval_s=interval_s,
            warmup_s=warmup_s,
            replace_after_s=replace_after_s,
            allowed=lambda: 0 < _budget_share(folder, budget) < KILL_BEFORE_SHARE,
            max_kills=max_kills,
        )
        rc = SweepProcesses(proc.pid).watch(proc, timeout_s, until=killer.tick)
        if rc is None:
            os.killpg(proc.pid, signal.SIGKILL)
        wall = round(time.monotonic() - t0, 2)
    finally:
        cluster.shutdown()
    check = _checked(folder)
    return {
        "rc": rc,
        "wall_s": wall,
        "kills": killer.kills,
        "check": check,
        "rates": rates_around(folder, killer.kills, twin),
    }


def head_loss(
    sweep: str,
    argv: list[str],
    folder: Path,
    *,
    rng: random.Random,
    workers: int,
    warmup_s: tuple[float, float],
    log: Path,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """``sweep`` on a local cluster whose head (and the driver with it) is killed once after a
    random warm-up; a new cluster, and ``--resume`` from the sweep's folder to the end."""
    cluster = LocalCluster(workers)
    delay = rng.uniform(*warmup_s)
    t0 = time.monotonic()
    try:
        proc = start_sweep(sweep, [*argv, "--address", cluster.address], log)
        processes = SweepProcesses(proc.pid)
        rc = processes.watch(proc, delay)
        lost_at = round(time.monotonic() - t0, 2)
        if rc is None:  # still running: the head goes, and the driver with it
            os.killpg(proc.pid, signal.SIGKILL)
    finally:
        cluster.shutdown()
    if rc is not None:
        return {"rc": rc, "head_lost": False, "check": check_sweep(folder)}
    proc.wait(timeout=30)
    again = LocalCluster(workers)
    try:
        argv_again = ["--resume", str(folder), "--address", again.address]
        resumed = start_sweep(sweep, argv_again, log.with_suffix(".resume.log"))
        rc = SweepProcesses(resumed.pid).watch(resumed, timeout_s)
    finally:
        again.shutdown()
    check = _checked(folder)
    return {
        "rc": rc,
        "head_lost": True,
        "lost_at_s": lost_at,
        "wall_s": round(time.monotonic() - t0, 2),
        "check": check,
    }


def node_experiment(args: Any, out: Path) -> list[dict[str, Any]]:
    """``nodes``: per seed, the sweep on a fresh cluster with random worker-node kills; ``head``:
    per seed, the sweep's head lost once and the sweep resumed on a new cluster."""
    import shlex

    runs = []
    for seed in args.seeds:
        rng = random.Random(seed)
        folders = sweep_folders(out, seed)
        name = folders["faulty"].name
        argv = [
            *shlex.split(args.sweep_args),
            *("--seed", str(seed), "--progress-interval-s", "600"),
            *("--max-failures", str(MAX_FAILURES)),
            *("--storage-path", str(out), "--name", name),
        ]
        if args.kind == "nodes":
            entry: dict[str, Any] = {}
            kill = functools.partial(
                node_kills,
                args.sweep,
                rng=rng,
                workers=args.workers,
                interval_s=args.interval_s,
                warmup_s=args.warmup_s,
                replace_after_s=args.replace_after_s,
                budget=_trial_budget(args.sweep, argv),
                max_kills=args.max_kills,
            )
            twin = None
            if getattr(args, "baseline", False):
                twin = folders["baseline"]
                entry["baseline"] = kill(
                    _named(argv, twin.name),
                    twin,
                    p=0.0,
                    rng=random.Random(seed),  # the faulty run's draws stay its own
                    log=out / f"{twin.name}.log",
                )
            result = kill(argv, out / name, p=args.kill_p, log=out / f"{name}.log", twin=twin)
            runs.append({"seed": seed, "sweep": args.sweep, "faulty": result, **entry})
            print(node_line(args.kind, runs[-1]), flush=True)
            continue
        result = head_loss(
            args.sweep,
            argv,
            out / name,
            rng=rng,
            workers=args.workers,
            warmup_s=args.delay_s,
            log=out / f"{name}.log",
        )
        runs.append({"seed": seed, "sweep": args.sweep, "faulty": result})
        print(node_line(args.kind, runs[-1]), flush=True)
    return runs


def sweep_folders(out: Path, seed: int) -> dict[str, Path]:
    """A cluster run's sweep folders for ``seed``: the faulty sweep's and (``--baseline``) its
    fault-free twin's, by the summary entry's key."""
    return {"faulty": out / f"seed{seed}", "baseline": out / f"seed{seed}-fault-free"}


def _named(argv: list[str], name: str) -> list[str]:
    """``argv`` with its ``--name`` value replaced."""
    i = argv.index("--name")
    return [*argv[: i + 1], name, *argv[i + 2 :]]


def _trial_budget(sweep: str, argv: list[str]) -> float:
    """A trial's env-step budget (its --stop-timesteps, as the sweep parses its flags)."""
    import importlib

    from sweeps.harness.cli import parse_args

    module = importlib.import_module(f"sweeps.{sweep}")
    return float(parse_args(module.SWEEP, argv, new_folder=False).stop_timesteps or 0)


def node_line(kind: str, entry: dict[str, Any]) -> str:
    f = entry["faulty"]
    c = f["check"]
    what = (
        f"{len(f['kills'])} node kills, Tune retries {c.get('tune_retries')}"
        if kind == "nodes"
        else (
            "head lost at " + f"{f.get('lost_at_s')} s, resumed"
            if f.get("head_lost")
            else "the sweep ended before the head was lost"
        )
    )
    return f"[faults] {entry['sweep']} seed {entry['seed']}: {what}, rc {f['rc']}; checks " + (
        "passed" if c["ok"] else "FAILED: " + "; ".join(c["problems"])
    )
