"""What a user sees before and around a sweep, without starting Ray: the tuned defaults as the
first trial, the plan of --dry-run, --set, --help, the sweep list, storage URIs."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from sweeps.__main__ import sweeps as listed_sweeps

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = list(listed_sweeps())  # every sweeps/<algo>_<env>.py, as `python -m sweeps` lists them


def _sweep(name: str):
    return importlib.import_module(f"sweeps.{name}").SWEEP


def _config(sweep, tmp_path, *argv: str) -> dict:
    from sweeps.harness.runner import parse

    _, config = parse(sweep, ["--storage-path", str(tmp_path), *argv])
    return config.to_dict()


# ------------------------------------------------------------------------------------------------
# 1. Tuned defaults first
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SWEEPS)
def test_tuned_point_reproduces_the_tuned_config(name, tmp_path):
    """sample_params(tuned point) == the sweep file's config, for every searched key."""
    from sweeps.harness.tuned import _Fixed, _leaves, config_values, tuned_point

    sweep = _sweep(name)
    config = _config(sweep, tmp_path)
    point, unexpressed = tuned_point(sweep.sample_params, config)
    assert unexpressed == [], f"{name}: tuned values outside the search space: {unexpressed}"
    got = _leaves(sweep.sample_params(_Fixed(point)))
    want = _leaves(config_values(sweep.sample_params, config))
    assert got.keys() == want.keys()
    for key in want:
        if isinstance(want[key], str):  # a fixed setting beside the searched ones
            assert got[key] == want[key], key
        else:
            assert got[key] == pytest.approx(want[key], rel=1e-9), key


def test_first_suggestion_is_the_tuned_defaults(tmp_path):
    """The searcher's first trial is the tuned config (Optuna's enqueued point); then draws."""
    from sweeps.harness.cli import parse_args
    from sweeps.harness.runner import make_searcher
    from sweeps.harness.tuned import _leaves, config_values, tuned_point

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
    from sweeps.harness.tuned import tuned_point

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
    from sweeps.harness.space import ask_trial

    return set(ask_trial(sweep.sample_params)[1])


def _flat(config: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in config.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _source_sweep(tmp_path, sweep, n: int, **recorded) -> tuple:
    """A finished sweep's folder as the runner leaves it (run.json, trial folders with
    params.json and result.json), its configs drawn by the real searcher."""
    import hashlib
    import json

    import optuna

    from sweeps.harness.cli import parse_args
    from sweeps.harness.runner import make_searcher

    args = parse_args(sweep, ["--storage-path", str(tmp_path), "--seed", "3"])
    # Optuna's "A new study created" line goes to the stderr its handler was made with (another
    # test's, when optuna was first imported under its capture): keep it out of the refusals'.
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    searcher = make_searcher(sweep, args, "m")
    configs = [searcher.suggest(f"t{i}") for i in range(n)]
    source = tmp_path / "source"
    for i in range(n):  # Tune's trial ids are random: the order is when each started
        trial = source / f"ApexDQN_{hashlib.md5(str(i).encode()).hexdigest()[:8]}"
        trial.mkdir(parents=True)
        (trial / "params.json").write_text(json.dumps(configs[i]))
        first = {"training_iteration": 1, "timestamp": 1000 + 60 * i, "time_total_s": 50 - i}
        (trial / "result.json").write_text(json.dumps(first) + "\n")
    args = {"seed": 3, "variant": "base", **recorded}
    record = {"sweep": sweep.name, "kind": "sweep", "args": args}
    (source / "run.json").write_text(json.dumps(record))
    return source, configs


def test_configs_from_runs_the_source_sweeps_configurations_in_order(tmp_path):
    """--configs-from: one trial per source trial, the searcher suggesting exactly its draws
    (and so its config values), in the source's trial order."""
    from sweeps.harness.cli import parse_args
    from sweeps.harness.configs_from import source_points
    from sweeps.harness.runner import make_searcher

    sweep = _sweep("apex_cabs")
    source, configs = _source_sweep(tmp_path, sweep, 11)
    argv = ["--storage-path", str(tmp_path), "--seed", "3", "--configs-from", str(source)]
    args = parse_args(sweep, [*argv, "--scheduler", "fifo"])
    assert args.num_samples == 11 and args.configs_from == str(source.resolve())
    searcher = make_searcher(sweep, args, "m", points_to_evaluate=source_points(sweep, args))
    for i, config in enumerate(configs):
        got = searcher.suggest(f"r{i}")
        assert got == config  # the raw draws under "hp" and the real values they give


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--seed", "4"], "ran with --seed 3"),
        (["--variant", "requests", "--seed", "3"], "ran with --variant base;"),
        (["--seed", "3", "--num-samples", "5"], "drop --num-samples"),
        (["--seed", "3", "--benchmark-seeds", "2"], "drop --benchmark-seeds"),
    ],
)
def test_configs_from_refuses_other_flags_in_one_line(argv, words, tmp_path, capsys):
    from sweeps import apex_cabs

    source, _ = _source_sweep(tmp_path, _sweep("apex_cabs"), 2)
    with pytest.raises(SystemExit) as exc:
        apex_cabs.main(
            ["--storage-path", str(tmp_path / "runs"), "--configs-from", str(source), *argv]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("broken", ["no folder", "other sweep", "no draws", "no trials"])
def test_configs_from_refuses_a_folder_it_cannot_replay(broken, tmp_path, capsys):
    import json

    from sweeps import apex_cabs

    source, _ = _source_sweep(tmp_path, _sweep("apex_cabs"), 2)
    trials = sorted(source.glob("ApexDQN_*"))
    if broken == "no folder":
        source = tmp_path / "nowhere"
    elif broken == "other sweep":
        (source / "run.json").write_text(
            json.dumps({"sweep": "dqn_cabs", "kind": "sweep", "args": {}})
        )
    elif broken == "no draws":
        (trials[1] / "params.json").write_text(json.dumps({"lr": 0.001}))
    else:
        for trial in trials:
            (trial / "params.json").unlink()
    argv = ["--storage-path", str(tmp_path / "runs"), "--seed", "3", "--configs-from", str(source)]
    with pytest.raises(SystemExit) as exc:
        apex_cabs.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--configs-from" in err[0]
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------------------------------------
# 2. A sweep you can watch
# ------------------------------------------------------------------------------------------------


class _FakeTrial:
    def __init__(self, trial_id: str, status: str):
        self.trial_id, self.status, self.config = trial_id, status, {}
        self.local_path = "/nowhere"


def _result(steps: int, greedy: float | None, pct: float | None = None) -> dict:
    from sweeps.harness import keys

    suite = {"env_steps": steps, "greedy_return": greedy, "pct_of_optimum": pct}
    return {keys.SUITE: suite, "training_iteration": 3}


def test_progress_line_counts_outcomes_and_ranks_best_first(capsys):
    from sweeps.harness import keys
    from sweeps.harness.reporting import ProgressCallback

    stop = {keys.flat(keys.ENV_STEPS): 1000, keys.flat(keys.GREEDY_RETURN): 2500.0}
    cb = ProgressCallback(
        interval_s=1e9, metric=keys.GREEDY_RETURN, stop=stop, time_budget_s=600, num_samples=6
    )
    done, pruned, running, failed = (
        _FakeTrial("aaa", "TERMINATED"),
        _FakeTrial("bbb", "TERMINATED"),
        _FakeTrial("ccc", "RUNNING"),
        _FakeTrial("ddd", "ERROR"),
    )
    trials = [done, pruned, running, failed]
    cb.on_trial_result(0, trials, done, _result(1000, 2000.0, 67.4))
    # Tune marks every stopped trial's last result done, ASHA's too: not "completed" for that.
    cb.on_trial_result(0, trials, pruned, {**_result(300, 100.0, 3.4), "done": True})
    cb.on_trial_result(0, trials, running, _result(600, 2700.0, 91.0))
    cb.on_trial_complete(0, trials, done)
    cb.on_trial_complete(0, trials, pruned)
    out = capsys.readouterr().out
    assert "trial aaa completed" in out and "trial bbb pruned by ASHA" in out
    line = cb.status_line()
    assert "1 completed, 1 pruned by ASHA, 1 running, 1 errored, 2 waiting" in line
    assert " of 10:00" in line
    assert "best suite/greedy_return 2700.0 (91.0% of optimum), trial ccc" in line
    rows = cb.table().splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["ccc", "aaa", "bbb", "ddd"]  # best first
    assert rows[1].split()[1] == "completed" and rows[2].split()[1] == "pruned"


def test_tune_adds_no_logger_of_its_own_and_prints_no_tensorboard_line(monkeypatch):
    """While the runner fits, Tune's automatic loggers are off: with the runner's own three
    loggers, Tune's default callbacks add no CSV, JSON or TensorBoard logger (its reporter
    prints a temporary TensorBoard folder only where a ``TBXLoggerCallback`` runs), and the
    environment is as it was afterwards."""
    import os

    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, TBXLoggerCallback
    from ray.tune.utils.callback import _create_default_callbacks

    from sweeps.harness import recovery, runner
    from sweeps.harness.reporting import HParamsLoggerCallback

    monkeypatch.delenv(runner.TUNE_AUTO_LOGGERS_OFF, raising=False)
    ours = [HParamsLoggerCallback(), recovery.ResultJsonLogger(), recovery.ProgressCsvLogger()]

    class Tuner:
        def fit(self):
            return _create_default_callbacks(list(ours))

    made = runner.fit(Tuner())
    assert runner.TUNE_AUTO_LOGGERS_OFF not in os.environ
    loggers = (CSVLoggerCallback, JsonLoggerCallback, TBXLoggerCallback)
    assert [c for c in made if isinstance(c, loggers)] == ours[1:]
    assert not any(isinstance(c, TBXLoggerCallback) for c in made)


# ------------------------------------------------------------------------------------------------
# 3. --dry-run, python -m sweeps
# ------------------------------------------------------------------------------------------------


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys, ray_session):
    from sweeps import dqn_cabs

    storage = tmp_path / "runs"
    rc = dqn_cabs.main(["--storage-path", str(storage), "--name", "exp", "--dry-run"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "[plan] each trial:" in out and "trial(s) at once" in out
    assert f"[dry-run] folder: {storage / 'exp'} (not created)" in out
    assert "[dry-run] budget: sweep wall-clock 900 s" in out
    assert "[dry-run]   hp/lr: loguniform(" in out
    assert "[dry-run] trial 1: the tuned defaults" in out
    # trial 0's settings, as tests/snapshots/trial0/dqn_cabs.json pins them; --verbose lists them
    n = len(json.loads((ROOT / "tests/snapshots/trial0/dqn_cabs.json").read_text()))
    assert f"[dry-run] trial 0 sets {n} settings away from the algorithm's defaults (--" in out
    assert dqn_cabs.main(["--storage-path", str(storage), "--dry-run", "--verbose"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if " = " in line]
    assert len(listed) == n and any(line.startswith("[dry-run]   lr = ") for line in listed)
    assert not storage.exists()


def test_python_m_sweeps_lists_every_sweep_with_its_description(capsys):
    from sweeps.__main__ import main

    assert main([]) == 0
    out = capsys.readouterr().out
    expected = {f"{a}_{e}" for a in ("dqn", "apex", "impala", "appo") for e in ("cabs", "pong")}
    assert expected <= set(SWEEPS)
    for name in [*SWEEPS, "benchmark", "throughput", "profiling", "evaluate"]:
        line = next(line for line in out.splitlines() if line.split()[:1] == [name])
        assert len(line.split()) > 3  # a description follows the name
    assert main(["dqn_cabs"]) == 2


# ------------------------------------------------------------------------------------------------
# 4. --set, --eval-interval 0
# ------------------------------------------------------------------------------------------------


def test_set_overrides_a_tuned_default_and_the_first_trial_follows(tmp_path):
    from sweeps.harness.tuned import tuned_point

    sweep = _sweep("dqn_cabs")
    epsilon = "epsilon=[[0, 1.0], [2000, 0.05]]"
    config = _config(sweep, tmp_path, "--set", "lr=1e-3", "--set", epsilon)
    assert config["lr"] == 1e-3 and config["epsilon"] == [[0, 1.0], [2000, 0.05]]
    point, unexpressed = tuned_point(sweep.sample_params, config)
    assert unexpressed == [] and point["hp/lr"] == 1e-3
    assert point["hp/epsilon_decay_steps"] == 2000
    huber = _config(sweep, tmp_path, "--set", "td_error_loss_fn=huber")
    assert huber["td_error_loss_fn"] == "huber"


def test_set_model_config_changes_only_the_keys_it_names(tmp_path):
    from sweeps.harness.runner import parse

    sweep = _sweep("appo_pong")
    net = [[16, 8, 4, "valid"], [32, 4, 2, "valid"], [256, 3, 1, "valid"]]
    setting = "model_config=" + json.dumps({"conv_filters": net})
    _, config = parse(sweep, ["--storage-path", str(tmp_path), "--set", setting])
    assert config.model_config["conv_filters"] == net
    assert config.model_config["head_fcnet_hiddens"] == [256]  # kept
    assert config.model_config["vf_share_layers"] is True


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--set", "no_such_setting=1"], "has no setting"),
        (["--set", "lr"], "expected KEY=VALUE"),
        (["--set", "validate=1"], "has no setting"),  # a method, not a setting
        (["--set", 'model_config={"no_such_key": 1}'], "unexpected keyword argument"),
        (["--set", "model_config=[1]"], "expected a JSON object"),
        (["--set", 'learner_config_dict={"entropy_target": 0.3}'], "IMPALA and APPO learners"),
        (
            ["--set", 'learner_config_dict={"entropy_targt": 0.3}'],
            "unknown key(s) ['entropy_targt']",
        ),
    ],
)
def test_set_refuses_unknown_keys_in_one_line(argv, words, tmp_path, capsys):
    from sweeps import dqn_cabs

    try:
        rc = dqn_cabs.main(["--storage-path", str(tmp_path / "runs"), *argv])
    except SystemExit as exc:  # the parser's own refusal
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "runs").exists()


def test_settings_that_do_not_fit_together_are_refused_in_one_line_before_ray(tmp_path, capsys):
    """RLlib's own validation runs before Ray starts: a fragment that no longer divides the
    tuned minibatch is one line naming both, exit 2, no run folder (not a traceback from inside
    the placement plan, after Ray is up)."""
    from sweeps import appo_pong

    argv = ["--storage-path", str(tmp_path / "runs"), "--set", "rollout_fragment_length=50"]
    assert appo_pong.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err  # RLlib's deprecation warnings may come before the line
    line = err.strip().splitlines()[-1]
    assert "appo_pong's tuned defaults with --set rollout_fragment_length" in line
    assert "`minibatch_size` (160)" in line and "suppress" not in err
    assert not (tmp_path / "runs").exists()


def test_eval_interval_zero_turns_greedy_evaluation_off(tmp_path):
    from sweeps.harness import keys
    from sweeps.harness.cli import parse_args
    from sweeps.harness.runner import _judged_by

    sweep = _sweep("dqn_cabs")
    assert _config(sweep, tmp_path, "--eval-interval", "0")["evaluation_interval"] is None
    args = parse_args(sweep, ["--storage-path", str(tmp_path), "--eval-interval", "0"])
    assert _judged_by(sweep, args) == keys.RETURN_MEAN
    args = parse_args(sweep, ["--storage-path", str(tmp_path)])
    assert _judged_by(sweep, args) == keys.GREEDY_RETURN


def test_benchmark_mode_drops_the_sweeps_search_budget(tmp_path):
    """A sweep's default --time-budget-s is its search's; a benchmark runs every seed to its
    stop (--stop-train-time-s), unless a budget is given on the command line."""
    from sweeps.harness.cli import parse_args

    sweep = _sweep("dqn_cabs")
    argv = ["--storage-path", str(tmp_path)]
    assert parse_args(sweep, argv).time_budget_s == sweep.defaults["time_budget_s"]
    assert parse_args(sweep, [*argv, "--benchmark-seeds", "3"]).time_budget_s is None
    given = [*argv, "--benchmark-seeds", "3", "--time-budget-s", "50"]
    assert parse_args(sweep, given).time_budget_s == 50.0


# ------------------------------------------------------------------------------------------------
# 5. --help
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SWEEPS)
def test_help_shows_how_to_run_and_every_default_once(name):
    import re

    from sweeps.harness.cli import build_parser

    text = build_parser(_sweep(name)).format_help()
    assert "How to run" in text and "Results to expect" in text
    assert "(default: None)" not in text and "(default: False)" not in text
    flags = re.split(r"\n  (?=-)", text)
    assert all(block.count("default") <= 1 for block in flags if block.startswith("--"))


# ------------------------------------------------------------------------------------------------
# 6. Storage URIs go to Tune untouched
# ------------------------------------------------------------------------------------------------


def test_s3_storage_path_reaches_tune_untouched(tmp_path, monkeypatch):
    """--storage-path s3://bucket/runs: Tune's RunConfig gets the URI as given (not a local
    folder named "s3:"), and run.json goes beside Tune's own files through pyarrow's filesystem
    for it: here a mocked S3 whose bucket is a local folder."""
    import json

    import pyarrow.fs
    import ray
    from ray import tune

    from sweeps.harness.placement import Plan
    from sweeps.harness.runner import parse, search

    resolved, run_configs = [], []

    class MockS3(pyarrow.fs.FileSystem):  # stands in for pyarrow.fs.FileSystem.from_uri only
        @staticmethod
        def from_uri(uri):
            resolved.append(uri)
            assert uri.startswith("s3://"), uri
            bucket = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
            return bucket, uri.removeprefix("s3://")

    class RecordingRunConfig(tune.RunConfig):
        def __post_init__(self):
            run_configs.append(self)
            super().__post_init__()

    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray started"))
    monkeypatch.setattr(pyarrow.fs, "FileSystem", MockS3)
    monkeypatch.setattr(tune, "RunConfig", RecordingRunConfig)
    monkeypatch.chdir(tmp_path)  # where a local folder named "s3:" would appear
    sweep = _sweep("dqn_cabs")
    args, config = parse(sweep, ["--storage-path", "s3://bucket/runs", "--name", "exp"])
    plan = Plan(cpus=2.0, gpus=0.0, bundles=[{"CPU": 1.0}], strategy="PACK", concurrent=1)
    search(sweep, args, config, plan)

    (run_config,) = run_configs
    assert (run_config.storage_path, run_config.name) == ("s3://bucket/runs", "exp")
    assert "s3://bucket/runs" in resolved  # Tune's own storage context resolved the URI
    folder = tmp_path / "bucket" / "runs" / "exp"
    assert json.loads((folder / "run.json").read_text())["sweep"] == "dqn_cabs"
    assert (folder / "tuner.pkl").is_file()  # written by Tune through the same filesystem
    assert not (tmp_path / "s3:").exists()


def _load_study(name: str, url: str):
    import optuna

    return optuna.load_study(study_name=name, storage=url)


def test_optuna_storage_holds_the_study_named_after_the_run(tmp_path):
    """--optuna-storage sqlite:///...: the searcher's study is in that file under the run's
    name; the tuned defaults wait there as the first (enqueued) trial, and a finished trial
    is told to it."""
    import pickle

    from sweeps.harness.cli import parse_args
    from sweeps.harness.runner import make_searcher
    from sweeps.harness.tuned import tuned_point

    sweep = _sweep("dqn_cabs")
    db = tmp_path / "db" / "optuna.db"
    argv = ["--storage-path", str(tmp_path), "--name", "run-1", "--optuna-storage"]
    args = parse_args(sweep, [*argv, f"sqlite:///{db}"])
    assert args.optuna_storage == f"sqlite:///{db}" and not db.parent.exists()  # not yet made
    point, _ = tuned_point(sweep.sample_params, sweep.make_config(args).to_dict())
    searcher = make_searcher(sweep, args, "m", points_to_evaluate=[point])

    (waiting,) = _load_study("run-1", args.optuna_storage).trials
    assert waiting.state.name == "WAITING"
    assert waiting.system_attrs["fixed_params"] == pytest.approx(point)  # Optuna's enqueue
    searcher.suggest("t0")
    searcher.on_trial_complete("t0", {"m": 42.0, "training_iteration": 1})
    (done,) = _load_study("run-1", args.optuna_storage).trials
    assert done.state.name == "COMPLETE" and done.value == 42.0
    assert done.params == pytest.approx(point)
    # Tune pickles the searcher into the sweep folder; a resumed sweep goes on in the same study.
    pickle.loads(pickle.dumps(searcher)).suggest("t1")
    assert len(_load_study("run-1", args.optuna_storage).trials) == 2


def test_optuna_storage_sqlite_path_is_made_absolute(tmp_path, monkeypatch):
    from sweeps.harness.cli import parse_args

    monkeypatch.chdir(tmp_path)
    argv = ["--storage-path", "runs", "--optuna-storage", "sqlite:///studies/optuna.db"]
    args = parse_args(_sweep("dqn_cabs"), argv)
    assert args.optuna_storage == f"sqlite:///{tmp_path}/studies/optuna.db"


def test_a_database_password_is_not_kept_in_the_record_or_printed():

    from sweeps.harness import storage

    url = "postgresql://ann:s3cret@db.example/optuna"
    assert storage.without_password(url) == "postgresql://ann:***@db.example/optuna"
    line = f"python sweeps/apex_cabs.py --optuna-storage {url} --name x"
    assert "s3cret" not in storage.without_password(line)
    assert (
        storage.without_password("sqlite:////tmp/a:b/optuna.db") == "sqlite:////tmp/a:b/optuna.db"
    )
    call = storage.study_call("x", url)
    assert "s3cret" not in call and "ann:***@" in call


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("foo://host/db", "not a database URL Optuna can use"),
        ("sqlite:/runs/optuna.db", "two slashes (sqlite://...)"),
        ("/proc/x/optuna.journal", "cannot be created"),
        ("sqlite://", "an in-memory database keeps nothing"),
        ("sqlite:////proc/x/optuna.db", "cannot be created"),
        ("sqlite:///{tmp}", "is a folder"),
    ],
)
def test_bad_optuna_storage_is_one_line_exit_2_before_ray(url, words, tmp_path, capsys):
    from sweeps import dqn_cabs

    url = url.replace("{tmp}", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        dqn_cabs.main(["--storage-path", str(tmp_path / "runs"), "--optuna-storage", url])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--optuna-storage {url}: " in err[0] and words in err[0], err
    assert list(tmp_path.iterdir()) == []  # nothing written


def _results(cb, trial, returns, first_steps=1):
    """``returns`` as the trial's training returns, one result each, 1000 env steps apart."""
    from sweeps.harness import keys

    for steps, value in enumerate(returns, first_steps):
        result = {keys.SUITE: {"env_steps": 1000 * steps}, "env_runners": {}}
        result["env_runners"]["episode_return_mean"] = value
        cb.on_trial_result(0, [trial], trial, result)


def test_the_live_line_says_when_a_trial_collapses_and_when_it_recovers(capsys):
    """The report's rule, live: a training return above the random policy's, then a mean of its
    last results below it, each by more than the return's own step-to-step noise, held for 3
    results in a row, is one COLLAPSED line (not one per result) naming where it fell,
    'collapsed' in the table and a count in the sweep's line; climbing back, held as long, is
    one more line."""
    from sweeps.harness.reporting import ProgressCallback

    cb = ProgressCallback(interval_s=1e9, random_return=-500.0)
    trial = _FakeTrial("aaa", "RUNNING")
    # The rule holds from 5000 env steps (at 4000, -533.3: below, but by less than the noise,
    # 200); the line waits for 6000 and 7000 to agree.
    _results(cb, trial, [-300.0, -100.0, -700.0, -800.0, -900.0, -950.0])
    assert "COLLAPSED" not in capsys.readouterr().out
    _results(cb, trial, [-960.0], first_steps=7)
    out = capsys.readouterr().out
    assert out.count("COLLAPSED") == 1
    assert (
        "trial aaa COLLAPSED at 5000 env steps: its training return -936.7 (the mean of its "
        "last 3 results) is below the random policy's -500.0, after a best of -100.0"
    ) in out
    assert "1 collapsed" in cb.status_line()
    assert "RUNNING, collapsed" in cb.table()
    # 8000: -636.7, still below by more than the noise (100); 9000 on: not below.
    _results(cb, trial, [0.0, 100.0, 150.0, 200.0], first_steps=8)
    out = capsys.readouterr().out
    assert out.count("recovered") == 1
    assert "trial aaa recovered at 9000 env steps: its training return 150.0 is no" in out
    assert "collapsed" not in cb.status_line() and "collapsed" not in cb.table()


def test_a_dip_about_the_random_policys_return_early_in_a_run_says_nothing(capsys):
    """DQN's first MinAtar Breakout run of record (family-before-dqn-s0-minatar-breakout-v1,
    random policy 0.4): early, its return's noise so far was small, and a dip of a result or two
    below the random policy's return met the rule, to leave it the next result. The live line
    said COLLAPSED and recovered within ~260 env steps, twice (the first is here); now it says
    neither. A trial that ends before a fall settles gets its line at its end: the report's
    verdict."""
    from sweeps.harness.reporting import ProgressCallback

    cb = ProgressCallback(interval_s=1e9, random_return=0.4)
    # That run's first 32 training returns (its progress.csv): the rule held at the 27th and
    # 28th only (the mean of 0.25, 0.25, 0.15: 0.22), the 29th's 0.9 ended it.
    recorded = [0.35, 0.4, 0.6, 0.3, 0.5, 0.35, 0.45, 0.3, 0.65, 0.5, 0.4, 0.6, 0.3, 0.35, 0.6]
    recorded += [1.0, 0.45, 0.4, 0.45, 0.55, 0.45, 0.25, 0.2, 0.5, 0.25, 0.25, 0.15, 0.3, 0.9]
    recorded += [0.5, 0.15, 0.65]
    _results(cb, _FakeTrial("aaa", "RUNNING"), recorded)
    assert "COLLAPSED" not in capsys.readouterr().out
    # The same curve ended at its 27th result: the fall not yet settled, said at the end.
    ended = _FakeTrial("bbb", "RUNNING")
    _results(cb, ended, recorded[:27])
    assert "COLLAPSED" not in capsys.readouterr().out
    cb.on_trial_complete(0, [ended], ended)
    out = capsys.readouterr().out
    assert "trial bbb COLLAPSED at 27000 env steps" in out and out.count("COLLAPSED") == 1


def test_no_collapse_is_watched_without_a_random_policy(capsys):
    from sweeps.harness.reporting import ProgressCallback

    cb = ProgressCallback(interval_s=1e9)  # the cab env and Pong: no random run in the record
    trial = _FakeTrial("aaa", "RUNNING")
    for value in [100.0, -900.0, -900.0, -900.0]:
        cb.on_trial_result(0, [trial], trial, {"env_runners": {"episode_return_mean": value}})
    assert "COLLAPSED" not in capsys.readouterr().out
