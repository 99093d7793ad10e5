"""The family tuner (benchmarks/family_tune.py): the envs it tunes on (never a held-out one), the
sampled values as the sweeps' --set texts, the score's order (one pair more beats any speed),
and its plan without running anything."""

from __future__ import annotations

import json

import pytest

from benchmarks import family_tune
from sweeps.env_family import HELD_OUT, TUNING


def test_it_tunes_on_the_tuning_envs_cheapest_first_and_never_on_a_held_out_one():
    envs = family_tune.tuning_envs(None)
    assert {e.env for e in envs} == {e.env for e in TUNING}
    assert [e.budget_s for e in envs] == sorted(e.budget_s for e in envs)
    with pytest.raises(ValueError, match="held out"):
        family_tune.tuning_envs([HELD_OUT[0].env])
    with pytest.raises(ValueError, match="not in the family"):
        family_tune.tuning_envs(["Nope-v0"])


def test_sampled_values_become_set_texts_with_nested_keys_as_one_dict():
    texts = family_tune.set_texts(
        {"lr": 0.001, "replay_buffer_config/alpha": 0.5, "epsilon": [(0, 1.0), (5000, 0.05)]}
    )
    assert texts == [
        "epsilon=[[0, 1.0], [5000, 0.05]]",
        "lr=0.001",
        'replay_buffer_config={"alpha": 0.5}',
    ]
    for text in texts:  # what the sweeps' --set reads
        key, _, value = text.partition("=")
        json.loads(value)


def test_one_pair_more_beats_any_speed_and_time_breaks_ties():
    fast_one = family_tune.score([(True, 1.0, 100.0), (False, 0.0, 100.0)])
    slow_two = family_tune.score([(True, 99.0, 100.0), (True, 99.0, 100.0)])
    assert slow_two > fast_one
    faster = family_tune.score([(True, 10.0, 100.0), (False, 0.0, 100.0)])
    assert fast_one > faster > 1.0
    assert family_tune.score([]) == 0.0


def test_dry_run_prints_each_env_s_benchmark_and_runs_nothing(tmp_path, capsys):
    argv = ["--algo", "appo", "--envs", "CartPole-v1,Taxi-v3", "--budget-scale", "0.5"]
    assert family_tune.main([*argv, "--storage-path", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "at most 210 s of training per trial" in out
    assert "--stop-train-time-s 60 --name t0-cartpole-v1 --algos appo" in out
    assert not any(tmp_path.iterdir())


def test_a_held_out_env_is_one_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        family_tune.main(["--algo", "appo", "--envs", HELD_OUT[0].env, "--dry-run"])
    assert exit_.value.code == 2 and "held out" in capsys.readouterr().err
