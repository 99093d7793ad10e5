"""``python -m analysis scaling-check``: one core's prediction against two cores' measurement,
on known answers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.scaling_check import at_steps, check_lines, seed_rows


def _run(
    cores: int, seed: int, times, predicted, returns, algo="appo", name="check", started=None
) -> pd.DataFrame:
    n = len(times)
    return pd.DataFrame(
        {
            "started_at": started,
            "time_total_s": times,
            "experiment": f"{name}-{cores}core",
            "algo": algo,
            "num_env_runners": 1,
            "seed": seed,
            "cores": cores,
            "training_iteration": range(1, n + 1),
            "env_steps": [1000.0 * (i + 1) for i in range(n)],
            "train_time_s": times,
            "predicted_train_time_s": predicted,
            "metric_value": returns,
            "command": f"python ... ({cores} core)",
            "raw_env_start": 1000.0,
            "env": "pong",
            "targets": "[0, 10, 18]",
        }
    )


def test_one_cores_prediction_is_checked_against_two_cores_measurement():
    # One core: 2 s an iteration, predicted 1-1.5 s; two cores: 1.25 s an iteration, measured.
    one = _run(1, 0, [2.0, 4.0, 6.0, 8.0], [1.5, 3.0, 4.0, 5.0], [0, 5, 18, 19])
    two = _run(2, 0, [1.25, 2.5, 3.75], [1.2, 2.4, 3.6], [0, 18, 19])
    rows = seed_rows(pd.concat([one, two]), target=18)
    (row,) = rows.to_dict("records")
    assert row["steps_one"] == 3000 and row["steps_two"] == 2000  # env steps to 18
    assert row["predicted"] == 4.0 and row["measured_two"] == 2.5
    assert row["time_error"] == pytest.approx(4.0 / 2.5 - 1)  # +60%: outside the goal
    # The same env steps (3,000, what the two-core run sampled): 4 s predicted, 3.75 s measured.
    assert row["common_steps"] == 3000
    assert row["steps_error"] == pytest.approx(4.0 / 3.75 - 1)
    text = "\n".join(check_lines(pd.concat([one, two]), "python -m analysis ..."))
    assert "## pong: to a judged return of 18" in text
    assert "predicted from 1 core" in text and "+60%" in text and "+7%" in text
    assert "time to target median error +60%, 0/1 seeds within ±25%" in text
    assert "same env steps median error +7%, 1/1 seeds within ±25%" in text


def test_a_seed_that_misses_the_target_is_still_checked_on_its_env_steps():
    one = _run(1, 1, [2.0, 4.0], [1.0, 2.0], [0, 1])
    two = _run(2, 1, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0, 1, 2])
    (row,) = seed_rows(pd.concat([one, two]), target=18).to_dict("records")
    assert math.isnan(row["time_error"]) and row["common_steps"] == 2000
    assert row["steps_error"] == pytest.approx(0.0)


def test_runs_without_a_partner_are_left_out():
    only_one = _run(1, 0, [1.0], [0.5], [0])
    assert seed_rows(only_one, target=18).empty
    assert at_steps(_run(2, 0, [1.0, 3.0], [1.0, 3.0], [0, 0]), "train_time_s", 1500) == 2.0


def test_a_short_probe_gives_way_to_the_run_to_the_target():
    """A seed probed for a few iterations on one core, then run to the target there: the run
    with the most env steps is the one paired."""
    probe = _run(1, 0, [2.0], [1.0], [0], name="probe")
    one = _run(1, 0, [2.0, 4.0, 6.0], [1.0, 2.0, 3.0], [0, 5, 18], name="record")
    two = _run(2, 0, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0, 5, 18], name="record")
    (row,) = seed_rows(pd.concat([probe, one, two]), target=18).to_dict("records")
    assert row["predicted"] == 3.0 and row["measured_two"] == 3.0 and row["time_error"] == 0


def test_each_run_s_replay_is_shown_beside_its_env_steps():
    """Trained per sampled (``steps_trained`` / env steps at the end) for each of the pair; a
    table from before that column reads —, not a number."""
    one = _run(1, 0, [2.0, 4.0, 6.0], [1.0, 2.0, 3.0], [0, 5, 18]).assign(
        steps_trained=[2000.0, 6000.0, 9900.0]
    )
    two = _run(2, 0, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0, 5, 18])
    (row,) = seed_rows(pd.concat([one, two]), target=18).to_dict("records")
    assert row["replay_one"] == pytest.approx(3.3) and math.isnan(row["replay_two"])
    text = "\n".join(check_lines(pd.concat([one, two]), "python -m analysis ..."))
    assert "| 3.30× | — |" in text


def test_the_learner_s_share_of_the_cpu_is_set_beside_on_each_core_count():
    """Learner : runners CPU at the same env steps: the driver's CPU seconds (plus any remote
    learners') over the env runners', one core and two; — where a run has no accounting."""
    one = _run(1, 0, [2.0, 4.0, 6.0], [1.0, 2.0, 3.0], [0, 5, 18]).assign(
        cpu_driver_s=[1.2, 2.4, 3.6], cpu_env_runners_s=[0.8, 1.6, 2.4]
    )
    two = _run(2, 0, [1.0, 2.0], [1.0, 2.0], [0, 5]).assign(
        cpu_driver_s=[1.0, 2.0], cpu_learners_s=[0.5, 1.0], cpu_env_runners_s=[1.0, 2.0]
    )
    (row,) = seed_rows(pd.concat([one, two]), target=18).to_dict("records")
    assert row["common_steps"] == 2000
    assert row["share_one"] == pytest.approx(1.5) and row["share_two"] == pytest.approx(1.5)
    text = "\n".join(check_lines(pd.concat([one, two]), "python -m analysis ..."))
    assert "| learner : runners CPU, 1 core | 2 cores |" in text and "| 1.50 | 1.50 |" in text
    bare = _run(2, 0, [1.0, 2.0], [1.0, 2.0], [0, 5])
    (row,) = seed_rows(pd.concat([one, bare]), target=18).to_dict("records")
    assert row["share_one"] == pytest.approx(1.5) and math.isnan(row["share_two"])


def test_a_pair_from_boxes_of_different_speed_is_also_judged_at_the_two_core_run_s_speed():
    """The one-core run's box 1.5 times as fast (raw env steps/s at the start): its prediction,
    scaled to the two-core run's box, is 1.5 times longer; the unscaled errors stay beside."""
    one = _run(1, 0, [2.0, 4.0, 6.0], [1.0, 2.0, 3.0], [0, 5, 18]).assign(raw_env_start=1500.0)
    two = _run(2, 0, [1.5, 3.0, 4.5], [1.5, 3.0, 4.5], [0, 5, 18])
    (row,) = seed_rows(pd.concat([one, two]), target=18).to_dict("records")
    assert row["speed"] == pytest.approx(1.5)
    assert row["time_error"] == pytest.approx(3.0 / 4.5 - 1)  # -33%
    assert row["time_error_scaled"] == pytest.approx(0.0)
    assert row["steps_error_scaled"] == pytest.approx(0.0)
    text = "\n".join(check_lines(pd.concat([one, two]), "python -m analysis ..."))
    assert "| 1.50× | +0%, +0% |" in text
    assert "At the two-core runs' machine speed: time to target median error +0%" in text


def test_the_check_keeps_beside_it_only_the_rows_no_input_table_holds(tmp_path):
    """A run folder's rows (gone from a fresh checkout) are kept in ``check-runs.csv.gz`` with
    those it held; a run of record's, which has its own table, are not copied there."""
    import argparse

    from analysis.collect import write_runs_csv
    from analysis.scaling_check import CHECK_RUNS, keep_rows

    folder = _run(1, 0, [1.0], [1.0], [0], name="folder")  # read from a run folder
    kept = _run(2, 0, [1.0], [1.0], [0], name="kept")  # what the check's table held
    record = _run(1, 1, [1.0], [1.0], [0], name="record")  # a run of record's own table
    home, own = tmp_path / CHECK_RUNS, tmp_path / "record.csv.gz"
    write_runs_csv(kept, home)
    write_runs_csv(record, own)
    runs = pd.concat([folder, kept, record], ignore_index=True)
    tables = [str(home), str(own)]
    args = argparse.Namespace(inputs=[*tables, "runs/folder"], out=str(tmp_path))
    listed, kept = keep_rows(args, runs)
    assert listed == tables  # the command that regenerates it
    assert sorted(kept["experiment"].unique()) == ["folder-1core", "kept-2core"]
    assert keep_rows(argparse.Namespace(inputs=tables, out=str(tmp_path)), runs) == (tables, None)


def test_a_two_core_run_of_the_one_core_run_s_sitting_is_checked_beside_the_run_of_record():
    """The run of record ran in another stretch (its box's speed differs); a two-core run begun
    right after the one-core run ended ran on its box: both pairs are shown, apart."""
    one = _run(1, 0, [100.0, 200.0], [50.0, 100.0], [0, 18], started="2026-12-06T17:00:00+00:00")
    record = _run(2, 0, [40.0, 80.0, 120.0], [40.0, 80.0, 120.0], [0, 5, 18], name="record",
                  started="2026-12-01T09:00:00+00:00")  # fmt: skip
    # begun 60 s after the one-core run's 200 s of training: measured 100 s to 2,000 env steps
    sitting = _run(2, 0, [50.0, 100.0], [50.0, 100.0], [0, 18], name="sitting",
                   started="2026-12-06T17:04:20+00:00")  # fmt: skip
    for frame, speed in ((one, 1000.0), (record, 1300.0), (sitting, 1000.0)):
        frame["raw_env_start"] = speed
    runs = pd.concat([one, record, sitting])
    rows = seed_rows(runs, target=18).set_index("two_core")
    assert list(rows.index) == ["of record", "same sitting"]
    assert rows.loc["of record", "measured_two"] == 120.0  # to 18 at 3,000 env steps
    assert rows.loc["same sitting", "measured_two"] == 100.0
    assert rows.loc["same sitting", "time_error"] == pytest.approx(0.0)  # 100 s predicted
    assert rows.loc["same sitting", "speed"] == pytest.approx(1.0)
    text = "\n".join(check_lines(runs, "python -m analysis ..."))
    assert "**In one sitting** (the two-core run right after the one-core run" in text
    assert "| appo | 1 | 0 | same sitting |" in text and "| appo | 1 | 0 | of record |" in text
    # A two-core run begun before the one-core run, or long after it, is no sitting of it
    late = sitting.assign(started_at="2026-12-06T23:00:00+00:00")
    rows = seed_rows(pd.concat([one, record, late]), target=18)
    assert list(rows["two_core"]) == ["of record"]
