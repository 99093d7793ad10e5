"""The sweeps end to end: every sweep's ``--smoke`` run, a learning ``--as-test`` run, the HParams
data TensorBoard's own reader finds, and the shared parser refusing nonsense."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sweeps.__main__ import sweeps as listed_sweeps
from sweeps.harness import keys

SWEEPS = list(listed_sweeps())  # every sweeps/<algo>_<env>.py, as `python -m sweeps` lists them
# Smoke runs: every sweep, except that of the generic sweeps only DQN and IMPALA run here (on
# CartPole-v1, their default env); Ape-X and APPO run on an env of the tests' own, by entry point,
# through the benchmark (tests/test_gym.py), which saves two Ray runs.
# The baselines (sweeps/sb3_*.py) search nothing: their benchmark mode runs in
# tests/test_baselines.py.
SMOKED = [
    name
    for name in SWEEPS
    if name not in ("apex_gym", "appo_gym")
    and not importlib.import_module(f"sweeps.{name}").SWEEP.no_search
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


@pytest.fixture(scope="module")
def smoke_ray(_ray_session_end):
    """The smokes' Ray, sized as a sweep's own Ray sizes itself on 2 cores (``runner.plan``: two
    one-runner trials at once declare 4 CPUs, every process one thread), so that a smoke's two
    trials start side by side as they do from the command line. Shut down at the module's end:
    the next module's ``ray_session`` starts the shared 2-CPU one again."""
    import ray

    from sweeps.harness import cpu_time

    ray.shutdown()
    os.environ[cpu_time.OVERSUBSCRIBED_ENV] = "1"  # (inherited by Ray's processes)
    try:
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    finally:
        os.environ.pop(cpu_time.OVERSUBSCRIBED_ENV)
    yield ray
    ray.shutdown()


# Smoked on the request variant, whose masked modules (Q-values for DQN/Ape-X, logits for
# IMPALA/APPO) must build and train: their base variant trains in tests/test_budget.py and
# tests/test_reuse.py (Ape-X) and tests/test_evaluate.py (APPO).
ON_REQUESTS = ("apex_cabs", "appo_cabs")


@pytest.mark.slow
@pytest.mark.parametrize("name", SMOKED)
def test_smoke(name, tmp_path, smoke_ray, capsys):
    variant = ("--variant", "requests") if name in ON_REQUESTS else ()
    rc, experiment = _run(name, tmp_path, "--smoke", *variant)
    assert rc == 0
    # The lasting TensorBoard command is printed at the start.
    out = capsys.readouterr().out
    assert out.index(f"[sweep] TensorBoard: tensorboard --logdir {experiment}") < out.index(
        "started:"
    )
    assert "[sweep] trial 1: the tuned defaults" in out
    record = json.loads((experiment / "run.json").read_text())
    assert record["status"] == "finished"
    assert record["sweep"] == name and record["kind"] == "sweep"
    if variant:
        assert record["env_id"] == "CabsRequests-v0"
    assert record["search_space"] and record["hyperparameters"]
    # One signal searches, prunes and stops: greedy on cabs and any other env, the training
    # return on Pong.
    judged_by = keys.RETURN_MEAN if name.endswith("_pong") else keys.GREEDY_RETURN
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
    speeds = [record["machine"][f"raw_env_steps_per_s_at_{when}"] for when in ("start", "end")]
    assert all(s > 0 for s in speeds)  # the machine's speed (sweeps/harness/machine_speed.py)
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


LEADING = [keys.GREEDY_RETURN, keys.PCT_OF_OPTIMUM, keys.TIME_TO_TARGET_S, keys.ENV_STEPS_PER_S]


def _hparams_data(run_dir: Path):
    """(HParams plugin data by tag, scalar tags) of one trial folder, by TensorBoard's reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata as hp_metadata
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    content = acc.PluginTagToContent(hp_metadata.PLUGIN_NAME)
    data = {tag: plugin_data_pb2.HParamsPluginData.FromString(raw) for tag, raw in content.items()}
    return data, acc


class _FakeTrial:
    """What the logger reads of a Tune trial."""

    def __init__(self, path: Path) -> None:
        self.trial_id, self.local_path = "t0", str(path)
        self.evaluated_params = {"lr": 0.001, "gamma": 0.99}

    def init_local_path(self) -> None:
        Path(self.local_path).mkdir(parents=True, exist_ok=True)


def test_hparams_columns_lead_with_what_a_reader_decides_by(tmp_path):
    """No Ray: the logger on a fake trial, read back with TensorBoard's own reader."""
    from tensorboard.plugins.hparams import metadata as hp_metadata

    from sweeps.harness.reporting import HParamsLoggerCallback

    logger = HParamsLoggerCallback(metric=keys.GREEDY_RETURN, target=90.0)
    trial = _FakeTrial(tmp_path / "trial")
    logger.log_trial_start(trial)
    for i, (greedy, train_s) in enumerate([(50.0, 1.0), (95.0, 2.0), (99.0, 3.0)], start=1):
        result: dict = {"training_iteration": i}
        keys.set_default(result, keys.GREEDY_RETURN, greedy)
        keys.set_default(result, keys.TRAIN_TIME_S, train_s)
        keys.set_default(result, keys.ENV_STEPS, 100 * i)
        keys.set_default(result, keys.ENV_STEPS_PER_S, 50.0)
        logger.log_trial_result(i, trial, result)
    logger.log_trial_end(trial)

    data, acc = _hparams_data(tmp_path / "trial")
    infos = data[hp_metadata.EXPERIMENT_TAG].experiment.metric_infos
    assert [m.name.tag for m in infos[:4]] == [keys.flat(k) for k in LEADING]
    assert [m.display_name for m in infos[:4]] == [
        "greedy evaluation return (judges)",
        "% of optimum",
        "time to 90 [s]",
        "env steps/s",
    ]
    assert all(m.description for m in infos[:4])
    # Time to target: the training seconds of the first result at or above it, logged once.
    (event,) = acc.Scalars(keys.flat(keys.TIME_TO_TARGET_S))
    assert (event.value, event.step) == (2.0, 200)


@dataclasses.dataclass(frozen=True)
class SmokeSweep:
    folder: Path  # the run's folder
    uri: str  # the --storage-path it was given: a file:// URI
    journal: Path  # its Optuna study (--optuna-storage)
    out: str  # what it printed


@pytest.fixture(scope="module")
def smoke_sweep(tmp_path_factory, _ray_session_end) -> SmokeSweep:
    """One finished one-trial dqn_cabs smoke sweep, stored by a ``file://`` URI, its Optuna
    study in a journal file (``optuna.journal``): for the storage URI, TensorBoard and
    optuna-dashboard checks. Run from a folder of its own, where a local folder named
    ``file:`` would appear."""
    from sweeps import dqn_cabs

    root = tmp_path_factory.mktemp("smoke-sweep")
    uri, journal = (root / "runs").as_uri(), root / "optuna.journal"
    argv = ["--smoke", "--num-samples", "1", "--storage-path", uri, "--name", "exp"]
    out, cwd = io.StringIO(), os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out):
            rc = dqn_cabs.main([*argv, "--optuna-storage", str(journal)])
    finally:
        os.chdir(cwd)
    assert rc == 0, out.getvalue()[-3000:]
    return SmokeSweep(root / "runs" / "exp", uri, journal, out.getvalue())


@pytest.mark.slow
def test_a_file_uri_sweep_writes_its_folder_there_and_keeps_the_uri(smoke_sweep):
    """--storage-path file:///abs/runs: the sweep writes its folder there (Tune's files,
    run.json), the URI kept as given in what it prints and records."""
    uri, out, folder = smoke_sweep.uri, smoke_sweep.out, smoke_sweep.folder
    assert f"[sweep] run folder: {uri}/exp" in out
    assert f"[sweep] TensorBoard: tensorboard --logdir {uri}/exp" in out
    record = json.loads((folder / "run.json").read_text())
    assert record["status"] == "finished" and record["args"]["storage_path"] == uri
    (trial,) = [p for p in folder.iterdir() if p.name.startswith("DQN_")]
    assert (trial / "result.json").read_text().strip()
    assert not (folder.parents[1] / "file:").exists()
    # One TensorBoard command, the lasting one (at the start and again at the end); Tune's own,
    # into Ray's temporary session folder, is not shown.
    tensorboard = {line for line in out.splitlines() if "tensorboard --logdir" in line}
    assert tensorboard == {f"[sweep] TensorBoard: tensorboard --logdir {uri}/exp"}
    # The Optuna study outlives the sweep: the printed call opens it by the run's name.
    import optuna

    (call,) = {line for line in out.splitlines() if line.startswith("[sweep] Optuna study: ")}
    study = eval(call.removeprefix("[sweep] Optuna study: "), {"optuna": optuna})
    (done,) = study.trials
    assert done.state.name == "COMPLETE" and done.value is not None


@pytest.mark.slow
def test_optuna_dashboard_serves_the_sweeps_study(smoke_sweep):
    """The user guide's `optuna-dashboard <journal>` (docs/guide.md) opens a finished sweep's
    study: its server lists the study under the run's name with the trial, finished, and its
    value."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dashboard = Path(sys.executable).parent / "optuna-dashboard"
    journal = smoke_sweep.journal
    server = subprocess.Popen(
        [str(dashboard), str(journal), "--port", str(port), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def get(path: str) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            return json.loads(r.read())

    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                studies = get("/api/studies")["study_summaries"]
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                assert time.monotonic() < deadline, "optuna-dashboard did not start in 180 s"
                time.sleep(0.5)
        (study,) = [s for s in studies if s["study_name"] == smoke_sweep.folder.name]
        trials = get(f"/api/studies/{study['study_id']}")["trials"]
        assert [t["state"] for t in trials] == ["Complete"]
        assert len(trials[0]["values"]) == 1 and math.isfinite(trials[0]["values"][0])
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_hparams_visible_to_tensorboard(smoke_sweep):
    from tensorboard.plugins.hparams import metadata as hp_metadata

    (trial,) = _trial_dirs(smoke_sweep.folder)
    data, acc = _hparams_data(trial)
    experiment_info = data[hp_metadata.EXPERIMENT_TAG].experiment
    metric_tags = [m.name.tag for m in experiment_info.metric_infos]
    assert metric_tags[:4] == [keys.flat(k) for k in LEADING]  # cabs: judged by greedy
    assert keys.flat(keys.RETURN_MEAN) in metric_tags
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post_json(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_hparams_columns_through_tensorboards_server(smoke_sweep, tmp_path):
    """TensorBoard's own server, on the finished sweep folder: its HParams data endpoint lists
    the leading columns first, each with a description."""
    port = _free_port()
    log = (tmp_path / "tensorboard.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(smoke_sweep.folder),
         "--host", "127.0.0.1", "--port", str(port), "--load_fast", "false",
         "--reload_interval", "1"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/data/plugin/hparams/experiment"
    experiment: dict = {}
    try:
        deadline = time.monotonic() + 120
        while not experiment.get("metricInfos"):
            assert server.poll() is None, (tmp_path / "tensorboard.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "TensorBoard served no HParams experiment"
            try:
                experiment = _post_json(url, {"experimentName": ""})
            except (OSError, ValueError):  # not listening yet
                pass
            time.sleep(0.5)  # still loading the event files
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    infos = experiment["metricInfos"]
    assert [m["name"]["tag"] for m in infos[:4]] == [keys.flat(k) for k in LEADING]
    assert infos[0]["displayName"] == "greedy evaluation return (judges)"
    assert all(m.get("description") for m in infos[:4])
    assert {"lr", "gamma"} <= {h["name"] for h in experiment["hparamInfos"]}


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
        "--final-episodes", "0",  # the held-out games at the end: tests/test_held_out.py
    )  # fmt: skip
    assert rc == 0
    (trial,) = _trial_dirs(experiment)
    last = json.loads((trial / "result.json").read_text().splitlines()[-1])
    assert keys.get(last, keys.GREEDY_RETURN) >= 2500  # the crossing that was checked
    # ... and the target confirmed: the learner's greedy policy (the greedy evaluation judges on
    # cabs) played 100 seeded episodes (harness/confirm.py) whose mean reached it, the sampled
    # one beside; the trial stopped there
    assert keys.get(last, keys.TARGET_CONFIRMED) == 1
    assert keys.get(last, keys.CONFIRM_RETURN) >= 2500
    assert (
        keys.get(last, keys.CONFIRM_EPISODES) == 100 and keys.get(last, keys.CONFIRM_SAMPLED) == 0
    )
    assert keys.get(last, keys.CONFIRM_RETURN) == keys.get(last, keys.CONFIRM_GREEDY_RETURN)
    assert math.isfinite(keys.get(last, keys.CONFIRM_SAMPLED_RETURN))


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
    from sweeps.harness.space import search_space_description

    space = search_space_description(dqn_cabs.sample_params)
    assert space["hp/lr"].startswith("loguniform")
    assert space["hp/one_minus_gamma"].startswith("loguniform")


def test_no_sweeps_module_shadows_the_standard_library():
    """``python sweeps/<name>.py`` puts sweeps/ first on the import path: a module there named
    like a standard one (``profile``, ``types``...) replaces it for torch and Ray too."""
    import sys
    from pathlib import Path

    names = {p.stem for p in (Path(__file__).parents[1] / "sweeps").glob("*.py")}
    assert not names & set(sys.stdlib_module_names)
