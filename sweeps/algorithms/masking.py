"""Action masking for the policy-gradient modules (IMPALA, APPO) on ``CabsRequests-v0``.

The request variant appends a 0/1 mask of the available actions to the observation (entries
``MASK_START:MASK_START + NUM_ACTIONS``). As in RLlib's action-masking example, unavailable
actions get a logit of ``FLOAT_MIN``, so sampling, greedy choice and the policy loss all see only
available actions. The network still sees the whole observation (mask included). DQN's masked
module (Q-values) lives in ``sweeps.algorithms.masked_dqn``.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module import (
    DefaultAPPOTorchRLModule,
)
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS
from ray.rllib.utils.torch_utils import FLOAT_MIN

from envs.cabs import MASK_START, NUM_ACTIONS


def mask_logits(
    batch: dict[str, Any], output: dict[str, Any], key: str = Columns.ACTION_DIST_INPUTS
) -> dict[str, Any]:
    """Push the logits of unavailable actions (mask 0 in the observation) to ``FLOAT_MIN``."""
    mask = batch[Columns.OBS][..., MASK_START : MASK_START + NUM_ACTIONS]
    output[key] = output[key] + torch.clamp(torch.log(mask), min=FLOAT_MIN)
    return output


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """IMPALA's default module with masked logits."""

    def _forward(self, batch, **kwargs):
        return mask_logits(batch, super()._forward(batch, **kwargs))

    def _forward_train(self, batch, **kwargs):
        return mask_logits(batch, super()._forward_train(batch, **kwargs))


class MaskedAPPOTorchRLModule(DefaultAPPOTorchRLModule):
    """APPO's default module with masked logits (the target network's logits too)."""

    def _forward(self, batch, **kwargs):
        return mask_logits(batch, super()._forward(batch, **kwargs))

    def _forward_train(self, batch, **kwargs):
        return mask_logits(batch, super()._forward_train(batch, **kwargs))

    def forward_target(self, batch, **kwargs):
        out = super().forward_target(batch, **kwargs)
        return mask_logits(batch, out, TARGET_NETWORK_ACTION_DIST_INPUTS)
