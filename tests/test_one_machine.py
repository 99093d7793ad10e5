"""Time to target on one machine: env steps from the runs of record, env steps/s from rate runs.

The runs of record ran on whatever machine each stretch had; their predicted seconds carry that
machine's speed, their env steps to a target do not. ``python -m analysis report <tables>
--rates <rate runs>`` divides each configuration's env steps to the target by its predicted
env steps/s on a core per process, measured over the second half of a short rate run of the same
configuration, and takes a ratio of two configurations only from rate runs of one sitting
(``analysis/predicted.py``). Pandas only, no Ray: the fake folders of tests/test_analysis.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from analysis import collect, predicted
from analysis.__main__ import main
from tests.test_analysis import NAN, _section, _table, write_experiment
from tests.test_scaling_report import SECTION, add_cpu_figures, write_scaling

ONE_MACHINE = (
    "#### Time to target on a core per process of one machine, predicted (greedy evaluation return)"
)


def _started_at(exp_dir: Path, when: str) -> None:
    run = json.loads((exp_dir / "run.json").read_text())
    run["started_at"] = when
    (exp_dir / "run.json").write_text(json.dumps(run))


def write_rates(root: Path, *, factor_4: float = 0.2, apart_h: float = 0.5) -> Path:
    """Rate runs of the two DQN configurations of ``write_scaling``, one seed each, 5
    iterations of 1 s and 100 env steps (never near the target), predicted at half the measured
    time at 1 runner (200 env steps/s) and at ``factor_4`` of it at 4 (0.2: 500 env steps/s),
    started ``apart_h`` hours apart on the same CPU model."""
    low = [NAN, 10.0, 10.0, 10.0, 10.0]
    one = write_experiment(root, "rate_r1", [dict(seed=0, greedy=low, returns=[NAN] * 5)])
    four = write_experiment(
        root, "rate_r4", [dict(seed=0, num_env_runners=4, greedy=low, returns=[NAN] * 5)]
    )
    add_cpu_figures(one, factor=0.5, ran_s={"driver": 3.0, "env_runner_1": 1.0})
    runners = {f"env_runner_{i}": 0.5 + i for i in range(1, 5)}
    add_cpu_figures(four, factor=factor_4, ran_s={"driver": 2.0, **runners}, busiest="env_runner_4")
    _started_at(one, "2025-01-02T00:00:00+00:00")
    later = pd.Timestamp("2025-01-02T00:00:00+00:00") + pd.Timedelta(hours=apart_h)
    _started_at(four, later.isoformat())
    return root


def _rows(trial: dict[str, list[float]]) -> pd.DataFrame:
    frame = pd.DataFrame(trial)
    return frame.assign(training_iteration=range(1, len(frame) + 1))


def _sampled_fast_then_slow() -> pd.DataFrame:
    """A run that sampled fast before its learner started (the first half) and slower after."""
    return _rows(
        {
            "env_steps": [1000, 2000, 2100, 2200],
            "train_time_s": [1.0, 2.0, 3.0, 4.0],
            "cpu_wall_s": [1.0, 2.0, 3.0, 4.0],
            # the second half: 2 s of processes' running, a busiest process at 50%
            "cpu_trial_s": [0.5, 1.0, 2.0, 3.0],
            # waited over the second half: 1.5 * 3 - 0.5 * 1 = 4, over 2 ran -> slowdown 3
            "cpu_slowdown": [1.0, 1.5, 2.25, 2.5],
            "cpu_busiest_utilisation": [0.2, 0.2, 0.3, 0.35],
            "cpu_cores_predicted": [3.0] * 4,
        }
    )


def test_the_rate_is_that_of_the_second_half_of_the_training_clock():
    """The rate is the second half's, and the model is applied to the second half's CPU figures
    (the differences of the lifetime sums), not to the whole run's."""
    trial = _sampled_fast_then_slow()
    figures = predicted.window_rates(trial)
    assert figures["window_s"] == 2.0 and figures["measured"] == pytest.approx(100.0)
    assert figures["slowdown"] == pytest.approx(3.0)
    assert figures["utilisation"] == pytest.approx((1.4 - 0.4) / 2.0)
    # max(1 / 3, 0.5 / 1, (2 / 3) / 2): the busiest process bounds it
    assert figures["predicted"] == pytest.approx(200 / (2.0 * 0.5))
    assert predicted.window_rates(trial.iloc[:1]) is None
    assert predicted.window_rates(trial.drop(columns="cpu_slowdown")) is None


def test_a_rate_run_says_what_an_env_step_cost_each_kind_of_process():
    """CPU milliseconds per env step over the second half, by kind of process (the differences
    of the lifetime sums, as for the rate) and over all the trial's processes; a kind the trial
    does not have (NaN throughout: IMPALA's aggregators where none ran) is left out."""
    trial = _sampled_fast_then_slow().assign(
        cpu_driver_s=[0.2, 0.4, 0.9, 1.4],
        cpu_env_runners_s=[0.3, 0.6, 1.1, 1.6],
        cpu_aggregators_s=[NAN] * 4,
    )
    figures = predicted.window_rates(trial)
    # the window: 2,000 -> 2,200 env steps; 1.0 s of the driver, 1.0 s of the runners, 2.0 s in all
    assert figures["ms_per_step"] == pytest.approx({"driver": 5.0, "env runners": 5.0})
    assert figures["ms_per_step_all"] == pytest.approx(10.0)


def test_the_report_says_what_an_env_step_cost_at_each_runner_count(tmp_path):
    """The rate runs' CPU per env step: all processes' (the fake runs: 0.375 and 0.15 CPU
    seconds per second of training, 100 env steps a second: 3.75 ms at 1 runner, 1.50 ms at 4),
    and at 4 runners against 1 runner of the same sitting."""
    _, section = _report(tmp_path)
    table = _section(section, "#### CPU time per env step, by process (rate runs, measured)")
    rows = {r["env runners"]: r for r in _table(table)}
    assert rows["1"]["all processes (ms)"] == "3.75" and rows["1"]["vs the fewest runners"] == "—"
    assert (
        rows["4"]["all processes (ms)"] == "1.50" and rows["4"]["vs the fewest runners"] == "0.40×"
    )
    assert {"driver (ms)", "env runners (ms)"} <= set(rows["4"]) and rows["4"]["sitting"] == "1"


def test_rate_runs_far_apart_or_on_another_cpu_are_another_sitting(tmp_path):
    rates = collect.collect([write_rates(tmp_path / "near")]).runs
    assert list(predicted.rate_table(rates)["sitting"]) == [1, 1]
    apart = collect.collect([write_rates(tmp_path / "far", apart_h=5)]).runs
    assert list(predicted.rate_table(apart)["sitting"]) == [1, 2]


def _report(tmp_path: Path, **rates_kw) -> tuple[str, str]:
    runs = write_scaling(tmp_path / "raw", cpu=True)
    rates = write_rates(tmp_path / "rates", **rates_kw)
    out = tmp_path / "out"
    assert main(["report", str(runs), "--rates", str(rates), "--out", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    return text, _section(text, SECTION)


def test_time_on_one_machine_is_env_steps_over_the_rate_runs_rate(tmp_path):
    """Env steps to 90 (Kaplan–Meier medians of the runs: 400 at 1 runner, 300 at 4) over the
    rate runs' predicted env steps/s (200 and 500): 2.0 s and 0.6 s; the speedup is the runs'
    env-steps ratio (4/3) times the rates' (2.5), and the section's first line says it."""
    text, section = _report(tmp_path)
    rows = {r["env runners"]: r for r in _table(_section(section, ONE_MACHINE))}
    one, four = rows["1"], rows["4"]
    assert one["env steps/s (predicted)"] == "200" and four["env steps/s (predicted)"] == "500"
    time = "time to target (predicted), KM median [95%]"
    assert one[time].startswith("2.0 s [") and four[time].startswith("0.6 s [")
    assert four["speedup vs 1 runner (predicted) [95%]"].startswith("3.33× [")
    assert four["speedup vs dqn · 1 runner (predicted) [95%]"].startswith("3.33× [")
    assert one["speedup vs 1 runner (predicted) [95%]"] == "1.00×"
    assert four["sitting"] == "1" and four["cores (predicted machine)"] == "5"
    assert (
        section.strip()
        .splitlines()[0]
        .startswith(
            "On one machine with a core per process (env steps to the target measured by the runs, "
            "env steps/s predicted by rate runs in one sitting: the table below): **Largest "
            "predicted speedup from more env runners: dqn at 4 runners**, 3.33× ["
        )
    )
    assert "sitting 1: 2 rate run(s) on Fake CPU" in section
    # Each run's own prediction stays beside it; the rate runs are no seeds of the comparison.
    assert "#### Time to target on a core per process, predicted" in section
    assert "| dqn · 1 runner | 3 |" in text  # its seeds: 3, no rate run among them
    assert "| rate_r1 | rate | dqn |" in _section(text, "## Reproducibility")


def test_a_configuration_without_a_rate_run_is_named_and_the_rest_shown(tmp_path):
    """Rate runs of one runner only (and the single-process baseline never has one): the table
    has the configurations a rate run measured, and names the others."""
    import shutil

    runs = write_scaling(tmp_path / "raw", cpu=True)
    rates = write_rates(tmp_path / "rates")
    shutil.rmtree(rates / "rate_r4")
    out = tmp_path / "out"
    assert main(["report", str(runs), "--rates", str(rates), "--out", str(out)]) == 0
    section = _section(_section((out / "REPORT.md").read_text(), SECTION), ONE_MACHINE)
    assert [r["env runners"] for r in _table(section)] == ["1"]
    assert "No rate run of: dqn · 4 runners." in section


def test_no_ratio_between_configurations_no_sitting_measured_both(tmp_path):
    _, section = _report(tmp_path, apart_h=5)
    rows = {r["env runners"]: r for r in _table(_section(section, ONE_MACHINE))}
    assert rows["4"]["sitting"] == "2" and rows["4"]["env steps/s (predicted)"] == "500"
    assert rows["4"]["speedup vs 1 runner (predicted) [95%]"] == "—"
    # the lead falls back on each run's own prediction
    assert section.strip().splitlines()[0].startswith("**Largest predicted speedup")


def test_a_report_without_rate_runs_has_no_table_on_one_machine(tmp_path):
    runs = write_scaling(tmp_path / "raw", cpu=True)
    assert main(["report", str(runs), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "REPORT.md").read_text()
    assert "of one machine" not in text and "--rates" not in text
    table = collect.read_runs_csv(tmp_path / "out" / "runs.csv")
    assert predicted.RATE not in set(table["kind"])
    assert not math.isnan(table["predicted_train_time_s"].max())


def test_the_source_articles_claim_is_set_against_the_runs_at_its_scale(tmp_path):
    """Ape-X at 10 runners against the single-runner DQN: the article's 11.7x, checked against
    the interval of the predicted speedup; where no run of it exists, the report says so."""
    from tests.test_scaling_report import _reaching_90_at

    _, section = _report(tmp_path)
    assert "**The source article's claim at its scale**" not in section  # no Ape-X ran
    root = tmp_path / "raw"
    apex = [
        dict(seed=s, num_env_runners=10, greedy=_reaching_90_at(i), returns=[NAN] * 5)
        for s, i in enumerate((2, 3, 3))
    ]
    folder = write_experiment(root, "apex_r10", apex, algo="apex")
    ran = {"driver": 2.0, **{f"env_runner_{i}": 1.0 for i in range(1, 11)}}
    add_cpu_figures(folder, factor=0.25, ran_s=ran, trial_cpus=11.0)
    out = tmp_path / "claim"
    assert main(["report", str(root), "--out", str(out)]) == 0
    lines = [
        line
        for line in _section((out / "REPORT.md").read_text(), SECTION).splitlines()
        if "source article" in line
    ]
    # 2 s at the median for DQN at 1 runner, 0.75 s for Ape-X at 10: 2.67x, far below 11.7x
    assert len(lines) == 1 and "here apex at 10 runners is 2.67× [" in lines[0]
    assert "as fast as dqn · 1 runner" in lines[0]
    assert lines[0].endswith("the interval lies below the claimed ratio: not reproduced here.")
