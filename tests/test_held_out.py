"""The held-out final figure (``sweeps.evaluate``, ``sweeps/harness/held_out_pick.py``):
deterministic for a given checkpoint and episode set, measured against the reference policies on the
same episodes, and the sweep's best trial picked by it rather than by the noisy periodic figure. No
training: a checkpoint is a freshly built cab Q-network saved as a trial's would be."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sweeps.harness import held_out_eval as greedy
from sweeps.harness import held_out_pick as final
from sweeps.harness import keys
from sweeps.harness.files import EVALUATION_FILE, HELD_OUT_SEED


def _trial_with_checkpoint(folder: Path, env_id: str = "Cabs-v0") -> Path:
    """A trial folder as Tune leaves it: params.json and a checkpoint holding the RLModule
    (a fresh, seeded DQN Q-network on the cab env) where ``greedy.load_module`` reads it."""
    import torch
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.core import (
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
        DEFAULT_MODULE_ID,
    )

    import envs

    envs.register_envs()
    config = DQNConfig().environment(env_id).rl_module(model_config={"fcnet_hiddens": [16]})
    torch.manual_seed(0)
    module = config.get_rl_module_spec(env=envs.make(env_id, {})).build()
    path = folder / "checkpoint_000003" / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER
    module.save_to_path(path / COMPONENT_RL_MODULE / DEFAULT_MODULE_ID)
    (folder / "params.json").write_text(json.dumps({"env": env_id, "env_config": {}}))
    return folder


def test_paired_percentage_of_the_optimum() -> None:
    optimal = [3000.0, 2900.0, 3100.0]
    pct, half = greedy.pct_of_optimum(optimal, optimal)
    assert pct == pytest.approx(100.0) and half == pytest.approx(0.0)
    pct, half = greedy.pct_of_optimum([2970.0, 2870.0, 3070.0], optimal)  # 30 below each
    assert pct == pytest.approx(99.0) and half == pytest.approx(0.0, abs=1e-9)
    pct, half = greedy.pct_of_optimum([2900.0, 2900.0, 3100.0], optimal)
    assert pct == pytest.approx(100.0 * 8900 / 9000) and half > 0


def test_references_are_measured_on_the_same_episodes() -> None:
    record = greedy.held_out_record([2900.0] * 60, "Cabs-v0", {}, HELD_OUT_SEED)
    refs = record["references"]
    assert set(refs) == {"random", "heuristic", "optimum"}
    assert refs["optimum"]["pct_of_optimum"] == pytest.approx(100.0)
    # The optimal policy's mean over these episodes is the denominator, close to the exact
    # optimum (the mean over all 840 start states).
    assert refs["optimum"]["mean"] == pytest.approx(record["exact_optimum"], rel=0.01)
    assert 97.0 < refs["heuristic"]["pct_of_optimum"] < 99.5
    assert refs["random"]["pct_of_optimum"] < 10.0
    assert record["pct_of_optimum"] == pytest.approx(100.0 * 2900.0 / refs["optimum"]["mean"])
    assert record["seeds"] == list(range(HELD_OUT_SEED, HELD_OUT_SEED + 60))


def test_same_checkpoint_and_episodes_give_the_same_figure(tmp_path) -> None:
    trial = _trial_with_checkpoint(tmp_path / "trial")
    first = greedy.evaluate_trial(trial, 50, HELD_OUT_SEED)
    again = greedy.evaluate_trial(trial, 50, HELD_OUT_SEED)
    assert first is not None and again is not None
    assert first["checkpoint"] == "checkpoint_000003" and first["episodes"] == 50
    assert again["returns"] == first["returns"]
    assert again["mean"] == first["mean"] and again["pct_of_optimum"] == first["pct_of_optimum"]
    assert math.isfinite(first["ci95_half_width"])
    written = json.loads((trial / EVALUATION_FILE).read_text())
    assert written["returns"] == first["returns"] and "references" in written
    other = greedy.evaluate_trial(trial, 50, HELD_OUT_SEED + 50)
    assert other["returns"] != first["returns"]  # other episodes, another figure


def test_a_q_learner_plays_no_sampled_episodes(tmp_path) -> None:
    """A Q-network acts greedily by design: asked for sampled episodes, it plays greedy ones
    only, and says nothing of sampling."""
    from envs.cabs import base_observations

    trial = _trial_with_checkpoint(tmp_path / "trial")
    record = greedy.evaluate_trial(trial, 4, HELD_OUT_SEED, sampled=True)
    assert record is not None and "sampled" not in record
    module = greedy.load_module(trial / "checkpoint_000003")
    assert greedy.sampled_actions(module, np.array(base_observations()[:2])) is None
    assert "sampled" not in greedy.describe(record)


def test_the_base_variant_also_gets_the_exact_figure(tmp_path) -> None:
    """On the base variant the greedy policy is evaluated exactly as well, the same for any
    episode set, and it is the DP value of the module's greedy action in each state."""
    from envs.cabs import base_observations
    from envs.optimum import evaluate_policy

    trial = _trial_with_checkpoint(tmp_path / "trial")
    first = greedy.evaluate_trial(trial, 10, HELD_OUT_SEED)
    other = greedy.evaluate_trial(trial, 10, HELD_OUT_SEED + 10)
    assert first is not None and other is not None and first["exact"] == other["exact"]
    module = greedy.load_module(trial / "checkpoint_000003")
    actions = greedy.greedy_actions(module, np.array(base_observations())).astype(np.int64)
    assert first["exact"]["pct_of_optimum"] == evaluate_policy(actions).pct_of_optimum
    assert 98.0 < first["exact"]["heuristic_pct_of_optimum"] < 99.0
    assert "exactly" in greedy.describe(first) and "last 48 hours" in greedy.describe(first)
    requests = greedy.evaluate_trial(
        _trial_with_checkpoint(tmp_path / "r", "CabsRequests-v0"), 4, 0
    )
    assert requests is not None and "exact" not in requests


def _result(name: str, judged: float, tmp_path: Path) -> SimpleNamespace:
    path = tmp_path / name
    path.mkdir()
    metrics: dict = {}
    keys.set_default(metrics, keys.GREEDY_RETURN, judged)
    return SimpleNamespace(path=str(path), metrics=metrics, error=None)


def test_the_pick_is_the_held_out_best_not_the_noisy_maximum(tmp_path, monkeypatch) -> None:
    # lucky: the highest periodic figure (a lucky 5-episode draw); steady: within noise of it
    # and better on the held-out episodes; far: outside the noise band, never evaluated.
    results = [
        _result("lucky", 2950.0, tmp_path),
        _result("steady", 2920.0, tmp_path),
        _result("far", 2500.0, tmp_path),
    ]
    held_out_means = {"lucky": 2850.0, "steady": 2930.0, "far": 2990.0}
    played = []

    def fake_evaluate_trial(trial_dir: Path, episodes: int, seed: int) -> dict:
        played.append((trial_dir.name, episodes, seed))
        mean = held_out_means[trial_dir.name]
        return {"checkpoint": "checkpoint_000001", "mean": mean, "ci95_half_width": 5.0}

    monkeypatch.setattr(greedy, "evaluate_trial", fake_evaluate_trial)
    found = final.evaluate_best(results, keys.GREEDY_RETURN, 100, 7)
    assert [name for name, _, _ in played] == ["lucky", "steady"]
    assert {(e, s) for _, e, s in played} == {(100, 7)}  # the same episodes for every trial
    assert Path(found.best.result.path).name == "steady"
    assert found.summary()["best_trial"] == "steady"
    # Benchmark mode evaluates every trial.
    everyone = final.evaluate_best(results, keys.GREEDY_RETURN, 100, 7, everyone=True)
    assert Path(everyone.best.result.path).name == "far"


def test_a_trial_without_checkpoint_is_not_picked(tmp_path, monkeypatch) -> None:
    results = [_result("pruned", 2950.0, tmp_path), _result("survivor", 2940.0, tmp_path)]
    monkeypatch.setattr(
        greedy,
        "evaluate_trial",
        lambda d, e, s: None if d.name == "pruned" else {"mean": 2900.0, "ci95_half_width": 1.0},
    )
    found = final.evaluate_best(results, keys.GREEDY_RETURN, 50, 0)
    assert Path(found.best.result.path).name == "survivor"
    assert found.skipped == ["pruned: no checkpoint"]


def test_a_greedy_policy_of_the_optimum_scores_100_percent() -> None:
    """The learned policy's episodes and the optimal policy's are the same episodes: playing
    the optimal policy through the learned policy's path gives exactly 100%."""
    from envs.optimum import solve
    from envs.policies import episode_returns

    returns = episode_returns(solve(0).policy(), {}, 50, HELD_OUT_SEED)
    record = greedy.held_out_record(returns.tolist(), "Cabs-v0", {}, HELD_OUT_SEED)
    assert record["pct_of_optimum"] == pytest.approx(100.0)
    assert np.isclose(record["pct_ci95_half_width"], 0.0)


def test_the_report_picks_a_sweeps_best_trial_by_its_held_out_mean() -> None:
    import pandas as pd

    from analysis import tables

    trials = pd.DataFrame(
        {
            "experiment": ["s"] * 3,
            "trial_id": ["a", "b", "c"],
            "kind": ["sweep"] * 3,
            "mode": ["max"] * 3,
            "final_metric": [2950.0, 2920.0, 2700.0],  # a: the noisy maximum
            "final_eval_return": [2850.0, 2930.0, math.nan],  # b: the held-out best
        }
    )
    assert list(tables.best_trials(trials)["trial_id"]) == ["b"]
    without = trials.assign(final_eval_return=math.nan)  # runs made before the held-out figure
    assert list(tables.best_trials(without)["trial_id"]) == ["a"]


def test_the_request_variant_has_its_own_budget_and_flags_win() -> None:
    from sweeps import apex_cabs
    from sweeps.harness.cli import parse_args

    base = parse_args(apex_cabs.SWEEP, [])
    requests = parse_args(apex_cabs.SWEEP, ["--variant", "requests"])
    assert (base.stop_timesteps, requests.stop_timesteps) == (60_000, 150_000)
    assert base.final_episodes == 100 and requests.final_episodes == 100
    given = parse_args(apex_cabs.SWEEP, ["--variant", "requests", "--stop-timesteps", "9000"])
    assert given.stop_timesteps == 9000 and given.grace_period == 15_000
    smoke = parse_args(apex_cabs.SWEEP, ["--variant", "requests", "--smoke"])
    assert smoke.stop_timesteps == 500 and smoke.final_episodes == 10
    # The tuned lr schedule is the first trial's: its decay horizon is the variant's budget.
    config = apex_cabs.make_config(requests)
    assert config.lr == [[0, 1e-3], [150_000, 1e-4]]
