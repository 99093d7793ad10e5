"""The runs' CPU figures in the table and the report's scaling section (pandas only, no Ray).

Every result of a run made since the CPU accounting (``sweeps/harness/cpu_time.py``) carries
``suite/cpu`` and ``suite/predicted_train_time_s``; run.json's machine carries ``cores``. Here
the fake folders of tests/test_analysis.py get those figures added, so that collecting reads them
into columns and the scaling section shows time to target on a core per process (predicted)
beside the time as run (measured); without them, everything reads and renders as before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from analysis import collect, predicted, scaling, scaling_words, tables
from analysis.__main__ import main
from sweeps.harness import keys
from tests.test_analysis import NAN, _section, _table, write_experiment

SECTION = "### Scaling with env runners"
ON_CORES = "#### Time to target on a core per process, predicted (greedy evaluation return)"


def _reaching_90_at(iteration: int, last: int = 5) -> list[float]:
    """Greedy returns that first reach 90 at ``iteration`` (1-based) and stay there."""
    return [NAN, *(20.0 if i < iteration else 95.0 for i in range(2, last + 1))]


def add_cpu_figures(
    exp_dir: Path,
    *,
    factor: float,
    ran_s: dict[str, float],
    busiest: str = "driver",
    cores: int = 2,
    cpus: float = 9,
    trial_cpus: float = 2.0,
) -> None:
    """What a run made since the CPU accounting adds to its folder: machine.cores in run.json
    (and the CPUs Ray was told), and in each result ``suite/cpu`` and the predicted training
    time, ``factor`` times the measured one."""
    run = json.loads((exp_dir / "run.json").read_text())
    run["machine"].update(cores=cores, cpus=cpus)
    (exp_dir / "run.json").write_text(json.dumps(run))
    for result_file in exp_dir.glob("*/result.json"):
        lines = []
        for line in result_file.read_text().splitlines():
            r = json.loads(line)
            train_s = keys.get(r, keys.TRAIN_TIME_S)
            r[keys.SUITE][keys.PREDICTED_TRAIN_TIME_S[-1]] = factor * train_s
            r[keys.SUITE][keys.CPU[-1]] = {
                "wall_s": 1.5 * train_s,
                # below the prediction's bounds too (the processes' sum over the cores)
                "trial_s": 0.5 * factor * 1.5 * train_s,
                "waited_s": 1.0,
                "machine_s": 2.0 * train_s,
                "steal_s": 0.0,
                "cores": cores,
                "trial_cpus": trial_cpus,
                "processes": len(ran_s),
                "unmeasured": 0,
                "busiest": busiest,
                # below the prediction's bound, so that the model gives ``factor``
                # (cpu_time.predicted_factor: max(1 / slowdown, busiest / k, trial / cores))
                "busiest_s": 0.5 * factor * 1.5 * train_s,
                "busiest_utilisation": factor,
                "slowdown": 1.0 / factor,
                "predicted_factor": factor,
                "ran_s": ran_s,
                "waited_by_s": {slot: 0.5 for slot in ran_s},
            }
            lines.append(json.dumps(r))
        result_file.write_text("".join(line + "\n" for line in lines))


def write_scaling(
    root: Path, *, cpu: bool, at_4: Sequence[int] = (2, 3, 3), factor_4: float = 0.25
) -> Path:
    """DQN at 1 and 4 env runners, 3 seeds each, 1 s of training and 100 env steps an iteration.
    At 1 runner the seeds reach 90 at iterations 3, 4, 5 (400 env steps and 4 s at the median),
    at 4 runners at ``at_4`` (300 and 3 s). With ``cpu``: predicted at half the measured time at
    1 runner (2 s at the median), ``factor_4`` of it at 4 (a quarter: 0.75 s)."""
    one = [
        dict(seed=s, greedy=_reaching_90_at(i), returns=[NAN] * 5) for s, i in enumerate((3, 4, 5))
    ]
    four = [
        dict(seed=s, num_env_runners=4, greedy=_reaching_90_at(i), returns=[NAN] * 5)
        for s, i in enumerate(at_4)
    ]
    dqn_1 = write_experiment(root, "dqn_r1", one)
    dqn_4 = write_experiment(root, "dqn_r4", four)
    if cpu:
        add_cpu_figures(dqn_1, factor=0.5, ran_s={"driver": 3.0, "env_runner_1": 1.0})
        runners = {f"env_runner_{i}": 0.5 + i for i in range(1, 5)}
        add_cpu_figures(
            dqn_4,
            factor=factor_4,
            ran_s={"driver": 2.0, **runners},
            busiest="env_runner_4",
            trial_cpus=5.0,
        )
    return root


# --- Collecting ---------------------------------------------------------------------------------


def test_cpu_columns_read_nan_for_results_and_tables_without_them(tmp_path):
    runs = collect.collect([write_scaling(tmp_path / "raw", cpu=False)]).runs
    assert runs[collect.CPU_COLUMNS].isna().all().all()
    assert (runs["cpu_busiest"] == "").all() and runs["cores"].isna().all()

    old_table = tmp_path / "old.csv"  # written before the columns existed
    runs.drop(columns=[*collect.CPU_COLUMNS, "cpu_busiest", "cores"]).to_csv(old_table, index=False)
    old = collect.read_runs_csv(old_table)
    assert old[collect.CPU_COLUMNS].isna().all().all()
    assert (old["cpu_busiest"] == "").all() and old["cores"].isna().all()


def test_cpu_columns_from_each_result(tmp_path):
    runs = collect.collect([write_scaling(tmp_path, cpu=True)]).runs
    four = runs[runs["num_env_runners"] == 4].sort_values(["seed", "training_iteration"])
    first = four.iloc[0]
    assert first["predicted_train_time_s"] == pytest.approx(0.25 * first["train_time_s"])
    assert first["cpu_driver_s"] == 2.0
    assert first["cpu_env_runners_s"] == pytest.approx(1.5 + 2.5 + 3.5 + 4.5)
    assert first["cpu_env_runner_max_s"] == 4.5
    assert first["cpu_trial_cpus"] == 5.0 and first["cpu_slowdown"] == 4.0
    assert first["cpu_wall_s"] == pytest.approx(1.5 * first["train_time_s"])
    # No remote learners, aggregators or replay shards in the trial: no seconds of theirs.
    assert math.isnan(first["cpu_learners_s"]) and math.isnan(first["cpu_replay_shards_s"])
    assert set(four["cpu_busiest"]) == {"env_runner"}  # the kind, its index dropped
    assert set(runs["cores"]) == {2} and set(runs["cpus"]) == {9}

    table = tmp_path / "runs.csv"  # the columns survive the table
    collect.write_runs_csv(runs, table)
    pd.testing.assert_frame_equal(collect.read_runs_csv(table), runs)


def test_a_table_collected_under_an_earlier_model_is_read_by_the_model_now(tmp_path):
    """A table keeps each row's CPU figures: read back, its prediction is derived from them by the
    model as it stands (cpu_time.predicted_factor), as a run folder's results are; a row the model
    gives the same figure keeps its bytes."""
    from sweeps.harness import cpu_time

    runs = collect.collect([write_scaling(tmp_path / "raw", cpu=True)]).runs
    table = tmp_path / "runs.csv"
    collect.write_runs_csv(runs, table)
    before = table.read_bytes()
    collect.write_runs_csv(collect.read_runs_csv(table), table)
    assert table.read_bytes() == before
    # DQN at one runner on 2 cores as pong-conf-dqn-r1-s0 ran: its driver 1.25 cores' worth,
    # the processes 1.85; recorded when the model gave the driver one core (1.25x the wall).
    one = runs["num_env_runners"] == 1
    old = runs.copy()
    old.loc[one, "cpu_busiest_utilisation"] = 1.25
    old.loc[one, "cpu_trial_s"] = 1.85 * old.loc[one, "cpu_wall_s"]
    old.loc[one, "cpu_slowdown"] = 1.08
    old.loc[one, "predicted_train_time_s"] = 1.25 * 1.5 * old.loc[one, "train_time_s"]
    collect.write_runs_csv(old, table)
    now = collect.read_runs_csv(table)
    factor = cpu_time.predicted_factor(1.0, 1.08, 1.25, 1.85, 2.0)
    assert factor == pytest.approx(max(1 / 1.08, 1.25 / 2, 1.85 / 2)) and factor < 1.0
    assert now.loc[one, "predicted_train_time_s"].to_numpy() == pytest.approx(
        (factor * now.loc[one, "train_time_s"]).to_numpy()
    )
    pd.testing.assert_series_equal(
        now.loc[~one, "predicted_train_time_s"], runs.loc[~one, "predicted_train_time_s"]
    )


# --- The table on a core per process ------------------------------------------------------------


def _on_cores(root: Path) -> pd.DataFrame:
    selected = tables.select_configurations(collect.collect([root]).runs)
    return predicted.scaling_on_cores(selected, "greedy_return", 90.0).set_index("config")


def test_env_steps_and_predicted_time_to_target_with_the_speedup(tmp_path):
    table = _on_cores(write_scaling(tmp_path, cpu=True))
    one, four = table.loc["dqn · 1 runner"], table.loc["dqn · 4 runners"]
    assert (one["reached"], one["seeds"], four["reached"]) == (3, 3, 3)
    assert one["steps"].value == 400 and four["steps"].value == 300  # Kaplan–Meier medians
    assert one["predicted"].value == 2.0 and four["predicted"].value == 0.75
    assert one["measured"].value == 4.0 and four["measured"].value == 3.0
    assert four["speedup_own"].value == pytest.approx(2.0 / 0.75)
    assert four["speedup_own"].low <= four["speedup_own"].value <= four["speedup_own"].high
    assert four["steps_ratio_own"].value == pytest.approx(400 / 300)
    assert four["baseline"] == "dqn · 1 runner"
    assert four["speedup_dqn"].value == pytest.approx(2.0 / 0.75)
    # The reference against itself: exactly 1, no interval.
    assert one["speedup_own"].value == 1.0 and not one["speedup_own"].has_interval
    assert (four["cores"], one["cores"]) == (5.0, 2.0)
    assert (four["busiest"], four["busiest_seeds"]) == ("env_runner", 3)
    assert four["utilisation"] == (0.25, 0.25, 0.25) and four["slowdown"] == (4.0, 4.0, 4.0)


def test_a_seed_that_missed_is_censored_at_its_last_predicted_time(tmp_path):
    """A seed at 4 runners never reaches 90: censored at its last iteration's predicted time
    (5 s x 0.25), no speedup (no ratio rests on a seed that missed)."""
    root = write_scaling(tmp_path, cpu=True, at_4=(2, 3, 99))
    rows = predicted.with_cpu_figures(tables.select_configurations(collect.collect([root]).runs))
    summary = predicted.time_to_target_on(rows, "greedy_return", 90.0, predicted.PREDICTED)
    four = summary.set_index("config").loc["dqn · 4 runners"]
    assert four["time_values"] == (0.5, 0.75, 1.25)
    assert four["reached_flags"] == (True, True, False)
    table = _on_cores(root)
    assert math.isnan(table.loc["dqn · 4 runners", "speedup_own"].value)


# --- The report ---------------------------------------------------------------------------------


def _scaling_text(root: Path, out: Path) -> str:
    assert main(["report", str(root), "--out", str(out)]) == 0
    return _section((out / "REPORT.md").read_text(), SECTION)


def test_the_section_says_which_times_are_predicted_and_which_measured(tmp_path):
    text = _scaling_text(write_scaling(tmp_path / "raw", cpu=True), tmp_path / "out")
    lead = text.strip().splitlines()[0]
    assert lead.startswith(
        "**Largest predicted speedup from more env runners: dqn at 4 runners**, 2.67× ["
    )
    assert "as fast to 90 = 90% of optimum as at 1 runner: 0.8 s" in lead
    assert "on 5 cores against 2.0 s" in lead and "on 2 cores (predicted)" in lead
    assert "The runs were measured on 2 cores, Ray declaring 9 CPUs to them (more CPUs" in text
    assert "*Predicted* seconds are predictions, not measurements" in text
    assert "`docs/scaling.md`" in text
    assert "#### Time to target (greedy evaluation return), measured as run" in text
    rows = {r["env runners"]: r for r in _table(_section(text, ON_CORES))}
    four = rows["4"]
    assert four[scaling.PREDICTED_TIME].startswith("0.8 s [")
    assert four[scaling.MEASURED_TIME].startswith("3.0 s [")
    assert four[scaling.STEPS_KM].startswith("300 [")
    assert four["speedup vs 1 runner (predicted) [95%]"].startswith("2.67× [")
    assert four["env-steps ratio vs 1 runner [95%]"].startswith("1.33× [")
    assert four["speedup vs dqn · 1 runner (predicted) [95%]"].startswith("2.67× [")
    assert four[scaling.CORES] == "5"
    assert four[scaling.BUSIEST] == "env_runner, 25.0%"
    assert four[scaling.SLOWDOWN] == "4.00×"
    assert rows["1"]["speedup vs 1 runner (predicted) [95%]"] == "1.00×"
    assert "(predicted)" in scaling.PREDICTED_TIME and "(measured)" in scaling.MEASURED_TIME


def test_runs_without_cpu_figures_keep_the_section_as_it_was(tmp_path):
    """Old runs: no lead, no table on a core per process, no word of a prediction; the rest of
    the section is what the runs with figures show around their new lines."""
    old = _scaling_text(write_scaling(tmp_path / "old", cpu=False), tmp_path / "out_old")
    new = _scaling_text(write_scaling(tmp_path / "new", cpu=True), tmp_path / "out_new")
    assert "predict" not in old.lower() and "measured as run" not in old
    assert old.lstrip().startswith("0 remote env runners means")
    without_new = new.replace(", measured as run", "")
    without_new = without_new[without_new.index("0 remote env runners") :]
    start = without_new.index("#### Throughput on a core per process (predicted)")
    assert start < without_new.index(ON_CORES)  # the new tables, one block
    end = without_new.index("![Throughput against env runners")
    assert old.lstrip() == without_new[:start] + without_new[end:]


def test_the_lead_says_so_where_more_runners_shortened_nothing(tmp_path):
    """At 4 runners predicted at 0.9 of its measured time (2.7 s against 1 runner's 2 s): no
    speedup is called one."""
    root = write_scaling(tmp_path / "raw", cpu=True, factor_4=0.9)
    lead = _scaling_text(root, tmp_path / "out").strip().splitlines()[0]
    assert lead.startswith(
        "**More env runners shortened no algorithm's predicted time**; the closest, dqn at 4 "
        "runners, is 0.74× ["
    )
    assert "Largest predicted speedup" not in lead


def test_throughput_on_a_core_per_process_shows_even_one_runner_count(tmp_path):
    """A run at one runner count (the 13-runner Pong probe's case) still gets its predicted
    throughput and its bottleneck; each configuration's figures from its trials' last rows."""
    runs = collect.collect([write_scaling(tmp_path, cpu=True)]).runs
    table = predicted.throughput_on_cores(tables.select_configurations(runs))
    four = table[table["num_env_runners"] == 4].iloc[0]
    assert four["seeds"] == 3 and four["cores"] == 5.0
    assert four["busiest"] == "env_runner" and four["busiest_seeds"] == 3
    # Its prediction is the processes' sharing (the fixture's busiest runner is no busier than
    # the slowdown says each process was): no one process bounds it.
    assert four["bound_seeds"] == 0
    # predicted env steps/s = measured / factor (a quarter of the time: 4x the rate)
    assert four["predicted"][0] == pytest.approx(4.0 * four["measured"][0])
    one_count = runs[runs["num_env_runners"] == 4]
    from analysis.workload import workloads

    (w,) = workloads(one_count)
    section = "\n".join(scaling.scaling_section(w, None))
    assert "No algorithm was benchmarked at two or more runner counts." in section
    assert "#### Throughput on a core per process (predicted)" in section
    assert "| dqn | 4 | 3 |" in section and "env_runner, " in section
    assert "**What bounds the prediction**: no one process in any configuration" in section


def test_the_section_says_which_process_bounds_the_prediction():
    """The answer to "why don't more runners train faster" the CPU figures give: grouped by the
    process that bounds each configuration's prediction on every seed, with what would lift it;
    a configuration bound on some seeds only is not named."""
    row = {"busiest": "driver", "seeds": 3, "bound_seeds": 3}
    table = pd.DataFrame(
        [
            {**row, "algo": "apex", "num_env_runners": 1},
            {**row, "algo": "apex", "num_env_runners": 4},
            {**row, "algo": "apex", "num_env_runners": 10},
            {**row, "algo": "impala", "num_env_runners": 1},
            {**row, "algo": "dqn", "num_env_runners": 1, "busiest": "env_runner"},
            {**row, "algo": "appo", "num_env_runners": 4, "bound_seeds": 2},
        ]
    )
    (line, blank) = scaling_words.bound_lines(table)
    assert blank == ""
    assert line.startswith(
        "**What bounds the prediction: one process**, busy all the time on its own core while "
        "the others wait for it, in 5 of 6 configurations: the driver (the algorithm's process"
    )
    assert "in apex at 1, 4 and 10 runners, impala at 1 runner: more env runners cannot go " in line
    assert "the env_runner in dqn at 1 runner: more env runners share its work" in line
    assert "appo" not in line
    assert line.endswith("In the other configuration no one process bounds it.")


@pytest.mark.parametrize("kept", [False, True])
def test_the_section_names_runs_judged_by_the_earlier_training_return_rule(tmp_path, kept):
    """Runs at more than one runner whose results have no ``return_window_games`` were judged by
    each runner's own last 20 games averaged over the runners: the section names them (at one
    runner the two rules are one figure); runs that kept the window are not named."""
    rising = [NAN, 20.0, 60.0, 95.0, 95.0]
    window = 20 if kept else None
    root = tmp_path / "raw"
    write_experiment(root, "dqn_r1", [dict(seed=s, returns=rising) for s in range(3)])
    four = [dict(seed=s, num_env_runners=4, returns=rising, window_games=window) for s in range(3)]
    write_experiment(root, "dqn_r4", four)
    text = _scaling_text(root, tmp_path / "out")
    line = next((x for x in text.splitlines() if x.startswith("**Judged by")), "")
    assert (
        line.startswith("**Judged by the earlier training-return rule**: dqn at 4 (3 seeds).")
        is not kept
    )
    assert "dqn at 1" not in line
