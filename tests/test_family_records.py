"""The env family's runs of record as data (benchmarks/family_records.py): each is a benchmark
command of one algorithm and seed on one env, with that env's target and budget; an env this
machine cannot build is skipped with its reason; each collected run regenerates the family report,
the held-out envs apart. Nothing here trains."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import family_records as family
from benchmarks import pong_records
from benchmarks import records as queue
from sweeps import benchmark
from sweeps.env_family import HELD_OUT, TUNING


def test_every_planned_run_is_a_benchmark_command_of_one_algorithm_seed_and_env(tmp_path):
    names = [run.name for run in family.PLAN]
    assert len(set(names)) == len(names)
    for run in family.PLAN:
        command = run.command(tmp_path)
        assert command[1:3] == ["-m", "sweeps.benchmark"]
        assert command[command.index("--env") + 1] == run.env.env
        if run.unavailable() is not None:  # an env of the install extra parses only where it is
            continue
        args = benchmark.parse_args(command[3:])
        assert args.env == run.env.env and args.algos == [run.algo] and args.seed == run.seed
        assert args.target == [run.env.target] and args.stop_train_time_s == run.env.budget_s
        (planned,) = benchmark.plan(args)
        assert planned.folder.parent == tmp_path / run.name
    # every env of the family, held out too; the four and the baseline; three seeds each
    ids = [e.env for e in (*TUNING, *HELD_OUT)]
    assert {r.env.env for r in family.PLAN} == set(ids)
    for env in ids:
        for algo in (*benchmark.ALGOS, family.BASELINE):
            seeds = {r.seed for r in family.PLAN if (r.env.env, r.algo) == (env, algo)}
            assert seeds == set(family.SEEDS), (env, algo)
    # the cheapest envs first, each env's seeds whole before the next env's
    budgets = [r.env.budget_s for r in family.PLAN]
    assert budgets == sorted(budgets)
    envs = [r.env.env for r in family.PLAN]
    for env in set(envs):
        at = [i for i, x in enumerate(envs) if x == env]
        assert at == list(range(at[0], at[0] + len(at))), env


def test_a_run_resumes_with_its_envs_sweep_and_its_table_goes_to_the_stage_folder(tmp_path):
    run = family.FamilyRun(TUNING[0], "appo", 1)
    assert run.resume_command(tmp_path / "x")[2:] == [
        "sweeps.appo_gym",
        "--resume",
        str(tmp_path / "x"),
    ]
    at = queue.Places(tmp_path)
    assert run.table(at) == tmp_path / "results/gym/before" / f"{run.name}.csv.gz"
    assert run.name == "family-before-appo-s1-cartpole-v1"
    baseline = family.FamilyRun(TUNING[0], family.BASELINE, 0)
    assert baseline.name == "family-sb3-dqn-s0-cartpole-v1"  # no stage: the defaults aren't its


def test_an_env_this_machine_cannot_build_is_skipped_with_its_reason(tmp_path, monkeypatch, capsys):
    cannot = HELD_OUT[1].env  # a MinAtar game, as where the install extra is missing
    monkeypatch.setattr(family, "_why_not", lambda e: "no minatar" if e == cannot else None)
    argv = ["--root", str(tmp_path), "--storage-path", str(tmp_path / "runs"), "--dry-run"]
    assert family.main([*argv, "--hours", "100"]) == 0
    out = capsys.readouterr().out.splitlines()
    skipped = [line for line in out if "skipped, no minatar" in line]
    would = [line for line in out if "would run" in line]
    assert len(skipped) == len(family.SEEDS) * 5
    assert len(would) == len(family.PLAN) - len(skipped)
    assert all("spaceinvaders" in line for line in skipped)


def test_no_before_run_of_the_four_starts_once_the_defaults_changed(monkeypatch):
    """The before-runs are the defaults as they stood (results/gym/before/DEFAULTS.json): with
    any of them changed, a before-run of the four is skipped with the reason, the baseline's is
    not (it has its own hyperparameters)."""
    import copy

    from sweeps import gym_family

    env = TUNING[0]
    four, baseline = family.FamilyRun(env, "impala", 0), family.FamilyRun(env, family.BASELINE, 0)
    recorded = {"defaults": family.generic_defaults()}
    monkeypatch.setattr(family, "BEFORE_DEFAULTS", _FakeFile(recorded))
    family._defaults_changed.cache_clear()
    assert four.unavailable() is None
    changed = copy.deepcopy(gym_family.TUNED)
    changed["impala"]["learner_config_dict"] = {"reward_scale": 0.1}
    monkeypatch.setattr(gym_family, "TUNED", changed)
    family._defaults_changed.cache_clear()
    assert "no longer those the before-runs ran with" in four.unavailable()
    assert baseline.unavailable() is None
    family._defaults_changed.cache_clear()


def test_the_defaults_stay_those_of_the_before_runs_until_all_of_them_are_made():
    """While a before-run of the four is still to be made, sweeps/gym_family.py's defaults are
    those in results/gym/before/DEFAULTS.json: a change before then would leave the family's
    before half run (the queue would skip the rest). Tune them once the before is whole."""
    import json

    left = [
        r for r in family.PLAN if r.algo != family.BASELINE and not r.table(queue.Places()).exists()
    ]
    if not left:
        pytest.skip("every before-run is made: the defaults may change")
    recorded = json.loads(family.BEFORE_DEFAULTS.read_text())["defaults"]
    assert recorded == family.generic_defaults(), (
        f"{len(left)} before-runs left (first {left[0].name}): keep the defaults till then"
    )


class _FakeFile:
    def __init__(self, doc):
        self.doc, self.name = doc, "DEFAULTS.json"

    def read_text(self):
        import json

        return json.dumps(self.doc)


def test_the_pong_queue_takes_the_familys_runs_in_the_hours_its_own_leave(tmp_path, capsys):
    argv = ["--root", str(tmp_path), "--storage-path", str(tmp_path / "runs"), "--dry-run"]
    assert pong_records.main([*argv, "--hours", "2.2"]) == 0
    would = [
        line.split()[1] for line in capsys.readouterr().out.splitlines() if "would run" in line
    ]
    assert would[0] == pong_records.PLAN[0].name  # Pong's first, 1.9 h at most
    assert would[1:] and all(name.startswith("family-") for name in would[1:])
    assert pong_records.QUEUE[-len(family.PLAN) :] == family.PLAN


def test_the_family_report_is_regenerated_once_an_envs_runs_are_all_in_the_held_out_apart(
    tmp_path, monkeypatch
):
    """Each run's table is collected (and committed) as it finishes; the report, whose charts
    would otherwise be committed again for every run, once its env's last run is in."""
    at = queue.Places(Path("."), tmp_path / "runs")
    env_runs = [r for r in family.PLAN if r.env == family.PLAN[0].env]
    calls = []

    def call(cmd, log, end=None):
        calls.append(cmd)
        if "collect" in cmd:
            Path(cmd[cmd.index("--out") + 1]).write_text("rows")
        return 0

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(queue, "_call", call)
    for k, run in enumerate(env_runs):
        calls.clear()
        assert queue.execute(run, "ended", at, commit=False, plan=family.PLAN) == 0
        assert calls[0][2:5] == ["analysis", "collect", str(at.storage / run.name)]
        assert len(calls) == (2 if k == len(env_runs) - 1 else 1), run.name
    report = calls[1]
    out = str(family.RESULTS)
    assert report[report.index("--out") + 1] == out
    tables = report[report.index("report") + 1 : report.index("--held-out")]
    assert tables == sorted(f"{out}/{r.name}.csv.gz" for r in env_runs)
    held = report[report.index("--held-out") + 1 : report.index("--out")]
    assert held == [e.env for e in HELD_OUT]


@pytest.mark.parametrize("algo", ["dqn", family.BASELINE])
def test_a_run_plays_no_final_games_where_greedy_evaluation_runs_throughout(algo):
    assert family.FamilyRun(TUNING[0], algo, 0).final_episodes == 0
