"""The typed run record (``sweeps/harness/record.py``): records written before it had a schema
version read, round-trip with the same key names, keep keys it does not know, and a field of the
wrong type is one ValueError naming the file and the field. No Ray is started."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sweeps.harness.record import RECORD_FILE, SCHEMA_VERSION, Machine, RunRecord

# A finished sweep's run.json as the runner wrote it before the record had a schema version
# (version 1): every key it wrote, one resume, one failure and the held-out summary.
V1_RECORD: dict[str, Any] = {
    "sweep": "dqn_cabs",
    "algo": "dqn",
    "env": "cabs",
    "variant": "base",
    "env_id": "Cabs-v0",
    "kind": "sweep",
    "command": "python sweeps/dqn_cabs.py --num-samples 2",
    "argv": ["--num-samples", "2"],
    "args": {"num_samples": 2, "seed": 0, "variant": "base", "optuna_storage": None},
    "hyperparameters": ["lr"],
    "search_space": {"hp/lr": "loguniform(0.0001, 0.003)"},
    "base_config": {"lr": 0.0005, "gamma": 0.99},
    "metric": "suite/greedy_return",
    "mode": "max",
    "stop": {"num_env_steps_sampled_lifetime": 20000, "suite/greedy_return": None},
    "scheduler": {"type": "asha", "time_attr": "num_env_steps_sampled_lifetime", "max_t": 20000},
    "optimum": 3120.5,
    "references": None,
    "targets": [1560.25, 2808],
    "git_commit": "0123456789abcdef0123456789abcdef01234567",
    "git_dirty": False,
    "versions": {"python": "3.11.7", "ray": "2.60.0"},
    "machine": {
        "cpus": 2.0,
        "gpus": 0.0,
        "cpu_model": "Fake CPU",
        "platform": "Linux-x86_64",
        "load_at_start": 0.5,
        "load_at_end": 1.75,
    },
    "plan": {"bundles": [{"CPU": 1.0}], "strategy": "PACK", "concurrent": 2},
    "started_at": "2025-01-01T00:00:00+00:00",
    "ended_at": "2025-01-01T01:00:00+00:00",
    "status": "finished",
    "first_trial": {"params": {"hp/lr": 0.0005}, "not_expressed": []},
    "failures": [{"trial": "DQN_1", "failure": 1, "iteration": 3, "retried": True, "error": "x"}],
    "held_out": {"episodes": 60, "seed": 1000, "best_trial": "DQN_1", "trials": []},
    "optuna_stale_trials_failed": 1,
    "resumes": [{"at": "2025-01-01T00:30:00+00:00", "previous_status": "interrupted"}],
}


def _write(folder: Path, record: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RECORD_FILE
    path.write_text(json.dumps(record))
    return path


def test_a_version_1_record_reads_with_its_types(tmp_path):
    record = RunRecord.read(_write(tmp_path, V1_RECORD))
    assert record.schema_version == 1  # no schema_version in the file
    assert record.sweep == "dqn_cabs" and record.kind == "sweep" and record.status == "finished"
    assert record.args == V1_RECORD["args"] and record.targets == [1560.25, 2808]
    assert isinstance(record.machine, Machine)
    assert (record.machine.cpus, record.machine.load_at_end) == (2.0, 1.75)
    assert record.resumes[0]["previous_status"] == "interrupted"
    assert record.extra == {}


def test_a_record_round_trips_with_the_same_key_names(tmp_path):
    path = _write(tmp_path / "old", V1_RECORD)
    RunRecord.read(path).write(str(tmp_path / "new" / RECORD_FILE))
    written = json.loads((tmp_path / "new" / RECORD_FILE).read_text())
    assert written == {**V1_RECORD, "schema_version": SCHEMA_VERSION}
    again = RunRecord.read(tmp_path / "new" / RECORD_FILE)
    assert again.schema_version == SCHEMA_VERSION
    assert again.to_json() == written


def test_a_new_record_writes_the_keys_the_untyped_record_wrote():
    """Fields that a run sets on the way (failures, held_out, resumes, ...) are left out until
    set, as before; everything else is written even when None."""
    started = {k: v for k, v in V1_RECORD.items() if k not in ("failures", "held_out")}
    del started["optuna_stale_trials_failed"], started["resumes"]
    started["machine"] = {k: v for k, v in V1_RECORD["machine"].items() if k != "load_at_end"}
    record = RunRecord.read(started)
    assert set(record.to_json()) == {*started, "schema_version"}
    assert set(record.to_json()["machine"]) == set(started["machine"])
    record.failures, record.machine.load_at_end = [], 1.0
    assert {"failures", "schema_version"} <= set(record.to_json())
    assert record.to_json()["machine"]["load_at_end"] == 1.0


def test_the_machine_speed_is_written_once_measured(tmp_path):
    """The raw env rate at start and end (sweeps/harness/machine_speed.py): absent from records
    written before it (and from a run that could not measure it), read back once written."""
    record = RunRecord.read(_write(tmp_path, V1_RECORD))
    assert record.machine.raw_env_steps_per_s_at_start is None
    assert "raw_env_steps_per_s_at_start" not in record.to_json()["machine"]
    record.machine.raw_env_steps_per_s_at_start = 4458.0
    record.machine.raw_env_steps_per_s_at_end = 1421.0
    record.write(str(tmp_path / "new" / RECORD_FILE))
    again = RunRecord.read(tmp_path / "new" / RECORD_FILE).machine
    assert (again.raw_env_steps_per_s_at_start, again.raw_env_steps_per_s_at_end) == (4458, 1421)


def test_unknown_keys_are_kept_on_rewrite(tmp_path):
    body = copy.deepcopy(V1_RECORD)
    body["workload_notes"] = {"anything": [1, 2]}  # a key a later (or another) version wrote
    body["machine"]["memory_gb"] = 128
    record = RunRecord.read(_write(tmp_path, body))
    assert record.extra == {"workload_notes": {"anything": [1, 2]}}
    assert record.machine.extra == {"memory_gb": 128}
    record.status = "running"
    record.write(str(tmp_path / RECORD_FILE))
    written = json.loads((tmp_path / RECORD_FILE).read_text())
    assert written["workload_notes"] == {"anything": [1, 2]}
    assert written["machine"]["memory_gb"] == 128 and written["status"] == "running"


def test_a_minimal_old_record_reads_with_defaults():
    record = RunRecord.read({"sweep": "dqn_pong", "args": {}})
    assert record.schema_version == 1 and record.args == {} and record.status is None
    assert record.targets == [] and record.hyperparameters == [] and record.mode == "max"
    assert record.machine == Machine() and record.resumes is None
    assert RunRecord.read({"sweep": "dqn_pong"}).args is None  # no recorded arguments


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("targets", "50", "field 'targets' is str, expected list[float]"),
        ("status", 3, "field 'status' is int, expected str | None"),
        ("git_dirty", 1, "field 'git_dirty' is int, expected bool | None"),
        ("machine", {"cpus": "two"}, "field 'machine.cpus' is str, expected float | None"),
        ("machine", None, "field 'machine' is null, expected object"),
        ("args", ["--seed", "0"], "field 'args' is list, expected dict[str, Any] | None"),
    ],
)
def test_a_wrong_type_is_one_value_error_naming_the_file_and_field(tmp_path, field, value, words):
    path = _write(tmp_path, {**V1_RECORD, field: value})
    with pytest.raises(ValueError) as error:
        RunRecord.read(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(path)) and words in message, message


@pytest.mark.parametrize(
    "text, words",
    [("{", "not JSON"), ("[1, 2]", "not a JSON object"), ('{"schema_version": 99}', "newer")],
)
def test_an_unreadable_record_is_one_value_error_naming_the_file(tmp_path, text, words):
    path = tmp_path / RECORD_FILE
    path.write_text(text)
    with pytest.raises(ValueError, match=words) as error:
        RunRecord.read(path)
    assert str(error.value).startswith(str(path)) and "\n" not in str(error.value)


def test_a_folder_s_record_is_none_where_it_says_nothing_of_the_run(tmp_path):
    """``RunRecord.of_folder``: the record; None for no folder, no file, a file, or a record
    without the run's arguments; a ValueError naming the file for one that is not a record."""
    assert RunRecord.of_folder(_write(tmp_path / "run", V1_RECORD).parent).args["num_samples"] == 2
    assert RunRecord.of_folder(tmp_path / "none") is None
    (tmp_path / "file").write_text("x")
    assert RunRecord.of_folder(tmp_path / "file") is None
    assert RunRecord.of_folder(_write(tmp_path / "no-args", {"sweep": "dqn_cabs"}).parent) is None
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / RECORD_FILE).write_text('{"sweep": ')
    with pytest.raises(ValueError, match="torn"):
        RunRecord.of_folder(tmp_path / "torn")


def test_json_lines_passes_over_a_torn_last_line_and_counts_it():
    from sweeps.harness.files import json_lines

    text = '{"a": 1}\n\n[1]\n{"a": 2}\n{"a": '
    assert json_lines(text) == ([{"a": 1}, {"a": 2}], 2)
    assert json_lines("") == ([], 0)


def test_collect_reads_the_record_and_skips_one_of_the_wrong_type(tmp_path):
    from analysis.run_folder import read_experiment

    good, bad = tmp_path / "good", tmp_path / "bad"
    for folder in (good, bad):
        trial = folder / "DQN_1"
        trial.mkdir(parents=True)
        (trial / "params.json").write_text(json.dumps({"seed": 0, "lr": 0.0005}))
        (trial / "result.json").write_text(json.dumps({"training_iteration": 1}) + "\n")
    _write(good, V1_RECORD)
    _write(bad, {**V1_RECORD, "targets": {"a": 1}})
    skipped: list[str] = []
    (row,) = read_experiment(good, skipped)
    assert (row["sweep"], row["cpus"], row["load"], row["run_status"]) == (
        "dqn_cabs",
        2.0,
        "0.5 -> 1.8",
        "finished",
    )
    assert row["targets"] == "[1560.25, 2808.0]" and row["hp/lr"] == 0.0005
    assert read_experiment(bad, skipped) == []
    assert len(skipped) == 1 and "field 'targets' is dict" in skipped[0]


def test_a_resumed_record_notes_the_resume_and_keeps_the_rest(tmp_path):
    from sweeps.harness.recovery import resumed_record
    from sweeps.harness.settings import Settings

    path = _write(tmp_path, {**V1_RECORD, "status": "interrupted", "workload_notes": "kept"})
    record = resumed_record(str(path), Settings(argv=["--resume", str(tmp_path)]))
    assert (record.status, record.ended_at) == ("running", None)
    assert [r["previous_status"] for r in record.resumes] == ["interrupted", "interrupted"]
    assert record.resumes[-1]["argv"] == ["--resume", str(tmp_path)]
    assert "raw_env_steps_per_s" not in record.resumes[-1]  # not measured
    assert record.extra == {"workload_notes": "kept"} and record.args == V1_RECORD["args"]
    args = Settings(argv=["--resume", str(tmp_path)])
    again = resumed_record(str(path), args, raw_env_steps_per_s=1421.0)
    assert again.resumes[-1]["raw_env_steps_per_s"] == 1421.0  # the machine's speed at resume
