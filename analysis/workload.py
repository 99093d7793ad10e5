"""One workload (env + variant) of the runs table with every table the report shows of it,
computed once, so that the summary and the detail sections read the same numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from analysis import predicted, tables
from analysis.fmt import slug, target_label
from sweeps.workloads import Workload as SuiteWorkload
from sweeps.workloads import for_env


@dataclass
class Workload:
    env: str
    variant: str
    runs: pd.DataFrame  # every row of this env and variant
    selected: pd.DataFrame  # the compared configurations' rows (tables.select_configurations)
    # short runs of the same configurations in one sitting (analysis report --rates): the
    # scaling section's time on one machine (predicted.on_one_machine)
    rates: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def kind(self) -> SuiteWorkload:
        """The suite's workload that ran these rows (``sweeps.workloads``): what the report
        says about it, and which references it computes."""
        return for_env(self.env)

    @property
    def title(self) -> str:
        return f"{self.env} · {self.variant}" if self.variant else self.env

    @property
    def slug(self) -> str:
        return slug(self.title)

    @cached_property
    def configs(self) -> pd.DataFrame:
        """One row per configuration with its final values (tables.configurations)."""
        return tables.configurations(self.selected)

    @cached_property
    def crossing(self) -> str:
        """The judged return whose first crossing of a target the report times
        (tables.primary_signal): the training return, or the greedy evaluation return."""
        return tables.primary_signal(self.selected)

    @cached_property
    def confirmed(self) -> bool:
        """Whether every compared benchmark trial ran to a confirmed target at the workload's
        target (its run stopped only once a check confirmed it, ``sweeps/harness/confirm.py``):
        then the verdict, the speedups and the scaling tables use the confirmed target, the
        first crossing beside. Where some seeds stopped at the first crossing (runs recorded
        before confirmation), every seed is judged by its first crossing, which all of them
        recorded. A sweep's best trial (a search does not stop at a target) does not decide
        where benchmarks were run: the summary ranks it after every benchmark of its algorithm,
        and at the confirmed target it has no row (it is in the first crossing's tables)."""
        if self.selected.empty or "confirm_target" not in self.selected.columns:
            return False
        compared = self.selected[self.selected["kind"] != "sweep"]
        compared = compared if len(compared) else self.selected
        return bool((compared["confirm_target"] == self.target).all())

    @property
    def signal(self) -> str:
        """The signal the verdict uses: the confirmed target where every configuration has
        one, else the first crossing of the judged return."""
        return tables.CONFIRMED if self.confirmed else self.crossing

    @property
    def secondary(self) -> str:
        return next(s for s in tables.SIGNALS if s != self.crossing)

    @cached_property
    def optimum(self) -> float:
        """The env's exact optimum, where every run records one (runs of a toy-text env collected
        before the suite computed its optimum have none: the report then shows none)."""
        values = self.runs["optimum"]
        return math.nan if values.empty or values.isna().any() else float(values.max())

    @cached_property
    def targets(self) -> list[float]:
        return tables.targets_of(self.runs)

    @property
    def target(self) -> float:
        """The workload's target (tables.main_target): the one the summary is about."""
        return self.targets[-1] if self.targets else math.nan

    def label(self, target: float) -> str:
        return target_label(target, self.optimum)

    @cached_property
    def ttt(self) -> pd.DataFrame:
        """Per trial, signal and target: reached, when (tables.time_to_target)."""
        return tables.time_to_target(self.selected)

    @cached_property
    def ttt_summary(self) -> pd.DataFrame:
        """Per configuration, signal and target (tables.summarize_time_to_target)."""
        if self.ttt.empty:
            return pd.DataFrame()
        return tables.summarize_time_to_target(self.ttt)

    def at(self, signal: str, target: float | None = None) -> pd.DataFrame:
        """The rows of ``ttt_summary`` for one signal (and target)."""
        s = self.ttt_summary
        if s.empty:
            return s
        keep = s["signal"] == signal
        if target is not None:
            keep &= s["target"] == target
        return s[keep]

    @cached_property
    def speedup(self) -> pd.DataFrame:
        """Against the single-runner DQN baseline (tables.speedup_vs_baseline)."""
        return (
            tables.speedup_vs_baseline(self.ttt_summary)
            if len(self.ttt_summary)
            else (pd.DataFrame())
        )

    @property
    def baseline(self) -> str | None:
        return tables.baseline_config(self.ttt_summary) if len(self.ttt_summary) else None

    @property
    def library(self) -> str | None:
        """The library a user would pick instead: its best configuration at the primary signal
        and target (tables.library_config), or None where the runs hold none."""
        if not len(self.ttt_summary) or math.isnan(self.target):
            return None
        return tables.library_config(self.ttt_summary, self.signal, self.target)

    @cached_property
    def library_speedup(self) -> pd.DataFrame:
        """Every configuration against ``library`` (tables.speedup_vs_baseline)."""
        library = self.library
        if library is None:
            return pd.DataFrame()
        return tables.speedup_vs_baseline(self.ttt_summary, base_of=lambda _: library)

    def finals(self, signal: str) -> pd.Series:
        """config -> median over seeds of the final value of ``signal``."""
        if signal == tables.CONFIRMED:
            signal = self.crossing
        column = {"greedy_return": "final_greedy", "return_mean": "final_return"}[signal]
        if self.configs.empty:
            return pd.Series(dtype=float)
        return self.configs.set_index("config")[column].map(lambda spread: spread[0])

    @cached_property
    def best(self) -> pd.DataFrame:
        """Each algorithm's best configuration at the primary signal and the target, best
        first (tables.best_per_algorithm): the summary's rows."""
        return tables.best_per_algorithm(
            self.at(self.signal, self.target), self.finals(self.signal)
        )

    @cached_property
    def throughput(self) -> pd.DataFrame:
        return tables.scaling_throughput(self.selected)

    @cached_property
    def throughput_on_cores(self) -> pd.DataFrame:
        """Env steps/s as run and on a core per process, and what bounds it, per benchmark
        configuration with CPU figures (predicted.throughput_on_cores)."""
        return predicted.throughput_on_cores(self.selected)

    @cached_property
    def scaling(self) -> pd.DataFrame:
        """Time to target against env runners, primary signal only."""
        at = self.at(self.signal)
        return tables.scaling_time_to_target(at) if len(at) else pd.DataFrame()

    @cached_property
    def on_cores(self) -> pd.DataFrame:
        """Time to the target predicted on a core per process beside the measured one, per
        benchmark configuration with CPU figures (predicted.scaling_on_cores); empty for runs
        without them."""
        return predicted.scaling_on_cores(self.selected, self.signal, self.target)

    @cached_property
    def one_machine(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Time to the target on a core per process of one machine, from the rate runs
        (predicted.on_one_machine), and the rate trials; empty without rate runs."""
        return predicted.on_one_machine(self.on_cores, self.selected, self.rates)


def workloads(runs: pd.DataFrame) -> list[Workload]:
    """The workloads of a runs table, sorted by env and variant; a rate run's rows
    (``predicted.RATE``) are kept apart from the compared ones, in ``Workload.rates``."""
    is_rate = runs["kind"] == predicted.RATE
    rates, runs = runs[is_rate], runs[~is_rate]
    selected = tables.select_configurations(runs)

    def of(frame: pd.DataFrame, env: str, variant: str) -> pd.DataFrame:
        return frame[(frame["env"] == env) & (frame["variant"] == variant)]

    return [
        Workload(env, variant, part, of(selected, env, variant), of(rates, env, variant))
        for (env, variant), part in runs.groupby(["env", "variant"], sort=True)
    ]
