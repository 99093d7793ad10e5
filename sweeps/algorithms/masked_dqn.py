"""Action-masked DQN RLModule for ``CabsRequests-v0`` (works with stock DQN and with ApexDQN).

The request variant's observation is the 36-entry one-hot state and the month's progress, then a
0/1 mask of the 25 actions available now (``envs.cabs.MASK_START``). :class:`MaskedDQNTorchRLModule`
lets the network see the whole observation, then pushes the Q-values of unavailable actions to
:data:`MASKED_Q_VALUE` in RLlib's Q-value helper, the one place through which RLlib's DQN
module computes every Q-value (online and target network; seam:
``sweeps.seams.learner.DQNQValueHook``). Hence:

* greedy choice (``forward_inference``, evaluation) is the argmax over available actions;
* ε-greedy exploration draws its random action uniformly among the AVAILABLE actions
  (RLlib's default draws among actions whose Q is not ``-inf``/0, which a finite mask value
  would not exclude, so ``_forward_exploration`` is overridden);
* the learner's targets: with double-Q, the argmax over the online net's masked Q(s', ·) picks
  an action available in s', whose target-net value is read; without double-Q the max over
  the masked target Q(s', ·). The taken action ``a`` was available, so Q(s, a) is unmasked.

A finite large negative value (not ``-inf``) keeps every loss term finite. A row whose mask
has no available action (not produced by the cab env, which always offers going offline) is
left unmasked rather than made all-negative.

Use :func:`dqn_module_spec` to get the right ``RLModuleSpec`` for an env id.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.framework import try_import_torch

from sweeps.seams.learner import DQNQValueHook

torch, nn = try_import_torch()

# Q-value given to unavailable actions: far below any return of the cab env, still finite.
MASKED_Q_VALUE = -1.0e9
# model_config key overriding where the mask starts in the observation (default: the cab env's).
MASK_START_KEY = "action_mask_start"


def _default_mask_start() -> int:
    from envs.cabs import MASK_START

    return MASK_START


class MaskedDQNTorchRLModule(DQNQValueHook):
    """RLlib's DQN torch module with Q-values of unavailable actions masked out.

    The mask is read from ``obs[..., start : start + num_actions]`` with ``start`` =
    ``model_config["action_mask_start"]`` (default ``envs.cabs.MASK_START`` = 37).
    Distributional Q (``num_atoms > 1``) is not supported (its logits would need masking too).
    """

    def setup(self) -> None:
        super().setup()
        if self.num_atoms > 1:
            raise ValueError("MaskedDQNTorchRLModule supports num_atoms == 1 only")
        self.num_actions = int(self.action_space.n)
        start = self.model_config.get(MASK_START_KEY)
        self.mask_start = int(_default_mask_start() if start is None else start)
        obs_dim = int(self.observation_space.shape[-1])
        if self.mask_start + self.num_actions > obs_dim:
            raise ValueError(
                f"observation of size {obs_dim} cannot hold a {self.num_actions}-action mask "
                f"starting at {self.mask_start}"
            )

    def available_actions(self, obs: torch.Tensor) -> torch.Tensor:
        """Boolean ``(..., num_actions)`` tensor of the actions available in ``obs``."""
        available = obs[..., self.mask_start : self.mask_start + self.num_actions] > 0.5
        # A row with nothing available stays unmasked (never all -1e9 targets).
        return available | ~available.any(dim=-1, keepdim=True)

    def qf_forward_helper(self, batch: dict[str, Any], encoder, head) -> dict[str, Any]:
        output = super().qf_forward_helper(batch, encoder, head)
        available = self.available_actions(batch[Columns.OBS])
        output[QF_PREDS] = output[QF_PREDS].masked_fill(~available, MASKED_Q_VALUE)
        return output

    def _forward_exploration(self, batch: dict[str, Any], t: int) -> dict[str, Any]:
        qf_outs = self.compute_q_values(batch)
        q_values = qf_outs[QF_PREDS]
        greedy = torch.argmax(q_values, dim=-1)

        self.epsilon_schedule.update(t)
        epsilon = self.epsilon_schedule.get_current_value()
        available = self.available_actions(batch[Columns.OBS]).float()
        random_actions = torch.multinomial(
            available.reshape(-1, self.num_actions), num_samples=1
        ).reshape(greedy.shape)
        explore = torch.rand(greedy.shape, device=greedy.device) < epsilon
        output = {Columns.ACTIONS: torch.where(explore, random_actions, greedy)}
        if Columns.STATE_OUT in qf_outs:
            output[Columns.STATE_OUT] = qf_outs[Columns.STATE_OUT]
        return output


def dqn_module_class(env_id: str) -> type:
    """The DQN RLModule class for an env id: masked on ``CabsRequests-v0``, else RLlib's."""
    from envs import CABS_REQUESTS

    return MaskedDQNTorchRLModule if env_id == CABS_REQUESTS else DefaultDQNTorchRLModule


def dqn_module_spec(env_id: str, model_config: Any = None) -> RLModuleSpec:
    """``RLModuleSpec`` for DQN / ApexDQN on ``env_id`` (pass to ``config.rl_module(...)``).

    ``model_config`` (dict or ``DefaultModelConfig``) is merged by RLlib over the algorithm's
    own model config (dueling, double_q, epsilon, ...), as for any user spec.
    """
    return RLModuleSpec(module_class=dqn_module_class(env_id), model_config=model_config)
