"""Tune's Optuna searcher for a study that outlives a killed driver (``--optuna-storage``).

A study kept in a file or a database runs ahead of Tune's saved experiment state: when the driver
is killed after a trial completed (and Optuna was told) but before Tune saved its state (every
``recovery.EXPERIMENT_STATE_PERIOD_S``), ``--resume`` runs that trial again from its last
checkpoint, and its first new report reaches an Optuna trial that is already COMPLETE. Tune's
``OptunaSearch`` lets Optuna's ``UpdateFinishedTrialError`` through, and the sweep dies with it
(found by ``benchmarks/faults.py driver``). Here the study keeps the first completion, and the
re-run's reports are not sent to it; the trial's Tune results are the re-run's, as for any trial
restored from a checkpoint.
"""

from __future__ import annotations

from typing import Any

from optuna.exceptions import UpdateFinishedTrialError

from sweeps.seams.tune import OptunaSearcher


class ResumableOptunaSearch(OptunaSearcher):
    """``OptunaSearch`` that skips reports to trials the study already finished."""

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if trial_id in self._finished_in_study():
            return
        try:
            super().on_trial_result(trial_id, result)
        except UpdateFinishedTrialError:
            self._finished_in_study().add(trial_id)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        if trial_id in self._finished_in_study():
            self.mark_completed(trial_id)  # told once, before the driver was killed
            return
        super().on_trial_complete(trial_id, result, error)

    def _finished_in_study(self) -> set[str]:
        # An attribute made on first use: a searcher restored from an older saved state has none.
        if not hasattr(self, "_told_before_resume"):
            self._told_before_resume: set[str] = set()
        return self._told_before_resume
