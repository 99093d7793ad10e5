"""Workloads (``sweeps/workloads/``): the machinery asks them, so a workload defined in one file
(``tests/toy_workload.py``) sweeps and benchmarks with no edit elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps import benchmark
from sweeps.workloads import CABS, GYM, NAMED, PONG, for_env
from tests import toy_workload

ROOT = Path(__file__).resolve().parents[1]


def test_each_env_finds_its_workload():
    assert for_env("cabs") is CABS and for_env("pong") is PONG
    assert for_env("CartPole-v1") is GYM and for_env("tests.gym_envs:Corridor") is GYM
    assert for_env("tests.toy_workload:TOY") is toy_workload.TOY
    assert for_env("no_such_module:TOY") is GYM  # the Gymnasium workload says why, in one line
    assert sorted(NAMED) == ["cabs", "pong"]


def test_pong_without_a_gpu_names_the_cores_and_the_cpus_ray_was_told_of():
    import pandas as pd

    def note(**columns) -> str:
        runs = pd.DataFrame({"gpus": [0, 0], **columns})
        return PONG.missed_note(runs, reached_everywhere=False)[0]

    told = "These runs had no GPU (2 cores; Ray was told of up to 5 CPUs):"
    assert note(cpus=[2, 5], cores=[2, 2]).startswith(told)
    assert note(cpus=[2, 2], cores=[2, 2]).startswith("These runs had no GPU (2 cores):")
    assert note(cpus=[2, 2]).startswith("These runs had no GPU (2 CPUs):")  # before cores were
    assert note(cpus=[2, 5], cores=[None, None]).startswith("These runs had no GPU (5 CPUs):")
    assert PONG.missed_note(pd.DataFrame({"gpus": [0], "cpus": [2]}), True) == []


def test_importing_the_workloads_starts_nothing():
    code = "import sys, sweeps.workloads; print('ray' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False"]


def test_the_benchmark_plans_a_workload_of_ones_own(tmp_path, capsys):
    argv = ["--env", "tests.toy_workload:TOY", "--algos", "dqn", "--storage-path", str(tmp_path)]
    assert benchmark.main([*argv, "--name", "toy", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "python -m tests.toy_workload --benchmark-seeds 3" in out
    assert "--stop-reward 9.0" in out  # the workload's target
    assert not (tmp_path / "toy").exists()
    with pytest.raises(SystemExit) as exit_:
        benchmark.main([*argv, "--algos", "dqn,appo", "--dry-run"])
    assert exit_.value.code == 2
    assert "a DQN sweep only" in capsys.readouterr().err


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_a_toy_workload_in_one_file_sweeps_and_benchmarks(tmp_path, children_join_the_shared_ray):
    env = children_join_the_shared_ray
    sweep = _run(
        env, "tests.toy_workload", "--smoke", "--num-env-runners", "0",
        "--storage-path", str(tmp_path), "--name", "toy-sweep",
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    record = json.loads((tmp_path / "toy-sweep" / "run.json").read_text())
    assert (record["env"], record["sweep"], record["targets"]) == ("toy", "dqn_toy", [9.0])
    assert record["status"] == "finished"

    bench = _run(
        env, "sweeps.benchmark", "--env", "tests.toy_workload:TOY", "--algos", "dqn",
        "--benchmark-seeds", "1", "--stop-train-time-s", "4", "--storage-path", str(tmp_path),
        "--name", "toy-bench",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-2000:]
    report = (tmp_path / "toy-bench" / "REPORT.md").read_text()
    assert "# Results: toy" in report and "dqn" in report
