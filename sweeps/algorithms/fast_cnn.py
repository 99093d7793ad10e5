"""RLlib's default RLModules with the same CNN, computed with fewer copies.

RLlib 2.60's ``TorchCNN`` writes TF-style "same" padding as an ``nn.ZeroPad2d`` layer before each
``nn.Conv2d`` and its activations out of place. On the CPU that padding is a full copy of the
activations, forward and backward: in the Pong learner's profile it was a fifth of the learner
thread's time. Where the padding is symmetric (Pong's first layer: 1 on every side), the conv
pads by itself, without the copy; every ReLU right after a conv runs in place. The network, its
parameters (names and shapes) and its outputs are unchanged (``tests/test_pong.py`` checks the
outputs are equal), so checkpoints load either way; an asymmetric padding (Pong's second
layer: 1 before, 2 after) stays a layer.

``fused_module_class(config)`` is the module class for an IMPALA, APPO, DQN or Ape-X config;
``sweeps/workloads/rllib_config.py`` uses it for the Atari workloads.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module import (
    DefaultAPPOTorchRLModule,
)
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
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


class _FusedCNN:
    """Mixin before an RLlib RLModule: its layers, padding fused after they are built."""

    def setup(self) -> None:
        super().setup()
        fuse_padding(self)


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
