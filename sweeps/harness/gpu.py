"""CPU fallback for a learner that was given a GPU but finds no CUDA.

A Ray node may *declare* GPUs that torch cannot use: every simulated cluster
(``ray.cluster_utils.Cluster(num_gpus=1)``, ``ray start --num-gpus=1`` on a laptop) and a
misconfigured real node (CPU-only torch wheel, missing driver). RLlib then places the learner on
that node, as it should, and crashes building it: ``TorchLearner.build`` picks ``cuda:0`` and
``module.to("cuda:0")`` raises "Torch not compiled with CUDA enabled"; with ``--num-learners`` > 1
Ray Train also opens an NCCL process group, which a CPU-only torch lacks.

:func:`with_cpu_fallback` swaps the config's learner class for a subclass carrying
:class:`CpuFallbackLearner`. Where CUDA works it changes nothing. Where it does not, the learner
warns once and builds itself from a copy of the config with ``num_gpus_per_learner=0`` (so every
place RLlib reads that setting — device choice, IMPALA's GPU loader threads — agrees it is on the
CPU), and a multi-learner group joins a gloo process group instead of NCCL. The trial's placement
group still reserves the GPU bundle on the GPU node: placement is exactly what it would be on real
hardware, which is what the simulated-cluster tests check. Nothing in RLlib is patched; only the
config of this sweep names the subclass.
"""

from __future__ import annotations

import logging
from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback

from sweeps.seams.learner import TrainWorkerCalls

logger = logging.getLogger(__name__)

FALLBACK_WARNING = (
    "this node declares a GPU but torch finds no CUDA device; the learner runs on the CPU "
    "(its GPU stays reserved)"
)


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


class _GlooWithoutCuda(TrainWorkerCalls):
    """A Ray Train worker (as a remote learner is one) whose process-group setup, asked for
    ``backend="nccl"``, joins a gloo group instead while ``use_gloo`` is set (DDP on the CPU).
    The calls' keyword arguments come through the seam
    (``sweeps.seams.learner.TrainWorkerCalls``: Ray Train's private per-call method)."""

    use_gloo = False

    def call_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.use_gloo and kwargs.get("backend") == "nccl":
            kwargs["backend"] = "gloo"
        return super().call_kwargs(kwargs)


class CpuFallbackLearner(_GlooWithoutCuda):
    """Mixin placed before an RLlib ``TorchLearner`` class: runs on the CPU when CUDA is missing
    (and a multi-learner group then joins a gloo process group, not NCCL)."""

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        self.cpu_fallback = self.use_gloo = config.num_gpus_per_learner > 0 and not cuda_available()
        if self.cpu_fallback:
            logger.warning(FALLBACK_WARNING)
            config = config.copy(copy_frozen=False)
            config.learners(num_gpus_per_learner=0)
        super().__init__(config=config, **kwargs)


_CLASSES: dict[type, type] = {}


def fallback_learner_class(learner_class: type) -> type:
    """``learner_class`` with :class:`CpuFallbackLearner` mixed in (one class per base)."""
    if issubclass(learner_class, CpuFallbackLearner):
        return learner_class
    if learner_class not in _CLASSES:
        _CLASSES[learner_class] = type(
            f"CpuFallback{learner_class.__name__}",
            (CpuFallbackLearner, learner_class),
            {"__module__": __name__, "__doc__": CpuFallbackLearner.__doc__},
        )
    return _CLASSES[learner_class]


def with_cpu_fallback(config: Any) -> Any:
    """Name the CPU-fallback learner class in ``config`` when its learners ask for GPUs."""
    if config.num_gpus_per_learner > 0:
        config.learners(learner_class=fallback_learner_class(config.learner_class))
    return config


_PROBED: dict[str, bool] = {}


def probe_cuda(timeout_s: float = 60.0) -> dict[str, bool]:
    """``{node id: torch finds CUDA there}`` for every alive node that declares GPUs.

    One zero-resource task per GPU node (not yet probed by this process), pinned to it; a node
    that does not answer within ``timeout_s`` is left out.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    gpu_nodes = [
        n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("GPU")
    ]
    todo = [node for node in gpu_nodes if node not in _PROBED]
    if todo:
        task = ray.remote(num_cpus=0)(cuda_available)
        refs = {
            node: task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote()
            for node in todo
        }
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
        for node, ref in refs.items():
            if ref in ready:
                try:
                    _PROBED[node] = bool(ray.get(ref))
                except Exception:  # noqa: BLE001 - a node that cannot answer is just left out
                    pass
    return {node: _PROBED[node] for node in gpu_nodes if node in _PROBED}


class PlacementReport(RLlibCallback):
    """Adds ``result["placement"]``: where the trial's actors run and the learners' device.

    ``trial_node`` (the driver, and the learner when ``--num-learners`` is 0),
    ``learner_nodes``/``learner_devices`` and ``env_runner_nodes`` (comma-separated Ray node ids,
    one per healthy actor). Strings, so loggers that keep numbers only skip them.

    The actors are asked once, and again only when the set of healthy env runners or their
    restart count changes (a runner restarted on another node): a question to a runner waits
    behind its queued sample requests, and asked every iteration it held up the driver of an
    asynchronous algorithm (Ape-X, IMPALA, APPO) for about a third of each 1-s iteration on
    Pong.
    """

    def __init__(self) -> None:
        super().__init__()
        self._runners_seen: tuple | None = None  # (healthy runner ids, restarts) last asked
        self._runner_nodes: list[str] = []
        self._learners: list[tuple[str, str]] | None = None

    def on_train_result(self, *, algorithm: Any, metrics_logger: Any = None, result: dict, **kw):
        import ray

        def where(_: Any) -> str:
            return ray.get_runtime_context().get_node_id()

        def learner_where(learner: Any) -> tuple[str, str]:
            return ray.get_runtime_context().get_node_id(), str(learner.device)

        runners = algorithm.env_runner_group
        seen = (
            (tuple(runners.healthy_env_runner_ids()), runners.num_remote_worker_restarts())
            if runners
            else None
        )
        if seen != self._runners_seen:
            self._runner_nodes = (
                runners.foreach_env_runner(where, local_env_runner=False) if runners else []
            )
            self._runners_seen = seen
        if self._learners is None:
            self._learners = [
                r.get() for r in algorithm.learner_group.foreach_learner(learner_where) if r.ok
            ]
        result["placement"] = {
            "trial_node": ray.get_runtime_context().get_node_id(),
            "learner_nodes": ",".join(node for node, _ in self._learners),
            "learner_devices": ",".join(device for _, device in self._learners),
            "env_runner_nodes": ",".join(self._runner_nodes),
        }


def with_placement_report(config: Any) -> Any:
    """Add :class:`PlacementReport` to the config's callbacks (kept first to last)."""
    current = config.callbacks_class
    classes = list(current) if isinstance(current, list | tuple) else [current]
    if PlacementReport not in classes:
        config.callbacks(callbacks_class=[*classes, PlacementReport])
    return config
