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
``"entropy_target_rate"`` (default ``DEFAULT_RATE`` per update). The target may also be a
schedule over env steps sampled, written as RLlib writes its ``lr`` and ``entropy_coeff``
schedules: ``[[0, 0.3], [4000000, 0.3], [6000000, 0.0]]`` holds 0.3 to 4M env steps, then lowers
it linearly to 0 (no floor) at 6M, where it stays; the first point is at step 0. ``beta`` is
logged per module as ``entropy_target_coeff`` and the target in force as ``entropy_target_now``;
``beta`` is not checkpointed (a restored learner starts it at 0 and it comes back within a few
hundred updates).
"""

from __future__ import annotations

from typing import Any

import numpy as np

TARGET_KEY = "entropy_target"
RATE_KEY = "entropy_target_rate"
KEYS = (TARGET_KEY, RATE_KEY)
COEFF_METRIC = "entropy_target_coeff"
TARGET_METRIC = "entropy_target_now"
DEFAULT_RATE = 1e-4  # per update: 0.3 nats below the target adds 0.003 in 100 updates
MAX_COEFF = 0.05


Schedule = tuple[tuple[float, float], ...]


def check_target(settings: dict[str, Any] | None) -> tuple[Schedule, float] | None:
    """The entropy target, as a schedule of ``(env steps, nats)`` points (a number is the one
    point ``(0, number)``), and its rate in ``learner_config_dict`` (None if no target is set); a
    ValueError names a target that is neither a number >= 0 nor a schedule of such numbers from
    step 0 at increasing steps, or a rate that is not > 0."""
    settings = settings or {}
    target = settings.get(TARGET_KEY)
    rate = settings.get(RATE_KEY, DEFAULT_RATE)
    if target is None:
        return None
    if not _is_number(rate) or rate <= 0:
        raise ValueError(f"learner_config_dict[{RATE_KEY!r}] must be a number > 0, got {rate!r}")
    if _is_number(target):
        if target < 0:
            raise ValueError(f"learner_config_dict[{TARGET_KEY!r}] must be >= 0, got {target!r}")
        return ((0.0, float(target)),), float(rate)
    return _check_schedule(target), float(rate)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_schedule(points: Any) -> Schedule:
    problem = f"learner_config_dict[{TARGET_KEY!r}] must be a number >= 0 or a schedule"
    example = "[[0, 0.3], [4000000, 0.3], [6000000, 0.0]]"
    if not isinstance(points, list | tuple) or not points:
        raise ValueError(f"{problem} such as {example}, got {points!r}")
    for point in points:
        if not (
            isinstance(point, list | tuple)
            and len(point) == 2
            and all(_is_number(x) and x >= 0 for x in point)
        ):
            raise ValueError(f"{problem} of [env steps, nats] pairs >= 0, got {point!r}")
    steps = [point[0] for point in points]
    if steps[0] != 0 or any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
        raise ValueError(f"{problem} starting at step 0 with increasing steps, got {points!r}")
    return tuple((float(step), float(nats)) for step, nats in points)


def target_at(schedule: Schedule, env_steps: float) -> float:
    """The target in force after ``env_steps`` env steps: linear between the schedule's points,
    the last point's value after it."""
    steps, values = zip(*schedule, strict=True)
    return float(np.interp(env_steps, steps, values))


def next_coeff(beta: float, entropy: float, target: float, rate: float) -> float:
    """One step of the multiplier: up while the entropy is below the target, down to 0 above."""
    return min(MAX_COEFF, max(0.0, beta + rate * (target - entropy)))


class EntropyTarget:
    """Mixin before an RLlib IMPALA/APPO torch learner: its loss, less ``beta`` times the
    minibatch's mean policy entropy, with ``beta`` stepped toward the target in force at the
    env steps sampled that RLlib passes to every update."""

    def before_gradient_based_update(self, *, timesteps):
        from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

        super().before_gradient_based_update(timesteps=timesteps)
        self._entropy_target_env_steps = float(timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        import torch
        from ray.rllib.core.columns import Columns

        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        checked = check_target(config.learner_config_dict)
        if checked is None:
            return loss
        schedule, rate = checked
        target = target_at(schedule, getattr(self, "_entropy_target_env_steps", 0.0))
        module = self.module[module_id].unwrapped()
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        mask = batch[Columns.LOSS_MASK].float()
        entropy = torch.sum(dist.entropy() * mask) / torch.clamp(torch.sum(mask), min=1.0)
        coeffs: dict[Any, float] = self.__dict__.setdefault("_entropy_target_coeffs", {})
        beta = next_coeff(coeffs.get(module_id, 0.0), float(entropy.detach()), target, rate)
        coeffs[module_id] = beta
        self.metrics.log_value((module_id, COEFF_METRIC), beta, window=1)
        self.metrics.log_value((module_id, TARGET_METRIC), target, window=1)
        return loss - beta * entropy
