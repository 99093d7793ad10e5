"""What a person sees of a sweep: a TensorBoard HParams view and a concise terminal table.

``HParamsLoggerCallback`` replaces Tune's TensorBoard logger: it writes the HParams session when a
trial *starts* (so a running sweep can already be explored), then only a curated set of metrics,
not RLlib's 150-key dump: first the columns a reader decides by (``leading_columns``: the
judging return, % of optimum, time to target, env steps/s, each described), then
``CURATED_METRICS``. ``ProgressCallback`` prints a sweep-level status line and a short table,
best trial first, every few seconds instead of Tune's config dumps.

One file (over 500 lines): the HParams view, the progress table and the best-trial lines read the
same curated columns (``leading_columns``), which would otherwise be defined twice.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray.tune.callback import Callback
from ray.tune.experiment import Trial
from ray.tune.logger import LoggerCallback
from ray.tune.utils import flatten_dict

from sweeps.harness import budget, collapse, keys
from sweeps.harness.budget import clock as _clock
from sweeps.harness.values import dotted, number, readable

if TYPE_CHECKING:
    from sweeps.harness.record import RunRecord

# At most ~30 metrics: what the HParams tab compares trials on. The table's first columns are
# the ones a reader decides by (``leading_columns``); these follow them.
# The HParams column that marks a trial stopped mid-trial by the sweep's wall-clock cap.
CUT_SHORT_TAG = "sweep/cut_short"
# The results in a row the collapse rule must hold (or stop holding) for before the live line
# says so: one result's dip about the random policy's return is no collapse to announce.
_SETTLED = collapse.TAIL
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
RETURN_WORDS = {
    keys.GREEDY_RETURN: "greedy evaluation return (explore=False episodes, the policy as it "
    "would be used)",
    keys.RETURN_MEAN: "training return (episodes of the exploring policy)",
}


def leading_columns(metric: keys.Key, target: float | None) -> list[tuple[keys.Key, str, str]]:
    """The HParams table's first metric columns: (key, display name, description), in order --
    the return that judges trials, % of the exact optimum, time to the target, env steps/s."""
    words = RETURN_WORDS.get(metric, keys.flat(metric))
    to = "the target" if target is None else f"{target:g}"
    return [
        (metric, f"{words.split(' (')[0]} (judges)", f"The {words}: what the search "
         "maximises, ASHA compares, --stop-reward stops on and the summary ranks by."),
        (keys.PCT_OF_OPTIMUM, "% of optimum", "Greedy evaluation return as a percentage of the "
         "env's exact optimum (dynamic programming: the cab env, and toy-text envs such as Taxi)."),
        (keys.TIME_TO_TARGET_S, f"time to {to} [s]", f"Training seconds (evaluation excluded) "
         f"until the judging return first reached {to}; empty while it has not."),
        (keys.ENV_STEPS_PER_S, "env steps/s", "Env steps sampled per second of training "
         "(evaluation excluded), over the trial's lifetime."),
    ]  # fmt: skip


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


class HParamsLoggerCallback(LoggerCallback):
    """TensorBoard logger: HParams session at trial start, curated scalars per result.

    ``metric`` is the return that judges trials and ``target`` the return whose first crossing
    is logged as the time to target; they and ``leading_columns`` open the HParams table.

    It writes with tensorboardX into each trial's folder as Tune's own TensorBoard logger does,
    on Tune's public ``LoggerCallback``: the runner turns Tune's automatic loggers off
    (``TUNE_DISABLE_AUTO_CALLBACK_LOGGERS``, with its own result and progress loggers in their
    place), so no second writer logs RLlib's whole result, and Tune's reporter, which prints a
    temporary TensorBoard folder only where a ``TBXLoggerCallback`` runs, prints none.
    """

    def __init__(
        self,
        extra_metrics: tuple[keys.Key, ...] = (),
        *,
        metric: keys.Key = keys.RETURN_MEAN,
        target: float | None = None,
    ) -> None:
        super().__init__()
        self._writers: dict[Trial, Any] = {}  # trial -> its tensorboardX SummaryWriter
        self._metric = metric
        self._target = target
        self._leading = leading_columns(metric, target)
        first = [key for key, _, _ in self._leading]
        rest = [k for k in CURATED_METRICS + tuple(extra_metrics) if k not in first]
        # Last: 1 on a trial the sweep's wall-clock cap stopped mid-trial, 0 on one that ended.
        self._metrics = [keys.flat(k) for k in first + rest] + [CUT_SHORT_TAG]
        self._reached: set[str] = set()  # trial ids whose time to target is logged
        self._last_step: dict[str, int] = {}  # trial id -> its last result's step

    def _experiment_summary(self, trial: Trial):
        """tensorboardX's HParams experiment summary with names and descriptions on the
        leading metric columns (tensorboardX 2.6's ``hparams()`` writes bare tags only)."""
        from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData
        from tensorboardX.summary import hparams

        experiment, session_start, _ = hparams(
            hparam_dict=trial_hparams(trial), metric_dict={m: 0.0 for m in self._metrics}
        )
        plugin_data = experiment.value[0].metadata.plugin_data
        content = HParamsPluginData.FromString(plugin_data.content)
        described = {keys.flat(key): (name, text) for key, name, text in self._leading}
        for info in content.experiment.metric_infos:
            if info.name.tag in described:
                info.display_name, info.description = described[info.name.tag]
        plugin_data.content = content.SerializeToString()
        return experiment, session_start

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A sweep started before this logger kept its own writers resumes with none open.
        self.__dict__.update(state)
        self.__dict__.setdefault("_writers", {})

    def log_trial_start(self, trial: Trial) -> None:
        from tensorboardX import SummaryWriter

        if trial in self._writers:  # a retried or resumed trial: its file is written anew
            self._writers.pop(trial).close()
        trial.init_local_path()
        writer = self._writers[trial] = SummaryWriter(trial.local_path, flush_secs=30)
        experiment, session_start = self._experiment_summary(trial)
        writer.file_writer.add_summary(experiment)
        writer.file_writer.add_summary(session_start)
        writer.flush()

    def log_trial_result(self, iteration: int, trial: Trial, result: dict) -> None:
        if trial not in self._writers:
            self.log_trial_start(trial)
        step = int(_finite(keys.get(result, keys.ENV_STEPS)) or iteration)
        self._last_step[trial.trial_id] = step
        writer = self._writers[trial]
        for name in self._metrics:
            value = _finite(keys.get(result, tuple(name.split("/"))))
            if value is not None:
                writer.add_scalar(name, value, global_step=step)
        judged = _finite(keys.get(result, self._metric))
        train_time = _finite(keys.get(result, keys.TRAIN_TIME_S))
        if (
            self._target is not None
            and trial.trial_id not in self._reached
            and judged is not None
            and judged >= self._target
            and train_time is not None
        ):
            self._reached.add(trial.trial_id)
            writer.add_scalar(keys.flat(keys.TIME_TO_TARGET_S), train_time, global_step=step)
        writer.flush()

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        """A sweep its wall-clock cap cut short: each trial it stopped mid-trial is marked
        (``CUT_SHORT_TAG`` 1, its session's status unknown: it goes on at --resume)."""
        if budget.CUT_SHORT.is_set():
            for trial in list(self._writers):
                self.log_trial_end(trial, cut_short=True)
        super().on_experiment_end(trials, **info)

    def log_trial_end(self, trial: Trial, failed: bool = False, cut_short: bool = False) -> None:
        from tensorboardX.proto.api_pb2 import Status
        from tensorboardX.summary import hparams

        writer = self._writers.pop(trial, None)
        if writer is None:
            return
        step = self._last_step.get(trial.trial_id, 0)
        writer.add_scalar(CUT_SHORT_TAG, float(cut_short), global_step=step)
        _, _, session_end = hparams(hparam_dict=trial_hparams(trial), metric_dict={})
        status = Status.Value(
            "STATUS_UNKNOWN" if cut_short else "STATUS_FAILURE" if failed else "STATUS_SUCCESS"
        )
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


def check_line(trial_id: str, result: dict) -> str | None:
    """The line of a check of the target that ran after this result (None without one)."""
    value = _finite(keys.get(result, keys.CONFIRM_RETURN))
    if value is None:
        return None
    target = _fmt(keys.get(result, keys.CONFIRM_TARGET), "g")
    episodes = int(keys.get(result, keys.CONFIRM_EPISODES) or 0)
    half = _finite(keys.get(result, keys.CONFIRM_CI95))
    sampled = keys.get(result, keys.CONFIRM_SAMPLED) == 1
    played = f"{value:.1f}" + (f" ± {half:.1f}" if half is not None else "")
    played += f" over {episodes} seeded episodes, " + ("sampled" if sampled else "greedy")
    other = keys.CONFIRM_GREEDY_RETURN if sampled else keys.CONFIRM_SAMPLED_RETURN
    if _finite(keys.get(result, other)) is not None:
        played += f" ({'greedy' if sampled else 'sampled'} {_fmt(keys.get(result, other))})"
    cut = _finite(keys.get(result, keys.CONFIRM_CUT))
    if cut:  # (a policy that loops from some starts plays to the time limit there)
        played += f"; {cut:.0f} of them ran to the env's time limit"
    confirmed = keys.get(result, keys.TARGET_CONFIRMED) == 1
    verdict = "confirmed" if confirmed else "not confirmed: training goes on"
    steps = _fmt(keys.get(result, keys.ENV_STEPS), ".0f")
    return (
        f"[sweep] trial {trial_id} at or above {target} at {steps} env steps; its policy "
        f"played {played}: {verdict}"
    )


class ProgressCallback(budget.SweepClock):
    """Every ``interval_s``: one sweep-level line (trials completed / pruned by ASHA / running /
    errored / waiting, elapsed of the budget, the best so far with % of optimum where known) and
    a short table, best trial first.

    "Completed" means a trial reached one of the stop criteria (``stop``: its env-step budget, the
    target, its training time); a trial that ended before any did was pruned by ASHA, or stopped
    by the sweep's time budget when that had run out.

    ``random_return`` (a generic env's random policy, measured at the run's start): a trial
    whose training return ends below it after having been above it, each by more than the
    return's own noise (``collapse.ended_below``, the report's rule) gets a line once the rule
    has held for ``_SETTLED`` results in a row, "collapsed" in the table, and a count in the
    sweep's line; another line if it climbs back (held as long); at its end, the report's
    verdict if the last results changed it."""

    COLUMNS = ("trial", "status", "iter", "env steps", "return", "greedy", "% opt", "steps/s")

    def __init__(
        self,
        interval_s: float = 20.0,
        *,
        metric: keys.Key = keys.RETURN_MEAN,
        stop: dict[str, float | None] | None = None,
        time_budget_s: float | None = None,
        num_samples: int | None = None,
        pruning: bool = True,
        estimate: str | None = None,
        random_return: float | None = None,
    ) -> None:
        self._interval_s = interval_s
        self._random = _finite(random_return)
        self._returns: dict[str, list[float]] = {}  # trial id -> its finite training returns
        self._collapsed: set[str] = set()
        # trial id -> (index, env steps) of the first result since the rule last disagreed
        # with the line said: a line waits until it has disagreed for _SETTLED results
        self._since: dict[str, tuple[int, Any]] = {}
        # What the live best figure is, said next to it (e.g. "5-episode greedy estimate"): a
        # noisy estimate, not the held-out figure the sweep ends with.
        self._estimate = estimate
        self._pruned = "pruned by ASHA" if pruning else "stopped early"
        self._metric = metric
        self._stop = {k: v for k, v in (stop or {}).items() if v is not None}
        self._budget_s = time_budget_s
        self._num_samples = num_samples
        super().__init__()  # the sweep's clock, a resume's runs before included
        self._last_print = 0.0
        self._last: dict[str, dict] = {}
        # trial id -> its last result with a finite judged return: an iteration in which no
        # episode ended (minutes apart on Pong) reports none, and must not blank the ranking.
        self._judged: dict[str, dict] = {}
        self._trials: dict[str, Trial] = {}
        self._outcome: dict[str, str] = {}  # trial id -> completed | pruned by ASHA | ...

    def _print(self, text: str) -> None:
        print(text, file=sys.stdout, flush=True)  # not stored: Tune pickles callbacks

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if self._elapsed_before_s > 0:
            cap = budget.cap_s(self._budget_s)  # a resume's --time-budget-s, where given
            budget_text = f" of its {_clock(cap)} budget" if cap else ""
            self._print(
                f"[resume] the sweep ran {_clock(self._elapsed_before_s)} before{budget_text}; "
                "its clock and budget go on from there"
            )

    def _value(self, trial_id: str) -> float:
        value = _finite(keys.get(self._judged.get(trial_id, {}), self._metric))
        return -math.inf if value is None else value

    def _ranked(self) -> list[str]:
        """Trial ids, best judged return first (trials without one last, then by id)."""
        return sorted(self._trials, key=lambda t: (-self._value(t), t))

    def _status(self, trial_id: str) -> str:
        status = self._trials[trial_id].status
        return self._outcome.get(trial_id, status) if status == Trial.TERMINATED else status

    def status_line(self) -> str:
        statuses = [self._status(t) for t in self._trials]
        n = {s: statuses.count(s) for s in set(statuses)}
        waiting = (self._num_samples or len(statuses)) - len(statuses) + n.get(Trial.PENDING, 0)
        parts = [
            f"{n.get('completed', 0)} completed",
            f"{n.get(self._pruned, 0)} {self._pruned}",
        ]
        if n.get("stopped by the time budget"):
            parts.append(f"{n['stopped by the time budget']} stopped by the time budget")
        if self._collapsed:
            parts.append(f"{len(self._collapsed)} collapsed")
        if n.get(Trial.TERMINATED):  # ended in a run before this resume: no outcome seen here
            parts.append(f"{n[Trial.TERMINATED]} ended before the resume")
        parts += [
            f"{n.get(Trial.RUNNING, 0)} running",
            f"{n.get(Trial.ERROR, 0)} errored",
            f"{max(waiting, 0)} waiting",
        ]
        elapsed = self.elapsed_s()
        cap = budget.cap_s(self._budget_s)
        clock = _clock(elapsed) + (f" of {_clock(cap)}" if cap else "")
        best = "best: none yet"
        ranked = [t for t in self._ranked() if math.isfinite(self._value(t))]
        if ranked:
            top = ranked[0]
            pct = _finite(keys.get(self._judged[top], keys.PCT_OF_OPTIMUM))
            best = f"best {keys.flat(self._metric)} {self._value(top):.1f}" + (
                f" ({pct:.1f}% of optimum)" if pct is not None else ""
            )
            if self._estimate:
                best += f" [{self._estimate}]"
            best += f", trial {top}"
        return f"[sweep] {clock}: " + ", ".join(parts) + f"; {best}"

    def table(self) -> str:
        rows = [self.COLUMNS]
        for trial_id in self._ranked():
            r = self._last.get(trial_id, {})
            judged = self._judged.get(trial_id, r)  # its returns as of their last finite value
            rows.append(
                (
                    trial_id,
                    self._status(trial_id) + (", collapsed" if trial_id in self._collapsed else ""),
                    str(r.get("training_iteration", 0)),
                    _fmt(keys.get(r, keys.ENV_STEPS), ".0f"),
                    _fmt(keys.get(judged, keys.RETURN_MEAN)),
                    _fmt(keys.get(judged, keys.GREEDY_RETURN)),
                    _fmt(_finite(keys.get(judged, keys.PCT_OF_OPTIMUM))),
                    _fmt(keys.get(r, keys.ENV_STEPS_PER_S), ".0f"),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(self.COLUMNS))]
        return "\n".join(
            "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows
        )

    def _report(self) -> None:
        self._print(self.status_line() + "\n" + self.table())

    def _see(self, trials: list[Trial]) -> None:
        self._trials.update({t.trial_id: t for t in trials})

    def on_trial_start(self, iteration, trials, trial, **info):
        self._see(trials)
        self._print(f"[sweep] trial {trial.trial_id} started: {_short_params(trial)}")

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._see(trials)
        self._last[trial.trial_id] = result
        if _finite(keys.get(result, self._metric)) is not None:
            self._judged[trial.trial_id] = result
        check = check_line(trial.trial_id, result)
        if check:
            self._print(check)
        self._watch_collapse(trial.trial_id, result)
        now = time.monotonic()
        if now - self._last_print >= self._interval_s:
            self._last_print = now
            self._report()

    def _watch_collapse(self, trial_id: str, result: dict) -> None:
        """The line when a trial's training return falls below the random policy's after
        having been above it, and when it climbs back (class docstring): said once the rule
        has held for ``collapse.TAIL`` results in a row (``_SETTLED``), so a return hovering
        about the random policy's, early in a run when its noise so far is small, does not
        flap between the two lines; at the trial's end, the rule as the report reads it
        (``_settle_collapse``)."""
        value = _finite(keys.get(result, keys.RETURN_MEAN))
        if self._random is None or value is None:
            return
        returns = self._returns.setdefault(trial_id, [])
        returns.append(value)
        fell = collapse.ended_below(returns, self._random)
        if fell == (trial_id in self._collapsed):
            self._since.pop(trial_id, None)
            return
        # the first result of this run of results that disagree with the line said last
        first = self._since.setdefault(trial_id, (len(returns), keys.get(result, keys.ENV_STEPS)))
        if len(returns) - first[0] + 1 >= _SETTLED:
            self._say_collapse(trial_id, fell, first[1])

    def _say_collapse(self, trial_id: str, fell: bool, steps: Any) -> None:
        """One COLLAPSED or recovered line; ``steps``: the env steps of the first result that
        said so."""
        self._since.pop(trial_id, None)
        returns = self._returns[trial_id]
        tail = returns[-collapse.TAIL :]
        end = sum(tail) / len(tail)
        at = f"{_fmt(steps, '.0f')} env steps"
        if fell:
            self._collapsed.add(trial_id)
            self._print(
                f"[sweep] trial {trial_id} COLLAPSED at {at}: its training return "
                f"{end:.1f} (the mean of its last {len(tail)} results) is below the random "
                f"policy's {self._random:.1f}, after a best of {max(returns):.1f}"
            )
        else:
            self._collapsed.discard(trial_id)
            self._print(
                f"[sweep] trial {trial_id} recovered at {at}: its training return "
                f"{end:.1f} is no longer below the random policy's {self._random:.1f} by more "
                "than its own noise"
            )

    def _settle_collapse(self, trial_id: str) -> None:
        """At a trial's end, its line agrees with its report: the rule over its whole curve,
        said now if the last results changed it too late to settle."""
        returns = self._returns.get(trial_id)
        if self._random is None or not returns:
            return
        fell = collapse.ended_below(returns, self._random)
        if fell != (trial_id in self._collapsed):  # so its last result began a run: _since
            self._say_collapse(trial_id, fell, self._since[trial_id][1])

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._see(trials)
        self._settle_collapse(trial.trial_id)
        r = self._last.get(trial.trial_id, {})
        outcome = self.outcome(r)
        self._outcome[trial.trial_id] = outcome
        self._print(
            f"[sweep] trial {trial.trial_id} {outcome}: env steps "
            f"{_fmt(keys.get(r, keys.ENV_STEPS), '.0f')}, return "
            f"{_fmt(keys.get(r, keys.RETURN_MEAN))}, greedy {_fmt(keys.get(r, keys.GREEDY_RETURN))}"
        )

    def outcome(self, result: dict) -> str:
        """Why a trial ended: completed (a stop criterion reached), pruned by ASHA, or stopped
        by the time budget."""
        flat = flatten_dict(result, delimiter="/")
        values = {k: _finite(flat.get(k)) for k in self._stop}
        reached = [k for k, v in self._stop.items() if values[k] is not None and values[k] >= v]
        # Not result["done"]: Tune sets it on every stopped trial's last result, ASHA's too.
        if reached:
            return "completed"
        if self._budget_s is not None and time.monotonic() - self._start >= self._budget_s - 1:
            return "stopped by the time budget"
        return self._pruned

    def on_trial_error(self, iteration, trials, trial, **info):
        self._see(trials)
        self._print(f"[sweep] trial {trial.trial_id} ERRORED (see {trial.local_path}/error.txt)")

    def on_experiment_end(self, trials, **info):
        self._see(trials)
        self._report()


# ------------------------------------------------------------------------------------------------
# The end of a sweep: its best trial
# ------------------------------------------------------------------------------------------------


def best_trial(results: Any, judged: keys.Key) -> Any:
    """The trial with the highest final ``judged`` return (Tune's ``get_best_result``, which
    skips NaN); when no trial has one (no greedy evaluation finished yet), the one with the
    highest final training return. None when no trial has either."""
    for key in dict.fromkeys([judged, keys.RETURN_MEAN]):
        try:
            best = results.get_best_result(keys.flat(key), mode="max", scope="last")
        except RuntimeError:  # no trial has a finite value
            continue
        # (Tune returns a lone trial without looking at its value.)
        if math.isfinite(number(keys.get(best.metrics or {}, key))):
            return best
    return None


def print_best(best: Any, record: RunRecord, judged_column: str, held_out: Any = None) -> None:
    """The best trial; ``held_out`` (``sweeps.harness.held_out_pick.Evaluated``): it was picked
    by its held-out figure, printed first."""
    m = best.metrics
    print(
        f"[sweep] best trial: {Path(best.path).name}"
        + (" (by the held-out mean)" if held_out else "")
    )
    if held_out is not None:
        from sweeps.harness.held_out_eval import describe

        print(f"[sweep]   final policy, held out: {describe(held_out.record)}")
    print(
        f"[sweep]   return {_f(keys.get(m, keys.RETURN_MEAN))}, greedy "
        f"{_f(keys.get(m, keys.GREEDY_RETURN))}, env steps {_f(keys.get(m, keys.ENV_STEPS), 0)}"
        f", training time {_f(keys.get(m, keys.TRAIN_TIME_S))} s"
    )
    if record.targets:
        print(f"[sweep]   {_time_to_target(best, judged_column, record.targets[0])}")
    else:  # an env without a reward_threshold, run without --target
        print("[sweep]   no reward target (no --target, no reward_threshold in the env's spec)")
    pct = keys.get(m, keys.PCT_OF_OPTIMUM)
    if pct is not None:
        optimum = record.optimum
        print(
            f"[sweep]   last periodic greedy return = {_f(pct)}% of the exact optimum "
            f"({optimum:.1f})"
        )
    hp = {h: dotted(best.config, h) for h in record.hyperparameters}
    print("[sweep]   hyperparameters: " + ", ".join(f"{k}={_short(v)}" for k, v in hp.items()))


def _time_to_target(result: Any, column: str, target: float) -> str:
    """When the best trial reached its target, from its own result history: where the run
    confirms a target (``harness/confirm.py``: the run's highest, as a rule), that one, when a
    check confirmed it, its first crossing beside (the target counts when the policy plays it);
    else when it first crossed ``target``."""
    try:
        df = result.metrics_dataframe
        judged = df[column]
    except (AttributeError, KeyError, TypeError):
        return f"time to {column} >= {target:g}: unknown (no result history)"
    confirm = keys.flat(keys.CONFIRM_RETURN)
    aim = df.get(keys.flat(keys.CONFIRM_TARGET))
    if confirm in df and aim is not None and aim.notna().any():
        aim_at = float(aim.dropna().iloc[0])
        hit = df[judged >= aim_at]
        crossed = "" if hit.empty else _at(hit.iloc[0])
        checks = df[df[confirm].notna()]
        passed = checks[checks[confirm] >= aim_at]
        if not passed.empty:
            row = passed.iloc[0]
            at = _at(row)
            first = "its first crossing" if at == crossed else f"first crossed {crossed}"
            return (
                f"reached {column} >= {aim_at:g}, confirmed (the policy played "
                f"{row[confirm]:.1f} ± {row[keys.flat(keys.CONFIRM_CI95)]:.1f} over the seeded "
                f"episodes), {at}" + (f"; {first}" if crossed else "")
            )
        if not checks.empty:
            best = checks[confirm].max()
            return (
                f"{column} >= {aim_at:g}: not reached (crossed {crossed}; never confirmed: "
                f"{len(checks)} check(s), the best {best:.1f} over the seeded episodes)"
            )
        if crossed:  # (in its last iteration: no check ran after it)
            return f"{column} >= {aim_at:g}: not reached (crossed {crossed}; not checked)"
        return f"{column} >= {aim_at:g}: not reached"
    hit = df[judged >= target]
    if hit.empty:
        return f"{column} >= {target:g}: not reached"
    return f"reached {column} >= {target:g} {_at(hit.iloc[0])}"


def _at(row: Any) -> str:
    """A result row's place in training, as the summary says it."""
    return (
        f"after {row[keys.flat(keys.TRAIN_TIME_S)]:.1f} s of training "
        f"({row[keys.flat(keys.ENV_STEPS)]:,.0f} env steps)"
    )


def _f(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _short_params(trial: Trial, limit: int = 8) -> str:
    items = list(trial_hparams(trial).items())
    text = ", ".join(f"{k}={_short(v)}" for k, v in items[:limit])
    return text + (", ..." if len(items) > limit else "") if text else "(defaults)"


def _short(value: Any) -> str:
    return readable(value)


class WithoutTuneTensorBoardLine(Callback):
    """Inert: kept so that a sweep started before the runner turned Tune's automatic loggers off
    (``runner.TUNE_AUTO_LOGGERS_OFF``) can resume, its pickled callbacks naming this class."""
