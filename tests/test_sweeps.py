"""The sweeps end to end: every sweep's ``--smoke`` run, a learning ``--as-test`` run, the HParams
data TensorBoard's own reader finds, and the shared parser refusing nonsense."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from sweeps import keys

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


def _run(name: str, tmp_path: Path, *argv: str) -> tuple[int, Path]:
    module = importlib.import_module(f"sweeps.{name}")
    rc = module.main(["--storage-path", str(tmp_path), "--name", "exp", *argv])
    return rc, tmp_path / "exp"


def _trial_dirs(experiment: Path) -> list[Path]:
    return sorted(p for p in experiment.iterdir() if (p / "result.json").exists())


def test_importing_a_sweep_runs_nothing(tmp_path):
    for name in SWEEPS:
        module = importlib.import_module(f"sweeps.{name}")
        assert callable(module.main)
        assert module.SWEEP.name == name


@pytest.mark.slow
@pytest.mark.parametrize("name", SWEEPS)
def test_smoke(name, tmp_path, ray_session):
    rc, experiment = _run(name, tmp_path, "--smoke")
    assert rc == 0
    record = json.loads((experiment / "run.json").read_text())
    assert record["status"] == "finished"
    assert record["sweep"] == name and record["kind"] == "sweep"
    assert record["search_space"] and record["hyperparameters"]
    # One signal searches, prunes and stops: greedy on cabs, the training return on Pong.
    judged_by = keys.GREEDY_RETURN if name.endswith("_cabs") else keys.RETURN_MEAN
    assert record["metric"] == keys.flat(judged_by)
    assert record["scheduler"]["type"] == "asha"
    trials = _trial_dirs(experiment)
    assert 1 <= len(trials) <= 2
    for trial in trials:
        lines = (trial / "result.json").read_text().splitlines()
        last = json.loads(lines[-1])
        assert keys.get(last, keys.ENV_STEPS) > 0
        assert keys.get(last, keys.TRAIN_TIME_S) > 0
        params = json.loads((trial / "params.json").read_text())
        # The real sampled values are in the trial's config, the raw Optuna draws under "hp".
        assert "hp" in params


@pytest.mark.slow
def test_benchmark_mode_runs_one_trial_per_seed_one_at_a_time(tmp_path, ray_session):
    """--benchmark-seeds: the tuned defaults once per seed, and --max-concurrent-trials holds
    even when two trials would fit (0 env runners: 1 CPU each on 2 CPUs): fair timing."""
    rc, experiment = _run(
        "dqn_cabs", tmp_path, "--smoke", "--benchmark-seeds", "2", "--seed", "5",
        "--num-env-runners", "0", "--max-concurrent-trials", "1",
    )  # fmt: skip
    assert rc == 0
    record = json.loads((experiment / "run.json").read_text())
    assert record["kind"] == "benchmark" and record["plan"]["concurrent"] == 1
    windows = []
    for trial in _trial_dirs(experiment):
        results = [json.loads(line) for line in (trial / "result.json").read_text().splitlines()]
        params = json.loads((trial / "params.json").read_text())
        first, last = results[0], results[-1]
        windows.append((first["timestamp"] - first["time_this_iter_s"], last["timestamp"]))
        assert params["seed"] in (5, 6) and "hp" not in params  # no search: tuned defaults
    assert len(windows) == 2
    (start_a, end_a), (start_b, end_b) = sorted(windows)
    assert start_b >= end_a - 1  # whole-second timestamps; run together they would overlap


@pytest.mark.slow
def test_hparams_visible_to_tensorboard(tmp_path, ray_session):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata as hp_metadata
    from tensorboard.plugins.hparams import plugin_data_pb2

    rc, experiment = _run("dqn_cabs", tmp_path, "--smoke", "--num-samples", "1")
    assert rc == 0
    (trial,) = _trial_dirs(experiment)
    acc = EventAccumulator(str(trial), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    content = acc.PluginTagToContent(hp_metadata.PLUGIN_NAME)
    data = {}
    for tag, raw in content.items():
        msg = plugin_data_pb2.HParamsPluginData.FromString(raw)
        data[tag] = msg
    experiment_info = data[hp_metadata.EXPERIMENT_TAG].experiment
    metric_tags = {m.name.tag for m in experiment_info.metric_infos}
    assert keys.flat(keys.RETURN_MEAN) in metric_tags
    assert keys.flat(keys.GREEDY_RETURN) in metric_tags
    assert len(metric_tags) <= 30
    hparams = data[hp_metadata.SESSION_START_INFO_TAG].session_start_info.hparams
    assert {"lr", "gamma", "n_step", "train_batch_size"} <= set(hparams)
    assert 0.9 < hparams["gamma"].number_value < 1.0  # the real value, not 1 - gamma
    assert hp_metadata.SESSION_END_INFO_TAG in data
    scalar_tags = set(acc.Tags()["scalars"])
    assert keys.flat(keys.ENV_STEPS) in scalar_tags
    assert keys.flat(keys.GREEDY_RETURN) in scalar_tags
    # Curated, not RLlib's full dump.
    assert len(scalar_tags) <= 30


@pytest.mark.slow
def test_impala_as_test_reaches_target(tmp_path, ray_session):
    rc, experiment = _run(
        "impala_cabs",
        tmp_path,
        "--num-samples", "1",
        "--scheduler", "fifo",
        "--stop-timesteps", "400000",
        "--stop-reward", "2500",
        "--as-test",
    )  # fmt: skip
    assert rc == 0
    (trial,) = _trial_dirs(experiment)
    last = json.loads((trial / "result.json").read_text().splitlines()[-1])
    assert keys.get(last, keys.GREEDY_RETURN) >= 2500


@pytest.mark.parametrize(
    "argv",
    [
        ["--num-samples", "0"],
        ["--num-samples", "three"],
        ["--num-env-runners", "-1"],
        ["--stop-reward", "nan"],
        ["--time-budget-s", "-5"],
        ["--no-such-flag"],
        ["--search", "grid"],
        ["--variant", "taxi"],
        ["--as-test"],  # needs --stop-reward
        ["--name", "a/b"],
    ],
)
def test_parser_refuses_nonsense(argv, tmp_path, capsys):
    from sweeps import dqn_cabs

    with pytest.raises(SystemExit) as exc:
        dqn_cabs.main(["--storage-path", str(tmp_path / "runs"), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0]
    assert not (tmp_path / "runs").exists()


def test_unfittable_request_refused(tmp_path, capsys, ray_session):
    from sweeps import dqn_cabs

    rc = dqn_cabs.main(["--storage-path", str(tmp_path), "--num-env-runners", "8"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "needs 9 CPUs" in err
    assert not any(tmp_path.iterdir())


def test_search_space_records_real_values():
    from sweeps import dqn_cabs
    from sweeps.record import search_space_description

    space = search_space_description(dqn_cabs.sample_params)
    assert space["hp/lr"].startswith("loguniform")
    assert space["hp/one_minus_gamma"].startswith("loguniform")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["apex_cabs", "appo_cabs"])
def test_smoke_request_variant(name, tmp_path, ray_session):
    """The masked modules (Q-values for DQN/Ape-X, logits for IMPALA/APPO) build and train."""
    rc, experiment = _run(name, tmp_path, "--smoke", "--num-samples", "1", "--variant", "requests")
    assert rc == 0
    record = json.loads((experiment / "run.json").read_text())
    assert record["env_id"] == "CabsRequests-v0" and record["status"] == "finished"
