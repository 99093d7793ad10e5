"""The family tuner (benchmarks/family_tune.py): the envs it tunes on (never a held-out one), the
sampled values as the sweeps' --set texts, the score's order (one pair more beats any speed),
and its plan without running anything."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from benchmarks import family_tune
from sweeps.env_family import HELD_OUT, TUNING


@pytest.fixture(autouse=True)
def _before_record_is_the_defaults_as_they_stand(monkeypatch):
    """The tests take the before-runs' record to be the defaults as they stand: they hold once a
    study's verdict has changed sweeps/gym_family.py, as before."""
    from benchmarks import family_records

    class _Record:
        name = "DEFAULTS.json"
        text = json.dumps({"defaults": family_records.generic_defaults()})  # (as they stand now)

        def is_file(self):
            return True

        def read_text(self):
            return self.text

    monkeypatch.setattr(family_records, "BEFORE_DEFAULTS", _Record())
    family_records.clear()
    yield
    family_records.clear()


def test_it_tunes_on_the_tuning_envs_cheapest_first_and_never_on_a_held_out_one():
    envs = family_tune.tuning_envs(None)
    assert {e.env for e in envs} == {e.env for e in TUNING}
    assert [e.budget_s for e in envs] == sorted(e.budget_s for e in envs)
    with pytest.raises(ValueError, match="held out"):
        family_tune.tuning_envs([HELD_OUT[0].env])
    with pytest.raises(ValueError, match="not in the family"):
        family_tune.tuning_envs(["Nope-v0"])


def test_sampled_values_become_set_texts_with_nested_keys_as_one_dict():
    texts = family_tune.set_texts(
        {"lr": 0.001, "replay_buffer_config/alpha": 0.5, "epsilon": [(0, 1.0), (5000, 0.05)]}
    )
    assert texts == [
        "epsilon=[[0, 1.0], [5000, 0.05]]",
        "lr=0.001",
        'replay_buffer_config={"alpha": 0.5}',
    ]
    for text in texts:  # what the sweeps' --set reads
        key, _, value = text.partition("=")
        json.loads(value)


def test_one_pair_more_beats_any_speed_and_time_breaks_ties():
    fast_one = family_tune.score([(True, 1.0, 100.0), (False, 0.0, 100.0)])
    slow_two = family_tune.score([(True, 99.0, 100.0), (True, 99.0, 100.0)])
    assert slow_two > fast_one
    faster = family_tune.score([(True, 10.0, 100.0), (False, 0.0, 100.0)])
    assert fast_one > faster > 1.0
    assert family_tune.score([]) == 0.0


def test_dry_run_prints_each_env_s_benchmark_and_runs_nothing(tmp_path, capsys):
    argv = ["--algo", "appo", "--envs", "CartPole-v1,Taxi-v3", "--budget-scale", "0.5"]
    where = ["--storage-path", str(tmp_path), "--record", str(tmp_path / "record")]
    assert family_tune.main([*argv, *where, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "at most 210 s of training per trial" in out
    assert "--stop-train-time-s 60 --name t0-cartpole-v1 --algos appo" in out
    assert not any(tmp_path.iterdir())
    assert "[tune] so far: 0 of 20 trials done (0 complete, 0 pruned); left: at most" in out


def test_a_held_out_env_is_one_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        family_tune.main(["--algo", "appo", "--envs", HELD_OUT[0].env, "--dry-run"])
    assert exit_.value.code == 2 and "held out" in capsys.readouterr().err


# --- A study that outlives its work tree ----------------------------------------------------------

BEFORE = Path("results/gym/before")


def trials_of(study: family_tune.Study) -> list[Any]:
    """The trials of ``study``'s journal, in the order asked."""
    import optuna

    from sweeps.harness import storage

    journal = storage.optuna_storage(str(study.record / family_tune.JOURNAL))
    return optuna.load_study(study_name=study.name, storage=journal).trials


def _study(tmp_path, **kw) -> family_tune.Study:
    envs = tuple(family_tune.tuning_envs(["CartPole-v1", "Acrobot-v1"]))
    settings = dict(
        algo="apex", trials=2, seeds=1, seed=0, scale=0.5, envs=envs, name="apex",
        folder=tmp_path / "runs" / "apex", record=tmp_path / "record" / "apex",
    )  # fmt: skip
    return family_tune.Study(**{**settings, **kw})


def test_a_recorded_run_reaches_its_target_only_within_the_scaled_budget():
    table = BEFORE / "family-before-apex-s0-cartpole-v1.csv.gz"  # reached 475 in ~20 s
    ((hit, seconds, budget),) = family_tune.outcomes(table, 120.0)
    assert hit and 0 < seconds <= 120.0 and budget == 120.0
    ((late, _, _),) = family_tune.outcomes(table, seconds / 2)
    assert not late  # reached, but after the budget it is judged on


def test_the_defaults_are_the_family_s_runs_of_record_and_nothing_is_run_again(
    tmp_path, monkeypatch
):
    study = _study(tmp_path)
    cartpole, acrobot = study.envs
    assert (
        study.recorded("defaults", cartpole) == BEFORE / "family-before-apex-s0-cartpole-v1.csv.gz"
    )
    assert study.recorded("t0", cartpole) is None  # a trial's runs are its own
    assert _study(tmp_path, seeds=2).recorded("defaults", cartpole) is None  # seed for seed only

    def refuse(*_):
        raise AssertionError("ran a benchmark that is on record")

    monkeypatch.setattr(family_tune.Study, "run", refuse)
    # Ape-X reached both targets at seed 0 (results/gym/before/REPORT.md)
    assert study.evaluate("defaults", []) > 2.0
    own = study.record / f"defaults-{cartpole.slug}.csv.gz"  # the study's own table comes first
    own.parent.mkdir(parents=True)
    own.write_bytes((BEFORE / "family-before-apex-s1-cartpole-v1.csv.gz").read_bytes())
    assert study.recorded("defaults", cartpole) == own


def test_a_study_keeps_the_defaults_it_began_on_and_stops_when_they_move(
    tmp_path, monkeypatch, capsys
):
    """A study's trials are drawn over the defaults it began on (a study recorded before the
    tuner kept them: the before-runs'). Once sweeps/gym_family.py's differ (the study's verdict
    committed), its command runs no more trials; a new study of the defaults as they stand runs
    its defaults itself (the before-runs of record ran with others)."""
    import copy

    import optuna

    from benchmarks import family_records
    from sweeps import gym_family
    from sweeps.harness import storage

    study = _study(tmp_path)
    cartpole = study.envs[0]
    assert study.began_on_before() and study.recorded("defaults", cartpole) is not None
    study.record.mkdir(parents=True)  # a study begun before the tuner kept its defaults
    journal = storage.optuna_storage(str(study.record / family_tune.JOURNAL))
    begun = optuna.create_study(study_name="apex", storage=journal, direction="maximize")
    begun.tell(begun.ask(), 1.0)
    tuned = copy.deepcopy(gym_family.TUNED)
    tuned["apex"]["lr"] = 5e-4  # its verdict committed
    monkeypatch.setattr(gym_family, "TUNED", tuned)
    family_records.clear()
    old = _study(tmp_path)
    assert old.began_on_before() and "no longer those the study 'apex' began on" in (
        old.defaults_moved()
    )

    def refuse(*_):
        raise AssertionError("ran a benchmark")

    monkeypatch.setattr(family_tune.Study, "run", refuse)
    assert family_tune._tune(old) == 2
    assert "it runs no more trials; --name for a new study" in capsys.readouterr().err
    assert "it runs no more trials" in old.progress()

    new = _study(tmp_path, name="apex-2", record=tmp_path / "record" / "apex-2")
    assert new.defaults_moved() is None and not new.began_on_before()
    assert new.recorded("defaults", cartpole) is None  # its own defaults' runs, not the before's
    dqn = _study(tmp_path, algo="dqn", name="dqn", record=tmp_path / "record" / "dqn")
    assert dqn.began_on_before() and dqn.defaults_moved() is None  # one algorithm's apart
    family_records.clear()


def test_no_run_starts_that_could_end_after_the_hours(tmp_path, monkeypatch):
    import time

    from sweeps import benchmark

    monkeypatch.setattr(benchmark, "main", lambda argv: pytest.fail("started a run"))
    study = _study(tmp_path, deadline=time.monotonic() + 60)
    with pytest.raises(family_tune.OutOfHours, match="t0 on CartPole-v1"):
        study.run("t0", study.envs[0], [])
    assert not study.record.exists()


def test_a_trial_cut_short_is_tried_again_with_its_values_and_the_runs_it_finished(
    tmp_path, monkeypatch, capsys
):
    ran: list[tuple[str, str]] = []
    stop_after = [3]  # the defaults are on record; t0 on CartPole, t1 ... then the hours end

    def fake_run(self, tag, env, sets):
        if len(ran) == stop_after[0]:
            raise family_tune.OutOfHours(f"at the end of the hours: {tag} on {env.env}")
        ran.append((tag, env.env))
        table = self.record / f"{tag}-{env.slug}.csv.gz"
        table.write_bytes((BEFORE / f"family-before-apex-s0-{env.slug}.csv.gz").read_bytes())
        return table

    monkeypatch.setattr(family_tune.Study, "run", fake_run)
    study = _study(tmp_path)
    assert family_tune._tune(study) == 0
    assert ran == [("t0", "CartPole-v1"), ("t0", "Acrobot-v1"), ("t1", "CartPole-v1")]
    assert (
        "stopped at the end of the hours: t1 on Acrobot-v1; 1 of 2 trials"
        in capsys.readouterr().out
    )
    # a dry run says where the study stands, from its journal: t1 goes on first
    assert study.progress().startswith(
        "[tune] so far: 1 of 2 trials done (1 complete, 0 pruned); running or cut short (tried "
        "again first): t1; left: at most 0."
    )
    assert not (study.record / family_tune.BEST_FILE).exists()

    stop_after[0] = 99
    assert family_tune._tune(study) == 0  # the same command, later (a fresh tree: the record)
    assert ran[3:] == [("t1", "Acrobot-v1")]  # t1's CartPole run counted, not run again
    assert "tried again, with the runs they finished: t1" in capsys.readouterr().out
    best = json.loads((study.record / family_tune.BEST_FILE).read_text())
    assert best["defaults_score"] > 2.0 and best["best_tag"] in ("t0", "t1")
    made = len(ran)  # the same command once the study is done: nothing runs, the defaults neither
    assert family_tune._tune(study) == 0
    assert len(ran) == made and "[tune] the study is done" in capsys.readouterr().out

    import optuna

    from sweeps.harness import storage

    journal = storage.optuna_storage(str(study.record / family_tune.JOURNAL))
    loaded = optuna.load_study(study_name="apex", storage=journal)
    t1 = [t for t in loaded.trials if t.user_attrs.get("tag") == "t1"]
    assert [t.state.name for t in t1] == ["FAIL", "COMPLETE"]
    assert t1[0].params == t1[1].params and t1[0].user_attrs["set"] == t1[1].user_attrs["set"]


def test_a_trial_that_keeps_failing_is_left_after_its_tries():
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)}
    study = optuna.create_study(direction="maximize")
    for _ in range(family_tune.MAX_TRIES):
        trial = study.ask(space)
        trial.set_user_attr("tag", "t0")
        study.tell(trial, state=TrialState.FAIL)
    assert family_tune.retry_unfinished(study) == []
    study = optuna.create_study(direction="maximize")
    trial = study.ask(space)
    trial.set_user_attr("tag", "t0")
    study.tell(trial, state=TrialState.FAIL)
    assert family_tune.retry_unfinished(study) == ["t0"]
    assert family_tune.retry_unfinished(study) == []  # asked once: it waits
    again = study.ask(space)  # the enqueued values, as the sampler's suggestions take them
    assert again.params == trial.params and again.user_attrs["tag"] == "t0"


def test_a_trial_tried_again_after_the_space_grew_goes_on_as_its_runs_ran():
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    study = optuna.create_study(direction="maximize")
    trial = study.ask({"hp/lr": lr})  # drawn before the space drew a KL target
    trial.set_user_attr("tag", "t5")
    study.tell(trial, state=TrialState.FAIL)
    assert family_tune.retry_unfinished(study, {"hp/kl_target": 0.0}) == ["t5"]
    kl = optuna.distributions.CategoricalDistribution([0.0, 0.01, 0.02])
    again = study.ask({"hp/lr": lr, "hp/kl_target": kl})
    assert again.params == {**trial.params, "hp/kl_target": 0.0}


def test_kill_stops_the_running_sweep_and_no_run_starts_after_it(tmp_path, monkeypatch):
    import signal
    import subprocess
    import sys

    from benchmarks import stopping
    from sweeps import benchmark

    sweep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "sweeps.x"])
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stopping._stop(signal.SIGTERM, None)
        assert sweep.wait(timeout=10) == -signal.SIGTERM  # the sweep, and only it
        assert bystander.poll() is None
        monkeypatch.setattr(benchmark, "main", lambda argv: pytest.fail("started a run"))
        study = _study(tmp_path)
        with pytest.raises(family_tune.OutOfHours, match="by a signal: before t0 on CartPole-v1"):
            study.run("t0", study.envs[0], [])
    finally:
        stopping.STOPPING.clear()
        for proc in (sweep, bystander):
            proc.kill()
            proc.wait()


def test_a_failed_trial_whose_values_were_judged_already_is_not_asked_again():
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)}
    study = optuna.create_study(direction="maximize")
    judged = study.ask(space)
    judged.set_user_attr("tag", "t1")
    study.tell(judged, 1.0)
    study.enqueue_trial(judged.params)  # a draw repeated by the sampler, then stopped
    repeat = study.ask(space)
    repeat.set_user_attr("tag", "t4")
    study.tell(repeat, state=TrialState.FAIL)
    assert repeat.params == judged.params
    assert family_tune.retry_unfinished(study) == []


def test_each_command_s_sampler_draws_anew_and_reproducibly():
    # Seeded by --seed alone, each command's first random draw was the first command's again.
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)}

    def first_draw(asked: int) -> float:
        study = optuna.create_study(direction="maximize", sampler=family_tune._sampler(0, asked))
        return study.ask(space).params["lr"]

    assert first_draw(0) == first_draw(0)
    assert len({first_draw(0), first_draw(3), first_draw(5)}) == 3


def test_a_run_stopped_before_its_end_leaves_the_trial_unfinished_and_is_set_aside(
    tmp_path, monkeypatch, capsys
):
    from sweeps import benchmark

    monkeypatch.setattr(benchmark, "main", lambda argv: benchmark.INTERRUPTED_RC)
    study = _study(tmp_path)
    cartpole = study.envs[0]
    left = study.folder / f"t0-{cartpole.slug}"  # a run a kill left behind, never collected
    (left / "t0-cartpole-v1-apex").mkdir(parents=True)
    (left / "t0-cartpole-v1-apex" / "run.json").write_text('{"status": "interrupted"}')
    with pytest.raises(
        family_tune.OutOfHours, match="by a signal: t0 on CartPole-v1 stopped before its end"
    ):
        study.run("t0", cartpole, [])  # not a miss: the trial is tried again
    assert not left.exists() and len(list(study.folder.glob(f"{left.name}.unfinished-*"))) == 1
    assert "its unfinished run set aside" in capsys.readouterr().out
    # A finished one (stopped while it was collected) is the benchmark's to reuse: kept
    done = study.folder / f"t0-{study.envs[1].slug}"
    (done / "t0-acrobot-v1-apex").mkdir(parents=True)
    (done / "t0-acrobot-v1-apex" / "run.json").write_text('{"status": "finished"}')
    assert not family_tune._unfinished(done)
    assert not family_tune._unfinished(study.folder / "never-made")
    (study.folder / "started-only").mkdir()  # a run killed before its sweep wrote its record
    assert family_tune._unfinished(study.folder / "started-only")


def test_a_trial_to_try_first_is_checked_against_the_space_and_asked_once(
    tmp_path, capsys, monkeypatch
):
    family_tune.check_enqueued("impala", {"hp/lr": 3e-4, "hp/grad_clip": 40.0})
    with pytest.raises(ValueError, match="no 'hp/learning_rate'"):
        family_tune.check_enqueued("impala", {"hp/learning_rate": 3e-4})
    with pytest.raises(ValueError, match="hp/lr=0.5 is outside"):
        family_tune.check_enqueued("impala", {"hp/lr": 0.5})
    with pytest.raises(ValueError, match="hp/fragment=50.5 is outside"):  # an int parameter
        family_tune.check_enqueued("impala", {"hp/fragment": 50.5})
    with pytest.raises(ValueError, match="hp/grad_clip=41 is outside"):
        family_tune.check_enqueued("impala", {"hp/grad_clip": 41})
    with pytest.raises(SystemExit) as stop:  # one line, exit 2, before anything starts
        family_tune.main(["--algo", "impala", "--enqueue", '{"hp/lr": 9}', "--dry-run"])
    assert stop.value.code == 2 and "hp/lr=9 is outside" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        family_tune.main(["--algo", "impala", "--enqueue", "lr=3e-4", "--dry-run"])
    assert "not JSON" in capsys.readouterr().err

    # Asked first, and once however often the command runs (the record's journal)
    def fake_run(self, tag, env, sets):
        table = self.record / f"{tag}-{env.slug}.csv.gz"
        table.write_bytes((BEFORE / f"family-before-apex-s0-{env.slug}.csv.gz").read_bytes())
        return table

    import optuna

    from sweeps.harness import storage

    first = {"hp/lr": 3e-4, "hp/n_step": 3}
    monkeypatch.setattr(family_tune.Study, "run", fake_run)
    for trials in (1, 2):
        study = _study(tmp_path, trials=trials, enqueued=(first,))
        assert family_tune._tune(study) == 0
    journal = storage.optuna_storage(str(study.record / family_tune.JOURNAL))
    trials = optuna.load_study(study_name="apex", storage=journal).trials
    assert len(trials) == 2 and trials[0].params["hp/lr"] == 3e-4
    assert trials[0].params["hp/n_step"] == 3 and trials[1].params != trials[0].params
    assert "lr=0.0003" in trials[0].user_attrs["set"]


def test_the_study_s_page_shows_each_trial_env_by_env_and_its_values(tmp_path, monkeypatch):
    import re

    from benchmarks import family_study

    def fake_run(self, tag, env, sets):
        table = self.record / f"{tag}-{env.slug}.csv.gz"
        table.write_bytes((BEFORE / f"family-before-appo-s1-{env.slug}.csv.gz").read_bytes())
        self.save(f"{tag} on {env.env}", table)
        return table

    monkeypatch.setattr(family_tune.Study, "run", fake_run)
    command = "python -m benchmarks.family_tune --algo appo --budget-scale 0.5"
    study = _study(tmp_path, algo="appo", name="appo", trials=1, command=command)
    assert family_tune._tune(study) == 0
    text = (study.record / family_study.PAGE).read_text()
    assert f"Generated by `{command}`" in text
    assert "| trial | state | score | CartPole-v1 (60 s) | Acrobot-v1 (150 s) |" in text
    # APPO's runs of record: CartPole reached (within 60 s), Acrobot missed (results/gym/before)
    row = r"\| {tag} \| {state} \| 1\.\d{{3}} \| \d+\.\d s \| miss \(best -\d+\.\d\) \|"
    assert re.search(row.format(tag="defaults", state="—"), text), text
    assert re.search(row.format(tag="t0", state="complete"), text), text
    assert re.search(r"\| trial \| .*\blr\b.*\breward_scale\b", text)  # its values, below
    # The verdict so far, with the flags that try the best trial's values on another env
    # (t0 ran APPO's seed-1 runs of record, the defaults their seed 0's: the scores in the table)
    # (which seed reached CartPole sooner is the runs' to say: either verdict, as the scores say)
    scores = dict(re.findall(r"^\| (defaults|t0) \| [^|]+ \| (\d\.\d{3}) \|", text, re.M))
    assert scores["t0"] != scores["defaults"]
    above = float(scores["t0"]) > float(scores["defaults"])
    verdict = "above" if above else "not above"
    best = f"**Best so far: t0**, score {scores['t0']} over every env ({verdict} the defaults' "
    assert f"{best}{scores['defaults']}" in text, text
    flags = " ".join(f"--set {shlex.quote(s)}" for s in trials_of(study)[0].user_attrs["set"])
    assert f"--algos appo {flags}" in text and "lr=" in flags

    # A run not made yet (or pruned before it) shows as such
    first_only = family_study.page(
        "appo",
        study.envs,
        0.5,
        [],
        lambda tag, env: study.recorded(tag, env) if env is study.envs[0] else None,
        command,
    )
    assert re.search(r"\| defaults \| — \| 1\.\d{3} \| \d+\.\d s \| · \|", first_only)

    # A trial that drew an earlier trial's values again says so (its runs measure the noise)
    import optuna

    space = {"hp/lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)}

    def made(number: int, lr: float, state: Any) -> Any:
        trial = optuna.trial.create_trial(
            params={"hp/lr": lr},
            distributions=space,
            state=state,
            user_attrs={"tag": f"t{number}"},
            value=1.0 if state == optuna.trial.TrialState.COMPLETE else None,
        )
        trial.number = number
        return trial

    done, stopped = optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL
    trials = [made(1, 1e-3, done), made(2, 2e-3, done), made(4, 1e-3, stopped)]
    repeated = family_study.page("appo", study.envs, 0.5, trials, lambda t, e: None, command)
    assert "| t4 | fail (a repeat of t1's values) |" in repeated
    assert "| t2 | complete |" in repeated and "| t1 | complete |" in repeated


def test_a_command_that_would_judge_a_study_by_other_settings_is_refused(
    tmp_path, monkeypatch, capsys
):
    def fake_run(self, tag, env, sets):
        table = self.record / f"{tag}-{env.slug}.csv.gz"
        table.write_bytes((BEFORE / f"family-before-apex-s1-{env.slug}.csv.gz").read_bytes())
        return table

    monkeypatch.setattr(family_tune.Study, "run", fake_run)
    study = _study(tmp_path, trials=1)
    assert family_tune._tune(study) == 0
    assert study.differs() is None  # the same command goes on
    record = str(tmp_path / "record")
    same = ["--algo", "apex", "--record", record, "--envs", "CartPole-v1,Acrobot-v1"]
    assert family_tune.main([*same, "--budget-scale", "0.5", "--page"]) == 0
    capsys.readouterr()
    # A budget scale or a seed count of its own would score its trials on other terms
    for other, shown in (
        (["--budget-scale", "1"], "--budget-scale 0.5 (this command: 1.0)"),
        (["--budget-scale", "0.5", "--benchmark-seeds", "2"], "--benchmark-seeds 1 (this"),
        (["--budget-scale", "0.5", "--seed", "1"], "--seed 0 (this command: 1)"),
    ):
        page = study.record / "STUDY.md"
        before = page.read_bytes()
        with pytest.raises(SystemExit) as stop:
            family_tune.main([*same, *other, "--page"])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and shown in err and "or --name for a new study" in err
        assert page.read_bytes() == before  # nothing written

    # A study whose trials ran before the tuner recorded what judged them: refused until it says
    import optuna

    from sweeps.harness import storage

    older = _study(tmp_path, name="older", record=tmp_path / "record" / "older")
    url = storage.optuna_storage(str(older.record / family_tune.JOURNAL))
    unsaid = optuna.create_study(study_name="older", storage=url, direction="maximize")
    unsaid.tell(unsaid.ask(), 1.0)
    with pytest.raises(SystemExit) as stop:
        family_tune.main([*same, "--budget-scale", "0.5", "--name", "older", "--page"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "has trials but does not say what judged them" in err
    unsaid.set_user_attr(family_tune.JUDGED_BY, older.judged_by())
    assert older.differs() is None


def test_the_page_of_a_study_that_is_not_there_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        family_tune.main(["--algo", "appo", "--record", str(tmp_path), "--page"])
    assert stop.value.code == 2 and "no study in" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing written


def test_a_miss_whose_crossing_was_never_confirmed_shows_its_best_check(tmp_path):
    import pandas as pd

    from analysis.collect import read_runs_csv, write_runs_csv
    from benchmarks import family_study

    # Ape-X's seed-0 Taxi run of record: its greedy estimate crossed 7.5, no check confirmed it
    taxi = read_runs_csv(BEFORE / "family-before-apex-s0-taxi-v3.csv.gz")
    ((_, cell),) = family_study.judged(BEFORE / "family-before-apex-s0-taxi-v3.csv.gz", 300.0)
    best = taxi["confirm_return"].max()
    assert cell.endswith(f"never confirmed: its best check {best:.1f})"), cell
    # A table that counts the games played to the time limit says how many its best check had
    taxi["confirm_cut"] = taxi["confirm_return"].notna() * 4.0
    counted = tmp_path / "taxi.csv.gz"
    write_runs_csv(pd.DataFrame(taxi), counted)
    ((_, cell),) = family_study.judged(counted, 300.0)
    assert cell.endswith(f"its best check {best:.1f}, 4 of 100 games to the time limit)"), cell


def test_a_trial_is_pruned_for_fewer_pairs_never_for_speed_alone():
    import optuna

    study = optuna.create_study(direction="maximize", pruner=family_tune.PairsPruner())
    # Three complete trials: CartPole reached fast (1.8-1.9), then Acrobot by two of them
    for steps in ({0: 1.9, 1: 2.7}, {0: 1.8, 1: 2.6}, {0: 1.85, 1: 1.85}):
        study.add_trial(
            optuna.trial.create_trial(value=steps[1], intermediate_values=steps, params={})
        )
    slow = study.ask()
    slow.report(1.05, 0)  # CartPole reached late in its budget: as many pairs, less speed
    assert not slow.should_prune()
    slow.report(1.9, 1)  # Acrobot missed where the median trial had reached it: fewer pairs
    assert slow.should_prune()
    early = optuna.create_study(direction="maximize", pruner=family_tune.PairsPruner())
    early.add_trial(optuna.trial.create_trial(value=2.9, intermediate_values={0: 1.9}, params={}))
    lone = early.ask()
    lone.report(0.0, 0)
    assert not lone.should_prune()  # before 3 complete trials nothing is pruned


def test_impala_s_space_searches_the_passes_over_each_batch_and_appo_s_its_replay():
    """IMPALA's family space has the passes over each batch (``num_epochs``, 1 to 4: its
    defaults' one pass stopped near 6 on MinAtar Breakout, where APPO's 8 reached 10); APPO's
    replays each batch its own way (``circular_buffer_iterations_per_batch``), not with it."""
    import optuna

    from sweeps.gym_family import SAMPLERS
    from sweeps.harness.space import ask_trial

    trial, values = ask_trial(SAMPLERS["impala"])
    assert trial.distributions["hp/passes"] == optuna.distributions.IntDistribution(1, 4)
    assert values["num_epochs"] == trial.params["hp/passes"]
    trial, values = ask_trial(SAMPLERS["appo"])
    assert "hp/passes" not in trial.distributions and "num_epochs" not in values
    assert "hp/iterations_per_batch" in trial.distributions
