"""Plots over the tidy runs table (matplotlib, Agg backend, deterministic PNGs).

Each function takes (part of) the table and a path, draws one figure, and returns the path, or
None when there is nothing to draw. One colour per configuration in every plot of a report
(:func:`palette`); legends sit outside the axes; axes and reference lines say in words what
they show.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.fmt import METRICS, fmt_number
from analysis.run_folder import COMPLETED, ERRORED
from analysis.tables import SIGNALS, TRIAL_KEY, best_trials, trial_summary

# PNG metadata without the matplotlib version: same data, same bytes.
PNG_METADATA = {"Software": None}
GRID_POINTS = 200
STOPPED_STYLE = {"marker": "X", "color": "0.25"}
ERRORED_STYLE = {"marker": "s", "color": "tab:red"}
ALGO_ORDER = ("dqn", "apex", "impala", "appo")
# Configurations of one algorithm share its hue: the first as it is, the next lighter or darker.
SHADES = (0.0, 0.45, -0.35, 0.65, -0.55)
TIME_LABEL = "training wall-clock [s] (evaluation excluded)"
STEPS_LABEL = "env steps sampled"
RUNNERS_LABEL = "remote env runners (0: sampling in the learner's process)"


@dataclass
class Palette:
    """Colours by configuration label (and by algorithm, for lines across configurations)."""

    configs: dict[str, str] = field(default_factory=dict)
    algos: dict[str, str] = field(default_factory=dict)

    def of(self, config: str) -> str:
        return self.configs.get(config, "0.3")


def palette(configs: pd.DataFrame) -> Palette:
    """One colour per configuration (``configs``: algo, kind, num_env_runners, config rows, as
    in ``tables.configurations``): a fixed hue per algorithm, shades within it (benchmarks
    with remote runners first, then 0 runners, then sweeps)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex, to_rgb

    if configs.empty:
        return Palette()
    hues = list(colormaps["tab10"].colors)
    others = sorted(set(configs["algo"]) - set(ALGO_ORDER))
    hue = {a: i for i, a in enumerate([*ALGO_ORDER, *others])}  # the same in every report
    out = Palette()
    for algo in sorted(set(configs["algo"]), key=hue.get):
        base = np.array(to_rgb(hues[hue[algo] % len(hues)]))
        out.algos[algo] = to_hex(base)
        g = configs[configs["algo"] == algo].drop_duplicates("config")
        order = g.assign(
            _sweep=g["kind"] == "sweep", _local=g["num_env_runners"].fillna(0) < 1
        ).sort_values(["_sweep", "_local", "num_env_runners", "config"], kind="stable")
        for j, config in enumerate(order["config"]):
            shade = SHADES[j % len(SHADES)]
            toward = np.ones(3) if shade > 0 else np.zeros(3)
            out.configs[config] = to_hex(base + abs(shade) * (toward - base))
    return out


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure(ncols: int = 1, width: float = 7.0, height: float = 4.5):
    return _pyplot().subplots(1, ncols, figsize=(width, height), layout="constrained")


def _legend_outside(fig, ax, extra: Sequence = ()) -> None:
    handles, _ = ax.get_legend_handles_labels()
    handles = [*extra, *handles]
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)


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


def _level_lines(ax, targets: dict[float, str], references: dict[str, float]) -> None:
    """Targets (grey, dotted) and reference returns (dashed), each with a legend label."""
    for i, (value, label) in enumerate(sorted(targets.items())):
        ax.axhline(value, color=f"{0.55 - 0.2 * i:.2f}", lw=1.0, ls=":", label=f"target {label}")
    for i, (name, value) in enumerate(sorted(references.items(), key=lambda kv: -kv[1])):
        ax.axhline(
            value,
            color=("tab:olive", "tab:cyan", "tab:pink")[i % 3],
            lw=0.9,
            ls="--",
            label=f"{name} {fmt_number(value)}",
        )


def plot_learning_curves(
    selected: pd.DataFrame,
    path: Path,
    title: str,
    signal: str,
    colours: Palette,
    targets: dict[float, str] | None = None,
    references: dict[str, float] | None = None,
) -> Path | None:
    """One signal against training wall-clock and against env steps, per configuration:
    median over seeds with a min-max band; targets and reference returns as labelled lines."""
    if selected.empty or selected[signal].isna().all():
        return None
    fig, axes = _figure(2, width=13, height=4.8)
    for ax, (x, xlabel) in zip(
        axes, {"train_time_s": TIME_LABEL, "env_steps": STEPS_LABEL}.items(), strict=True
    ):
        for config, g in selected.groupby("config", sort=False):
            curves = _curves(g, x, signal)
            if not curves:
                continue
            grid, med, lo, hi = seed_band(curves)
            n = len(curves)
            colour = colours.of(config)
            ax.plot(grid, med, color=colour, label=f"{config} (median of {n})")
            if n > 1:
                ax.fill_between(grid, lo, hi, color=colour, alpha=0.2, lw=0)
        _level_lines(ax, targets or {}, references or {})
        ax.set_xlabel(xlabel)
        ax.set_ylabel(SIGNALS[signal])
        ax.grid(alpha=0.3)
    _legend_outside(fig, axes[0])
    fig.suptitle(f"{title}: {SIGNALS[signal]}, median over seeds (band: min to max)")
    return _save(fig, path)


def plot_time_to_target(
    ttt: pd.DataFrame, order: list[str], path: Path, title: str, colours: Palette
) -> Path | None:
    """Time to one target per configuration (``order``: best first, top down): the all-seed
    median as a bar (hatched where it is only a lower bound), every seed as a marker -- a dot
    where it reached the target, a cross at its budget where it did not."""
    if ttt.empty or not order:
        return None
    from analysis.tables import censored_median

    fig, ax = _figure(width=9, height=1.2 + 0.55 * len(order))
    for y, config in enumerate(order):
        g = ttt[ttt["config"] == config]
        hit = g["reached"].astype(bool)
        times = g["train_time_s"].where(hit, g["budget_train_time_s"])
        median, lower_bound = censored_median(times, hit)
        colour = colours.of(config)
        ax.barh(y, median, color=colour, alpha=0.55, hatch="//" if lower_bound else None)
        ys = np.full(int(hit.sum()), y, dtype=float)
        ax.plot(g.loc[hit, "train_time_s"], ys, "o", color=colour, mec="black", mew=0.6)
        missed = g.loc[~hit, "budget_train_time_s"]
        ax.plot(missed, np.full(len(missed), y, dtype=float), "x", color="black", ms=8)
    from matplotlib.patches import Patch

    bars = [
        Patch(facecolor="0.6", alpha=0.55, label="median over seeds"),
        Patch(facecolor="0.6", alpha=0.55, hatch="//", label="median, a lower bound"),
    ]
    ax.plot([], [], "o", color="0.6", mec="black", mew=0.6, label="seed: reached the target")
    ax.plot([], [], "x", color="black", label="seed: not reached (at its budget)")
    ax.set_yticks(range(len(order)), order)
    ax.invert_yaxis()
    ax.set_xlabel(f"{TIME_LABEL} to the target")
    ax.set_xlim(left=0)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10)
    _legend_outside(fig, ax, bars)
    return _save(fig, path)


def plot_kaplan_meier(
    ttt: pd.DataFrame, order: list[str], path: Path, title: str, colours: Palette
) -> Path | None:
    """Time to one target as censored data, per configuration (``order``): the Kaplan–Meier
    fraction of seeds at the target against training wall-clock and against env steps, with
    its 95% band (analysis.stats.kaplan_meier); a seed that missed is a '+' at its budget."""
    from analysis.stats import kaplan_meier

    if ttt.empty or not order:
        return None
    fig, axes = _figure(2, width=13, height=4.5)
    columns = {
        "train_time_s": ("budget_train_time_s", TIME_LABEL),
        "env_steps": ("budget_env_steps", STEPS_LABEL),
    }
    for ax, (x, (budget, xlabel)) in zip(axes, columns.items(), strict=True):
        for config in order:
            g = ttt[ttt["config"] == config]
            hit = g["reached"].astype(bool).to_numpy()
            times = g[x].where(g["reached"].astype(bool), g[budget]).to_numpy(float)
            colour = colours.of(config)
            km = kaplan_meier(times, hit)
            end = float(np.nanmax(times))
            if km is None:
                t, p, lo, hi = np.array([0.0]), np.array([0.0]), np.array([0.0]), np.array([0.0])
            else:
                t, p, lo, hi = km
            # The step function from 0 (no seed there yet) to the last seed's time or budget.
            xs = np.concatenate([[0.0], t, [max(end, float(t[-1]))]])
            ys = np.concatenate([[0.0], p, [p[-1]]])
            ax.step(xs, ys, where="post", color=colour, label=f"{config} ({len(g)} seeds)")
            if len(g) > 1 and km is not None:
                band_lo = np.concatenate([[0.0], lo, [lo[-1]]])
                band_hi = np.concatenate([[0.0], hi, [hi[-1]]])
                ax.fill_between(xs, band_lo, band_hi, step="post", color=colour, alpha=0.15, lw=0)
            missed = times[~hit]
            if len(missed):
                level = np.interp(missed, xs, ys)
                ax.plot(missed, level, "+", color=colour, ms=10, mew=1.5)
        ax.axhline(0.5, color="0.5", lw=0.8, ls=":")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlim(left=0)
        ax.set_xlabel(f"{xlabel} to the target")
        ax.set_ylabel("fraction of seeds at the target")
        ax.grid(alpha=0.3)
    axes[1].plot([], [], "+", color="0.3", ms=10, mew=1.5, label="seed not reached (its budget)")
    axes[1].legend(fontsize=8, loc="lower right", framealpha=0.8)
    fig.suptitle(f"{title}\nKaplan–Meier estimate, band 95%; dotted: half the seeds", fontsize=10)
    return _save(fig, path)


def ideal_speedup(remote: pd.DataFrame) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The ideal (linear) speedup line from the fewest to the most remote env runners:
    ((n_ref, n_max), (1, n_max / n_ref)); None unless some algorithm ran at two or more remote
    runner counts (then there is no scaling to compare with a line)."""
    per_algo = remote.groupby("algo")["num_env_runners"].nunique()
    if remote.empty or not (per_algo >= 2).any():
        return None
    n_ref, n_max = float(remote["num_env_runners"].min()), float(remote["num_env_runners"].max())
    return (n_ref, n_max), (1.0, n_max / n_ref)


def plot_scaling(
    throughput: pd.DataFrame, scaling: pd.DataFrame, path: Path, title: str, colours: Palette
) -> Path | None:
    """Env steps/s against remote env runners (0 included, as its own point) and, where an
    algorithm ran at two or more remote runner counts, the speedup from the fewest with an
    ideal (linear) line: from throughput, and from time to target where both sides reached it
    on every seed."""
    if throughput.empty:
        return None
    remote = throughput[throughput["num_env_runners"] >= 1]
    ideal = ideal_speedup(remote)
    show_speedup = ideal is not None
    fig, axes = _figure(2 if show_speedup else 1, width=13 if show_speedup else 8)
    ax_tp = axes[0] if show_speedup else axes
    for algo, g in throughput.groupby("algo", sort=True):
        ax_tp.plot(g["num_env_runners"], g["steps_per_s_median"], color=colours.algos.get(algo))
        for _, r in g.iterrows():
            ax_tp.errorbar(
                r["num_env_runners"],
                r["steps_per_s_median"],
                yerr=[[r["steps_per_s_median"] - r["steps_per_s_min"]],
                      [r["steps_per_s_max"] - r["steps_per_s_median"]]],
                marker="o",
                color=colours.of(r["config"]),
                capsize=3,
                label=f"{r['config']} (n={r['seeds']})",
            )  # fmt: skip
    counts = sorted(throughput["num_env_runners"].unique())
    ax_tp.set_xticks(counts, [str(int(n)) for n in counts])
    ax_tp.set_xlabel(RUNNERS_LABEL)
    ax_tp.set_ylabel("env steps / s (median, bar: min to max over seeds)")
    ax_tp.grid(alpha=0.3)
    if show_speedup:
        ax_sp = axes[1]
        (n_ref, n_max), ideal_y = ideal
        ax_sp.plot([n_ref, n_max], ideal_y, color="0.5", ls=":", label="ideal (linear)")
        for algo, g in remote.groupby("algo", sort=True):
            if g["num_env_runners"].nunique() < 2:
                continue
            colour = colours.algos.get(algo)
            ax_sp.plot(
                g["num_env_runners"], g["speedup"], "o-", color=colour, label=f"{algo}: env steps/s"
            )
            t = (
                scaling[(scaling["algo"] == algo) & scaling["speedup"].notna()]
                if len(scaling)
                else scaling
            )
            if len(t) >= 2:
                t = t[t["target"] == t["target"].max()]
                ax_sp.plot(t["num_env_runners"], t["speedup"], "s--", color=colour,
                           label=f"{algo}: time to {fmt_number(t['target'].iloc[0])}")  # fmt: skip
        ax_sp.set_xlabel("remote env runners")
        ax_sp.set_ylabel(f"speedup against {int(n_ref)} remote runner(s)")
        ax_sp.grid(alpha=0.3)
        _legend_outside(fig, ax_sp)
    _legend_outside(fig, ax_tp)
    fig.suptitle(f"{title}: env steps/s against remote env runners")
    return _save(fig, path)


def plot_sweep(
    runs: pd.DataFrame,
    experiment: str,
    path: Path,
    colour: str,
    targets: dict[float, str] | None = None,
) -> Path | None:
    """Every trial's search metric against env steps: the best trial (``tables.best_trials``)
    in its configuration's colour, the others grey; markers where trials stopped early or
    errored."""
    g = runs[runs["experiment"] == experiment]
    if g.empty:
        return None
    metric = g["metric"].iloc[0] or "metric"
    best_trial = best_trials(trial_summary(g))
    best = best_trial["trial_id"].iloc[0] if len(best_trial) else None
    fig, ax = _figure(width=9, height=5)
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
            color=colour if is_best else "0.55",
            alpha=1.0 if is_best else 0.7,
            label=f"best trial {trial_id}" if is_best else None,
            zorder=3 if is_best else 2,
        )
        status = t["trial_status"].iloc[0]
        end = line.iloc[-1]
        if status != COMPLETED:
            style = ERRORED_STYLE if status == ERRORED else STOPPED_STYLE
            ax.plot(end["env_steps"], end["metric_value"], ls="none", ms=8, **style)
    ax.plot([], [], color="0.55", label="other trials")
    statuses = set(g["trial_status"])
    if statuses - {COMPLETED, ERRORED}:
        ax.plot([], [], ls="none", label="stopped early (last result)", **STOPPED_STYLE)
    if ERRORED in statuses:
        ax.plot([], [], ls="none", label="errored (last result)", **ERRORED_STYLE)
    if metric in METRICS:  # a return: the targets are on its scale
        _level_lines(ax, targets or {}, {})
    ax.set_xlabel(STEPS_LABEL)
    ax.set_ylabel(METRICS.get(metric, metric))
    scheduler = g["scheduler"].iloc[0] or "?"
    ax.set_title(f"{experiment}: {g['trial_id'].nunique()} trials, scheduler {scheduler}")
    ax.grid(alpha=0.3)
    _legend_outside(fig, ax)
    return _save(fig, path)


def plot_importance(importance: pd.Series, path: Path, title: str, colour: str) -> Path | None:
    """Hyperparameter importance of one sweep (``analysis.hparams.importances``), highest on
    top."""
    if importance.empty:
        return None
    fig, ax = _figure(width=6, height=0.8 + 0.3 * len(importance))
    ax.barh(range(len(importance)), importance.to_numpy(float), color=colour)
    ax.set_yticks(range(len(importance)), list(importance.index), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(1e-9, float(importance.max())) * 1.1)
    ax.set_xlabel("PED-ANOVA importance (sums to 1)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=9)
    return _save(fig, path)


def references_for_plot(references: pd.DataFrame | None, variant: str) -> dict[str, float]:
    """{label: return} of the reference policies of one cab variant, for labelled lines."""
    if references is None or references.empty:
        return {}
    r = references[references["variant"] == variant]
    if r.empty:
        return {}
    row = r.iloc[0]
    names = {"random": "random policy", "heuristic": "heuristic policy", "optimum": "optimum"}
    return {label: float(row[k]) for k, label in names.items() if k in row}


__all__ = [
    "ideal_speedup",
    "palette",
    "plot_learning_curves",
    "plot_scaling",
    "plot_sweep",
    "plot_time_to_target",
    "references_for_plot",
    "seed_band",
]
