"""What a person sees of a sweep: a TensorBoard HParams view and a concise terminal table.

``HParamsLoggerCallback`` replaces Tune's TensorBoard logger: it writes the HParams session when a
trial *starts* (so a running sweep can already be explored), then only a curated set of metrics
(``CURATED_METRICS``), not RLlib's 150-key dump. ``ProgressCallback`` prints a short status table
every few seconds instead of Tune's config dumps.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from ray.tune.callback import Callback
from ray.tune.experiment import Trial
from ray.tune.logger import TBXLoggerCallback
from ray.tune.utils import flatten_dict

from sweeps import keys

# At most ~30 metrics: what the HParams tab compares trials on.
CURATED_METRICS: tuple[keys.Key, ...] = (
    keys.RETURN_MEAN,
    keys.RETURN_MIN,
    keys.RETURN_MAX,
    keys.EPISODE_LEN,
    keys.EVAL_RETURN_MEAN,
    keys.GREEDY_RETURN,
    keys.PCT_OF_OPTIMUM,
    keys.ENV_STEPS,
    keys.ENV_STEPS_TRAINED,
    keys.TRAIN_TIME_S,
    keys.EVAL_TIME_S,
    keys.ENV_STEPS_PER_S,
    keys.LEARNER_STEPS_PER_S,
    keys.LOSS,
    keys.TIME_TOTAL_S,
    keys.TRAINING_ITERATION,
)

# Raw Optuna suggestions (e.g. ``1 - gamma``) are namespaced under this config key; the HParams
# tab shows the real config values instead.
RAW_SUGGESTIONS_KEY = "hp"


def trial_hparams(trial: Trial) -> dict[str, Any]:
    """The trial's sampled hyperparameters (real values, flat "a/b" names)."""
    params = flatten_dict(trial.evaluated_params or {}, delimiter="/")
    out: dict[str, Any] = {}
    for name, value in sorted(params.items()):
        if name.split("/")[0] == RAW_SUGGESTIONS_KEY:
            continue
        if hasattr(value, "item"):  # numpy scalar
            value = value.item()
        if isinstance(value, bool | int | float | str):
            out[name] = value
        elif value is None:
            out[name] = "None"
        else:
            out[name] = str(value)
    return out


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) and not hasattr(value, "item"):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class HParamsLoggerCallback(TBXLoggerCallback):
    """TensorBoard logger: HParams session at trial start, curated scalars per result."""

    def __init__(self, extra_metrics: tuple[keys.Key, ...] = ()) -> None:
        super().__init__()
        self._metrics = [keys.flat(k) for k in CURATED_METRICS + tuple(extra_metrics)]

    def log_trial_start(self, trial: Trial) -> None:
        from tensorboardX.summary import hparams

        super().log_trial_start(trial)
        experiment, session_start, _ = hparams(
            hparam_dict=trial_hparams(trial), metric_dict={m: 0.0 for m in self._metrics}
        )
        writer = self._trial_writer[trial]
        writer.file_writer.add_summary(experiment)
        writer.file_writer.add_summary(session_start)
        writer.flush()

    def log_trial_result(self, iteration: int, trial: Trial, result: dict) -> None:
        if trial not in self._trial_writer:
            self.log_trial_start(trial)
        step = int(_finite(keys.get(result, keys.ENV_STEPS)) or iteration)
        writer = self._trial_writer[trial]
        for name in self._metrics:
            value = _finite(keys.get(result, tuple(name.split("/"))))
            if value is not None:
                writer.add_scalar(name, value, global_step=step)
        writer.flush()

    def log_trial_end(self, trial: Trial, failed: bool = False) -> None:
        from tensorboardX.proto.api_pb2 import Status
        from tensorboardX.summary import hparams

        writer = self._trial_writer.pop(trial, None)
        self._trial_result.pop(trial, None)
        if writer is None:
            return
        _, _, session_end = hparams(hparam_dict=trial_hparams(trial), metric_dict={})
        status = Status.Value("STATUS_FAILURE" if failed else "STATUS_SUCCESS")
        session_end.value[0].metadata.plugin_data.content = _end_content(status)
        writer.file_writer.add_summary(session_end)
        writer.close()


def _end_content(status: int) -> bytes:
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData, SessionEndInfo

    return HParamsPluginData(
        version=0, session_end_info=SessionEndInfo(status=status, end_time_secs=time.time())
    ).SerializeToString()


def _fmt(value: Any, spec: str = ".1f") -> str:
    value = _finite(value)
    return "-" if value is None else format(value, spec)


class ProgressCallback(Callback):
    """A concise progress table: trial, status, iteration, env steps, returns, steps/s."""

    COLUMNS = ("trial", "status", "iter", "env steps", "return", "greedy", "steps/s")

    def __init__(self, interval_s: float = 20.0) -> None:
        self._interval_s = interval_s
        self._last_print = 0.0
        self._last: dict[str, dict] = {}
        self._trials: dict[str, Trial] = {}

    def _print(self, text: str) -> None:
        print(text, file=sys.stdout, flush=True)  # not stored: Tune pickles callbacks

    def table(self) -> str:
        rows = [self.COLUMNS]
        for trial_id, trial in sorted(self._trials.items()):
            r = self._last.get(trial_id, {})
            rows.append(
                (
                    trial_id,
                    trial.status,
                    str(r.get("training_iteration", 0)),
                    _fmt(keys.get(r, keys.ENV_STEPS), ".0f"),
                    _fmt(keys.get(r, keys.RETURN_MEAN)),
                    _fmt(keys.get(r, keys.GREEDY_RETURN)),
                    _fmt(keys.get(r, keys.ENV_STEPS_PER_S), ".0f"),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(self.COLUMNS))]
        return "\n".join(
            "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows
        )

    def on_trial_start(self, iteration, trials, trial, **info):
        self._trials[trial.trial_id] = trial
        self._print(f"[sweep] trial {trial.trial_id} started: {_short_params(trial)}")

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._trials[trial.trial_id] = trial
        self._last[trial.trial_id] = result
        now = time.monotonic()
        if now - self._last_print >= self._interval_s:
            self._last_print = now
            self._print(self.table())

    def on_trial_complete(self, iteration, trials, trial, **info):
        r = self._last.get(trial.trial_id, {})
        self._print(
            f"[sweep] trial {trial.trial_id} finished: env steps "
            f"{_fmt(keys.get(r, keys.ENV_STEPS), '.0f')}, return "
            f"{_fmt(keys.get(r, keys.RETURN_MEAN))}, greedy {_fmt(keys.get(r, keys.GREEDY_RETURN))}"
        )

    def on_trial_error(self, iteration, trials, trial, **info):
        self._print(f"[sweep] trial {trial.trial_id} ERRORED (see {trial.local_path}/error.txt)")

    def on_experiment_end(self, trials, **info):
        self._trials.update({t.trial_id: t for t in trials})
        self._print(self.table())


def _short_params(trial: Trial, limit: int = 8) -> str:
    items = list(trial_hparams(trial).items())
    text = ", ".join(f"{k}={_short(v)}" for k, v in items[:limit])
    return text + (", ..." if len(items) > limit else "") if text else "(defaults)"


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
