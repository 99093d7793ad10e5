"""How the family tuner judges a run, and the study's page: every trial, what each env gave it.

``benchmarks/family_tune.py`` runs the study; this module reads what it leaves: each benchmark's
collected table (did its seeds reach the env's target within the scaled budget, and when: the
same rule as the family report, the confirmed target where the runs confirm it) and the Optuna
journal (each trial's values and state). ``STUDY.md`` in the study's record, regenerated with
every commit the tuner makes, is what the study found so far, readable while it runs: a row per
trial (the defaults first), a column per env, each cell a seed's time to the target or its miss
with the best greedy return it got to, and below, each trial's values.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sweeps.env_family import FamilyEnv

PAGE = "STUDY.md"
NOT_RUN = "·"

Pair = tuple[bool, float, float]  # reached within the budget, seconds to the target, budget


def score(pairs: Sequence[Pair]) -> float:
    """The pairs that reached their target plus the mean share of the budget left when they did
    (0 for a miss), that share weighed just under one pair: one pair more always beats any
    speed, and time breaks ties."""
    if not pairs:
        return 0.0
    left = [max(0.0, 1.0 - t / b) if hit and b > 0 else 0.0 for hit, t, b in pairs]
    return sum(hit for hit, _, _ in pairs) + sum(left) / len(left) * 0.999


def _reached_rows(table: Path) -> tuple[Any, Any, Any]:
    """The collected ``table``'s time-to-target rows at the report's signal and target (one per
    seed), its rows of the greedy return's first crossing of that target, and its runs."""
    from analysis.collect import read_runs_csv
    from analysis.workload import workloads

    runs = read_runs_csv(table)
    if runs.empty:
        return runs, runs, runs
    (w,) = workloads(runs)
    ttt = w.ttt[w.ttt["target"] == w.target]
    return ttt[ttt["signal"] == w.signal], ttt[ttt["signal"] == "greedy_return"], runs


def judged(table: Path, budget_s: float) -> list[tuple[Pair, str]]:
    """Each seed of a benchmark's collected ``table``, read once: whether it reached its target
    (the report's rule: the confirmed target where the runs confirm it) within ``budget_s`` of
    training, and when; and its cell as the page shows it: its time to the target, ``late (N
    s)`` where it got there after ``budget_s`` (a run of record of the full budget), else
    ``miss`` and the best greedy return it reached, and where that crossed the target, when it
    first did: the seeded games that confirm a target never confirmed it."""
    rows, crossings, runs = _reached_rows(table)
    best = runs.groupby("trial_id")["greedy_return"].max() if "greedy_return" in runs else {}
    crossed = crossings[crossings["reached"].astype(bool)].set_index("trial_id")["train_time_s"]
    out = []
    for _, r in rows.iterrows():
        seconds = float(r["train_time_s"])
        pair = (bool(r["reached"]) and seconds <= budget_s, seconds, budget_s)
        greedy = best.get(r["trial_id"])
        if bool(r["reached"]):
            cell = f"{seconds:.1f} s" if seconds <= budget_s else f"late ({seconds:.0f} s)"
        elif greedy is None or math.isnan(greedy):
            cell = "miss"
        elif r["trial_id"] in crossed.index and r["signal"] != "greedy_return":
            first = float(crossed[r["trial_id"]])
            checked = _best_check(r)
            cell = f"miss (best {greedy:.1f}; crossed at {first:.0f} s, never confirmed{checked})"
        else:
            cell = f"miss (best {greedy:.1f})"
        out.append((pair, cell))
    return out


def _best_check(row: Any) -> str:
    """A trial's best check of its target (``analysis.tables``' ``check_*`` figures of its
    confirmed-target row), as a miss's cell adds it: its mean over the seeded games, and how many
    of them its policy played to the env's time limit (a policy that loops from some starts:
    Taxi's) where its table counts them; empty without a check."""
    value = float(row.get("check_return", math.nan))
    if math.isnan(value):
        return ""
    text = f": its best check {value:.1f}"
    cut = float(row.get("check_cut", math.nan))
    if cut > 0:  # (False for NaN)
        text += f", {cut:.0f} of {float(row['check_episodes']):.0f} games to the time limit"
    return text


def outcomes(table: Path, budget_s: float) -> list[Pair]:
    """Each seed of ``table``: reached within ``budget_s``, when, and the budget (``judged``)."""
    return [pair for pair, _ in judged(table, budget_s)]


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _repeats(trial: Any, earlier: Any) -> bool:
    """Whether ``trial`` drew exactly ``earlier``'s values, ``earlier`` being asked before it."""
    if trial is None or earlier is None or earlier.number >= trial.number:
        return False
    return bool(trial.params) and trial.params == earlier.params


def best_so_far(algo: str, latest: dict[str, Any], whole: dict[str, float]) -> list[str]:
    """The page's verdict so far: the complete trial of the highest score against the defaults'
    (each over every env, as the page scores them), with its values as the benchmark's ``--set``
    flags, to try it on an env of one's own before the study ends (``BEST.json``, written at the
    end, ranks by the scores the trials were told when they ran)."""
    done = {
        tag: whole[tag]
        for tag, trial in latest.items()
        if tag in whole and trial is not None and trial.state.name == "COMPLETE"
    }
    if not done:
        return []
    tag = max(done, key=lambda t: (done[t], -latest[t].number))
    sets = latest[tag].user_attrs.get("set") or []
    before = whole.get("defaults")
    if before is None:
        verdict = "the defaults have not run on every env yet"
    elif done[tag] > before:
        verdict = f"above the defaults' {before:.3f}"
    else:
        verdict = f"not above the defaults' {before:.3f}: the defaults stand so far"
    flags = " ".join(f"--set {shlex.quote(s)}" for s in sets)
    return [
        "",
        f"**Best so far: {tag}**, score {done[tag]:.3f} over every env ({verdict}; "
        f"{len(done)} complete trial(s)). To try its values on an env of your own:",
        "",
        f"    python -m sweeps.benchmark --env <ENV> --target <TARGET> --algos {algo} {flags}",
    ]


def page(
    name: str,
    envs: Sequence[FamilyEnv],
    scale: float,
    trials: Sequence[Any],
    recorded: Callable[[str, FamilyEnv], Path | None],
    command: str,
    algo: str | None = None,
) -> str:
    """The study's page (module docstring); ``algo`` the study's algorithm (its ``name``
    where not given). ``trials``: the journal's trials (FrozenTrial), each
    tagged (``user_attrs["tag"]``); a tag tried again shows its last try. ``recorded(tag, env)``:
    the collected table of that run, or None where it has not run."""
    latest: dict[str, Any] = {}
    for t in sorted(trials, key=lambda t: t.number):
        latest[t.user_attrs.get("tag", f"t{t.number}")] = t
    rows = [("defaults", None), *latest.items()]
    header = ["trial", "state", "score", *(f"{e.env} ({e.budget_s * scale:g} s)" for e in envs)]
    lines = [
        f"# The family tuning study of {name}",
        "",
        f"Generated by `{command}` from the study's journal and the collected tables beside "
        "it; regenerated with each commit the tuner makes. The score: the (env, seed) pairs "
        "that reached their env's target within the env's budget times "
        f"{scale:g}, plus the mean share of the budget left when they did "
        "(`benchmarks/family_study.py`). A cell: each seed's training seconds to the target "
        "(confirmed, as the family report counts it), `late` where a run of record of the full "
        "budget got there after the scaled one, `miss` with the best greedy return it reached "
        "(and where that crossed the target, when: the seeded games never confirmed it); "
        f"`{NOT_RUN}` not run (pruned before it, or still to come).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    values: list[tuple[str, dict[str, Any]]] = []
    whole: dict[str, float] = {}  # the score of each row that ran on every env
    for tag, trial in rows:
        pairs: list[Pair] = []
        shown = []
        for env in envs:
            table = recorded(tag, env)
            if table is None:
                shown.append(NOT_RUN)
                continue
            seeds = judged(table, env.budget_s * scale)
            pairs += [pair for pair, _ in seeds]
            shown.append(" / ".join(cell for _, cell in seeds) or NOT_RUN)
        if NOT_RUN not in shown:
            whole[tag] = score(pairs)
        state = "—" if trial is None else trial.state.name.lower()
        first = next((t for t, other in rows[1:] if _repeats(trial, other)), None)
        if first is not None:  # the same values as an earlier trial: a measure of run-to-run noise
            state += f" (a repeat of {first}'s values)"
        lines.append("| " + " | ".join([tag, state, f"{score(pairs):.3f}", *shown]) + " |")
        if trial is not None:
            values.append((tag, trial.params))
    lines += best_so_far(algo or name, latest, whole)
    names = sorted({k for _, params in values for k in params})
    if names:
        lines += [
            "",
            "## Each trial's values",
            "",
            "| trial | " + " | ".join(n.removeprefix("hp/") for n in names) + " |",
            "|" + "---|" * (len(names) + 1),
        ]
        for tag, params in values:
            shown = [_number(params[n]) if n in params else "" for n in names]
            lines.append("| " + " | ".join([tag, *shown]) + " |")
    return "\n".join(lines) + "\n"
