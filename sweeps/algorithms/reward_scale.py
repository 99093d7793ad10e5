"""Rewards scaled for IMPALA's and APPO's loss: ``learner_config_dict={"reward_scale": 0.1}``.

V-trace's value targets are discounted returns, at the env's own scale: with γ = 0.99 and a reward
of −1 a step (Acrobot, MountainCar) the value function has to learn about −100 everywhere from an
output that starts near 0. Adam moves each weight by about the learning rate a step, so a value
head that starts small is far off for thousands of updates, and in the meantime the V-trace
advantages are the value's error, large and of one sign. On Acrobot IMPALA and APPO with
CartPole's defaults collapsed to one action within ~65k env steps (``results/gym/before/``;
the value loss of the probes beside them: ``results/gym/probes/``). Scaled rewards scale the
value targets and the advantages alike (V-trace is linear in the rewards): the policy gradient's
direction is unchanged, the value head's job is a smaller number. Stable-Baselines3's
``VecNormalize`` (rl-zoo3 uses it for PPO and A2C on Acrobot and MountainCar) does the same with a
running estimate; here the scale is fixed for the run, and the reported returns are the env's own
(only the loss sees the scaled rewards).

:class:`RewardScale`, a mixin before the loss options in the suite's IMPALA/APPO learner
(``sweeps/algorithms/pg_learner.py``): with the scale at 1 (the default) the batch is passed on
untouched.
"""

from __future__ import annotations

import math
from typing import Any

KEY = "reward_scale"
KEYS = (KEY,)
DEFAULT = 1.0  # the scale where learner_config_dict names none: the rewards as they are


def check_scale(settings: dict[str, Any] | None) -> float:
    """The scale ``learner_config_dict`` asks for (``DEFAULT`` where it names none); a ValueError
    for one that is not a finite number above 0."""
    value = (settings or {}).get(KEY, DEFAULT)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ValueError(f"learner_config_dict[{KEY!r}] must be a number above 0, got {value!r}")
    return float(value)


def scaled(batch: Any, scale: float) -> Any:
    """``batch`` with its rewards times ``scale`` (the same batch where the scale is 1)."""
    from ray.rllib.core.columns import Columns

    if scale == 1.0:
        return batch
    return {**batch, Columns.REWARDS: batch[Columns.REWARDS] * scale}


class RewardScale:
    """Mixin before an RLlib IMPALA/APPO torch learner's loss: the loss on scaled rewards."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        scale = check_scale(config.learner_config_dict)
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=scaled(batch, scale), fwd_out=fwd_out
        )
