"""Faults at random moments: the short version of ``benchmarks/faults.py`` (a few random driver
interruptions at a fixed seed, then its checks), and the fixes it led to: a trial's result rows
written in the sweep folder as they come and trimmed to the checkpoint it restarts from, Optuna's
journal file repaired after a killed writer, Optuna trials a killed driver left RUNNING closed at
the end.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import random
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _faults_module():
    """``benchmarks/faults.py`` (a script, not a package), imported by path."""
    spec = importlib.util.spec_from_file_location("faults", REPO / "benchmarks" / "faults.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("faults", module)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------------
# Result rows of a restarted trial: trimmed to its checkpoint
# ------------------------------------------------------------------------------------------------


def _row(i: int) -> str:
    return json.dumps({"training_iteration": i, "trial_id": "t"}) + "\n"


def test_result_json_trimmed_to_the_checkpoint(tmp_path):
    from sweeps.harness.recovery import trim_result_json

    path = tmp_path / "result.json"
    # Rows 1-4, then half a row 5 (a driver killed mid-write).
    path.write_text("".join(_row(i) for i in range(1, 5)) + '{"training_iteration": 5, "tr')
    with path.open("a") as appending:  # Tune's logger holds the file open for appending
        assert trim_result_json(path, keep_through=2) == 3
        appending.write(_row(3))
    assert [json.loads(line)["training_iteration"] for line in path.read_text().splitlines()] == [
        1,
        2,
        3,
    ]
    assert trim_result_json(path, keep_through=3) == 0  # nothing past the checkpoint: untouched
    assert trim_result_json(tmp_path / "missing.json", keep_through=1) == 0


def test_progress_csv_trimmed_to_the_checkpoint(tmp_path):
    from sweeps.harness.recovery import trim_progress_csv

    path = tmp_path / "progress.csv"
    path.write_text("a,training_iteration,b\n1,1,x\n2,2,y\n3,3,z\n4,4")
    assert trim_progress_csv(path, keep_through=2) == 2
    assert path.read_text() == "a,training_iteration,b\n1,1,x\n2,2,y\n"
    assert trim_progress_csv(path, keep_through=0) == 2
    assert path.read_text() == "a,training_iteration,b\n"  # the header stays


class _Trial:
    """What the result loggers read of a Tune trial whose sweep folder is on this machine."""

    def __init__(self, root: Path) -> None:
        import pyarrow.fs as pafs

        self.trial_id, self.config = "t", {"lr": 0.1}
        self.path, self.local_path = str(root / "sweep" / "t"), str(root / "staging" / "t")
        self.storage = types.SimpleNamespace(storage_filesystem=pafs.LocalFileSystem())
        self.latest_checkpoint_result = None

    def init_local_path(self) -> None:
        Path(self.local_path).mkdir(parents=True, exist_ok=True)


def test_result_files_are_written_in_the_sweep_folder_row_by_row(tmp_path):
    """No Ray: each row is in the sweep folder's result.json and progress.csv as soon as it is
    logged (Tune's staging copy lagged: a killed driver left rows missing before a newer
    checkpoint), nothing of them in the staging folder; a restart from the checkpoint of
    iteration 2 trims both files to it, and the re-reported row follows."""
    from sweeps.harness.recovery import ProgressCsvLogger, ResultJsonLogger

    trial = _Trial(tmp_path)
    loggers = [ResultJsonLogger(), ProgressCsvLogger()]

    def log(i: int) -> None:
        for logger in loggers:
            logger.log_trial_result(i, trial, {"training_iteration": i, "x": {"y": i}})

    def iterations() -> tuple[list[int], list[int]]:
        rows = Path(trial.path, "result.json").read_text().splitlines()
        with Path(trial.path, "progress.csv").open() as f:
            csv_rows = list(csv.DictReader(f))
        return (
            [json.loads(r)["training_iteration"] for r in rows],
            [int(r["training_iteration"]) for r in csv_rows],
        )

    for logger in loggers:
        logger.log_trial_start(trial)
    for i in (1, 2, 3):
        log(i)
        assert iterations() == ([*range(1, i + 1)],) * 2  # flushed, files still open
    assert sorted(p.name for p in Path(trial.local_path).iterdir()) == ["params.json", "params.pkl"]

    for logger in loggers:  # the trial fails and restarts from its checkpoint of iteration 2
        logger.log_trial_end(trial, failed=True)
    trial.latest_checkpoint_result = types.SimpleNamespace(metrics={"training_iteration": 2})
    for logger in loggers:
        logger.log_trial_start(trial)
    log(3)
    assert iterations() == ([1, 2, 3],) * 2


def test_a_gone_checkpoint_is_replaced_by_none_past_the_logged_rows(tmp_path):
    """No Ray: CheckpointGuard's pick, the newest checkpoint with metrics whose iteration the
    trial's result.json reaches."""
    import pyarrow.fs as pafs

    from sweeps.harness.recovery import (
        CHECKPOINT_METRICS_FILE,
        last_logged_iteration,
        newest_checkpoint,
    )

    fs, trial = pafs.LocalFileSystem(), tmp_path / "t"
    for index, iteration in [(1, 2), (2, 4), (3, None)]:  # 3: saved, its metrics never written
        folder = trial / f"checkpoint_{index:06d}"
        folder.mkdir(parents=True)
        if iteration:
            (folder / CHECKPOINT_METRICS_FILE).write_text(
                json.dumps({"training_iteration": iteration})
            )
    results = trial / "result.json"
    results.write_text("".join(_row(i) for i in (1, 2, 3)) + '{"training_iter')
    logged = last_logged_iteration(fs, str(results))
    assert logged == 3
    assert newest_checkpoint(fs, str(trial))[1:] == (2, {"training_iteration": 4})
    assert newest_checkpoint(fs, str(trial), up_to=logged)[1] == 1
    assert newest_checkpoint(fs, str(trial), up_to=1) is None
    assert last_logged_iteration(fs, str(tmp_path / "none.json")) == 0


def test_a_half_deleted_checkpoint_is_passed_over(tmp_path):
    """A driver killed while Tune deleted an old checkpoint left its folder half deleted (the
    random interruptions saw a restore fail on a missing file): each checkpoint's files are
    listed beside its metrics when it is registered, and one missing a listed file or its
    metrics file is not whole, so the guard passes it over for the newest whole one."""
    import types

    import pyarrow.fs as pafs
    from ray.tune import Checkpoint

    from sweeps.harness.recovery import CheckpointGuard, newest_checkpoint

    fs, trial_dir = pafs.LocalFileSystem(), tmp_path / "t"
    guard = CheckpointGuard()
    for index in (1, 2, 3):
        folder = trial_dir / f"checkpoint_{index:06d}"
        (folder / "learner").mkdir(parents=True)
        (folder / "learner" / "state.pkl").write_bytes(b"x" * index)
        (folder / "algorithm_state.pkl").write_bytes(b"y")
        trial = types.SimpleNamespace(last_result={"training_iteration": 2 * index})
        guard.on_checkpoint(0, [], trial, Checkpoint(str(folder)))
    assert newest_checkpoint(fs, str(trial_dir))[1:] == (3, {"training_iteration": 6})
    (trial_dir / "checkpoint_000003" / "learner" / "state.pkl").unlink()  # cut short here,
    (trial_dir / "checkpoint_000002" / "sweep_checkpoint_metrics.json").unlink()  # and here
    assert newest_checkpoint(fs, str(trial_dir))[1:] == (1, {"training_iteration": 2})
    (trial_dir / "checkpoint_000001" / "algorithm_state.pkl").write_bytes(b"yy")  # not its own
    assert newest_checkpoint(fs, str(trial_dir)) is None


def test_a_trial_whose_saved_state_names_no_checkpoint_goes_on_from_its_newest(tmp_path, capsys):
    """No Ray: a driver killed after a trial's first checkpoints and before the next save of the
    experiment state leaves a state naming none. The trial started over from nothing before,
    though its folder held checkpoints; now it goes on from the newest whole one whose rows its
    result.json holds, and numbers its next after it. A trial that never started (no folder
    yet) and one whose folder holds none are left to start as they are."""
    import types

    import pyarrow.fs as pafs

    from sweeps.harness.recovery import CHECKPOINT_METRICS_FILE, CheckpointGuard, restart_iteration

    trial_dir = tmp_path / "exp" / "trial_0"
    for index, iteration in [(0, 2), (1, 4), (2, 6)]:
        folder = trial_dir / f"checkpoint_{index:06d}"
        folder.mkdir(parents=True)
        (folder / CHECKPOINT_METRICS_FILE).write_text(json.dumps({"training_iteration": iteration}))
    (trial_dir / "result.json").write_text("".join(_row(i) for i in range(1, 6)))  # rows to 5

    class Pending(types.SimpleNamespace):
        """A pending Tune trial: its latest checkpoint is its checkpoint manager's."""

        @property
        def latest_checkpoint_result(self):
            return self.run_metadata.checkpoint_manager._latest_checkpoint_result

    def as_pending(name: str | None) -> Pending:
        manager = types.SimpleNamespace(_latest_checkpoint_result=None, _checkpoint_results=[])
        storage = types.SimpleNamespace(
            storage_filesystem=pafs.LocalFileSystem(),
            trial_dir_name=name,
            trial_fs_path=str(tmp_path / "exp" / (name or "")),
            current_checkpoint_index=0,
        )
        return Pending(
            trial_id=name or "new", status="PENDING", storage=storage,
            run_metadata=types.SimpleNamespace(checkpoint_manager=manager),
        )  # fmt: skip

    trial, new, empty = as_pending("trial_0"), as_pending(None), as_pending("trial_1")
    (tmp_path / "exp" / "trial_1").mkdir()
    CheckpointGuard().on_step_begin(0, [trial, new, empty])
    latest = trial.latest_checkpoint_result
    assert latest.checkpoint.path == str(trial_dir / "checkpoint_000001")  # iteration 4: rows to 5
    assert restart_iteration(trial) == 4 and trial.storage.current_checkpoint_index == 1
    assert "the saved state names no checkpoint" in capsys.readouterr().out
    assert new.latest_checkpoint_result is None and empty.latest_checkpoint_result is None


# ------------------------------------------------------------------------------------------------
# The Optuna study: journal file by default for a path, loadable after a kill, nothing RUNNING
# ------------------------------------------------------------------------------------------------


def test_optuna_journal_file_survives_a_half_written_record(tmp_path):
    import optuna

    from sweeps.harness import storage

    path = storage.optuna_storage_url(str(tmp_path / "studies" / "optuna.journal"))
    assert path == str(tmp_path / "studies" / "optuna.journal")
    study = optuna.create_study(study_name="run", storage=storage.optuna_storage(path))
    study.enqueue_trial({"x": 1.0})
    trial = study.ask()
    trial.suggest_float("x", 0.0, 2.0)
    study.tell(trial, 1.0)
    with open(path, "ab") as f:  # a writer killed in the middle of its next record
        f.write(b'{"op_code": 5, "worker_id": "w", "trial_id": 1, "st')
    assert storage.repair_journal(path)  # cut off (the runner does it on --resume)
    again = optuna.load_study(study_name="run", storage=storage.optuna_storage(path))
    assert [t.state.name for t in again.trials] == ["COMPLETE"]
    again.ask()  # and it goes on
    assert not storage.repair_journal(path)


def test_optuna_trials_left_running_are_closed(tmp_path):
    import optuna

    from sweeps.harness import storage
    from sweeps.harness.recovery import close_stale_study_trials

    path = str(tmp_path / "optuna.journal")
    study = optuna.create_study(study_name="run", storage=storage.optuna_storage(path))
    study.tell(study.ask(), 1.0)
    study.ask()  # asked by a driver that was killed before Tune saved its searcher
    assert close_stale_study_trials(path, "run") == 1
    states = [
        t.state.name for t in optuna.load_study(study_name="run", storage=path_storage(path)).trials
    ]
    assert states == ["COMPLETE", "FAIL"]
    assert close_stale_study_trials(None, "run") == 0


def test_a_trial_rerun_after_its_study_trial_completed_is_not_reported_again(tmp_path):
    """A driver killed after a trial completed (Optuna told) but before Tune saved its state
    runs the trial again on --resume: its reports reach a COMPLETE Optuna trial. Tune's
    OptunaSearch raised UpdateFinishedTrialError and the sweep died (benchmarks/faults.py seed 4);
    the study keeps its first completion."""
    import optuna

    from sweeps.harness.optuna_search import ResumableOptunaSearch

    path = str(tmp_path / "optuna.journal")
    searcher = ResumableOptunaSearch(
        space=lambda trial: {"x": trial.suggest_float("x", 0.0, 1.0)},
        metric="m",
        mode="max",
        study_name="run",
        storage=path_storage(path),
    )
    searcher.suggest("a")
    searcher.on_trial_result("a", {"m": 1.0, "training_iteration": 1})
    searcher.on_trial_complete("a", {"m": 1.0, "training_iteration": 1})
    searcher._completed_trials.discard("a")  # Tune's saved searcher: from before the completion
    searcher.on_trial_result("a", {"m": 5.0, "training_iteration": 2})  # the re-run: no raise
    searcher.on_trial_complete("a", {"m": 5.0, "training_iteration": 2})
    study = optuna.load_study(study_name="run", storage=path_storage(path))
    assert [(t.state.name, t.value) for t in study.trials] == [("COMPLETE", 1.0)]


def path_storage(path: str):
    from sweeps.harness import storage

    return storage.optuna_storage(path)


# ------------------------------------------------------------------------------------------------
# The short fault run: random interruptions at a fixed seed, resumed until done, then checked
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sweep_survives_random_interruptions(tmp_path):
    """benchmarks/faults.py's driver faults on a tiny sweep (2 DQN trials of 24 iterations,
    checkpoints every 2; with 8, a quiet machine finished the sweep before the first fault):
    SIGKILL of the process group, SIGINT, SIGTERM at random moments (seed 10: a SIGTERM while
    training, a SIGINT during start-up, a SIGKILL while training), each followed by --resume
    from the path alone; then every check passes."""
    faults = _faults_module()
    folder = tmp_path / "exp"
    argv = [
        *("--num-samples", "2", "--stop-timesteps", "24000", "--checkpoint-freq", "2"),
        *("--scheduler", "fifo"),  # every trial runs its 24 iterations: faults land mid-trial
        *("--eval-episodes", "1", "--progress-interval-s", "600", "--seed", "0"),
        *("--final-episodes", "0"),  # the checks read the table, not the held-out games
        *("--storage-path", str(tmp_path), "--name", "exp"),
        *("--optuna-storage", str(tmp_path / "exp.journal")),
    ]
    run = faults.drive_with_interruptions(
        "dqn_cabs",
        argv,
        folder,
        rng=random.Random(10),
        faults=3,
        delay_s=(0.5, 3.0),
        log_dir=tmp_path / "logs",
        study_file=tmp_path / "exp.journal",
    )
    logs = "\n".join(
        f"--- segment {i}: rc {s['rc']}, fault {s['fault']} ({s['fault_phase']}, at "
        f"{s['fault_at_s']} s), hung {s['hung']}, run record {s['record_status']!r}, "
        f"restarted {s.get('restarted_from_scratch', False)}\n{Path(s['log']).read_text()[-3000:]}"
        for i, s in enumerate(run["segments"], 1)
    )
    assert run["rc"] == 0, logs
    assert len(run["faults"]) >= 2, run["segments"]  # the last may find the sweep done
    assert all(s["processes_left"] == 0 or s["fault"] for s in run["segments"])
    check = faults.check_sweep(folder)
    assert check["ok"], (check["problems"], logs)
    assert check["trials_in_tune_state"] == check["trial_folders"] == 2
    assert check["study"]["trials"] == {"COMPLETE": 2}
    assert check["best"] is not None


@pytest.mark.slow
def test_impala_trial_survives_its_env_runner_killed(tmp_path):
    """IMPALA (and APPO) sample on the local env runner while the remote one is down; before
    that runner had an env, a SIGKILL of the only env runner failed the trial (a Tune retry from
    the start, restarts counted 0: benchmarks/faults.py runners). Now RLlib restarts the runner,
    counts it, and the trial goes on without a retry."""
    faults = _faults_module()
    rc = faults.main(
        [
            *("runners", "--algos", "impala", "--kills", "1", "--no-baseline"),
            *("--stop-timesteps", "60000", "--delay-s", "0.5,1.5"),
            *("--out-dir", str(tmp_path), "--name", "kill"),
        ]
    )
    summary = json.loads((tmp_path / "kill" / "summary.json").read_text())
    run = summary["runs"][0]["faulty"]
    log = Path(run["log"]).read_text()[-3000:]
    assert len(run["kills"]) == 1, log
    assert run["check"]["env_runner_restarts"] == 1, log
    assert run["check"]["tune_retries"] == 0, log
    assert rc == 0 and run["rc"] == 0, log


def _driver_summary(name: str, faults: list[str], wall: float, base: float) -> dict:
    check = {
        "ok": True,
        "problems": [],
        "trials_expected": 3,
        "trials_in_tune_state": 3,
        "trial_folders": 3,
        "raw_duplicated_rows": 0,
        "collected_duplicated_rows": 0,
        "trials": {"t": {"result_json": {"missing": 0}}},
        "study": {"loadable": True, "trials": {"COMPLETE": 3}},
        "best": {"value": 2900.0},
        "resumes": len(faults),
    }
    run = {
        "seed": 0,
        "baseline": {"wall_s": base},
        "faulty": {"faults": faults, "segments": [], "wall_s": wall, "check": check},
        "overhead": round(wall / base, 3),
        "s_per_fault": round((wall - base) / len(faults), 1),
    }
    env = {
        "command": f"python benchmarks/faults.py driver --name {name}",
        "cpus": 2,
        "cpu_model": "test",
        "load_at_start": 1.0,
        "started_at": f"2026-01-01T00:00:0{len(faults)}",
        "git_commit": "0" * 40,
        "git_dirty": False,
        "versions": {},
    }
    return {"kind": "driver", "name": name, "environment": env, "runs": [run], "ok": True}


def test_report_counts_interruptions_per_run_and_over_all_runs():
    faults = _faults_module()
    text = faults.report(
        [
            _driver_summary("a", ["SIGKILL", "SIGINT"], wall=30.0, base=20.0),
            _driver_summary("b", ["SIGTERM", "SIGKILL", "SIGKILL"], wall=50.0, base=20.0),
        ]
    )
    assert "2 driver interruptions (SIGKILL 1, SIGINT 1, SIGTERM 0) over 1 seeds" in text
    assert "median 1.50x" in text and "median 2.50x" in text
    # The summary comes first: all runs together, then the overhead per sweep (both runs
    # interrupted the same sweep: the default reduced main job).
    summary = text.split("## driver: a")[0]
    assert summary.index("## Summary against the goals") < summary.index("Driver interruptions")
    assert "5 driver interruptions (SIGKILL 3, SIGINT 1, SIGTERM 1) over 2 seeds" in summary
    assert "0 trials lost, 0 run twice, 0 duplicated rows" in summary
    assert (
        "- `python sweeps/apex_cabs.py --num-samples 3 --stop-timesteps 10000` (a, b), 2 seed(s): "
        "wall-clock 1.50x, 2.50x, median 2.00x; one interruption costs a median 8 s"
    ) in summary
    # Runs made before the env steps were recorded show "-" for them.
    assert "| 30 s / 20 s | 1.5x | 5.0 | - / - | - | passed |" in text


def test_report_compares_wall_clock_per_env_step_when_recorded():
    """A faulty sweep that did more work (other trials pruned, other suggestions) than its
    fault-free twin: its overhead per env step is shown beside the raw wall-clock ratio."""
    faults = _faults_module()
    summary = _driver_summary("a", ["SIGKILL", "SIGINT"], wall=60.0, base=20.0)
    (run,) = summary["runs"]
    run["faulty"]["check"]["env_steps_sampled"] = 300_000
    run["baseline"]["check"] = {"env_steps_sampled": 100_000}
    run["overhead_per_env_step"] = round(60.0 / 300_000 / (20.0 / 100_000), 3)
    summary["environment"]["command"] += " --sweep-args=''"  # the full main job
    text = faults.report([summary])
    assert "| 60 s / 20 s | 3.0x | 20.0 | 300k / 100k | 1.0x | passed |" in text
    assert (
        "- `python sweeps/apex_cabs.py (the main job's defaults)` (a), 1 seed(s): wall-clock "
        "3.00x, median 3.00x; per env step 1.00x, median 1.00x;"
    ) in text


def test_recheck_rereads_a_driver_runs_folders_and_refuses_what_it_cannot(tmp_path, monkeypatch):
    """`faults.py recheck` gives a run made before a figure was recorded that figure from its own
    sweep folders (here: the env steps, hence the overhead per env step); a run that is not a
    driver run, or whose folders are gone, is refused with exit 2 and its summary unchanged."""
    faults = _faults_module()
    run = tmp_path / "old"
    run.mkdir()
    (run / "seed0-baseline").mkdir()
    (run / "seed0-faults").mkdir()
    before = _driver_summary("old", ["SIGKILL", "SIGINT"], wall=60.0, base=20.0)
    (run / "summary.json").write_text(json.dumps(before))
    steps = {"seed0-faults": 300_000, "seed0-baseline": 100_000}
    check = before["runs"][0]["faulty"]["check"]
    from benchmarks.faultlab import experiments  # where recheck reads the folders

    monkeypatch.setattr(
        experiments, "check_sweep", lambda f: check | {"env_steps_sampled": steps[f.name]}
    )

    assert faults.main(["recheck", str(run)]) == 0
    after = json.loads((run / "summary.json").read_text())
    assert after["runs"][0]["overhead_per_env_step"] == 1.0
    assert after["runs"][0]["overhead"] == 3.0 and after["ok"]
    assert set(after["rechecked"]) == {"at", "git_commit"}
    assert "- re-checked from its sweep folders (`faults.py recheck`)" in faults.report([after])

    other = tmp_path / "runners"
    other.mkdir()
    (other / "summary.json").write_text(json.dumps(before | {"kind": "runners"}))
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "summary.json").write_text(json.dumps(before))
    for bad in (other, gone):
        text = (bad / "summary.json").read_text()
        # Given with a good run: nothing is rewritten, the good one neither.
        good = (run / "summary.json").read_text()
        assert faults.main(["recheck", str(run), str(bad)]) == 2
        assert (bad / "summary.json").read_text() == text
        assert (run / "summary.json").read_text() == good


def test_report_takes_env_step_ratios_from_the_latest_run_whose_checks_passed():
    faults = _faults_module()

    def run(algo: str, seed: int, ratio: float, ok: bool) -> dict:
        check = {"ok": ok, "problems": [] if ok else ["1 kills, 0 counted"], "tune_retries": 0}
        faulty = {"rc": 0, "kills": [{"pid": 1, "at_s": 1.0}], "wall_s": 9.0, "check": check}
        faulty["steps_to_target"] = 1000.0 * ratio
        base = {"steps_to_target": 1000.0, "wall_s": 8.0}
        return {"algo": algo, "seed": seed, "faulty": faulty, "baseline": base} | {
            "steps_ratio": ratio
        }

    first = _driver_summary("first", ["SIGKILL"], 2.0, 1.0)
    first |= {"kind": "runners", "runs": [run("dqn", 0, 2.8, True), run("dqn", 1, 0.7, True)]}
    first["runs"] += [run("dqn", 2, 1.1, True), run("impala", 0, 0.8, False)]
    later = _driver_summary("later", ["SIGKILL", "SIGINT"], 2.0, 1.0)  # started after `first`
    later |= {"kind": "runners", "runs": [run("dqn", 0, 1.3, True), run("appo", 0, 0.9, False)]}
    text = faults.report([later, first])
    assert (
        "- dqn: 1.30x, 0.70x, 1.10x over 3 run(s) whose checks passed, median 1.10x, "
        "geometric mean 1.00x"
    ) in text
    assert "- impala: no run with passed checks and a fault-free reference" in text
    assert "- appo: no run with passed checks" in text


def test_report_summary_takes_the_latest_shard_run():
    """The summary's shard line reads the latest shard run (an earlier one failed its check
    before a fix); each run keeps its own section below."""
    faults = _faults_module()

    def shard(name: str, started: str, kills: int, counted: int) -> dict:
        check = {"ok": kills == counted, "problems": [], "replay_shard_restarts": counted}
        check |= {"tune_retries": 0, "trials_in_tune_state": 1}
        faulty = {"rc": 0, "kills": [{"pid": 1}] * kills, "wall_s": 9.0, "check": check}
        summary = _driver_summary(name, ["SIGKILL"], 2.0, 1.0)
        summary["environment"]["started_at"] = started
        return summary | {"kind": "shard", "runs": [{"algo": "apex", "seed": 0, "faulty": faulty}]}

    text = faults.report(
        [shard("late", "2026-01-02T00:00:00", 3, 3), shard("early", "2026-01-01T00:00:00", 1, 0)]
    )
    summary = text.split("## shard:")[0]
    assert "(late, the latest shard run): 3 replay-shard kills: 3 shard restarts counted" in summary
    assert "## shard: early" in text and "## shard: late" in text
