"""The final greedy evaluation (``python -m sweeps.evaluate``): seeded, deterministic for a given
checkpoint, written beside the trial and read by the analysis."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

from sweeps import evaluate
from sweeps.harness import held_out_eval as greedy
from sweeps.harness.files import EVALUATION_FILE


def test_ci95_is_students_t_interval() -> None:
    mean, half = greedy.ci95([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0
    assert half == pytest.approx(2.7764451 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert math.isnan(greedy.ci95([7.0])[1]) and greedy.ci95([7.0])[0] == 7.0


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([str(tmp_path / "missing")])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        evaluate.main([str(tmp_path)])  # a folder without trials
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not a folder" in err[0] and "no trial folders" in err[1]


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory, _ray_session_end) -> Path:
    """A one-trial APPO cab smoke sweep with its final checkpoint."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    folder = tmp_path_factory.mktemp("evaluate")
    module = importlib.import_module("sweeps.appo_cabs")
    argv = ["--storage-path", str(folder), "--name", "exp", "--smoke", "--num-samples", "1"]
    rc = module.main(argv)
    assert rc == 0
    return folder / "exp"


@pytest.mark.slow
def test_same_checkpoint_same_episodes_same_returns(finished_sweep, capsys) -> None:
    assert evaluate.main([str(finished_sweep), "--episodes", "3", "--seed", "7"]) == 0
    (trial,) = evaluate.trial_dirs([finished_sweep])
    first = json.loads((trial / EVALUATION_FILE).read_text())
    assert first["episodes"] == 3 and first["seeds"] == [7, 8, 9] and len(first["returns"]) == 3
    assert first["checkpoint"].startswith("checkpoint_")
    assert evaluate.main([str(finished_sweep), "--episodes", "3", "--seed", "7"]) == 0
    again = json.loads((trial / EVALUATION_FILE).read_text())
    assert again["returns"] == first["returns"] and again["mean"] == first["mean"]
    assert "95% CI" in capsys.readouterr().out


@pytest.mark.slow
def test_the_report_shows_the_final_policys_greedy_return(finished_sweep, tmp_path) -> None:
    from analysis.collect import collect
    from analysis.report import render_report

    evaluate.main([str(finished_sweep), "--episodes", "2", "--seed", "0"])
    runs = collect([finished_sweep]).runs
    assert runs["final_eval_episodes"].max() == 2
    assert runs["final_eval_return"].notna().all()
    text = render_report(runs, tmp_path, command="test", generated_on="today")
    assert "final policy, greedy (2 episodes)" in text
    # The base variant's exact figure travels from final_evaluation.json into the report.
    assert runs["final_eval_exact_pct"].notna().all()
    exact = runs["final_eval_exact_pct"].iloc[0]
    assert "Exactly, without episodes" in text and f"{exact:.2f}%" in text
    assert (
        f"the direct-ride heuristic {runs['final_eval_exact_heuristic_pct'].iloc[0]:.2f}%" in text
    )


@pytest.mark.slow
def test_a_policy_gradient_policy_also_plays_its_sampled_episodes(finished_sweep, tmp_path) -> None:
    """--sampled: APPO's final policy plays the same seeded episodes with its actions drawn from
    its distribution, the same draws again for the same seed; the report shows both figures."""
    from analysis.collect import collect
    from analysis.report import render_report

    args = [str(finished_sweep), "--episodes", "3", "--seed", "7", "--sampled"]
    assert evaluate.main(args) == 0
    (trial,) = evaluate.trial_dirs([finished_sweep])
    first = json.loads((trial / EVALUATION_FILE).read_text())
    sampled = first["sampled"]
    assert len(sampled["returns"]) == 3 and sampled["torch_seed"] == 7
    assert sampled["mean"] == pytest.approx(sum(sampled["returns"]) / 3)
    assert evaluate.main(args) == 0
    again = json.loads((trial / EVALUATION_FILE).read_text())
    assert again["sampled"]["returns"] == sampled["returns"]
    assert again["returns"] == first["returns"]  # the greedy episodes are untouched by it
    runs = collect([finished_sweep]).runs
    assert runs["final_eval_sampled_return"].iloc[0] == pytest.approx(sampled["mean"])
    text = render_report(runs, tmp_path, command="test", generated_on="today")
    assert "final policy, greedy (3 episodes)" in text
    assert "final policy, sampled (3 episodes)" in text
