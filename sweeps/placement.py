"""Resource-aware placement: read the cluster, print the plan, refuse what cannot fit.

Each trial's bundles come from RLlib itself (``Algorithm.default_resource_request``: the
driver/learner bundle, with the GPU when there is one, then one CPU bundle per env runner); Tune
turns them into a placement group per trial. This module only reads them, sums them against the
cluster's resources and decides how many trials run at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class UsageError(Exception):
    """Bad input: one clear line, exit code 2, nothing written."""


@dataclass(frozen=True)
class Plan:
    cpus: float
    gpus: float
    bundles: list[dict[str, float]]
    strategy: str
    concurrent: int

    @property
    def trial_cpus(self) -> float:
        return sum(b.get("CPU", 0.0) for b in self.bundles)

    @property
    def trial_gpus(self) -> float:
        return sum(b.get("GPU", 0.0) for b in self.bundles)

    def describe(self, num_samples: int) -> str:
        parts = []
        for i, bundle in enumerate(self.bundles):
            what = "learner/driver" if i == 0 else "env runner"
            res = ", ".join(f"{v:g} {k}" for k, v in sorted(bundle.items()) if v)
            parts.append(f"{what}: {res or 'nothing'}")
        return "\n".join(
            [
                f"[plan] cluster: {self.cpus:g} CPUs, {self.gpus:g} GPUs",
                f"[plan] each trial: {len(self.bundles)} bundles ({'; '.join(parts)}), "
                f"placement {self.strategy}",
                f"[plan] learner on {'GPU' if self.trial_gpus else 'CPU'}; "
                f"{self.concurrent} trial(s) at once, {num_samples} in all",
            ]
        )


def make_plan(algo_cls: Any, config: Any, max_concurrent: int) -> Plan:
    import ray

    total = ray.cluster_resources()
    cpus, gpus = float(total.get("CPU", 0)), float(total.get("GPU", 0))
    pgf = algo_cls.default_resource_request(config)
    bundles = [dict(b) for b in pgf.bundles]
    plan = Plan(cpus, gpus, bundles, pgf.strategy, 0)
    if plan.trial_cpus > cpus or plan.trial_gpus > gpus:
        raise UsageError(
            f"one trial needs {plan.trial_cpus:g} CPUs and {plan.trial_gpus:g} GPUs but the "
            f"cluster has {cpus:g} CPUs and {gpus:g} GPUs; lower --num-env-runners "
            f"(now {config.num_env_runners}) or --num-gpus-per-learner"
        )
    fits = int(cpus // plan.trial_cpus) if plan.trial_cpus else 1 << 16
    if plan.trial_gpus:
        fits = min(fits, int(gpus // plan.trial_gpus))
    concurrent = max(1, fits if max_concurrent == 0 else min(fits, max_concurrent))
    return Plan(cpus, gpus, bundles, pgf.strategy, concurrent)
