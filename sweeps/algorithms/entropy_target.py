"""A floor under the policy's entropy for IMPALA and APPO learners: an entropy target.

An entropy bonus with a fixed or annealed coefficient does not say how random the policy stays.
On Pong a bonus of 0.0005 let APPO's policy collapse onto one action within 250k env steps, and
0.002 annealed to 0 over 3M let it collapse at 2.9M on a run whose return had not yet left -19
(results/pong/candidates/CURVES.md): a collapsed policy stops exploring and learns no more. A
target says how random it may become: the learner keeps a second coefficient ``beta >= 0``, the
Lagrange multiplier of the constraint "mean entropy >= target" (as SAC tunes its temperature),
raised while a minibatch's mean entropy is below the target and lowered while it is above, down
to 0, where it does nothing::

    beta <- clip(beta + rate * (target - entropy), 0, MAX_COEFF)      loss <- loss - beta * entropy

The sweep's own entropy bonus (and its schedule) still applies on top. Without a target the
learner is unchanged.

Use: ``config.training(learner_config_dict={"entropy_target": 0.3})``, in nats (``ln 6 = 1.79`` is
uniform over Pong's 6 actions; 0.3 is about 95% on one action, the rest spread); optionally
``"entropy_target_rate"`` (default ``DEFAULT_RATE`` per update). ``beta`` is logged per module as
``entropy_target_coeff``; it is not checkpointed (a restored learner starts it at 0 and it comes
back within a few hundred updates).
"""

from __future__ import annotations

from typing import Any

TARGET_KEY = "entropy_target"
RATE_KEY = "entropy_target_rate"
KEYS = (TARGET_KEY, RATE_KEY)
COEFF_METRIC = "entropy_target_coeff"
DEFAULT_RATE = 1e-4  # per update: 0.3 nats below the target adds 0.003 in 100 updates
MAX_COEFF = 0.05


def check_target(settings: dict[str, Any] | None) -> tuple[float, float] | None:
    """The entropy target and its rate in ``learner_config_dict`` (None if no target is set); a
    ValueError names a target that is not a number >= 0 or a rate that is not > 0."""
    settings = settings or {}
    target = settings.get(TARGET_KEY)
    rate = settings.get(RATE_KEY, DEFAULT_RATE)
    if target is None:
        return None
    for key, value, least in ((TARGET_KEY, target, 0.0), (RATE_KEY, rate, None)):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ValueError(f"learner_config_dict[{key!r}] must be a number, got {value!r}")
        if (least is not None and value < least) or (least is None and value <= 0):
            bound = ">= 0" if least is not None else "> 0"
            raise ValueError(f"learner_config_dict[{key!r}] must be {bound}, got {value!r}")
    return float(target), float(rate)


def next_coeff(beta: float, entropy: float, target: float, rate: float) -> float:
    """One step of the multiplier: up while the entropy is below the target, down to 0 above."""
    return min(MAX_COEFF, max(0.0, beta + rate * (target - entropy)))


class EntropyTarget:
    """Mixin before an RLlib IMPALA/APPO torch learner: its loss, less ``beta`` times the
    minibatch's mean policy entropy, with ``beta`` stepped toward the target."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        import torch
        from ray.rllib.core.columns import Columns

        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        checked = check_target(config.learner_config_dict)
        if checked is None:
            return loss
        target, rate = checked
        module = self.module[module_id].unwrapped()
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        mask = batch[Columns.LOSS_MASK].float()
        entropy = torch.sum(dist.entropy() * mask) / torch.clamp(torch.sum(mask), min=1.0)
        coeffs: dict[Any, float] = self.__dict__.setdefault("_entropy_target_coeffs", {})
        beta = next_coeff(coeffs.get(module_id, 0.0), float(entropy.detach()), target, rate)
        coeffs[module_id] = beta
        self.metrics.log_value((module_id, COEFF_METRIC), beta, window=1)
        return loss - beta * entropy
