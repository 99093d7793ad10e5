"""RLlib's default RLModules with the same CNN, computed with fewer copies.

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

``fused_module_class(config)`` is the module class for an IMPALA, APPO, DQN or Ape-X config;
``sweeps/workloads/rllib_config.py`` uses it for the Atari workloads.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module import (
    DefaultAPPOTorchRLModule,
)
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
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
    """DQN's (and Ape-X's) default module, with the padding fused."""


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
