"""The checkpointing seam: which checkpoint Tune restarts a trial from, and the seconds an
algorithm spends writing one (read from Ray 2.60.0).

``recovery.CheckpointGuard`` points a pending trial whose checkpoint was deleted at a newer one
(or at none) before Tune restores it: that is the trial's ``_CheckpointManager``
(``ray/train/_internal/checkpoint_manager.py``), which Tune exposes only as
``trial.run_metadata.checkpoint_manager``. The suite's callbacks leave checkpoint writing out of
the training clock: RLlib calls no callback around ``Algorithm.save_checkpoint``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def forget_checkpoints(manager: Any) -> None:
    """The trial's checkpoint manager holds no checkpoint: the trial starts over
    (``_CheckpointManager._latest_checkpoint_result``, ``._checkpoint_results``).

    Waits for: a public way to drop a trial's checkpoints in Tune (``Trial`` or its
    ``run_metadata``)."""
    manager._latest_checkpoint_result = None
    manager._checkpoint_results = []


def restart_from(manager: Any, checkpoint: Any, metrics: dict[str, Any]) -> None:
    """The trial's checkpoint manager holds ``checkpoint`` (with the ``metrics`` it was saved
    at) as its only and latest one: the trial is restored from it (Ray Train's private
    ``_TrainingResult``, ``ray/train/_internal/session.py``).

    Waits for: a public way to point a pending Tune trial at a checkpoint of one's choosing."""
    from ray.train._internal.session import _TrainingResult

    restored = _TrainingResult(checkpoint=checkpoint, metrics=metrics)
    manager._latest_checkpoint_result = restored
    manager._checkpoint_results = [restored]


def time_saving(algorithm: Any, add_seconds: Callable[[float], None]) -> None:
    """Hand ``add_seconds`` the seconds of each ``algorithm.save_checkpoint`` call (Tune's
    ``Trainable.save`` calls it through ``self``, between iterations): the bound method is
    wrapped on this instance, once (idempotent). A subclass can't do it: the algorithm's class is
    RLlib's own (APPO, IMPALA, DQN) as often as the suite's.

    Waits for: an RLlib callback around saving a checkpoint (``on_checkpoint_saved`` or
    ``on_train_iteration_start``: there is ``on_checkpoint_loaded`` only)."""
    save = getattr(algorithm, "save_checkpoint", None)
    if save is None or getattr(save, "suite_timed", False):
        return

    def timed_save(checkpoint_dir: str) -> Any:
        started = time.perf_counter()
        try:
            return save(checkpoint_dir)
        finally:
            add_seconds(time.perf_counter() - started)

    timed_save.suite_timed = True  # type: ignore[attr-defined]
    algorithm.save_checkpoint = timed_save
