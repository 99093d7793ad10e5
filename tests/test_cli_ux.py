"""What a user sees before and around a sweep, without starting Ray: the tuned defaults as the
first trial, the plan of --dry-run, --set, --help, the sweep list, storage URIs."""

from __future__ import annotations

import importlib

import pytest

SWEEPS = [
    "dqn_cabs",
    "apex_cabs",
    "impala_cabs",
    "appo_cabs",
    "dqn_pong",
    "apex_pong",
    "impala_pong",
    "appo_pong",
]


def _sweep(name: str):
    return importlib.import_module(f"sweeps.{name}").SWEEP


def _config(sweep, tmp_path, *argv: str) -> dict:
    from sweeps.runner import parse

    _, config = parse(sweep, ["--storage-path", str(tmp_path), *argv])
    return config.to_dict()


# ------------------------------------------------------------------------------------------------
# 1. Tuned defaults first
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SWEEPS)
def test_tuned_point_reproduces_the_tuned_config(name, tmp_path):
    """sample_params(tuned point) == the sweep file's config, for every searched key."""
    from sweeps.tuned import _Fixed, _leaves, config_values, tuned_point

    sweep = _sweep(name)
    config = _config(sweep, tmp_path)
    point, unexpressed = tuned_point(sweep.sample_params, config)
    assert unexpressed == [], f"{name}: tuned values outside the search space: {unexpressed}"
    got = _leaves(sweep.sample_params(_Fixed(point)))
    want = _leaves(config_values(sweep.sample_params, config))
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-9), key


def test_first_suggestion_is_the_tuned_defaults(tmp_path):
    """The searcher's first trial is the tuned config (Optuna's enqueued point); then draws."""
    from sweeps.cli import parse_args
    from sweeps.runner import make_searcher
    from sweeps.tuned import _leaves, config_values, tuned_point

    sweep = _sweep("dqn_cabs")
    args = parse_args(sweep, ["--storage-path", str(tmp_path)])
    config = sweep.make_config(args).to_dict()
    point, _ = tuned_point(sweep.sample_params, config)
    searcher = make_searcher(sweep, args, "m", points_to_evaluate=[point])
    first, second = searcher.suggest("t0"), searcher.suggest("t1")
    want = _leaves(config_values(sweep.sample_params, config))
    for suggestion, same in ((first, True), (second, False)):
        got = _leaves({k: v for k, v in _flat(suggestion).items() if k in _searched(sweep)})
        matches = all(got[k] == pytest.approx(want[k]) for k in want)
        assert matches is same


def test_tuned_point_follows_the_config_and_says_what_it_cannot_express():
    from sweeps import dqn_cabs
    from sweeps.tuned import tuned_point

    config = {
        "lr": 1e-3,  # inside the space
        "gamma": 0.9,  # 1 - 0.1: above the space's 0.05, allowed in an enqueued point
        "n_step": 2,  # not a choice: sampled
        "target_network_update_freq": 500,
        "train_batch_size": 512,  # 2**9, beyond 2**8
        "epsilon": [(0, 1.0), (5000, 0.05)],
        "replay_buffer_config": {"capacity": 50_000},
        "double_q": False,
        "dueling": True,
    }
    point, unexpressed = tuned_point(dqn_cabs.sample_params, config)
    assert unexpressed == ["n_step"]
    assert "hp/n_step" not in point
    assert point["hp/lr"] == 1e-3 and point["hp/one_minus_gamma"] == pytest.approx(0.1)
    assert point["hp/log2_train_batch"] == 9 and point["hp/double_q"] is False
    assert point["hp/epsilon_final"] == 0.05 and point["hp/epsilon_decay_steps"] == 5000


def _searched(sweep) -> set[str]:
    from sweeps.record import ask_trial

    return set(ask_trial(sweep.sample_params)[1])


def _flat(config: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in config.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out
