"""The scaling section's sentences, ahead of its tables (:mod:`analysis.scaling`): its lead (the
largest predicted speedup from more env runners, the shortest predicted time to the target), what
bounds the prediction (the one process that would run all the time on a core per process, and
what would lift it), and each source article's claim at its own scale, set against the runs.

Each is a pure function of the section's tables (:mod:`analysis.predicted`); every predicted
figure is said to be one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import stats, tables
from analysis.fmt import fmt_estimate, fmt_number, fmt_ratio, fmt_time, is_missing
from analysis.workload import Workload


@dataclass(frozen=True)
class Claim:
    """A published speedup of one algorithm at its scale over the single-runner DQN, checked
    wherever the runs hold both (its source says where it comes from)."""

    algo: str
    runners: int
    ratio: float
    words: str  # what was claimed, in a phrase
    source: str


# The source article: 10 actors reached the cab env's best reward in 3 minutes, where single-
# machine training had taken ~35 ("the training time is reduced by 90%").
CLAIMS = (
    Claim(
        "apex",
        10,
        35.0 / 3.0,
        "Ape-X with 10 actors 11.7× as fast as single-machine DQN, 3 minutes against ~35",
        "Srikanth Machiraju, *Scalable Reinforcement Learning Using Azure ML and Ray*",
    ),
)


def _and(values: list[int]) -> str:
    """'1', '1 and 4', '1, 4 and 10'."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def plural(n: float, word: str) -> str:
    return f"{fmt_number(n)} {word}{'' if n == 1 else 's'}"


# --- The section's sentences ----------------------------------------------------------------


def lead_lines(w: Workload, table: pd.DataFrame, one_machine: bool = False) -> list[str]:
    """The section's first lines where runs report CPU figures: the largest predicted speedup
    from more env runners, and the shortest predicted time to the target; on one machine
    (``one_machine``: ``table`` is the rate runs' one) where it shows a speedup, else each
    run's own."""
    if table.empty:
        return []
    where = (
        "On one machine with a core per process (env steps to the target measured by the runs, "
        "env steps/s predicted by rate runs in one sitting: the table below): "
        if one_machine
        else ""
    )
    return [f"{where}{_largest_speedup(w, table)} {_shortest(w, table)}".strip(), ""]


def rule_lines(w: Workload) -> list[str]:
    """The configurations at more than one env runner whose trials were judged by the training
    return's earlier rule: the mean over the runners of each runner's own last 20 games (runs
    without ``return_window_games``, made before the suite kept one window of the last 20 games
    to end over all runners, ``sweeps/harness/callbacks.py``). At R runners that figure spans
    up to R x 20 games, a window ~R times longer in env steps, so it crossed a target later than
    the current rule would have: their env steps and times to target are upper bounds of the
    current rule's (at one runner the two rules are the same figure)."""
    rows = w.selected
    if w.crossing != "return_mean" or rows.empty:
        return []
    many = rows[rows["num_env_runners"] > 1]
    window = many.get("return_window_games", pd.Series(float("nan"), index=many.index))
    trials = many.assign(_w=window).groupby(["algo", "num_env_runners", *tables.TRIAL_KEY])
    earlier = trials["_w"].apply(lambda s: s.isna().all())
    old = earlier[earlier].reset_index().groupby(["algo", "num_env_runners"]).size()
    if old.empty:
        return []
    which = [f"{algo} at {runners} ({plural(n, 'seed')})" for (algo, runners), n in old.items()]
    return [
        "**Judged by the earlier training-return rule**: "
        + ", ".join(which)
        + ". Their training return was the mean over the runners of each runner's own last 20 "
        "games, which at R runners spans up to R × 20 games and lags a rising policy the more, "
        "the more runners: their env steps and times to target are upper bounds of what the "
        "current rule (the last 20 games to end over all runners, the same figure at one runner) "
        "gives."
        + (
            " Every target they reached was confirmed by seeded games all the same."
            if w.confirmed
            else ""
        ),
        "",
    ]


def bound_lines(table: pd.DataFrame) -> list[str]:
    """What bounds the predicted throughput, where one process does: the configurations whose
    prediction is, on every seed, its busiest process's own CPU work (``cpu_time.bound_by``),
    grouped by that process. That is the answer to "why don't more runners train faster" the
    CPU figures give: on a core each, that process would run all the time and the others wait
    for it."""
    if table.empty:
        return []
    bound = table[(table["bound_seeds"] == table["seeds"]) & (table["busiest"] != "")]
    if bound.empty:
        return [
            "**What bounds the prediction**: no one process in any configuration: on a core "
            "each, every process is predicted to run as it did here, only without waiting for "
            "a core.",
            "",
        ]
    parts = []
    for kind, g in bound.groupby("busiest", sort=False):
        configs = [
            f"{algo} at {_and(sorted(a['num_env_runners']))} "
            f"{'runner' if list(a['num_env_runners']) == [1] else 'runners'}"
            for algo, a in g.groupby("algo", sort=True)
        ]
        what, remedy = _ROLES.get(kind, ("", "more of it or a faster one could"))
        parts.append(f"the {kind}{what} in {', '.join(configs)}: {remedy}")
    free = len(table) - len(bound)
    others = {0: "", 1: "In the other configuration"}.get(
        free, f"In the other {free} configurations"
    )
    rest = f" {others} no one process bounds it." if others else ""
    return [
        f"**What bounds the prediction: one process**, busy all the time on its own core while "
        f"the others wait for it, in {len(bound)} of {plural(len(table), 'configuration')}: "
        f"{'; '.join(parts)}.{rest}",
        "",
    ]


# Per kind of process that bounds a prediction: what it is (where its name does not say) and
# what would lift the bound.
_LEARNER = (
    "more env runners cannot go faster than it, a faster learner (a GPU) or more learners could"
)
_ROLES = {
    "driver": (" (the algorithm's process: the learner's too, unless it is remote)", _LEARNER),
    "learner": ("", _LEARNER),
    "env_runner": ("", "more env runners share its work"),
    "replay_shard": ("", "more replay shards share its work"),
    "aggregator": ("", "more aggregator actors share its work"),
}


def claim_lines(w: Workload, one_machine: pd.DataFrame, on_cores: pd.DataFrame) -> list[str]:
    """Each claim (``CLAIMS``) whose algorithm the runs hold: its speedup over the single-runner
    DQN here, predicted on a core per process (on one machine where rate runs measured both),
    and whether the interval holds the claimed ratio; nothing where the algorithm never ran."""
    lines = []
    for c in CLAIMS:
        if on_cores.empty or c.algo not in set(on_cores["algo"]):
            continue
        head = f"**The source article's claim at its scale** ({c.words}; {c.source}): "
        config = f"{c.algo} at {plural(c.runners, 'runner')}"
        rows = on_cores[(on_cores["algo"] == c.algo) & (on_cores["num_env_runners"] == c.runners)]
        if rows.empty:
            lines += [f"{head}no run of {config} here yet.", ""]
            continue
        r = rows.iloc[0]
        where = " (predicted)"
        gain = r["speedup_dqn"]
        if len(one_machine):
            mine = one_machine[one_machine["config"] == r["config"]]
            if len(mine) and not is_missing(mine.iloc[0]["speedup_dqn"].value):
                gain, where = mine.iloc[0]["speedup_dqn"], " (predicted, on one machine)"
        if not r["baseline"] or is_missing(gain.value):
            why = (
                f"{config} reached {w.label(w.target)} on {r['reached']}/{r['seeds']} seeds"
                if r["reached"] < r["seeds"]
                else "no single-runner DQN reached it on every seed of the same seeds"
            )
            lines += [f"{head}no speedup to set against it: {why}.", ""]
            continue
        if gain.has_interval and gain.low <= c.ratio <= gain.high:
            verdict = "the claimed ratio is inside its interval: consistent with it"
        elif gain.has_interval and gain.high < c.ratio:
            verdict = "the interval lies below the claimed ratio: not reproduced here"
        elif gain.has_interval:
            verdict = "the interval lies above the claimed ratio: exceeded here"
        else:
            verdict = "one seed's figure, no interval: no verdict"
        lines += [
            f"{head}here {config} is {estimate(gain, fmt_ratio)} as fast as {r['baseline']} "
            f"to {w.label(w.target)} on a core per process{where}; {verdict}.",
            "",
        ]
    return lines


def _largest_speedup(w: Workload, table: pd.DataFrame) -> str:
    """The configuration with the largest predicted speedup over its algorithm's fewest remote
    runners, with its interval and against the single-runner DQN; a point estimate, said as
    one: whether the seeds tell it from no speedup is in the sentence."""
    target = w.label(w.target)
    more = table[
        (table["num_env_runners"] > table["reference_runners"])
        & table["speedup_own"].map(lambda e: not is_missing(e.value))
    ]
    if more.empty:
        remote = table[table["num_env_runners"] >= 1].groupby("algo")["num_env_runners"]
        why = (
            f"no algorithm reached {target} on every seed at two remote runner counts"
            if (remote.nunique() >= 2).any()
            else "no algorithm ran at two remote runner counts with CPU figures"
        )
        return f"**No predicted speedup from more env runners to show**: {why}."
    r = more.loc[more["speedup_own"].map(lambda e: e.value).idxmax()]
    n_ref = r["reference_runners"]
    ref = table[(table["algo"] == r["algo"]) & (table["num_env_runners"] == n_ref)].iloc[0]
    gain = r["speedup_own"]
    at = f"{r['algo']} at {plural(r['num_env_runners'], 'runner')}"
    lead = (
        f"**Largest predicted speedup from more env runners: {at}**, "
        if gain.value >= 1.0
        else f"**More env runners shortened no algorithm's predicted time**; the closest, {at}, is "
    )
    text = (
        f"{lead}{estimate(gain, fmt_ratio)} as fast to {target} as at "
        f"{plural(n_ref, 'runner')}: {estimate(r['predicted'], fmt_time)} on "
        f"{plural(r['cores'], 'core')} against {estimate(ref['predicted'], fmt_time)} on "
        f"{plural(ref['cores'], 'core')} (predicted)"
    )
    if not stats.separated(gain):
        text += "; its interval holds 1: the seeds can't tell it from no speedup"
    dqn = r["speedup_dqn"]
    if r["baseline"] not in ("", r["config"], ref["config"]) and not is_missing(dqn.value):
        cell = f"{estimate(dqn, fmt_ratio)} (predicted)"
        text += (
            f"; {cell} as fast as {r['baseline']}"
            if stats.separated(dqn)
            else f"; against {r['baseline']} the seeds can't tell: {cell}"
        )
    return text + "."


def _shortest(w: Workload, table: pd.DataFrame) -> str:
    """The configuration with the shortest predicted time to the target among those that
    reached it on every seed, beside its measured time."""
    everywhere = table[
        (table["reached"] == table["seeds"])
        & table["predicted"].map(lambda e: not is_missing(e.value))
    ]
    if everywhere.empty:
        return ""
    r = everywhere.loc[everywhere["predicted"].map(lambda e: e.value).idxmin()]
    measured = (
        f"; {estimate(r['measured'], fmt_time)} measured as run" if "measured" in r.index else ""
    )
    return (
        f"Shortest predicted time to {w.label(w.target)}: {r['config']}, "
        f"{estimate(r['predicted'], fmt_time)} on {plural(r['cores'], 'core')} (predicted"
        f"{measured})."
    )


def estimate(e: stats.Estimate, fmt) -> str:
    return fmt_estimate(e.value, e.low, e.high, fmt)
