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

Use: ``config.learners(learner_config_dict={"entropy_target": 0.3})``, in nats (``ln 6 = 1.79`` is
uniform over Pong's 6 actions; 0.3 is about 95% on one action, the rest spread); optionally
``"entropy_target_rate"`` (default ``DEFAULT_RATE`` per update). The target may also be a
schedule over env steps sampled, written as RLlib writes its ``lr`` and ``entropy_coeff``
schedules: ``[[0, 0.3], [4000000, 0.3], [6000000, 0.0]]`` holds 0.3 to 4M env steps, then lowers
it linearly to 0 (no floor) at 6M, where it stays; the first point is at step 0. With
``"entropy_target_by": "return"`` the schedule's points are training returns instead: ``[[-5, 0.6],
[15, 0.0]]`` holds 0.6 until the best training return so far (the mean of the last 20 games, which
the suite's callback hands the learners after every iteration: ``training_return.py``) reaches
-5, then lowers it linearly to none at 15; the floor then comes down when the policy plays well
on each seed, not at a fixed count of env steps, and does not come back up if the return falls
again. ``beta`` is logged per module as ``entropy_target_coeff`` and the target in force as
``entropy_target_now``; both ``beta`` and the best return are in the learner's checkpoints
(``pg_learner.ExtrasInCheckpoints``), so a restored learner goes on with the floor it had.

Where actions duplicate each other, nats over the actions say little about exploration: Pong's 6
actions are 3 pairs (NOOP/FIRE, RIGHT/RIGHTFIRE, LEFT/LEFTFIRE), so a policy that always moves
up, split evenly between RIGHT and RIGHTFIRE, has 0.69 nats and never explores.
``"entropy_target_groups": [[0, 1], [2, 4], [3, 5]]`` measures the entropy of the merged
distribution instead (each group's probabilities summed; ``ln 3 = 1.10`` is uniform over Pong's 3
moves), logs it as ``entropy_merged`` and, with a target set, holds the floor on it. Groups
without a target only log it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from sweeps.algorithms.training_return import best_training_return

TARGET_KEY = "entropy_target"
RATE_KEY = "entropy_target_rate"
BY_KEY = "entropy_target_by"
GROUPS_KEY = "entropy_target_groups"
KEYS = (TARGET_KEY, RATE_KEY, BY_KEY, GROUPS_KEY)
BY_ENV_STEPS = "env_steps"  # the schedule's points are env steps sampled (the default)
BY_RETURN = "return"  # ... the best training return so far
COEFF_METRIC = "entropy_target_coeff"
TARGET_METRIC = "entropy_target_now"
MERGED_METRIC = "entropy_merged"
COEFFS_ATTR = "_entropy_target_coeffs"  # on the learner: beta by module id
NONE = 0.0  # the target that does nothing (no entropy is below it): a search space's "none"
DEFAULT_RATE = 1e-4  # per update: 0.3 nats below the target adds 0.003 in 100 updates
MAX_COEFF = 0.05


Schedule = tuple[tuple[float, float], ...]
Groups = tuple[tuple[int, ...], ...]


class Target(NamedTuple):
    schedule: Schedule  # (progress, nats) points; progress in env steps or training return
    rate: float
    by: str  # BY_ENV_STEPS or BY_RETURN


def check_target(settings: dict[str, Any] | None) -> Target | None:
    """The entropy target in ``learner_config_dict`` (None if no target is set, or a target of
    0, ``NONE``): its schedule of ``(env steps or training return, nats)`` points (a number is
    the one point ``(0, number)``), its rate and what its points count. A ValueError names a
    target that is neither a number >= 0 nor a schedule of such numbers at increasing points
    (by env steps: from step 0), a rate that is not > 0, or an ``entropy_target_by`` other than
    ``"env_steps"`` or ``"return"``."""
    settings = settings or {}
    target = settings.get(TARGET_KEY)
    rate = settings.get(RATE_KEY, DEFAULT_RATE)
    by = settings.get(BY_KEY, BY_ENV_STEPS)
    if by not in (BY_ENV_STEPS, BY_RETURN):
        raise ValueError(
            f"learner_config_dict[{BY_KEY!r}] must be {BY_ENV_STEPS!r} or {BY_RETURN!r}, got {by!r}"
        )
    check_groups(settings)
    if target is None:
        return None
    if not _is_number(rate) or rate <= 0:
        raise ValueError(f"learner_config_dict[{RATE_KEY!r}] must be a number > 0, got {rate!r}")
    if _is_number(target):
        if target < 0:
            raise ValueError(f"learner_config_dict[{TARGET_KEY!r}] must be >= 0, got {target!r}")
        if target == NONE:  # no entropy is below it: the learner as it is, nothing logged
            return None
        return Target(((0.0, float(target)),), float(rate), by)
    return Target(_check_schedule(target, by), float(rate), by)


def check_groups(settings: dict[str, Any] | None) -> Groups | None:
    """The action groups in ``learner_config_dict`` (None if none are set). A ValueError names
    groups that are not a list of at least two non-empty lists of action indices >= 0, with no
    index in two groups."""
    groups = (settings or {}).get(GROUPS_KEY)
    if groups is None:
        return None
    problem = (
        f"learner_config_dict[{GROUPS_KEY!r}] must be at least two disjoint, non-empty lists of "
        f"action indices >= 0, such as [[0, 1], [2, 4], [3, 5]]"
    )
    if not (
        isinstance(groups, list | tuple)
        and len(groups) >= 2
        and all(isinstance(g, list | tuple) and g for g in groups)
        and all(_is_index(i) for g in groups for i in g)
    ):
        raise ValueError(f"{problem}, got {groups!r}")
    flat = [i for g in groups for i in g]
    if len(set(flat)) != len(flat):
        raise ValueError(f"{problem}, got {groups!r} (an index in two groups)")
    return tuple(tuple(g) for g in groups)


def merged_entropy(logits: Any, groups: Groups) -> Any:
    """Per row, the entropy of the categorical distribution of ``logits`` with each group's
    probabilities summed (actions in no group are left out). A ValueError names an index past
    the last action."""
    import torch

    top = max(i for g in groups for i in g)
    if top >= logits.shape[-1]:
        raise ValueError(
            f"learner_config_dict[{GROUPS_KEY!r}] names action {top}, but the policy has "
            f"{logits.shape[-1]} actions"
        )
    log_probs = torch.log_softmax(logits, dim=-1)
    merged = torch.stack([torch.logsumexp(log_probs[..., list(g)], dim=-1) for g in groups], -1)
    return -torch.sum(torch.exp(merged) * merged, dim=-1)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_schedule(points: Any, by: str) -> Schedule:
    problem = f"learner_config_dict[{TARGET_KEY!r}] must be a number >= 0 or a schedule"
    if by == BY_RETURN:
        example, pairs, start = "[[-5, 0.6], [15, 0.0]]", "[training return, nats >= 0]", ""
    else:
        example = "[[0, 0.3], [4000000, 0.3], [6000000, 0.0]]"
        pairs, start = "[env steps >= 0, nats >= 0]", "starting at step 0 "
    if not isinstance(points, list | tuple) or not points:
        raise ValueError(f"{problem} such as {example}, got {points!r}")
    for point in points:
        if not (
            isinstance(point, list | tuple)
            and len(point) == 2
            and all(_is_number(x) for x in point)
            and point[1] >= 0
            and (by == BY_RETURN or point[0] >= 0)
        ):
            raise ValueError(f"{problem} of {pairs} pairs, got {point!r}")
    steps = [point[0] for point in points]
    if (by == BY_ENV_STEPS and steps[0] != 0) or any(
        b <= a for a, b in zip(steps, steps[1:], strict=False)
    ):
        raise ValueError(f"{problem} {start}with increasing points, got {points!r}")
    return tuple((float(step), float(nats)) for step, nats in points)


def target_at(schedule: Schedule, progress: float) -> float:
    """The target in force at ``progress`` (env steps sampled, or the best training return):
    linear between the schedule's points, the first point's value before it, the last's after."""
    steps, values = zip(*schedule, strict=True)
    return float(np.interp(progress, steps, values))


def keyed_by_return(settings: dict[str, Any] | None) -> bool:
    """Whether the target in ``learner_config_dict`` is a schedule over the training return
    (its learners then need the return: ``training_return.share_training_return``)."""
    target = check_target(settings)
    return target is not None and target.by == BY_RETURN


def next_coeff(beta: float, entropy: float, target: float, rate: float) -> float:
    """One step of the multiplier: up while the entropy is below the target, down to 0 above."""
    return min(MAX_COEFF, max(0.0, beta + rate * (target - entropy)))


class EntropyTarget:
    """Mixin before an RLlib IMPALA/APPO torch learner: its loss, less ``beta`` times the
    minibatch's mean policy entropy, with ``beta`` stepped toward the target in force at the
    env steps sampled that RLlib passes to every update (or at the best training return the
    suite's callback has handed it: ``training_return.py``)."""

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
        groups = check_groups(config.learner_config_dict)
        if checked is None and groups is None:
            return loss
        logits = fwd_out[Columns.ACTION_DIST_INPUTS]
        mask = batch[Columns.LOSS_MASK].float()
        total = torch.clamp(torch.sum(mask), min=1.0)
        if groups is not None:
            entropy = torch.sum(merged_entropy(logits, groups) * mask) / total
            self.metrics.log_value((module_id, MERGED_METRIC), float(entropy.detach()), window=1)
            if checked is None:
                return loss
        else:
            module = self.module[module_id].unwrapped()
            dist = module.get_train_action_dist_cls().from_logits(logits)
            entropy = torch.sum(dist.entropy() * mask) / total
        if checked.by == BY_RETURN:
            progress = best_training_return(self)
        else:
            progress = getattr(self, "_entropy_target_env_steps", 0.0)
        target = target_at(checked.schedule, progress)
        coeffs: dict[Any, float] = self.__dict__.setdefault(COEFFS_ATTR, {})
        beta = next_coeff(coeffs.get(module_id, 0.0), float(entropy.detach()), target, checked.rate)
        coeffs[module_id] = beta
        self.metrics.log_value((module_id, COEFF_METRIC), beta, window=1)
        self.metrics.log_value((module_id, TARGET_METRIC), target, window=1)
        return loss - beta * entropy
