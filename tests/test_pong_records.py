"""The Pong runs of record as data (benchmarks/pong_records.py) and the queue that runs them
(benchmarks/records.py): each planned run is a valid benchmark command, where each run stands is
read from its files, and the queue takes only what fits in the hours given. Nothing here runs
Pong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import pong_records as records
from benchmarks import records as queue
from sweeps import benchmark
from sweeps.harness.files import EVALUATION_FILE
from sweeps.harness.record import RECORD_FILE
from tests import stopping_child


def _places(tmp_path: Path) -> queue.Places:
    return queue.Places(tmp_path, tmp_path / "runs")


def _pong(lines: list[str]) -> list[str]:
    """The queue's lines about Pong's runs (the env family's take the hours left after them)."""
    return [line for line in lines if "] pong-" in line]


def test_every_planned_run_is_a_benchmark_command_of_one_configuration(tmp_path):
    names = [run.name for run in records.PLAN]
    assert len(set(names)) == len(names)
    for run in records.PLAN:
        args = benchmark.parse_args(run.benchmark_argv(tmp_path))
        (planned,) = benchmark.plan(args)
        assert args.env == "pong" and args.algos == [run.algo] and args.seed == run.seed
        assert args.stop_train_time_s == run.budget_s and args.num_cpus == run.cpus
        assert planned.folder.parent == tmp_path / run.name
    # The issues' configurations, three seeds each: the four at 1 and 4 runners, the articles'.
    for algo, runners in [(a, r) for a in benchmark.ALGOS for r in (1, 4)] + [
        ("apex", 10),
        ("impala", 13),
    ]:
        seeds = {
            r.seed
            for r in records.PLAN
            if (r.algo, r.runners, r.one_core, r.rate) == (algo, runners, False, False)
        }
        assert seeds == {0, 1, 2}, (algo, runners)
        # and one rate run of it, in one sitting with the others (docs/scaling.md)
        rates = [r for r in records.PLAN if r.rate and (r.algo, r.runners) == (algo, runners)]
        assert len(rates) == 1 and rates[0].budget_s <= 600, (algo, runners)
        assert rates[0].cpus == runners + 1 and "--final-episodes" in rates[0].benchmark_argv(
            tmp_path
        )


def test_every_planned_run_fits_in_one_working_stretch(tmp_path):
    """A work tree does not outlive its stretch: a run longer than one would be stopped at the
    stretch's end and start again from nothing in the next, for ever."""
    storage = tmp_path / "runs"
    for run in records.QUEUE:
        worst = queue.worst_case_s(run, "to do", storage)
        assert worst <= queue.STRETCH_RUN_S, (run.name, worst / 3600)


def test_the_rate_runs_are_one_sitting_run_whole_or_not_at_all(tmp_path, capsys):
    """The rate runs go one after another where all that are left fit in the hours, never as a
    --fill; their tables go beside the runs' (results/pong/rates) and the report takes them."""
    at = _places(tmp_path)
    for run in records.PLAN:  # every run of record collected, no rate run yet
        if not run.rate:
            run.table(at).parent.mkdir(parents=True, exist_ok=True)
            run.table(at).write_bytes(b"")
    rates = [r for r in records.PLAN if r.rate]
    sitting = queue.sitting_s(records.QUEUE, at)
    assert sitting == pytest.approx(sum(queue.worst_case_s(r, "to do", at.storage) for r in rates))
    argv = ["--root", str(tmp_path), "--storage-path", str(at.storage), "--dry-run", "--fill"]
    assert records.main([*argv, "--hours", str(sitting / 3600 * 0.98)]) == 0
    out = capsys.readouterr().out
    assert not _pong([x for x in out.splitlines() if "would run" in x])
    assert "the rate runs left: skipped" in out
    assert records.main([*argv, "--hours", str(sitting / 3600 * 1.02)]) == 0
    would = _pong([x for x in capsys.readouterr().out.splitlines() if "would run" in x])
    assert [line.split()[1] for line in would] == [r.name for r in rates]
    results = at / records.RESULTS
    table = rates[0].table(at)
    assert table.parent == results.parent / "rates"
    assert "--rates" not in records.report_command(results)
    table.parent.mkdir(parents=True)
    table.write_bytes(b"")
    command = records.report_command(results)
    assert command[command.index("--rates") + 1] == str(table)


def _record(folder: Path, status: str) -> None:
    folder.mkdir(parents=True)
    (folder / RECORD_FILE).write_text(json.dumps({"args": {}, "status": status}))


def test_where_a_run_stands_is_read_from_its_files(tmp_path):
    at = _places(tmp_path)
    run = records.RecordRun("appo", 1, 1, 5400, "58 59")
    assert queue.status(run, at) == "to do"
    _record(at.storage / run.name / f"{run.name}-appo", "running")  # killed mid-run
    assert queue.status(run, at) == "interrupted"
    (at.storage / run.name / f"{run.name}-appo" / RECORD_FILE).write_text(
        json.dumps({"args": {}, "status": "finished"})
    )
    assert queue.status(run, at) == "ended"
    assert queue.worst_case_s(run, "ended", at.storage) < records.FIXED_S
    (at / records.RESULTS).mkdir(parents=True)
    (at / records.RESULTS / f"{run.name}.csv.gz").write_bytes(b"")
    assert queue.status(run, at) == "collected"
    check = records.RecordRun("appo", 0, 1, 7200, "58", one_core=True)
    assert check.table(at).parent == at / records.CHECKS
    assert queue.shown(check, at.storage).startswith("taskset -c 0 python -m sweeps.benchmark")


def test_the_queue_takes_only_what_fits_and_says_why_it_skips(tmp_path, capsys):
    at = _places(tmp_path)
    argv = ["--root", str(tmp_path), "--storage-path", str(at.storage), "--hours", "2"]
    assert records.main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    would = [line for line in out if "would run" in line]
    # 2 hours hold one 5,400 s run (1.1 x 5,400 s + 900 s = 1.9 h) and no Pong run after it;
    # the env family's short runs take the 0.1 h left.
    assert len(_pong(would)) == 1 and records.PLAN[0].name in would[0]
    assert any("skipped, at most" in line for line in _pong(out))
    assert not at.storage.exists() and not (at / "results").exists()  # a dry run writes nothing
    assert records.main(argv[:4]) == 0  # the listing
    listing = capsys.readouterr().out
    assert f"0 of {len(records.QUEUE)} runs collected" in listing
    left = listing.strip().splitlines()[-1]  # the hours left per issue, each run counted for each
    for issue in sorted({i for run in records.QUEUE for i in run.issues.split()}):
        hours = sum(
            queue.worst_case_s(run, "to do", at.storage) / 3600
            for run in records.QUEUE
            if issue in run.issues.split()
        )
        assert f"issue {issue}: {hours:.1f} h" in left


def test_first_takes_the_runs_named_before_the_plan_s_order_and_refuses_unknown_names(
    tmp_path, capsys
):
    at = _places(tmp_path)
    argv = ["--root", str(tmp_path), "--storage-path", str(at.storage), "--hours", "2.5"]
    check = "pong-check-1core-appo-s0"  # 2.5 h at most: the plan's first run (1.9 h) is not
    assert records.main([*argv, "--first", check, "--dry-run"]) == 0
    would = [line for line in capsys.readouterr().out.splitlines() if "would run" in line]
    assert check in would[0] and not any(records.PLAN[0].name in line for line in would)
    with pytest.raises(SystemExit) as exit_:
        records.main([*argv, "--first", f"{check},nope", "--dry-run"])
    assert exit_.value.code == 2 and "no run named nope" in capsys.readouterr().err


def test_bad_hours_and_a_run_going_elsewhere_are_one_line_errors(tmp_path):
    cmd = [sys.executable, "-m", "benchmarks.pong_records", "--hours", "-1"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", "-m", "sweeps.benchmark"]
    )
    try:
        time.sleep(0.5)
        assert any(line.startswith(f"{other.pid}:") for line in queue.running_elsewhere())
        cmd = [*cmd[:-1], "1", "--storage-path", str(tmp_path / "runs")]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 2 and "another run is going" in done.stderr
        assert not (tmp_path / "runs").exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("state", ["to do", "interrupted"])
def test_a_run_that_fails_stops_the_queue_before_collecting(tmp_path, monkeypatch, state):
    at = _places(tmp_path)
    run = records.RecordRun("appo", 1, 1, 5400, "58 59")
    if state == "interrupted":
        _record(at.storage / run.name / f"{run.name}-appo", "running")
    calls = []
    monkeypatch.setattr(queue, "_call", lambda cmd, log, end=None: calls.append(cmd) or 3)
    assert queue.execute(run, state, at, commit=True) == 3
    assert len(calls) == 1 and "analysis" not in calls[0]
    assert ("--resume" in calls[0]) == (state == "interrupted")
    assert (
        "sweeps.appo_pong" in calls[0] if state == "interrupted" else "sweeps.benchmark" in calls[0]
    )


@pytest.mark.parametrize("played", [False, True])
def test_a_run_stopped_in_its_final_games_plays_them_first(tmp_path, monkeypatch, played):
    at = _places(tmp_path)
    run = records.RecordRun("appo", 1, 1, 5400, "58 59")
    trial = at.storage / run.name / f"{run.name}-appo" / "APPO_x_00000"
    _record(trial.parent, "finished")  # training ended; the benchmark was stopped after it
    trial.mkdir()
    (trial / "params.json").write_text("{}")
    if played:
        (trial / EVALUATION_FILE).write_text("{}")
    calls = []
    monkeypatch.setattr(queue, "_call", lambda cmd, log, end=None: calls.append(cmd) or 0)
    assert queue.execute(run, queue.status(run, at), at, commit=False) == 0
    games = [c for c in calls if "sweeps.evaluate" in c]
    assert len(games) == (0 if played else 1)
    if not played:
        assert games[0][3:] == [str(trial.parent), "--episodes", "10", "--sampled"]
        assert calls.index(games[0]) < next(i for i, c in enumerate(calls) if "collect" in c)


def test_fill_starts_the_run_that_does_not_fit_and_only_with_time_worth_it(tmp_path, capsys):
    at = _places(tmp_path)
    argv = ["--root", str(tmp_path), "--storage-path", str(at.storage), "--dry-run", "--fill"]
    assert records.main([*argv, "--hours", "1"]) == 0
    would = [line for line in capsys.readouterr().out.splitlines() if "would run" in line]
    # One hour holds none of the runs: the first is started and stopped at the end, alone.
    assert len(would) == 1 and records.PLAN[0].name in would[0] and "(--fill)" in would[0]
    assert records.main([*argv, "--hours", str(queue.MIN_FILL_S / 3600 * 0.9)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not [line for line in _pong(out) if "would run" in line]


def test_a_stop_file_ends_the_queue_before_its_next_run_and_is_removed(
    tmp_path, monkeypatch, capsys
):
    """``touch runs/benchmark/STOP``: the queue starts no run after it (the one going would have
    ended as it does), removes the file, ends as at the end of its hours (exit 0); the next
    queue goes on."""
    at = _places(tmp_path)
    argv = ["--root", str(tmp_path), "--storage-path", str(at.storage), "--hours", "2"]
    ran = []
    monkeypatch.setattr(queue, "execute", lambda run, *a, **kw: ran.append(run.name) or 0)
    monkeypatch.setattr(queue, "running_elsewhere", lambda: [])
    at.storage.mkdir(parents=True)
    (at.storage / queue.STOP_FILE).touch()
    assert records.main(argv) == 0
    assert ran == [] and not (at.storage / queue.STOP_FILE).exists()
    out = capsys.readouterr().out
    assert f"found (and removed): stopping before {records.PLAN[0].name}" in out
    assert records.main(argv) == 0 and ran and ran[0] == records.PLAN[0].name


def _group_gone(pgid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def sigint_ignored():
    """This process with SIGINT ignored, as a queue started in the background by a script
    (``nohup ... &`` in a shell without job control) is, and blocked: children inherit both."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    signal.signal(signal.SIGINT, previous)


def test_a_run_still_going_at_the_end_is_stopped_as_ctrl_c_stops_it(
    tmp_path, monkeypatch, sigint_ignored
):
    saved = tmp_path / "saved"
    started = []
    popen = subprocess.Popen

    def popen_listening(*args, **kwargs):
        """The child, once it listens for SIGINT (a loaded box may take seconds to start a
        Python): the queue's 3 s below are the run's, not its interpreter's start."""
        started.append(popen(*args, **kwargs))
        deadline = time.monotonic() + 60
        while not Path(f"{saved}.started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return started[-1]

    monkeypatch.setattr(queue.subprocess, "Popen", popen_listening)
    t0 = time.monotonic()
    with pytest.raises(queue.StoppedAtEnd):
        queue._call([*stopping_child.COMMAND, str(saved)], "a run", time.monotonic() + 3)
    assert saved.read_text() == "saved"  # its clean stop ran to its end before the queue went on
    assert time.monotonic() - t0 < 30
    assert _group_gone(started[0].pid)  # and nothing of its process group outlived it
    assert queue._call([sys.executable, "-c", "raise SystemExit(4)"], "a short one") == 4


def test_the_report_goes_to_its_own_folder_and_its_commit_holds_only_its_files(
    tmp_path, monkeypatch
):
    """The tables stay in their folder, the report over them goes to the Pong report's folder
    above it, and the commit takes the table, the report and its charts (one the report dropped
    removed), not another file changed beside them."""
    monkeypatch.chdir(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], check=True)
    at = queue.Places(Path("."), Path("runs"))
    results, report_folder = at / records.RESULTS, at / records.REPORT
    results.mkdir(parents=True)
    for name in ("REPORT.md", "km_pong.png", "old_pong.png", "notes.md"):
        (report_folder / name).write_text("before")
    subprocess.run(["git", "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "before"], check=True)
    (report_folder / "notes.md").write_text("changed beside the run")
    run = records.RecordRun("appo", 1, 1, 5400, "58 59")
    _record(at.storage / run.name / f"{run.name}-appo", "finished")
    (at.storage / run.name / f"{run.name}-appo" / EVALUATION_FILE).write_text("{}")
    calls = []

    def call(cmd, log, end=None):
        calls.append(cmd)
        if "collect" in cmd:
            Path(cmd[cmd.index("--out") + 1]).write_text("rows")
        elif "report" in cmd:
            out = Path(cmd[cmd.index("--out") + 1])
            for name in ("REPORT.md", "km_pong.png"):
                (out / name).write_text("after")
            (out / "old_pong.png").unlink()
        else:
            return subprocess.call([*git, *cmd[1:]])
        return 0

    monkeypatch.setattr(queue, "_call", call)
    assert queue.execute(run, "ended", at, commit=True) == 0
    (report,) = [c for c in calls if "report" in c]
    assert report[report.index("report") + 1 :] == [
        str(results / f"{run.name}.csv.gz"),
        "--out",
        "results/pong",
    ]
    committed = subprocess.run(
        ["git", "show", "--name-status", "--format=", "HEAD"], capture_output=True, text=True
    ).stdout.split("\n")
    assert sorted(filter(None, committed)) == [
        "A\tresults/pong/confirmed/pong-conf-appo-r1-s1.csv.gz",
        "D\tresults/pong/old_pong.png",
        "M\tresults/pong/REPORT.md",
        "M\tresults/pong/km_pong.png",
    ]
    status = subprocess.run(
        ["git", "status", "--short", "--untracked-files=no"], capture_output=True, text=True
    ).stdout
    assert status.strip() == "M results/pong/notes.md"


def test_a_commit_leaves_out_a_path_that_neither_exists_nor_is_tracked(tmp_path, monkeypatch):
    """A queue started before its report stopped writing a file still names it: the commit
    takes the rest (git refuses a whole commit over one unknown pathspec)."""
    monkeypatch.chdir(tmp_path)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "t@t")
    subprocess.run(["git", "init", "-q"], check=True)
    Path("kept.md").write_text("before")
    Path("copy.csv.gz").write_text("rows")
    subprocess.run(["git", "add", "."], check=True)
    subprocess.run(["git", "commit", "-q", "-m", "before"], check=True)
    Path("kept.md").write_text("after")
    Path("copy.csv.gz").unlink()  # tracked, deleted: the deletion is committed
    paths = ["kept.md", "copy.csv.gz", "never.csv.gz", ":(glob)charts/*.png"]
    assert queue.commit_paths(paths, "a run") == 0
    committed = subprocess.run(
        ["git", "show", "--name-status", "--format=", "HEAD"], capture_output=True, text=True
    ).stdout.split()
    assert committed == ["D", "copy.csv.gz", "M", "kept.md"]


def test_a_check_run_regenerates_the_check_over_the_checks_and_their_two_core_runs(tmp_path):
    """After a one-core run, ``CHECK.md`` over the runs it read before (the cab env's checks),
    every one-core run collected and each one's two-core run of record, seed for seed."""
    at = _places(tmp_path)
    appo0, apex1 = (
        records.RecordRun(a, s, 1, 7200, "58", one_core=True) for a, s in [("appo", 0), ("apex", 1)]
    )
    assert appo0.partner().name == "pong-conf-appo-s0"
    assert apex1.partner().name == "pong-conf-apex-r1-s1"
    for table in (
        appo0.table(at),
        appo0.partner().table(at),
        at / records.CHECKS / "check-runs.csv.gz",
    ):
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_bytes(b"")
    command, written = appo0.report(at)
    assert command[1:4] == ["-m", "analysis", "scaling-check"]
    assert command[4:] == [
        str(at / records.CHECKS / "check-runs.csv.gz"),
        str(appo0.table(at)),
        str(appo0.partner().table(at)),
        "--out",
        str(at / records.CHECKS),
    ]
    assert written == [str(at / records.CHECKS / "CHECK.md")]  # the tables it read: unchanged


def test_ape_x_s_check_runs_on_two_cores_in_its_one_core_run_s_sitting_or_not_at_all(
    tmp_path, capsys
):
    """Right after Ape-X's one-core run, the queue runs the seed on two cores on the same box
    (its table beside the check's, no final games); not before the one-core run is collected,
    nor once its sitting is over. The check then reads both two-core runs."""
    import pandas as pd

    at = _places(tmp_path)
    (one,) = [r for r in records.PLAN if r.one_core and (r.algo, r.seed) == ("apex", 0)]
    sitting = records.PLAN[records.PLAN.index(one) + 1]
    assert (sitting.name, sitting.sitting, sitting.cpus) == ("pong-check-2core-apex-s0", True, 2)
    assert sitting.table(at) == at / records.CHECKS / "pong-check-2core-apex-s0.csv.gz"
    assert sitting.final_episodes == 0 and "--final-episodes" in sitting.benchmark_argv(tmp_path)
    assert "taskset" not in sitting.command(tmp_path)  # two cores
    assert "not collected yet" in sitting.unavailable(at)

    def collected(started):
        one.table(at).parent.mkdir(parents=True, exist_ok=True)
        frame = pd.DataFrame({"started_at": [started] * 2, "time_total_s": [10.0, 3600.0]})
        frame.to_csv(one.table(at), index=False)

    long_ago = pd.Timestamp.now(tz="UTC") - pd.Timedelta(hours=5)
    collected(long_ago.isoformat())  # its training ended 4 h ago
    assert "ended more than 3 h ago" in sitting.unavailable(at)
    collected((long_ago + pd.Timedelta(hours=3)).isoformat())  # ... 1 h ago
    assert sitting.unavailable(at) is None
    first = ["--first", sitting.name, "--hours", "3", "--dry-run", "--root", str(tmp_path)]
    first += ["--storage-path", str(at.storage)]
    assert queue.main(records.QUEUE, first) == 0
    lines = _pong(capsys.readouterr().out.splitlines())
    assert lines[0].startswith("[records] pong-check-2core-apex-s0 (to do): would run")
    for run in (sitting, sitting.partner()):
        run.table(at).parent.mkdir(parents=True, exist_ok=True)
        run.table(at).write_bytes(b"")
    command, _ = sitting.report(at)
    tables = command[4 : command.index("--out")]
    assert tables == [str(one.table(at)), str(sitting.table(at)), str(one.partner().table(at))]
