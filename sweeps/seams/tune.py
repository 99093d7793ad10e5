"""The Tune seam: Tune's result and progress loggers, the Optuna searcher's bookkeeping and the
env registry, where the suite needs more than Tune's public API gives (read from Ray 2.60.0).

The suite's loggers (``recovery.ResultJsonLogger``, ``recovery.ProgressCsvLogger``) keep Tune's
file handling and trim a restarted trial's rows first: they need the open files Tune keeps per
trial, and the CSV logger's set-up hook. The adapters below hand those over under public names.
"""

from __future__ import annotations

from typing import Any

from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback
from ray.tune.search.optuna import OptunaSearch


class JsonLogger(JsonLoggerCallback):
    """Tune's ``result.json`` logger with its open files by trial as ``trial_files``
    (``JsonLoggerCallback._trial_files``, ``ray/tune/logger/json.py``).

    Waits for: a Tune logger hook that opens a trial's file at a path and mode of the caller's
    choosing (to append to a file trimmed to the trial's checkpoint)."""

    @property
    def trial_files(self) -> dict[Any, Any]:
        return self._trial_files


class CsvLogger(CSVLoggerCallback):
    """Tune's ``progress.csv`` logger with its open files, CSV writers and continued-file flags
    by trial (``_trial_files``, ``_trial_csv``, ``_trial_continue``), and its private set-up
    hook ``_setup_trial`` as ``setup_trial`` (``ray/tune/logger/csv.py``).

    Waits for: a Tune logger hook that opens a trial's file at a path and mode of the caller's
    choosing, and keeps a continued file's header."""

    @property
    def trial_files(self) -> dict[Any, Any]:
        return self._trial_files

    @property
    def csv_writers(self) -> dict[Any, Any]:
        return self._trial_csv

    @property
    def continues(self) -> dict[Any, bool]:
        return self._trial_continue

    def _setup_trial(self, trial: Any) -> None:
        self.setup_trial(trial)

    def setup_trial(self, trial: Any) -> None:
        """Tune's own set-up of the trial's file (a subclass calls it through ``super()``)."""
        super()._setup_trial(trial)


class OptunaSearcher(OptunaSearch):
    """Tune's ``OptunaSearch`` with ``mark_completed(trial_id)``: the trial counted as
    completed in the searcher's own set (``_completed_trials``,
    ``ray/tune/search/optuna/optuna_search.py``) without telling Optuna again; and a ``save``
    that pickles its search space (``_space``) by the name it has in the running script.

    A sweep file run as a script defines its ``sample_params`` in ``__main__``. A resumed sweep's
    searcher can come back from ``tuner.pkl``, which cloudpickle wrote with that function by
    value: an equal function, not ``__main__``'s own, and ``OptunaSearch.save`` (plain pickle, by
    name) then failed ("Can't pickle <function sample_params>: it's not the same object as
    __main__.sample_params") and took the resumed sweep down (seen once in the suite:
    ``test_resumed_trial_whose_checkpoint_is_gone_goes_on_from_a_newer_one``).

    Waits for: ``OptunaSearch`` that tolerates a completion the study already holds, and that
    saves a define-by-run space it cannot pickle by name."""

    def mark_completed(self, trial_id: str) -> None:
        self._completed_trials.add(trial_id)

    def save(self, checkpoint_path: str) -> None:
        space = self._space
        if callable(space) and getattr(space, "__module__", None) == "__main__":
            import sys

            live = getattr(sys.modules.get("__main__"), getattr(space, "__qualname__", ""), None)
            if callable(live) and live is not space:
                self._space = live
        super().save(checkpoint_path)


def env_registered(name: str) -> bool:
    """Whether ``name`` is in Tune's env registry (``ray.tune.registry._global_registry``).

    Waits for: a public ``ray.tune.registry`` lookup (``register_env`` alone overwrites)."""
    from ray.tune.registry import ENV_CREATOR, _global_registry

    return _global_registry.contains(ENV_CREATOR, name)
