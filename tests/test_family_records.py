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
    # the before-runs (with the baseline), then the after-runs of the four; in each stage the
    # cheapest envs first, each env's seeds whole before the next env's
    stages = [r.stage for r in family.PLAN]
    assert stages == sorted(stages, key=[family.STAGE, family.AFTER].index)
    assert {r.algo for r in family.PLAN if r.stage == family.AFTER} == set(benchmark.ALGOS)
    for stage in (family.STAGE, family.AFTER):
        runs = [r for r in family.PLAN if r.stage == stage]
        budgets = [r.env.budget_s for r in runs]
        assert budgets == sorted(budgets)
        envs = [r.env.env for r in runs]
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
    before = [r for r in family.PLAN if r.stage == family.STAGE]
    assert len(would) == len(before) - len(skipped)
    assert all("spaceinvaders" in line for line in skipped)
    waiting = [line for line in out if "after stage has not begun" in line]
    assert len(waiting) == len(family.PLAN) - len(before)


def test_no_before_run_of_an_algorithm_starts_once_its_defaults_changed(monkeypatch):
    """The before-runs are the defaults as they stood (results/gym/before/DEFAULTS.json), one
    algorithm's apart from another's: with IMPALA's changed, IMPALA's before-run is skipped with
    the reason; Ape-X's and the baseline's are not (its hyperparameters are its own)."""
    import copy

    from sweeps import gym_family

    env = TUNING[0]
    impala, apex = family.FamilyRun(env, "impala", 0), family.FamilyRun(env, "apex", 0)
    baseline = family.FamilyRun(env, family.BASELINE, 0)
    recorded = {"defaults": family.generic_defaults()}
    monkeypatch.setattr(family, "BEFORE_DEFAULTS", _FakeFile(recorded))
    family.clear()
    assert impala.unavailable() is None
    changed = copy.deepcopy(gym_family.TUNED)
    changed["impala"]["learner_config_dict"] = {"reward_scale": 0.1}
    monkeypatch.setattr(gym_family, "TUNED", changed)
    family.clear()
    assert "impala's generic defaults are no longer those its before-runs ran with" in (
        impala.unavailable()
    )
    assert apex.unavailable() is None and baseline.unavailable() is None
    monkeypatch.setattr(gym_family, "HIDDENS", (32, 32))  # shared by the four: all of them
    family.clear()
    assert "no longer those" in apex.unavailable()
    family.clear()


def test_an_algorithms_defaults_stay_those_of_its_before_runs_until_all_of_them_are_made():
    """While a before-run of one of the four is still to be made, its defaults in
    sweeps/gym_family.py are those in results/gym/before/DEFAULTS.json: a change before then would
    leave its before half run (the queue would skip the rest). Tune it once its before is whole."""
    import json

    recorded = json.loads(family.BEFORE_DEFAULTS.read_text())["defaults"]
    now = family.generic_defaults()
    for algo in benchmark.ALGOS:
        left = [
            r
            for r in family.PLAN
            if (r.stage, r.algo) == (family.STAGE, algo) and not r.table(queue.Places()).exists()
        ]
        assert not left or family.of_algo(recorded, algo) == family.of_algo(now, algo), (
            f"{len(left)} before-runs of {algo} left (first {left[0].name}): keep its defaults "
            "till then"
        )


def test_an_algorithms_after_runs_wait_for_its_after_stage_and_hold_to_its_defaults(
    tmp_path, monkeypatch, capsys
):
    """An algorithm's after-runs (its tuned defaults) are skipped, saying how to begin, until
    ``--begin-after ALGO`` records its defaults, one algorithm's apart from another's; it refuses
    an algorithm not of the four, or one begun already, writing nothing. The after-runs' tables go
    to results/gym/after, and each makes the family report at results/gym: the four tuned and the
    baseline, the before-runs beside them (``--before``)."""
    import copy
    import json

    from sweeps import gym_family

    monkeypatch.setattr(family, "AFTER_DEFAULTS", tmp_path / "after" / "DEFAULTS.json")
    before = _FakeFile({"defaults": family.generic_defaults()})
    monkeypatch.setattr(family, "BEFORE_DEFAULTS", before)
    family.clear()
    after = family.FamilyRun(TUNING[0], "apex", 2, family.AFTER)
    appo = family.FamilyRun(TUNING[0], "appo", 2, family.AFTER)
    assert after.name == "family-after-apex-s2-cartpole-v1"
    folder = tmp_path / "results/gym/after"
    assert after.table(queue.Places(tmp_path)) == folder / f"{after.name}.csv.gz"
    assert "`python -m benchmarks.family_records --begin-after apex`" in after.unavailable()
    for wrong in (["--begin-after"], ["--begin-after", "apex,ppo"]):
        assert family.main(wrong) == 2
    assert "'ppo' is not one of" in capsys.readouterr().err
    assert not family.AFTER_DEFAULTS.exists()

    tuned = copy.deepcopy(gym_family.TUNED)
    tuned["apex"]["lr"] = 5e-4
    monkeypatch.setattr(gym_family, "TUNED", tuned)
    family.clear()
    assert family.main(["--begin-after", "apex"]) == 0
    recorded = json.loads(family.AFTER_DEFAULTS.read_text())
    assert set(recorded) == {"apex"} and recorded["apex"]["defaults"]["tuned"]["lr"] == 5e-4
    assert after.unavailable() is None
    assert "appo's after stage has not begun" in appo.unavailable()  # its study goes on
    assert family.main(["--begin-after", "appo,apex"]) == 2  # apex's once: nothing written
    assert "apex's after stage has begun already" in capsys.readouterr().err
    assert set(json.loads(family.AFTER_DEFAULTS.read_text())) == {"apex"}
    tuned["apex"]["lr"] = 1e-4  # changed again: the after-runs hold to theirs
    family.clear()
    assert "apex's generic defaults are no longer those its after-runs ran with" in (
        after.unavailable()
    )
    family.clear()

    results = tmp_path / "results/gym"
    _tables(
        results,
        "after/family-after-apex-s0",
        "before/family-sb3-dqn-s0",
        "before/family-before-apex-s0",
    )
    command, paths = after.report(queue.Places(tmp_path))
    tables = command[command.index("report") + 1 : command.index("--before")]
    assert [Path(t).name for t in tables] == [
        "family-after-apex-s0-cartpole-v1.csv.gz",
        "family-sb3-dqn-s0-cartpole-v1.csv.gz",
    ]
    old = command[command.index("--before") + 1 : command.index("--held-out")]
    assert [Path(t).name for t in old] == ["family-before-apex-s0-cartpole-v1.csv.gz"]
    assert command[command.index("--out") + 1] == str(results)
    assert paths[0] == str(results / "REPORT.md")


def test_an_algorithm_its_study_left_as_it_was_has_its_before_runs_as_its_after_runs(
    tmp_path, monkeypatch, capsys
):
    """Where an algorithm's after stage began with the defaults of its before-runs, its
    after-runs are those very runs: collected once they are, never run again (the queue says
    why), and the family report takes them as its runs, not as its before (`--before`)."""
    import copy

    from sweeps import gym_family

    before = _FakeFile({"defaults": family.generic_defaults()})
    monkeypatch.setattr(family, "BEFORE_DEFAULTS", before)
    monkeypatch.setattr(family, "AFTER_DEFAULTS", tmp_path / "after" / "DEFAULTS.json")
    tuned = copy.deepcopy(gym_family.TUNED)
    tuned["apex"]["lr"] = 5e-4
    monkeypatch.setattr(gym_family, "TUNED", tuned)
    family.clear()
    assert family.main(["--begin-after", "apex,dqn"]) == 0
    out = capsys.readouterr().out
    assert "dqn's after stage begins" in out and "its before-runs serve as its after-runs" in out
    at = queue.Places(tmp_path, tmp_path / "runs")
    env = TUNING[0]
    dqn, apex = (family.FamilyRun(env, a, 0, family.AFTER) for a in ("dqn", "apex"))
    assert family.left_as_they_were("dqn") and not family.left_as_they_were("apex")
    assert dqn.serves == family.FamilyRun(env, "dqn", 0) and apex.serves is None
    assert dqn.table(at) == tmp_path / "results/gym/before/family-before-dqn-s0-cartpole-v1.csv.gz"
    assert "its before-run family-before-dqn-s0-cartpole-v1 serves as this one" in (
        dqn.unavailable()
    )
    assert apex.unavailable() is None
    assert queue.status(dqn, at) == "to do"
    assert queue.worst_case_s(dqn, "to do", at.storage) == 0  # never run: no hours counted
    made = (
        "after/family-after-apex-s0",
        "before/family-sb3-dqn-s0",
        "before/family-before-apex-s0",
    )
    _tables(tmp_path / "results/gym", *made, "before/family-before-dqn-s0")
    assert queue.status(dqn, at) == "collected"
    command, _ = apex.report(at)
    tables = command[command.index("report") + 1 : command.index("--before")]
    assert [Path(t).name for t in tables] == [
        "family-after-apex-s0-cartpole-v1.csv.gz",
        "family-before-dqn-s0-cartpole-v1.csv.gz",
        "family-sb3-dqn-s0-cartpole-v1.csv.gz",
    ]
    old = command[command.index("--before") + 1 : command.index("--held-out")]
    assert [Path(t).name for t in old] == ["family-before-apex-s0-cartpole-v1.csv.gz"]
    tuned["dqn"]["lr"] = 5e-4  # tuned after all: its after stage no longer holds
    family.clear()
    assert "dqn's generic defaults are no longer those its after-runs ran with" in (
        dqn.unavailable()
    )
    family.clear()


def test_a_report_behind_runs_collected_without_running_is_regenerated_at_the_queues_end(
    tmp_path, monkeypatch, capsys
):
    """An after-run that its before-run serves is collected when that one is, and no run of the
    queue then regenerates the family report: ``behind`` finds a report made before a run of a
    group now whole (a partial group's new run waits), and the queue regenerates it at its end
    (the listing says so)."""
    import copy

    from sweeps import gym_family

    before = _FakeFile({"defaults": family.generic_defaults()})
    monkeypatch.setattr(family, "BEFORE_DEFAULTS", before)
    monkeypatch.setattr(family, "AFTER_DEFAULTS", tmp_path / "after" / "DEFAULTS.json")
    tuned = copy.deepcopy(gym_family.TUNED)
    for algo in ("apex", "impala", "appo"):
        tuned[algo]["lr"] = 5e-4
    monkeypatch.setattr(gym_family, "TUNED", tuned)
    family.clear()
    assert family.main(["--begin-after", "dqn,apex,impala,appo"]) == 0
    env = TUNING[0]
    plan = [r for r in family.PLAN if r.env == env]
    at = queue.Places(tmp_path, tmp_path / "runs")
    results = tmp_path / "results/gym"
    tuned = [f"after/family-after-{a}-s{k}" for a in ("apex", "impala", "appo") for k in (0, 1)]
    tuned_runs = [*tuned, "after/family-after-apex-s2", "after/family-after-impala-s2"]
    tuned_runs.append("after/family-after-appo-s2")
    _tables(results, *tuned_runs, "before/family-before-dqn-s0", "before/family-before-dqn-s1")
    made = family.final_report_command(at)  # the report its last tuned after-run made
    (results / "REPORT.md").write_text(f"# x\n\nGenerated by `python {' '.join(made[1:])}`\n")
    assert family.reported(results / "REPORT.md") == {
        Path(w).name for w in made if w.endswith(".csv.gz")
    }
    assert family.behind(at, plan) == []  # dqn's seed 2 not in: its group is not whole
    _tables(results, "before/family-before-dqn-s2")  # its before-run, collected: it serves
    made = family.report_command(results / "before")  # (the before's, made as it was collected)
    (results / "before/REPORT.md").write_text(f"Generated by `python {' '.join(made[1:])}`\n")
    (stale,) = family.behind(at, plan)
    assert stale.command == family.final_report_command(at)
    assert stale.why == f"{results / 'REPORT.md'} is behind 1 collected run(s)"
    assert stale.paths[0] == str(results / "REPORT.md")

    calls = []
    monkeypatch.setattr(queue, "_call", lambda cmd, log, end=None: calls.append(cmd) or 0)
    monkeypatch.setattr(queue, "running_elsewhere", lambda: [])
    argv = ["--root", str(tmp_path), "--storage-path", str(tmp_path / "runs")]
    rest = [r for r in plan if not r.table(at).exists()]
    monkeypatch.setattr(family, "PLAN", tuple(r for r in plan if r not in rest))
    assert family.main(argv) == 0
    assert "is behind 1 collected run(s): the next queue regenerates it" in capsys.readouterr().out
    assert family.main([*argv, "--hours", "1"]) == 0
    assert calls == [stale.command]  # nothing left to run: the report, at the queue's end
    family.clear()


def _tables(results: Path, *names: str) -> None:
    """A collected table (no rows needed) of each named run on CartPole in ``results``."""
    for name in names:
        path = results / f"{name}-cartpole-v1.csv.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("rows")


class _FakeFile:
    def __init__(self, doc):
        self.doc, self.name = doc, "DEFAULTS.json"

    def is_file(self):
        return True

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
    env_runs = [r for r in family.PLAN if r.group == family.PLAN[0].group]  # the before's
    assert {r.results for r in env_runs} == {family.RESULTS} and len(env_runs) == 15
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
