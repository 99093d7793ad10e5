"""RLlib's default RLModules with the same CNN, computed with fewer copies; DQN's with less work.

RLlib 2.60's ``TorchCNN`` writes TF-style "same" padding as an ``nn.ZeroPad2d`` layer before each
``nn.Conv2d`` and its activations out of place. On the CPU that padding is a full copy of the
activations, forward and backward: in the Pong learner's profile it was a fifth of the learner
thread's time. Where the padding is symmetric (Pong's first layer: 1 on every side), the conv
pads by itself, without the copy; every ReLU right after a conv runs in place. The network, its
parameters (names and shapes) and its outputs are unchanged (``tests/test_pong.py`` checks the
outputs are equal), so checkpoints load either way; an asymmetric padding (Pong's second
layer: 1 before, 2 after) stays a layer.

The same modules take the frames as bytes: a CNN given uint8 observations (the Atari env's
``obs_dtype="uint8"``, ``envs/pong.py``) scales them to ``[-1, 1]`` before its first layer, to the
float32 values the env would have made (``2/255·x − 1``). Replay, episodes and the frames shipped
between processes then take a quarter of the bytes; float observations pass through untouched.
As CleanRL's and Stable-Baselines3's Atari networks do, the scaling is the network's.

DQN's module trains without backpropagating through the next frames: with double Q, RLlib's
``_forward_train`` runs the online net on the frames and the next frames as one batch of 2B
under autograd, though the next frames' Q-values only pick the bootstrap action (an argmax, no
gradient); the backward pass then also runs over those B rows, whose gradients are zero. Here
the next frames go through the online net under ``torch.no_grad``: the same outputs and the same
gradients, a backward pass over B rows instead of 2B; byte next frames are scaled once for the
online and the target net.

DQN's module explores without building a distribution: RLlib's ``_forward_exploration`` makes a
``Categorical`` to take an argmax and draws its random actions with ``torch.multinomial`` over the
actions whose Q-value is not 0 (all of them, on Pong); here the argmax and ``torch.randint`` do the
same, ε per row as RLlib's. With ``emit_q_values`` set (Ape-X's actors) it also returns each step's
Q-values, which the runner stores with the step (``extra_model_outputs``), so the actor's initial
priorities need no second forward pass over the frames (``sweeps/algorithms/apex/actor.py``).

``fused_module_class(config)`` is the module class for an IMPALA, APPO, DQN or Ape-X config;
``sweeps/workloads/rllib_config.py`` uses it for the Atari workloads.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module import (
    DefaultAPPOTorchRLModule,
)
from ray.rllib.algorithms.dqn.default_dqn_rl_module import (
    QF_NEXT_PREDS,
    QF_PREDS,
    QF_TARGET_NEXT_PREDS,
)
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.torch.primitives import TorchCNN
from torch import nn


def fuse_padding(module: nn.Module) -> nn.Module:
    """In every ``nn.Sequential`` of ``module``: a symmetric ``ZeroPad2d`` followed by an
    unpadded ``Conv2d`` becomes that conv's own padding, and a ``ReLU`` after a conv runs in
    place. Returns ``module``, changed in place; the function it computes is the same."""
    for seq in [m for m in module.modules() if isinstance(m, nn.Sequential)]:
        layers = list(seq)
        for i, (layer, after) in enumerate(zip(layers, layers[1:], strict=False)):
            if isinstance(layer, nn.ZeroPad2d) and isinstance(after, nn.Conv2d):
                left, right, top, bottom = layer.padding
                if left == right and top == bottom and after.padding == (0, 0):
                    after.padding = (top, left)
                    seq[i] = nn.Identity()
            if isinstance(layer, nn.Conv2d) and isinstance(after, nn.ReLU):
                after.inplace = True
    return module


def frames_to_unit(frames: torch.Tensor) -> torch.Tensor:
    """uint8 frames in [0, 255] -> float32 in [-1, 1], as ``envs/pong.py`` scales them. A batch
    ``(B, H, W, C)`` comes back as a view of channels-first memory, as the env's float frames
    are: RLlib's CNN permutes it to a contiguous ``(B, C, H, W)``, the layout the env runner's
    small inference batches run fastest in on the CPU."""
    if frames.dim() == 4:
        first = frames.permute(0, 3, 1, 2).to(torch.float32, memory_format=torch.contiguous_format)
        return first.mul_(2.0 / 255.0).sub_(1.0).permute(0, 2, 3, 1)
    return frames.to(torch.float32).mul_(2.0 / 255.0).sub_(1.0)


def _scale_bytes(cnn: nn.Module, args: tuple) -> tuple | None:
    """Forward pre-hook of a CNN: uint8 input scaled to [-1, 1]; anything else untouched."""
    if args and isinstance(args[0], torch.Tensor) and args[0].dtype == torch.uint8:
        return (frames_to_unit(args[0]), *args[1:])
    return None


def scale_byte_frames(module: nn.Module) -> nn.Module:
    """Every RLlib CNN in ``module`` takes uint8 frames (scaled by :func:`frames_to_unit`) as
    well as floats. The hook is copied with the module, so target networks have it too."""
    for cnn in module.modules():
        if isinstance(cnn, TorchCNN):
            cnn.register_forward_pre_hook(_scale_bytes)
    return module


class _FusedCNN:
    """Mixin before an RLlib RLModule: its layers, padding fused after they are built, its CNNs
    taking byte frames."""

    def setup(self) -> None:
        super().setup()
        scale_byte_frames(fuse_padding(self))


class FusedPPOTorchRLModule(_FusedCNN, DefaultPPOTorchRLModule):
    """IMPALA's default module (RLlib's PPO module), with the padding fused."""


class FusedAPPOTorchRLModule(_FusedCNN, DefaultAPPOTorchRLModule):
    """APPO's default module, with the padding fused (its target network is a copy of it)."""


class FusedDQNTorchRLModule(_FusedCNN, DefaultDQNTorchRLModule):
    """DQN's (and Ape-X's) default module, with the padding fused and a lean ε-greedy."""

    #: Return each step's Q-values (``QF_PREDS``) with its action; Ape-X's actors set it.
    emit_q_values: bool = False

    def _forward_train(self, batch: dict[str, Any]) -> dict[str, Any]:
        if (
            self.inference_only
            or not self.uses_double_q
            or self.num_atoms > 1
            or Columns.STATE_IN in batch
        ):
            return super()._forward_train(batch)  # (RLlib's, or its error)
        output = {QF_PREDS: self.compute_q_values({Columns.OBS: batch[Columns.OBS]})[QF_PREDS]}
        next_frames = batch[Columns.NEXT_OBS]
        if isinstance(next_frames, torch.Tensor) and next_frames.dtype == torch.uint8:
            next_frames = frames_to_unit(next_frames)  # once for both nets
        next_obs = {Columns.OBS: next_frames}
        with torch.no_grad():  # picks the bootstrap action only
            output[QF_NEXT_PREDS] = self.compute_q_values(next_obs)[QF_PREDS]
        output[QF_TARGET_NEXT_PREDS] = self.forward_target(next_obs)[QF_PREDS]
        return output

    def _forward_exploration(self, batch: dict[str, Any], t: int) -> dict[str, Any]:
        qf_outs = self.compute_q_values(batch)
        q_values = qf_outs[QF_PREDS]
        greedy = q_values.argmax(dim=-1)
        self.epsilon_schedule.update(t)
        epsilon = self.epsilon_schedule.get_current_value()  # a number, or one per row
        random_actions = torch.randint(
            q_values.shape[-1], greedy.shape, device=greedy.device, dtype=greedy.dtype
        )
        explore = torch.rand(greedy.shape, device=greedy.device) < epsilon
        output = {Columns.ACTIONS: torch.where(explore, random_actions, greedy)}
        if self.emit_q_values:
            output[QF_PREDS] = q_values
        if Columns.STATE_OUT in qf_outs:
            output[Columns.STATE_OUT] = qf_outs[Columns.STATE_OUT]
        return output


_BY_DEFAULT = {
    DefaultPPOTorchRLModule: FusedPPOTorchRLModule,
    DefaultAPPOTorchRLModule: FusedAPPOTorchRLModule,
    DefaultDQNTorchRLModule: FusedDQNTorchRLModule,
}


def fused_module_class(config: Any) -> type:
    """The fused counterpart of ``config``'s default RLModule class (that class itself when
    there is none)."""
    default = config.get_default_rl_module_spec().module_class
    return _BY_DEFAULT.get(default, default)
