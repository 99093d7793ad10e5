"""Learning-rate scales for IMPALA and APPO learners: by a KL target, as rl_games adapts PPO's,
and by the training return.

A fixed learning rate is too small while the policy barely moves and too large once it moves
fast. On Pong the suite's APPO stayed near the uniform policy (entropy ~1.74 of 1.79 nats) for
its first million env steps, and its return swung by tens of points after it rose
(results/pong/candidates/CURVES.md). rl_games' PPO on Pong instead sets each minibatch's step
by the KL divergence between the policy that collected the data and the policy being trained:
up while the policy moves less than the target, down while it moves more. Here the same rule
scales the configured learning rate (a constant or the sweep's schedule) by ``s``::

    kl > 2 * target:    s <- max(s / FACTOR, MIN_SCALE)
    kl < target / 2:    s <- min(s * FACTOR, MAX_SCALE)          step lr = s * scheduled lr

``kl`` is each minibatch's mean of Schulman's ``(r - 1) - log r`` estimate of KL(behaviour ||
current), ``r`` the probability ratio of the action taken, before the minibatch's step. In an
asynchronous learner the behaviour policy lags a batch or two behind: the lag counts as
movement, as it should for a trust region around the data.

Use: ``config.learners(learner_config_dict={"lr_kl_target": 0.01})``; optionally
``"lr_kl_min_scale"`` and ``"lr_kl_max_scale"`` (defaults ``MIN_SCALE``, ``MAX_SCALE``). Without a
target the learner is unchanged. ``s`` and the KL are logged per module as ``lr_kl_scale`` and
``behaviour_kl`` (the step's learning rate is RLlib's own ``default_optimizer_learning_rate``
times ``lr_kl_scale``); ``s`` is in the learner's checkpoints (``pg_learner.ExtrasInCheckpoints``).

The learning rate may also be scaled by how well the policy plays: ``"lr_scale_by_return": [[5,
1.0], [15, 0.2]]`` keeps the configured rate until the best training return so far (handed to the
learners after every iteration: ``training_return.py``) reaches 5, then lowers it linearly to a
fifth by 15, where it stays: a large step while the policy learns to play, a small one once it
plays well, on each seed when it gets there rather than at a fixed count of env steps. The scale
is logged as ``lr_return_scale``; with a KL target as well, the step's rate is the product.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sweeps.algorithms.training_return import best_training_return

TARGET_KEY = "lr_kl_target"
MIN_KEY = "lr_kl_min_scale"
MAX_KEY = "lr_kl_max_scale"
KL_KEYS = (TARGET_KEY, MIN_KEY, MAX_KEY)
RETURN_SCALE_KEY = "lr_scale_by_return"
KEYS = (*KL_KEYS, RETURN_SCALE_KEY)
SCALE_METRIC = "lr_kl_scale"
RETURN_SCALE_METRIC = "lr_return_scale"
KL_METRIC = "behaviour_kl"
SCALES_ATTR = "_lr_kl_scales"  # on the learner: s by module id
NONE = 0.0  # no target: the learner as it is (a search space's "none")
FACTOR = 1.5  # rl_games' adaptive schedule
MIN_SCALE = 0.1
MAX_SCALE = 4.0


def check_kl_target(settings: dict[str, Any] | None) -> tuple[float, float, float] | None:
    """The KL target and the scale's bounds in ``learner_config_dict`` (None if no target is
    set, or a target of 0, ``NONE``); a ValueError names a value that is not a number > 0 or
    bounds that hold no 1."""
    settings = settings or {}
    if settings.get(TARGET_KEY) is None or settings.get(TARGET_KEY) == NONE:
        return None
    values = (
        settings[TARGET_KEY],
        settings.get(MIN_KEY, MIN_SCALE),
        settings.get(MAX_KEY, MAX_SCALE),
    )
    for key, value in zip(KL_KEYS, values, strict=True):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ValueError(f"learner_config_dict[{key!r}] must be a number, got {value!r}")
        if value <= 0:
            raise ValueError(f"learner_config_dict[{key!r}] must be > 0, got {value!r}")
    target, low, high = (float(v) for v in values)
    if not low <= 1.0 <= high:
        raise ValueError(
            f"learner_config_dict: {MIN_KEY} <= 1 <= {MAX_KEY} must hold (the scale starts at 1), "
            f"got {low!r} and {high!r}"
        )
    return target, low, high


def check_return_scale(settings: dict[str, Any] | None) -> tuple[tuple[float, float], ...] | None:
    """The learning rate's scale over the training return in ``learner_config_dict`` (None if
    not set): ``(return, scale)`` points; a ValueError names one that is not a list of
    ``[return, scale > 0]`` pairs at increasing returns."""
    points = (settings or {}).get(RETURN_SCALE_KEY)
    if points is None:
        return None
    problem = (
        f"learner_config_dict[{RETURN_SCALE_KEY!r}] must be a list of [training return, scale > 0]"
        " pairs at increasing returns, such as [[5, 1.0], [15, 0.2]]"
    )
    if not isinstance(points, list | tuple) or not points:
        raise ValueError(f"{problem}, got {points!r}")
    for point in points:
        if not (
            isinstance(point, list | tuple)
            and len(point) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in point)
            and all(math.isfinite(x) for x in point)
            and point[1] > 0
        ):
            raise ValueError(f"{problem}, got {point!r}")
    returns = [point[0] for point in points]
    if any(b <= a for a, b in zip(returns, returns[1:], strict=False)):
        raise ValueError(f"{problem}, got {points!r}")
    return tuple((float(r), float(scale)) for r, scale in points)


def keyed_by_return(settings: dict[str, Any] | None) -> bool:
    """Whether ``learner_config_dict`` scales the learning rate by the training return (its
    learners then need the return: ``training_return.share_training_return``)."""
    return check_return_scale(settings) is not None


def return_scale(schedule: tuple[tuple[float, float], ...], best_return: float) -> float:
    """The scale in force at ``best_return``: linear between the points, the first point's
    scale before it (also before any game has ended), the last's after."""
    returns, scales = zip(*schedule, strict=True)
    return float(np.interp(best_return, returns, scales))


def next_scale(scale: float, kl: float, target: float, low: float, high: float) -> float:
    """rl_games' step: down by FACTOR above twice the target, up by FACTOR below half of it."""
    if kl > 2.0 * target:
        return max(low, scale / FACTOR)
    if kl < 0.5 * target:
        return min(high, scale * FACTOR)
    return scale


class KLAdaptiveLR:
    """Mixin before an RLlib IMPALA/APPO torch learner: before each minibatch's step, its
    optimizers' learning rate set to the scheduled one times a scale kept near the KL target."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        checked = check_kl_target(config.learner_config_dict)
        by_return = check_return_scale(config.learner_config_dict)
        if checked is None and by_return is None:
            return loss
        scale = 1.0
        if checked is not None:
            kl = behaviour_kl(self.module[module_id].unwrapped(), batch, fwd_out)
            scales: dict[Any, float] = self.__dict__.setdefault(SCALES_ATTR, {})
            scale = scales[module_id] = next_scale(scales.get(module_id, 1.0), kl, *checked)
            self.metrics.log_value((module_id, SCALE_METRIC), scale, window=1)
            self.metrics.log_value((module_id, KL_METRIC), kl, window=1)
        if by_return is not None:
            played = return_scale(by_return, best_training_return(self))
            self.metrics.log_value((module_id, RETURN_SCALE_METRIC), played, window=1)
            scale *= played
        # RLlib's optimizers and schedules (seam: sweeps.seams.learner; imported on use, as
        # this module imports neither Ray nor torch).
        from sweeps.seams.learner import optimizer_lr_schedules, set_optimizer_lr

        for optimizer, scheduler in optimizer_lr_schedules(self, module_id):
            if scheduler is not None:  # RLlib sets it back to the schedule after the update
                set_optimizer_lr(self, optimizer, scale * float(scheduler.get_current_value()))
        return loss


def behaviour_kl(module: Any, batch: dict[str, Any], fwd_out: dict[str, Any]) -> float:
    """The minibatch's mean ``(r - 1) - log r`` over its loss-masked steps, ``r`` the current
    policy's probability of the action taken over the behaviour policy's."""
    import torch
    from ray.rllib.core.columns import Columns

    with torch.no_grad():
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        log_ratio = dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP]
        mask = batch[Columns.LOSS_MASK].bool()
        log_ratio = log_ratio[mask]
        if log_ratio.numel() == 0:
            return 0.0
        return float(torch.mean(torch.expm1(log_ratio) - log_ratio))
