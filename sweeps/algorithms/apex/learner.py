"""Ape-X's learner: RLlib's DQN torch learner and loss with the target-network period counted
in *trained* env steps (the only change).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.dqn.dqn_learner import DQNLearner
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core.learner.utils import update_target_network
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    LAST_TARGET_UPDATE_TS,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_TARGET_UPDATES,
)


class ApexDQNTorchLearner(DQNTorchLearner):
    """RLlib's DQN torch learner and loss, unchanged, except for the target-network clock.

    RLlib's new-stack DQN syncs the target network every ``target_network_update_freq``
    *sampled* env steps. With asynchronous actors the sampling rate is decoupled from the
    learner's, so that would make the target period, in gradient steps, depend on how fast the
    actors run. As in old RLlib Ape-X, the period counts *trained* env steps here (the
    ``NUM_ENV_STEPS_TRAINED_LIFETIME`` entry of ``timesteps``); learning-rate schedules keep
    RLlib's sampled-steps clock.
    """

    @override(DQNTorchLearner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        # TorchLearner / Learner parts (lr schedules, ...) on the sampled clock; skips
        # DQNLearner's own target update, done below on the trained clock.
        super(DQNLearner, self).after_gradient_based_update(timesteps=timesteps)
        trained = timesteps.get(NUM_ENV_STEPS_TRAINED_LIFETIME, 0)
        for module_id, module in self.module.items():
            config = self.config.get_config_for_module(module_id)
            if not isinstance(module.unwrapped(), TargetNetworkAPI):
                continue
            if trained - self.last_update_ts_by_mid[module_id] < config.target_network_update_freq:
                continue
            for main_net, target_net in module.unwrapped().get_target_network_pairs():
                update_target_network(main_net=main_net, target_net=target_net, tau=config.tau)
            self.metrics.log_value((module_id, NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")
            self.last_update_ts_by_mid[module_id] = trained
            self.metrics.log_value((module_id, LAST_TARGET_UPDATE_TS), trained, reduce="max")
