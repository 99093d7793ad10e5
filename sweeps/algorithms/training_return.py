"""The training return, handed from the driver to the learners, for schedules keyed to it.

An RLlib learner sees batches and env-step counts, not how well its policy plays, and on Pong the
env steps at which the policy starts to win points vary by 2M between seeds
(results/pong/candidates/CURVES.md). A schedule over the training return instead of env steps
moves with each seed. After every iteration the suite's callback hands the learners the training
return (the mean of the last 20 games: :func:`share_training_return`); each learner keeps the best
so far (:func:`best_training_return`: a ratchet, a worse iteration does not undo it), which the
entropy target (``entropy_target.py``, ``"entropy_target_by": "return"``) and the learning-rate
scale (``kl_lr.py``, ``"lr_scale_by_return"``) read. The best return is in the learner's
checkpoints (``pg_learner.ExtrasInCheckpoints``): a restored learner keeps it. (It used not to
be, and a restored learner took the schedule's start until its first games ended: on Pong ~80k
env steps with the entropy floor back at its first value.)
"""

from __future__ import annotations

import math
from typing import Any

BEST_ATTR = "_best_training_return"  # on the learner


def best_training_return(learner: Any) -> float:
    """The best training return handed to ``learner`` so far (-inf before the first)."""
    return getattr(learner, BEST_ATTR, -math.inf)


def note_training_return(learner: Any, value: float) -> None:
    """Keep ``value`` on ``learner`` where it beats the best so far (module-level: remote
    learners get it pickled through ``foreach_learner``)."""
    setattr(learner, BEST_ATTR, max(best_training_return(learner), float(value)))


def share_training_return(algorithm: Any, training_return: float, wanted: bool) -> None:
    """On the driver, after each iteration: hand the training return to the learners where a
    schedule is keyed to it (``wanted``), once a game has ended. A local learner is called in
    place; remote ones are not waited for."""
    group = getattr(algorithm, "learner_group", None)
    if not wanted or math.isnan(training_return) or group is None:
        return
    group.foreach_learner(note_training_return, timeout_seconds=0.0, value=float(training_return))
