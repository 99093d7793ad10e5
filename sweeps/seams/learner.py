"""The learner seam: a learner's optimizers and learning-rate schedules, the learner a local
``LearnerGroup`` holds, the DQN module's Q-value helper and Ray Train's worker class (read from
Ray 2.60.0).

The suite's learning-rate scales (``sweeps/algorithms/kl_lr.py``) set a step's rate on RLlib's
own optimizers, as RLlib's schedules do; the action-masked DQN module
(``sweeps/algorithms/masked_dqn.py``) masks every Q-value RLlib's DQN module computes; the CPU
fallback of a learner given a GPU without CUDA (``sweeps/harness/gpu.py``) has a multi-learner
group join a gloo process group instead of NCCL; a benchmark reads the local learner's module.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.train._internal.worker_group import RayTrainWorker


def optimizer_lr_schedules(learner: Any, module_id: Any) -> list[tuple[Any, Any]]:
    """``(optimizer, lr scheduler or None)`` for each optimizer of module ``module_id``, in
    registration order (``Learner._module_optimizers``, ``._named_optimizers``,
    ``._optimizer_lr_schedules``), read from Ray 2.60.0 (``ray/rllib/core/learner/learner.py``).

    Waits for: a public read of a learner's lr schedules in RLlib
    (``get_optimizers_for_module`` gives the optimizers, not their schedules)."""
    optimizers = [learner._named_optimizers[n] for n in learner._module_optimizers[module_id]]
    return [(o, learner._optimizer_lr_schedules.get(o)) for o in optimizers]


def set_optimizer_lr(learner: Any, optimizer: Any, lr: float) -> None:
    """Set ``optimizer``'s learning rate as RLlib's schedules do (``_set_optimizer_lr``: every
    param group), read from Ray 2.60.0 (``ray/rllib/core/learner/torch/torch_learner.py``).

    Waits for: a public ``set_optimizer_lr`` of RLlib's ``Learner``."""
    learner._set_optimizer_lr(optimizer, lr=lr)


def local_learner(learner_group: Any) -> Any:
    """The learner a local ``LearnerGroup`` (``num_learners=0``) holds in this process
    (``_learner``; None for a remote group), read from Ray 2.60.0
    (``ray/rllib/core/learner/learner_group.py``).

    Waits for: a public accessor of a local ``LearnerGroup``'s learner in RLlib."""
    return learner_group._learner


class DQNQValueHook(DefaultDQNTorchRLModule):
    """RLlib's DQN torch module with its Q-value helper under a public name:
    ``_qf_forward_helper(batch, encoder, head)``, through which the module computes every
    Q-value (online and target network, exploration, inference, training), is
    :meth:`qf_forward_helper`; a subclass overrides that and calls
    ``super().qf_forward_helper`` for RLlib's own. Read from Ray 2.60.0
    (``ray/rllib/algorithms/dqn/torch/default_dqn_torch_rl_module.py``).

    Waits for: a public hook on the Q-values of RLlib's DQN module."""

    def _qf_forward_helper(self, batch: dict[str, Any], encoder: Any, head: Any) -> dict:
        return self.qf_forward_helper(batch, encoder, head)

    def qf_forward_helper(self, batch: dict[str, Any], encoder: Any, head: Any) -> dict:
        """RLlib's own Q-value computation."""
        return super()._qf_forward_helper(batch, encoder, head)


class TrainWorkerCalls(RayTrainWorker):
    """Ray Train's worker with the keyword arguments of every call made on it under a public
    hook, :meth:`call_kwargs`. A ``LearnerGroup`` starts its remote learners as Ray Train
    workers; Ray Train uses an actor class that derives from ``RayTrainWorker`` as it is (rather
    than wrapping it) and runs every call on it through the name-mangled
    ``_RayTrainWorker__execute(func, *args, **kwargs)``; ``TorchConfig``'s process-group setup
    passes ``backend="nccl"`` there for workers holding GPUs. Read from Ray 2.60.0
    (``ray/train/_internal/worker_group.py``, ``ray/train/torch/config.py``,
    ``ray/rllib/core/learner/learner_group.py``).

    Waits for: a public way to choose a LearnerGroup's process-group backend in RLlib (it
    builds its own ``TorchConfig`` with ``backend=None``)."""

    def _RayTrainWorker__execute(self, func, *args, **kwargs):  # noqa: N802 (Ray Train's name)
        return super()._RayTrainWorker__execute(func, *args, **self.call_kwargs(kwargs))

    def call_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments a call runs with (here: as given)."""
        return kwargs
