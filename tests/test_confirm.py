"""A target is reached when the policy plays it (sweeps/harness/confirm.py), on known answers.

Fast tests (no Ray): the suite callback checks at a crossing of the judged return, confirms only
where the check's episodes reach the target, keeps the check off the training clock and keeps
its checks over a restore; analysis times the confirmed target beside the first crossing; the
runner stops on the confirmation and a run recorded before it resumes as it began. The checks of
a real learner's policy run in ``tests/test_sweeps.py::test_impala_as_test_reaches_target``.
"""

from __future__ import annotations

import json
import math
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from sweeps.harness import confirm, keys
from sweeps.harness.callbacks import SuiteCallbacks, with_confirmation

TARGET = 18.0


class Policy:
    """A policy whose checks play ``plays`` (a mean return), each taking ``seconds`` of
    ``sleep``'s clock."""

    def __init__(self, plays: float, seconds: float = 0.0, sleep=time.sleep) -> None:
        self.plays, self.seconds, self.checks, self.sleep = plays, seconds, 0, sleep

    def __call__(self, algorithm) -> confirm.Check:
        self.checks += 1
        self.sleep(self.seconds)
        return confirm.Check(
            value=self.plays,
            ci95=0.5,
            greedy=self.plays + 1,
            sampled=self.plays,
            episodes=10,
            seconds=self.seconds,
            policy="sampled",
        )


def _callbacks(policy: Policy) -> SuiteCallbacks:
    spec = confirm.spec(TARGET, 10, keys.RETURN_MEAN)
    callbacks = SuiteCallbacks(confirm=spec)
    callbacks._confirm = confirm.Confirmation(spec, play=policy)
    return callbacks


def _train(callbacks: SuiteCallbacks, metrics: MetricsLogger, training_return: float) -> dict:
    """One training result whose running mean of training games is ``training_return``."""
    result = {
        "env_runners": {
            "num_env_steps_sampled_lifetime": 1000,
            keys.TRAINING_GAMES[-1]: [(0.0, training_return)] * 20,  # the whole window
        }
    }
    callbacks.on_train_result(algorithm=None, metrics_logger=metrics, result=result)
    return result[keys.SUITE]


def test_a_policy_that_crosses_once_by_luck_is_not_confirmed():
    """The running mean crosses 18 once while the policy plays 12: checked, not confirmed, and
    training goes on; the next crossing is checked again."""
    policy, metrics = Policy(plays=12.0), MetricsLogger(root=True)
    callbacks = _callbacks(policy)
    figures = [_train(callbacks, metrics, r) for r in (5.0, 18.4, 17.0, 18.1)]
    assert policy.checks == 2  # at each crossing from below, not while below
    assert [f[keys.TARGET_CONFIRMED[-1]] for f in figures] == [0, 0, 0, 0]
    checked = [f[keys.CONFIRM_RETURN[-1]] for f in figures]
    assert math.isnan(checked[0]) and math.isnan(checked[2])
    assert checked[1] == checked[3] == 12.0 < TARGET  # Tune's stop (>= 18) does not fire
    assert figures[3][keys.CONFIRM_CHECKS[-1]] == 2


def test_a_policy_that_plays_the_target_is_confirmed_at_its_first_crossing():
    policy, metrics = Policy(plays=19.2), MetricsLogger(root=True)
    callbacks = _callbacks(policy)
    figures = [_train(callbacks, metrics, r) for r in (-20.0, 3.0, 18.0)]
    assert policy.checks == 1
    assert figures[1][keys.TARGET_CONFIRMED[-1]] == 0
    confirmed = figures[2]
    assert confirmed[keys.TARGET_CONFIRMED[-1]] == 1
    assert confirmed[keys.CONFIRM_RETURN[-1]] == 19.2
    assert confirmed[keys.CONFIRM_GREEDY_RETURN[-1]] == pytest.approx(20.2)
    assert confirmed[keys.CONFIRM_SAMPLED[-1]] == 1
    assert confirmed[keys.CONFIRM_EPISODES[-1]] == 10
    assert confirmed[keys.CONFIRM_TARGET[-1]] == TARGET
    # confirmed is sticky: no more checks
    _train(callbacks, metrics, 18.5)
    assert policy.checks == 1


def test_above_the_target_a_check_runs_again_only_after_ten_times_its_seconds():
    confirmation = confirm.Confirmation(confirm.spec(TARGET, 10, keys.RETURN_MEAN), Policy(1.0))
    metrics = MetricsLogger(root=True)
    assert confirmation.due(metrics, 18.5, train_time_s=100.0)
    confirmation.after_result(None, metrics, 18.5, train_time_s=100.0)  # a check of 0 s
    state = confirmation.state(metrics)
    assert state["checks"] == 1 and state["waiting"] == 1
    confirmation._set(metrics, "last_check_s", 2.0)  # as if that check took 2 s
    assert not confirmation.due(metrics, 19.0, train_time_s=119.0)
    assert confirmation.due(metrics, 19.0, train_time_s=120.0)
    assert not confirmation.due(metrics, 17.0, train_time_s=121.0)  # below: re-armed
    assert confirmation.due(metrics, 18.0, train_time_s=121.5)  # a new crossing
    assert not confirmation.due(metrics, math.nan, train_time_s=200.0)  # no figure yet


def test_the_training_clock_excludes_the_check(fake_clock):
    """A check of 0.3 s after an iteration is evaluation: the next result's training time
    leaves it out, its evaluation time has it."""
    policy = Policy(plays=10.0, seconds=0.3, sleep=fake_clock.sleep)
    metrics = MetricsLogger(root=True)
    callbacks = _callbacks(policy)
    _train(callbacks, metrics, 5.0)  # starts the clock
    fake_clock.sleep(1.0)
    before = _train(callbacks, metrics, 18.5)  # the check runs after this result
    fake_clock.sleep(0.05)
    after = _train(callbacks, metrics, 17.0)
    assert policy.checks == 1
    assert before[keys.TRAIN_TIME_S[-1]] == pytest.approx(1.0)
    # The 0.05 s counted; the check's 0.3 s not: evaluation.
    trained = after[keys.TRAIN_TIME_S[-1]] - before[keys.TRAIN_TIME_S[-1]]
    assert trained == pytest.approx(0.05)
    assert after[keys.EVAL_TIME_S[-1]] - before[keys.EVAL_TIME_S[-1]] == pytest.approx(0.3)


def test_a_resumed_run_keeps_its_confirmations():
    """The checks' state is in the MetricsLogger that RLlib checkpoints: a fresh callback on the
    restored logger knows the checks ran, and that the last one found the target confirmed."""
    policy, metrics = Policy(plays=18.7), MetricsLogger(root=True)
    callbacks = _callbacks(policy)
    _train(callbacks, metrics, 18.2)
    state = metrics.get_state()  # what a checkpoint holds

    restored = MetricsLogger(root=True)
    restored.set_state(state)
    again = Policy(plays=0.0)
    second = _callbacks(again)
    second.on_checkpoint_loaded(algorithm=SimpleNamespace(metrics=restored))
    figures = _train(second, restored, 18.9)
    assert again.checks == 0  # confirmed before the restore: not checked again
    assert figures[keys.TARGET_CONFIRMED[-1]] == 1
    assert figures[keys.CONFIRM_CHECKS[-1]] == 1

    # unconfirmed and waiting above the target: the restored trial waits as it would have
    failed = MetricsLogger(root=True)
    first = _callbacks(Policy(plays=3.0, seconds=0.0))
    _train(first, failed, 18.2)
    restored = MetricsLogger(root=True)
    restored.set_state(failed.get_state())
    later = Policy(plays=19.0)
    third = _callbacks(later)
    third._confirm._set(restored, "last_check_s", 1000.0)
    _train(third, restored, 18.4)
    assert later.checks == 0
    assert third._confirm.state(restored)["checks"] == 1


def test_each_check_is_one_progress_line():
    from sweeps.harness.reporting import check_line

    policy, metrics = Policy(plays=12.04), MetricsLogger(root=True)
    callbacks = _callbacks(policy)
    result = {
        "env_runners": {
            "num_env_steps_sampled_lifetime": 1000,
            keys.TRAINING_GAMES[-1]: [(0, 18.3)] * 20,
        }
    }
    callbacks.on_train_result(algorithm=None, metrics_logger=metrics, result=result)
    assert check_line("t0", result) == (
        "[sweep] trial t0 at or above 18 at 1000 env steps; its policy played 12.0 ± 0.5 over "
        "10 seeded episodes, sampled (greedy 13.0): not confirmed: training goes on"
    )
    result = {
        "env_runners": {
            "num_env_steps_sampled_lifetime": 1000,
            keys.TRAINING_GAMES[-1]: [(1, 17.0)] * 20,
        }
    }
    callbacks.on_train_result(algorithm=None, metrics_logger=metrics, result=result)
    assert check_line("t0", result) is None  # no check after this result


def test_no_target_or_no_episodes_means_no_confirmation():
    assert confirm.spec(None, 10, keys.RETURN_MEAN) is None
    assert confirm.spec(18.0, 0, keys.RETURN_MEAN) is None
    spec = confirm.spec(18, 10, keys.GREEDY_RETURN)
    assert spec == confirm.Spec(18.0, 10, "suite/greedy_return", confirm.CONFIRM_SEED)


def test_the_config_carries_the_confirmation_to_every_callback_instance():
    from ray.rllib.algorithms.dqn import DQNConfig

    config = DQNConfig().callbacks(SuiteCallbacks)
    assert with_confirmation(config, None).callbacks_class is SuiteCallbacks
    spec = confirm.spec(2500.0, 100, keys.GREEDY_RETURN)
    made = with_confirmation(config, spec).callbacks_class()
    assert made._confirm.spec == spec
    with pytest.raises(TypeError):
        with_confirmation(DQNConfig(), spec)


def test_the_checks_play_the_same_seeded_episodes_each_time():
    """A check plays the episodes seeded CONFIRM_SEED.. : the same policy, the same figures."""
    import torch

    from envs import CABS

    class Uniform(torch.nn.Module):
        """A policy-gradient module's face: logits, and an action distribution to sample."""

        def forward_inference(self, batch):
            obs = batch["obs"]
            return {"action_dist_inputs": torch.zeros(len(obs), 6)}

        def get_exploration_action_dist_cls(self):
            from ray.rllib.models.torch.torch_distributions import TorchCategorical

            return TorchCategorical

        get_inference_action_dist_cls = get_exploration_action_dist_cls

    spec = confirm.Spec(target=0.0, episodes=3, judged=keys.flat(keys.RETURN_MEAN))
    first = confirm.play_check(Uniform(), CABS, {}, spec)
    second = confirm.play_check(Uniform(), CABS, {}, spec)
    assert first.policy == "sampled" and first.episodes == 3  # judged by the training return
    assert (first.value, first.greedy, first.ci95) == (second.value, second.greedy, second.ci95)
    assert first.value == first.sampled != first.greedy  # sampled and greedy played apart
    # judged by the greedy evaluation (cabs, Gymnasium envs): the greedy policy confirms
    greedy = confirm.play_check(
        Uniform(), CABS, {}, confirm.Spec(0.0, 3, keys.flat(keys.GREEDY_RETURN))
    )
    assert greedy.policy == "greedy" and greedy.value == first.greedy
    assert greedy.sampled == first.sampled


def test_a_check_counts_the_episodes_its_policy_played_to_the_time_limit():
    """A greedy policy that never ends an episode (on Taxi: always south) plays each of them to
    the env's time limit; the check says how many, and so does its progress line."""
    import torch

    from sweeps.harness.reporting import check_line

    class South(torch.nn.Module):
        """A Q-learner's face (its actions, no distribution to sample): action 0, south."""

        def forward_inference(self, batch):
            return {"actions": torch.zeros(len(batch["obs"]), dtype=torch.long)}

    spec = confirm.Spec(target=7.5, episodes=3, judged=keys.flat(keys.GREEDY_RETURN))
    check = confirm.play_check(South(), "Taxi-v3", {}, spec)
    assert check.value == -200.0 and check.cut == 3  # 200 steps of -1 each, cut at Taxi's 200
    # Episodes the env itself ends are not counted: CartPole pushed left falls within 500 steps
    fell = confirm.play_check(South(), "CartPole-v1", {}, spec)
    assert fell.cut == 0 and fell.value < 500
    confirmation = confirm.Confirmation(spec, play=lambda _: check)
    # (its 10-game greedy estimate crossed 7.5)
    figures, _ = confirmation.after_result(None, MetricsLogger(root=True), 8.0, 60.0)
    result = {"env_runners": {"num_env_steps_sampled_lifetime": 500}, keys.SUITE: figures}
    line = check_line("t0", result)
    assert (
        "-200.0 ± 0.0 over 3 seeded episodes, greedy; 3 of them ran to the env's time limit" in line
    )


# --- analysis -------------------------------------------------------------------------------


def _trial(seed: int, judged: list[float], checks: dict[int, float], confirm_target=TARGET):
    """A benchmark trial's rows: one per iteration (1 s, 1,000 env steps each), with checks
    (iteration -> the check's mean return) as the callback records them."""
    rows = []
    count = 0
    for i, value in enumerate(judged, start=1):
        check = checks.get(i, math.nan)
        count += not math.isnan(check)
        rows.append(
            {
                "env": "pong",
                "variant": "",
                "kind": "benchmark",
                "algo": "appo",
                "num_env_runners": 1,
                "experiment": "bench",
                "trial_id": f"t{seed}",
                "seed": seed,
                "training_iteration": i,
                "train_time_s": float(i),
                "env_steps": 1000.0 * i,
                "return_mean": value,
                "greedy_return": math.nan,
                "confirm_return": check,
                "confirm_ci95": 0.4 if not math.isnan(check) else math.nan,
                "confirm_greedy_return": check + 1 if not math.isnan(check) else math.nan,
                "confirm_checks": float(count),
                "confirm_target": confirm_target,
                "confirm_episodes": 10.0,
                "targets": json.dumps([0.0, 10.0, 18.0]),
            }
        )
    return rows


def _runs(rows: list[dict]) -> pd.DataFrame:
    """The rows as the collected table holds them (every column, its dtypes)."""
    from analysis.collect import tidy

    return tidy(pd.DataFrame(rows))


def test_analysis_times_the_confirmed_target_beside_the_first_crossing():
    from analysis import tables

    runs = tables.select_configurations(
        _runs(
            _trial(0, [5, 18.2, 16, 18.5, 18.1], {2: 12.0, 4: 18.6})  # confirmed at the 2nd check
            + _trial(1, [5, 18.0, 18.3], {2: 19.0})  # at the first crossing
            + _trial(2, [5, 18.1, 17], {2: 10.0})  # never confirmed
        )
    )
    ttt = tables.time_to_target(runs)
    confirmed = ttt[ttt["signal"] == tables.CONFIRMED].set_index("seed")
    assert list(confirmed["target"]) == [TARGET] * 3  # only the confirmed target
    assert list(confirmed["reached"]) == [True, True, False]
    assert confirmed.loc[0, "train_time_s"] == 4.0 and confirmed.loc[0, "env_steps"] == 4000
    assert confirmed.loc[1, "train_time_s"] == 2.0
    assert list(confirmed["checks"]) == [2.0, 1.0, 1.0]
    assert list(confirmed["check_return"]) == [18.6, 19.0, 10.0]  # confirming, or the best
    first = ttt[(ttt["signal"] == "return_mean") & (ttt["target"] == TARGET)].set_index("seed")
    assert list(first["train_time_s"]) == [2.0, 2.0, 2.0]  # the first crossing, on every seed

    summary = tables.summarize_time_to_target(ttt)
    row = summary[summary["signal"] == tables.CONFIRMED].iloc[0]
    assert (row["seeds"], row["reached"]) == (3, 2)
    assert row["check_returns"] == (18.6, 19.0, 10.0)


def test_a_report_judges_by_the_confirmed_target_where_every_run_confirmed_it():
    from analysis import summary, workload
    from analysis.sections import CHECK, CROSSING_KM, confirmed_section

    runs = _runs(
        _trial(0, [5, 18.2, 16, 18.5], {2: 12.0, 4: 18.6}) + _trial(1, [5, 18.0], {2: 19.0})
    )
    (w,) = workload.workloads(runs)
    assert w.crossing == "return_mean" and w.confirmed and w.signal == "confirm_return"
    lines = summary._reached_table(w)
    text = "\n".join(lines)
    assert CROSSING_KM in text and CHECK in text
    assert "18.8 (18.6–19.0) ± 0.4; greedy 19.8 (19.6–20.0)" in text
    assert "18 (confirmed)" in summary.verdict(w)
    section = "\n".join(confirmed_section(w))
    assert "Confirmed target against the first crossing" in section

    # A run that stopped at the first crossing: judged by it, as before.
    (w_old,) = workload.workloads(runs.assign(confirm_target=np.nan, confirm_return=np.nan))
    assert not w_old.confirmed and w_old.signal == "return_mean"
    assert confirmed_section(w_old) == []


def test_a_sweep_beside_confirmed_benchmarks_leaves_them_judged_by_the_confirmed_target():
    """A search does not stop at a target, so its best trial never has a confirmation; where
    benchmarks were run it does not decide (the main cab report: the main job's sweeps beside
    the runs of record), and it has no row at the confirmed target."""
    from analysis import tables, workload

    sweep = [
        {**row, "kind": "sweep", "experiment": "search", "final_eval_return": 18.5}
        for row in _trial(9, [5, 18.4, 18.6], {}, confirm_target=np.nan)
    ]
    runs = _runs(_trial(0, [5, 18.2], {2: 19.0}) + _trial(1, [5, 18.0], {2: 19.0}) + sweep)
    (w,) = workload.workloads(runs)
    assert "sweep" in set(w.selected["kind"])
    assert w.confirmed and w.signal == tables.CONFIRMED
    assert set(w.at(tables.CONFIRMED)["kind"]) == {"benchmark"}
    assert "sweep" in set(w.at("return_mean")["kind"])  # in the first crossing's tables
    # Only sweeps: nothing confirmed, judged by the first crossing.
    (only,) = workload.workloads(_runs(sweep))
    assert not only.confirmed


# --- the runner ------------------------------------------------------------------------------


def test_stop_reward_stops_on_the_confirmation(tmp_path):
    from sweeps.harness import runner
    from sweeps.impala_cabs import SWEEP

    argv = ["--stop-reward", "2500", "--storage-path", str(tmp_path), "--name", "x"]
    args, config = runner.parse(SWEEP, argv)
    stop = runner._stop_criteria(SWEEP, args)
    assert stop[keys.flat(keys.CONFIRM_RETURN)] == 2500
    assert keys.flat(keys.GREEDY_RETURN) not in stop
    assert args.confirm_episodes == 100
    assert config.callbacks_class()._confirm.spec.target == 2500.0

    args, _ = runner.parse(SWEEP, [*argv, "--confirm-episodes", "0"])
    stop = runner._stop_criteria(SWEEP, args)
    assert stop[keys.flat(keys.GREEDY_RETURN)] == 2500  # the first crossing, as RLlib stops
    assert keys.flat(keys.CONFIRM_RETURN) not in stop


def test_pong_confirms_on_ten_full_games(tmp_path):
    from sweeps.appo_pong import SWEEP
    from sweeps.harness import runner

    argv = ["--stop-reward", "18", "--storage-path", str(tmp_path), "--name", "x"]
    args, _ = runner.parse(SWEEP, argv)
    assert args.confirm_episodes == 10


def test_a_run_recorded_before_confirmation_resumes_at_the_first_crossing():
    from sweeps.harness.cli import RECORDED_BEFORE

    assert RECORDED_BEFORE["confirm_episodes"] == 0


def test_the_sweep_s_summary_times_the_confirmed_target_with_the_first_crossing_beside():
    from sweeps.harness.reporting import _time_to_target

    # A greedy return crossing 10 at 231k env steps whose check failed (9.5), again at 250k
    # whose check confirmed it (10.4): MinAtar Breakout's Ape-X run of record, as its results
    # came in (the checks' figures in the result of the iteration they followed)
    column, nan = keys.flat(keys.GREEDY_RETURN), math.nan
    history = pd.DataFrame(
        {
            keys.flat(keys.TRAIN_TIME_S): [120.0, 133.9, 140.2, 145.0],
            keys.flat(keys.ENV_STEPS): [210_000, 231_268, 250_188, 260_000],
            column: [8.0, 10.5, 10.2, 11.0],
            keys.flat(keys.CONFIRM_RETURN): [nan, 9.5, 10.4, nan],
            keys.flat(keys.CONFIRM_CI95): [nan, 0.7, 1.0, nan],
            keys.flat(keys.CONFIRM_TARGET): [10.0] * 4,
        }
    )
    # (the summary is given the run's first target, 0 as Pong's: the check's is what counts)
    line = _time_to_target(SimpleNamespace(metrics_dataframe=history), column, 0.0)
    assert line == (
        f"reached {column} >= 10, confirmed (the policy played 10.4 ± 1.0 over the seeded "
        "episodes), after 140.2 s of training (250,188 env steps); first crossed after 133.9 s "
        "of training (231,268 env steps)"
    )
    failed = SimpleNamespace(metrics_dataframe=history.iloc[:2])  # only the failed check
    line = _time_to_target(failed, column, 0.0)
    assert line.startswith(f"{column} >= 10: not reached (crossed after 133.9 s")
    assert line.endswith("never confirmed: 1 check(s), the best 9.5 over the seeded episodes)")
    at_once = SimpleNamespace(metrics_dataframe=history.iloc[[0, 2, 3]])  # its first crossing
    assert _time_to_target(at_once, column, 0.0).endswith(
        "after 140.2 s of training (250,188 env steps); its first crossing"
    )
    # A run without checks (stopped at the first crossing) is timed by it, as before
    plain = SimpleNamespace(metrics_dataframe=history[[*history.columns[:3]]])
    assert _time_to_target(plain, column, 10.0) == (
        f"reached {column} >= 10 after 133.9 s of training (231,268 env steps)"
    )
