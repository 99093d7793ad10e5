"""Resource-aware placement: express it in the config, read the cluster, print the plan, refuse
what cannot fit.

How a trial is placed
---------------------
Each trial's bundles come from RLlib itself (``Algorithm.default_resource_request``): the driver
bundle (which also holds the learner and its GPU when ``--num-learners`` is 0), one bundle per env
runner, and one per remote learner (``--num-learners`` > 0, ``--num-gpus-per-learner`` GPUs
each). Tune turns them into one placement group per trial, with RLlib's
``config.placement_strategy``. :func:`configure` only sets RLlib's own resource settings:

* the learner's GPU (default: 1 per learner when the cluster has a GPU) pins the learner bundle(s)
  to GPU nodes;
* ``--env-runner-resource NAME`` adds ``{NAME: 0.01}`` to every env runner
  (``custom_resources_per_env_runner``), so env runners only fit nodes that declare ``NAME`` — the
  CPU workers — and never take a GPU node's CPUs. By default (``auto``) the suite's conventional
  ``cpu_worker`` is used when the cluster declares it (``docs/cluster-gpu-head.yaml`` does);
* ``--placement-strategy`` (default PACK, RLlib's own default; see ``docs/cluster.md``);
* learners that ask for GPUs get the CPU fallback of :mod:`sweeps.harness.gpu`;
* every result says where the trial's actors ran (``result["placement"]``, node ids).

:func:`make_plan` then places whole trials, bundle by bundle, on the cluster's nodes (their total
resources) to decide how many run at once, and refuses a sweep whose single trial fits nowhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeps.harness.errors import UsageError
from sweeps.harness.settings import Settings

# The custom resource a CPU worker node declares (``ray start --resources='{"cpu_worker": 1000}'``)
# and each env runner's share of it: a marker, not a limit (CPUs are the limit).
DEFAULT_ENV_RUNNER_RESOURCE = "cpu_worker"
ENV_RUNNER_SHARE = 0.01
STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
_MAX_TRIALS = 4096  # planning stops counting here


@dataclass(frozen=True)
class Plan:
    cpus: float
    gpus: float
    bundles: list[dict[str, float]]
    strategy: str
    concurrent: int
    labels: list[str] = field(default_factory=list)  # what each bundle holds
    nodes: list[dict[str, float]] = field(default_factory=list)  # alive nodes' total resources
    notes: list[str] = field(default_factory=list)  # printed as warnings

    @property
    def trial_cpus(self) -> float:
        return sum(b.get("CPU", 0.0) for b in self.bundles)

    @property
    def trial_gpus(self) -> float:
        return sum(b.get("GPU", 0.0) for b in self.bundles)

    @property
    def num_learners(self) -> int:
        return sum(1 for label in self.labels if label == "learner")

    def describe(self, num_samples: int) -> str:
        labels = self.labels or ["learner/driver"] + ["env runner"] * (len(self.bundles) - 1)
        groups: list[list[Any]] = []  # [label, bundle, count], consecutive equal ones merged
        for label, bundle in zip(labels, self.bundles, strict=True):
            if groups and groups[-1][0] == label and groups[-1][1] == bundle:
                groups[-1][2] += 1
            else:
                groups.append([label, bundle, 1])
        parts = [
            f"{f'{n} x ' if n > 1 else ''}{label}: {_res(bundle)}" for label, bundle, n in groups
        ]
        if self.trial_gpus:
            learners = self.num_learners or 1
            where = f"{learners} learner(s) on GPU ({self.trial_gpus:g} GPU per trial)"
        else:
            where = "learner on CPU"
        lines = [
            f"[plan] cluster: {self.cpus:g} CPUs, {self.gpus:g} GPUs"
            + (f", {len(self.nodes)} node(s): {_nodes(self.nodes)}" if self.nodes else ""),
            f"[plan] each trial: {len(self.bundles)} bundles ({'; '.join(parts)}), "
            f"placement {self.strategy}",
            f"[plan] {where}; {self.concurrent} trial(s) at once, {num_samples} in all",
        ]
        lines += [f"[plan] warning: {note}" for note in self.notes]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Expressing the placement in the config
# ------------------------------------------------------------------------------------------------


def resolve_env_runner_resource(
    requested: str | None, resources: Mapping[str, float]
) -> str | None:
    """The custom resource env runners ask for: ``auto`` → ``cpu_worker`` if declared, else none;
    ``none`` → none; a name → that name, which the cluster must declare."""
    if requested is None or requested == "auto":
        return DEFAULT_ENV_RUNNER_RESOURCE if resources.get(DEFAULT_ENV_RUNNER_RESOURCE) else None
    if requested == "none":
        return None
    if not resources.get(requested):
        raise UsageError(
            f"--env-runner-resource {requested}: no node of the cluster declares it (start the "
            f"CPU workers with ray start --resources='{{\"{requested}\": 1000}}', or pass none)"
        )
    return requested


def configure(config: Any, args: Settings, resources: Mapping[str, float]) -> Any:
    """Set RLlib's resource settings from the flags and the cluster's resources (see module doc).

    ``args.num_gpus_per_learner`` None: 1 if the cluster has a GPU, else 0.
    """
    from sweeps.harness.gpu import with_cpu_fallback, with_placement_report

    if args.num_gpus_per_learner is None:
        config.learners(num_gpus_per_learner=1 if resources.get("GPU", 0) > 0 else 0)
    name = resolve_env_runner_resource(args.env_runner_resource, resources)
    if name is not None:
        custom = dict(config.custom_resources_per_env_runner or {})
        custom[name] = ENV_RUNNER_SHARE
        config.env_runners(custom_resources_per_env_runner=custom)
    strategy = args.placement_strategy
    if strategy is not None:
        config.resources(placement_strategy=strategy)
    return with_placement_report(with_cpu_fallback(config))


# ------------------------------------------------------------------------------------------------
# The plan
# ------------------------------------------------------------------------------------------------


def bundle_labels(config: Any, n_bundles: int) -> list[str]:
    """What each of RLlib's bundles holds (same order as ``default_resource_request``)."""
    n_env = config.num_env_runners
    if config.num_learners > 0:
        head, tail = "driver", ["learner"] * config.num_learners
    else:
        head, tail = "learner/driver", ["aggregator"] * config.num_aggregator_actors_per_learner
    n_eval = max(n_bundles - 1 - n_env - len(tail), 0)
    labels = [head] + ["env runner"] * n_env + ["eval env runner"] * n_eval + tail
    return (labels + ["other"] * n_bundles)[:n_bundles]


def alive_nodes() -> list[dict[str, float]]:
    """Total resources of the cluster's alive nodes (Ray's ``node:…`` markers left out)."""
    import ray

    nodes = []
    for node in ray.nodes():
        if not node.get("Alive", False):
            continue
        res = {
            k: float(v)
            for k, v in node.get("Resources", {}).items()
            if not k.startswith("node:") and k not in ("memory", "object_store_memory")
        }
        nodes.append(res)
    return nodes


def trials_that_fit(
    nodes: Sequence[Mapping[str, float]],
    bundles: Sequence[Mapping[str, float]],
    strategy: str,
    limit: int = _MAX_TRIALS,
) -> int:
    """How many trials' placement groups fit the nodes at once (greedy, bundle by bundle).

    GPU bundles are placed first; a bundle goes to the first node with room, preferring nodes
    without GPUs when it needs none (so CPU-only work does not take the CPUs a GPU learner needs);
    STRICT_PACK needs a whole trial on one node, STRICT_SPREAD its bundles on different nodes.
    """
    needed = [{k: v for k, v in b.items() if v} for b in bundles]
    if not any(needed):
        return limit
    order = sorted(range(len(needed)), key=lambda i: -needed[i].get("GPU", 0))
    free = [dict(n) for n in nodes]
    count = 0
    while count < limit:
        placed = _place_trial(free, [needed[i] for i in order], strategy)
        if placed is None:
            break
        free, count = placed, count + 1
    return count


def _place_trial(
    free: list[dict[str, float]], needed: list[dict[str, float]], strategy: str
) -> list[dict[str, float]] | None:
    """The nodes' free resources after placing one trial, or None if it does not fit."""
    if strategy == "STRICT_PACK":
        whole: dict[str, float] = {}
        for bundle in needed:
            for k, v in bundle.items():
                whole[k] = whole.get(k, 0.0) + v
        needed = [whole]
    nodes = [dict(n) for n in free]
    used: set[int] = set()
    for bundle in needed:
        candidates = [j for j in range(len(nodes)) if strategy != "STRICT_SPREAD" or j not in used]
        if not bundle.get("GPU"):
            candidates.sort(key=lambda j: nodes[j].get("GPU", 0) > 0)
        node = next((j for j in candidates if _fits(nodes[j], bundle)), None)
        if node is None:
            return None
        for k, v in bundle.items():
            nodes[node][k] = nodes[node].get(k, 0.0) - v
        used.add(node)
    return nodes


def make_plan(algo_cls: Any, config: Any, max_concurrent: int) -> Plan:
    """Read the cluster, build the trial's bundles, check one trial fits, count how many do."""
    from sweeps.harness.gpu import probe_cuda

    nodes = alive_nodes()
    total: dict[str, float] = {}
    for node in nodes:
        for k, v in node.items():
            total[k] = total.get(k, 0.0) + v
    cpus, gpus = total.get("CPU", 0.0), total.get("GPU", 0.0)
    pgf = algo_cls.default_resource_request(config)
    bundles = [{k: float(v) for k, v in b.items()} for b in pgf.bundles]
    labels = bundle_labels(config, len(bundles))
    strategy = pgf.strategy
    plan = Plan(cpus, gpus, bundles, strategy, 0, labels, nodes)

    if plan.trial_cpus > cpus or plan.trial_gpus > gpus:
        oversubscribe = (
            f", or on one machine run it with more runners than cores: --num-cpus "
            f"{plan.trial_cpus:g} (docs/scaling.md)"
            if plan.trial_gpus <= gpus
            else ""
        )
        raise UsageError(
            f"one trial needs {plan.trial_cpus:g} CPUs and {plan.trial_gpus:g} GPUs but the "
            f"cluster has {cpus:g} CPUs and {gpus:g} GPUs; lower --num-env-runners "
            f"(now {config.num_env_runners}), --num-learners (now {config.num_learners}) "
            f"or --num-gpus-per-learner{oversubscribe}"
        )
    for label, bundle in zip(labels, bundles, strict=True):
        for k, v in bundle.items():
            if v and total.get(k, 0.0) < v:
                raise UsageError(
                    f"one trial's {label} needs {v:g} {k} but the cluster declares "
                    f"{total.get(k, 0.0):g}; start nodes with that resource or drop the flag "
                    f"that asks for it"
                )
    for label, bundle in zip(labels, bundles, strict=True):
        if not any(_fits(n, bundle) for n in nodes):
            raise UsageError(
                f"one trial's {label} bundle ({_res(bundle)}) fits on no single node "
                f"(nodes: {_nodes(nodes)}); lower its resources or add a node that holds it"
            )
    fits = trials_that_fit(nodes, bundles, strategy)
    if fits == 0:
        raise UsageError(
            f"one trial's {len(bundles)} bundles ({_res_sum(bundles)}) cannot be placed together "
            f"with placement {strategy} on nodes {_nodes(nodes)}; lower --num-env-runners "
            f"(now {config.num_env_runners}) or use another --placement-strategy"
        )
    concurrent = fits if max_concurrent == 0 else min(fits, max_concurrent)

    notes = []
    if plan.trial_gpus:
        missing = [n for n, ok in probe_cuda().items() if not ok]
        if missing:
            notes.append(
                f"{len(missing)} GPU node(s) declare GPUs but torch there finds no CUDA: learners "
                "placed there run on the CPU (their GPU stays reserved)"
            )
    return Plan(cpus, gpus, bundles, strategy, concurrent, labels, nodes, notes)


# ------------------------------------------------------------------------------------------------
# More CPUs than cores (--num-cpus), on purpose
# ------------------------------------------------------------------------------------------------

# What one process of a trial holds in memory, roughly (an env runner with its env and module,
# a learner): the rule of thumb the oversubscription warning sizes a trial by.
GB_PER_PROCESS = 0.4


def available_memory_gb() -> float | None:
    """MemAvailable of /proc/meminfo in GB (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return None


def oversubscription_lines(plan: Plan, cores: int, memory_gb: float | None) -> list[str]:
    """What the plan says when the sweep's own Ray declares more CPUs than this machine has
    cores: by how much, what it means for the figures, and whether memory holds the trials."""
    if plan.cpus <= cores:
        return []
    busy = plan.trial_cpus * plan.concurrent
    share = min(1.0, cores / busy) if busy else 1.0
    lines = [
        f"[plan] oversubscribed on purpose: Ray declares {plan.cpus:g} CPUs on {cores} core(s) "
        f"({plan.cpus / cores:.1f}x); {busy:g} busy process(es) at once, each at about "
        f"{share:.0%} of a core, one thread each",
        "[plan] env steps to target compare with any machine; times are this machine's in slow "
        "motion, and each result predicts its time on a core per process "
        "(suite/predicted_train_time_s; docs/scaling.md)",
    ]
    processes = len(plan.bundles) * plan.concurrent
    need = processes * GB_PER_PROCESS
    if memory_gb is not None and need > memory_gb:
        lines.append(
            f"[plan] warning: {processes} processes at about {GB_PER_PROCESS:g} GB each need "
            f"~{need:.0f} GB; {memory_gb:.0f} GB available: lower --num-env-runners or "
            "--max-concurrent-trials"
        )
    return lines


# ------------------------------------------------------------------------------------------------


def _fits(free: Mapping[str, float], need: Mapping[str, float]) -> bool:
    return all(free.get(k, 0.0) >= v - 1e-9 for k, v in need.items() if v)


def _res(bundle: Mapping[str, float]) -> str:
    order = {"CPU": 0, "GPU": 1}
    items = sorted(
        ((k, v) for k, v in bundle.items() if v), key=lambda kv: (order.get(kv[0], 2), kv[0])
    )
    return ", ".join(f"{v:g} {k}" for k, v in items) or "nothing"


def _res_sum(bundles: Sequence[Mapping[str, float]]) -> str:
    total: dict[str, float] = {}
    for b in bundles:
        for k, v in b.items():
            total[k] = total.get(k, 0.0) + v
    return _res(total)


def _nodes(nodes: Sequence[Mapping[str, float]]) -> str:
    """``1 CPU, 1 GPU; 2 x 2 CPU, 1 cpu_worker`` (identical nodes counted)."""
    counts: dict[str, int] = {}
    for node in sorted(nodes, key=lambda n: -n.get("GPU", 0)):
        described = _res({k: v for k, v in node.items() if not k.startswith("accelerator_type")})
        counts[described] = counts.get(described, 0) + 1
    return "; ".join(f"{f'{n} x ' if n > 1 else ''}{d}" for d, n in counts.items())
