"""A seed a benchmark configuration ran more than once counts once, by its latest run (a run of
record made again with a longer budget replaces the earlier one); the report names the earlier
runs. On the committed CartPole runs, one run copied as an earlier run of the same seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import collect, reproducibility, tables

CARTPOLE = Path(__file__).resolve().parents[1] / "results" / "cartpole" / "runs.csv"


def _with_an_earlier_copy() -> tuple[pd.DataFrame, str, str]:
    runs = collect.read_runs_csv(CARTPOLE)
    bench = runs[runs["kind"] != "sweep"]
    original = str(bench["experiment"].iloc[0])
    copy = runs[runs["experiment"] == original].assign(
        experiment=original + "-earlier",
        trial_id=lambda d: d["trial_id"] + "-earlier",
        started_at="2000-01-01T00:00:00+00:00",
        train_time_s=lambda d: d["train_time_s"] * 2,  # a different run: its own clock
    )
    return pd.concat([runs, copy], ignore_index=True), original, original + "-earlier"


def test_the_latest_run_of_a_seed_counts_and_the_earlier_is_named():
    runs, latest, earlier = _with_an_earlier_copy()
    selected = tables.select_configurations(runs)
    alone = tables.select_configurations(collect.read_runs_csv(CARTPOLE))
    assert earlier not in set(selected["experiment"]) and latest in set(selected["experiment"])
    pd.testing.assert_frame_equal(selected.reset_index(drop=True), alone.reset_index(drop=True))
    assert tables.superseded(runs, selected) == [earlier]
    lines = reproducibility.reproducibility_section(runs, [], superseded=[earlier])
    text = "\n".join(lines)
    assert "### Runs replaced by a later run of the same seed" in text and f"- {earlier}" in text


def test_without_a_repeated_seed_nothing_is_replaced():
    runs = collect.read_runs_csv(CARTPOLE)
    assert tables.superseded(runs, tables.select_configurations(runs)) == []
