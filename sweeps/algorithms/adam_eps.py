"""Adam's epsilon for IMPALA and APPO learners, settable as PPO's Atari recipes set it.

RLlib's torch learner builds ``torch.optim.Adam(params)`` with torch's default ``eps`` of 1e-8.
Adam divides each parameter's step by the root of its running mean square gradient plus
``eps``: once a policy plays well its gradients are tiny, that root is tiny too, and a step
stays a full learning rate in size whatever the gradient. On Pong the suite's APPO collapsed in
this regime from 5.8 to -20.9 within 40k env steps after one update at a gradient norm of 0.29
raised its entropy from 0.25 to 0.83 nats
(results/pong/candidates/pong-cpu-appo-record-s0.csv.gz at 8.49M).
CleanRL's and Stable-Baselines3's PPO on Atari use ``eps`` 1e-5, which damps steps along
parameters whose gradients are that small.

Use: ``config.learners(learner_config_dict={"adam_eps": 1e-5})``. Without it the learner's
optimizer is RLlib's own.
"""

from __future__ import annotations

import math
from typing import Any

EPS_KEY = "adam_eps"
KEYS = (EPS_KEY,)


def check_adam_eps(settings: dict[str, Any] | None) -> float | None:
    """Adam's ``eps`` in ``learner_config_dict`` (None if not set); a ValueError names one that
    is not a finite number > 0."""
    eps = (settings or {}).get(EPS_KEY)
    if eps is None:
        return None
    if not isinstance(eps, int | float) or isinstance(eps, bool) or not 0 < eps < math.inf:
        raise ValueError(f"learner_config_dict[{EPS_KEY!r}] must be a number > 0, got {eps!r}")
    return float(eps)


class AdamEps:
    """Mixin before an RLlib torch learner: each module's Adam built with the configured
    ``eps`` (RLlib's own optimizer where none is set)."""

    def configure_optimizers_for_module(self, module_id, config=None):
        eps = check_adam_eps(getattr(config, "learner_config_dict", None))
        if eps is None:
            return super().configure_optimizers_for_module(module_id, config)
        import torch

        params = self.get_parameters(self.module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.Adam(params, eps=eps),
            params=params,
            lr_or_lr_schedule=config.lr,
        )
