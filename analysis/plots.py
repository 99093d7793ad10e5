"""Plots over the tidy runs table (matplotlib, Agg backend, deterministic PNGs).

Each function takes (part of) the table and a path, draws one figure, and returns the path, or
None when there is nothing to draw.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.collect import COMPLETED, ERRORED
from analysis.tables import SIGNALS, TRIAL_KEY, best_trials, runners, targets_of, trial_summary

# PNG metadata without the matplotlib version: same data, same bytes.
PNG_METADATA = {"Software": None}
GRID_POINTS = 200
STOPPED_STYLE = {"marker": "X", "color": "C0"}
ERRORED_STYLE = {"marker": "s", "color": "C1"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=100, metadata=PNG_METADATA)
    _pyplot().close(fig)
    return path


def seed_band(
    curves: list[tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Median, min and max over seeds of y(x) curves on a shared x grid.

    Each curve is interpolated only within its own x range, so the band at x covers the seeds
    that got that far.
    """
    x_max = max(float(x.max()) for x, _ in curves)
    x_min = min(float(x.min()) for x, _ in curves)
    grid = np.linspace(x_min, x_max, points)
    ys = np.full((len(curves), points), np.nan)
    for i, (x, y) in enumerate(curves):
        inside = (grid >= x.min()) & (grid <= x.max())
        ys[i, inside] = np.interp(grid[inside], x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, as intended
        return grid, np.nanmedian(ys, 0), np.nanmin(ys, 0), np.nanmax(ys, 0)


def _curves(g: pd.DataFrame, x: str, y: str) -> list[tuple[np.ndarray, np.ndarray]]:
    curves = []
    for _, trial in g.groupby(TRIAL_KEY, sort=True):
        t = trial.sort_values("training_iteration")[[x, y]].dropna()
        if len(t):
            curves.append((t[x].to_numpy(float), t[y].to_numpy(float)))
    return curves


def _reference_lines(ax, frame: pd.DataFrame, references: dict[str, float]) -> None:
    for target in targets_of(frame):
        ax.axhline(target, color="0.5", lw=0.8, ls=":")
    for i, (name, value) in enumerate(sorted(references.items())):
        if value is not None and not math.isnan(value):
            ax.axhline(value, color=f"C{7 + i % 3}", lw=0.8, ls="--", label=name)


def plot_learning_curves(
    selected: pd.DataFrame, path: Path, title: str, references: dict[str, float] | None = None
) -> Path | None:
    """Training return and greedy return vs training wall-clock and vs env steps, per
    configuration: median over seeds with a min-max band."""
    if selected.empty:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharey="row")
    xs = {"train_time_s": "training wall-clock [s] (evaluation excluded)", "env_steps": "env steps"}
    for row, signal in enumerate(SIGNALS):
        for col, (x, xlabel) in enumerate(xs.items()):
            ax = axes[row][col]
            for i, (config, g) in enumerate(selected.groupby("config", sort=False)):
                curves = _curves(g, x, signal)
                if not curves:
                    continue
                grid, med, lo, hi = seed_band(curves)
                n = len(curves)
                ax.plot(grid, med, color=f"C{i}", label=f"{config} (n={n})")
                if n > 1:
                    ax.fill_between(grid, lo, hi, color=f"C{i}", alpha=0.2, lw=0)
            _reference_lines(ax, selected, references or {})
            ax.set_xlabel(xlabel)
            ax.set_ylabel(SIGNALS[signal])
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="best")
    fig.suptitle(f"{title}: median over seeds, band = min-max; dotted = reward targets")
    fig.tight_layout()
    return _save(fig, path)


def plot_scaling(throughput: pd.DataFrame, ttt_scaling: pd.DataFrame, path: Path, title: str):
    """Env steps/s and speedup (throughput and time-to-first-target) vs env runners."""
    if throughput.empty:
        return None
    plt = _pyplot()
    fig, (ax_tp, ax_sp) = plt.subplots(1, 2, figsize=(12, 4.5))
    n_all = sorted(throughput["num_env_runners"].unique())
    for i, (algo, g) in enumerate(throughput.groupby("algo", sort=True)):
        n = g["num_env_runners"].to_numpy(float)
        ax_tp.errorbar(
            n,
            g["steps_per_s_median"],
            yerr=[
                g["steps_per_s_median"] - g["steps_per_s_min"],
                g["steps_per_s_max"] - g["steps_per_s_median"],
            ],
            marker="o",
            color=f"C{i}",
            capsize=3,
            label=algo,
        )
        ax_sp.plot(n, g["speedup"], marker="o", color=f"C{i}", label=f"{algo}: throughput")
        t = ttt_scaling[(ttt_scaling["algo"] == algo)] if not ttt_scaling.empty else ttt_scaling
        # Time-to-first-target speedup where it is exact (not a bound): greedy return when it
        # has such points (cabs: the exploring policy's return rarely reaches a target), else
        # the training return.
        for signal in ("greedy_return", "return_mean"):
            if t.empty:
                break
            first = t[(t["signal"] == signal) & (t["target"] == t["target"].min())]
            exact = first[first["speedup"].notna() & (first["speedup_bound"] == "")]
            if len(exact) >= 2:
                ax_sp.plot(
                    exact["num_env_runners"].to_numpy(float),
                    exact["speedup"],
                    marker="s",
                    ls="--",
                    color=f"C{i}",
                    label=f"{algo}: time to {first['target'].iloc[0]:g} ({SIGNALS[signal]})",
                )
                break
    n_min = n_all[0]
    ideal = [runners(n) / runners(n_min) for n in n_all]
    ax_sp.plot(n_all, ideal, color="0.5", ls=":", label="ideal (linear)")
    for ax in (ax_tp, ax_sp):
        ax.set_xticks(n_all, [str(int(n)) for n in n_all])
    ax_tp.set_xlabel("num_env_runners")
    ax_tp.set_ylabel("env steps / s (median, min-max over seeds)")
    ax_sp.set_xlabel("num_env_runners")
    ax_sp.set_ylabel(f"speedup vs {int(n_min)} runner(s)")
    for ax in (ax_tp, ax_sp):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def plot_sweep(runs: pd.DataFrame, experiment: str, path: Path) -> Path | None:
    """Every trial's search metric vs env steps; markers where trials stopped early or errored,
    the best trial (final metric) in bold."""
    g = runs[runs["experiment"] == experiment]
    if g.empty:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    metric = g["metric"].iloc[0] or "metric"
    best_trial = best_trials(trial_summary(g))
    best = best_trial["trial_id"].iloc[0] if len(best_trial) else None
    for trial_id, t in g.groupby("trial_id", sort=True):
        t = t.sort_values("training_iteration")[["env_steps", "metric_value", "trial_status"]]
        line = t.dropna(subset=["env_steps", "metric_value"])
        if line.empty:
            continue
        is_best = trial_id == best
        ax.plot(
            line["env_steps"],
            line["metric_value"],
            lw=2.5 if is_best else 1.0,
            color="C3" if is_best else "0.4",
            alpha=1.0 if is_best else 0.6,
            label=f"best: {trial_id}" if is_best else None,
        )
        status = t["trial_status"].iloc[0]
        end = line.iloc[-1]
        if status != COMPLETED:
            style = ERRORED_STYLE if status == ERRORED else STOPPED_STYLE
            ax.plot(end["env_steps"], end["metric_value"], ls="none", ms=8, **style)
    statuses = set(g["trial_status"])
    if statuses - {COMPLETED, ERRORED}:
        ax.plot([], [], ls="none", label="stopped early (last result)", **STOPPED_STYLE)
    if ERRORED in statuses:
        ax.plot([], [], ls="none", label="errored (last result)", **ERRORED_STYLE)
    ax.set_xlabel("env steps")
    ax.set_ylabel(metric)
    scheduler = g["scheduler"].iloc[0] or "?"
    ax.set_title(f"{experiment}: {g['trial_id'].nunique()} trials, scheduler {scheduler}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def references_for_plot(references: pd.DataFrame | None, variant: str) -> dict[str, float]:
    """{name: return} of the reference policies of one cab variant, for horizontal lines."""
    if references is None or references.empty:
        return {}
    r = references[references["variant"] == variant]
    if r.empty:
        return {}
    row = r.iloc[0]
    return {k: float(row[k]) for k in ("random", "heuristic", "optimum") if k in row}


__all__ = [
    "plot_learning_curves",
    "plot_scaling",
    "plot_sweep",
    "references_for_plot",
    "seed_band",
]
