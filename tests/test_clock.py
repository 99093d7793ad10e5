"""The training clock survives a restore (issue: time to target stays true after a kill).

Fast tests (no Ray): the suite callback continues its clocks from a restored MetricsLogger;
analysis repairs the clock of a folder written before that; the progress line's clock goes on
across ``--resume``. Slow tests: Ape-X saved and restored keeps its clocks and lifetime counters.
The driver-kill + ``--resume`` and Tune-retry cases run whole sweeps: ``tests/test_reliability.py``.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from sweeps.harness import keys
from sweeps.harness.callbacks import CLOCK, SuiteCallbacks


def _result(callbacks: SuiteCallbacks, metrics: MetricsLogger, env_steps: int = 1000) -> dict:
    result = {"env_runners": {"num_env_steps_sampled_lifetime": env_steps}}
    callbacks.on_train_result(algorithm=None, metrics_logger=metrics, result=result)
    return result


def test_callback_clock_continues_from_the_checkpointed_metrics(fake_clock):
    first, metrics = SuiteCallbacks(), MetricsLogger(root=True)
    _result(first, metrics)  # starts the clock
    first._eval_time_s = 0.25  # as if an evaluation had run
    fake_clock.sleep(0.5)
    saved = _result(first, metrics, env_steps=2000)[keys.SUITE]
    state = metrics.get_state()  # what RLlib writes into every checkpoint

    # A new process: a fresh callback, the algorithm's MetricsLogger restored from the state.
    restored_metrics = MetricsLogger(root=True)
    restored_metrics.set_state(state)
    second = SuiteCallbacks()
    fake_clock.sleep(7.0)  # restoring is not training
    second.on_checkpoint_loaded(algorithm=SimpleNamespace(metrics=restored_metrics))
    fake_clock.sleep(0.1)
    result = _result(second, restored_metrics, env_steps=2500)
    after = result[keys.SUITE]
    assert CLOCK not in result  # the checkpointed copy is not a result of its own
    train_before, train_after = saved[keys.TRAIN_TIME_S[-1]], after[keys.TRAIN_TIME_S[-1]]
    assert train_before == pytest.approx(0.25)  # 0.5 s less the evaluation's 0.25
    assert train_after == pytest.approx(train_before + 0.1)
    assert after[keys.EVAL_TIME_S[-1]] == pytest.approx(0.25)
    assert after[keys.ENV_STEPS_PER_S[-1]] == pytest.approx(2500 / train_after)


def test_a_checkpoint_without_a_clock_starts_it_again():
    """Checkpoints written before the clock was saved restore as they used to: from zero."""
    callbacks = SuiteCallbacks()
    callbacks.on_checkpoint_loaded(algorithm=SimpleNamespace(metrics=MetricsLogger(root=True)))
    clock = _result(callbacks, MetricsLogger(root=True))[keys.SUITE][keys.TRAIN_TIME_S[-1]]
    assert 0 < clock < 1.0


def test_writing_a_checkpoint_is_not_training_time(fake_clock):
    """Tune saves between iterations (Trainable.save -> self.save_checkpoint): those seconds are
    left out of the next iteration's training time, and the save still happens as before."""

    class Algorithm:
        saved: list[str] = []

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            fake_clock.sleep(0.3)
            self.saved.append(checkpoint_dir)

    algorithm = Algorithm()
    callbacks, metrics = SuiteCallbacks(), MetricsLogger(root=True)
    callbacks._time_checkpoint_saving(algorithm)
    callbacks._time_checkpoint_saving(algorithm)  # wrapped once, not twice
    _result(callbacks, metrics)  # starts the clock
    algorithm.save_checkpoint("/ckpt")
    fake_clock.sleep(0.05)
    clock = _result(callbacks, metrics)[keys.SUITE][keys.TRAIN_TIME_S[-1]]
    assert algorithm.saved == ["/ckpt"]
    # The 0.05 s counted; the save's 0.3 s not.
    assert clock == pytest.approx(0.05)


def _line(iteration: int, train_s: float, eval_s: float, steps: int) -> dict:
    return {
        "training_iteration": iteration,
        "time_total_s": train_s + eval_s,
        "env_runners": {"episode_return_mean": float(iteration)},
        "suite": {
            "env_steps": steps,
            "train_time_s": train_s,
            "eval_time_s": eval_s,
            "env_steps_per_s": steps / train_s,
        },  # fmt: skip
    }


def test_analysis_repairs_a_clock_that_went_back_at_a_restore():
    from analysis.run_folder import repair_clock

    # Restored from the checkpoint at iteration 2 (clock 20 s): the old clock started again.
    lines = [_line(1, 10, 1, 100), _line(2, 20, 2, 200), _line(3, 10, 0, 300),
             _line(4, 20, 1, 400), _line(5, 5, 0, 500)]  # fmt: skip
    repaired, restores = repair_clock(lines)
    assert restores == 2
    clock = [keys.get(r, keys.TRAIN_TIME_S) for r in repaired]
    assert clock == [10, 20, 30, 40, 45]
    assert [keys.get(r, keys.EVAL_TIME_S) for r in repaired] == [1, 2, 2, 3, 3]
    assert keys.get(repaired[-1], keys.ENV_STEPS_PER_S) == pytest.approx(500 / 45)
    assert repaired[:2] == lines[:2]  # rows before the first restore are untouched
    assert repair_clock(repaired) == (repaired, 0)  # a continued clock is left alone


def test_report_says_which_trials_had_their_clock_repaired(tmp_path):
    from analysis.collect import collect

    experiment = tmp_path / "exp"
    trial = experiment / "DQN_cabs_00000"
    trial.mkdir(parents=True)
    (experiment / "run.json").write_text(
        json.dumps(
            {
                "sweep": "dqn_cabs",
                "algo": "dqn",
                "env": "cabs",
                "kind": "sweep",
                "metric": "env_runners/episode_return_mean",
                "status": "finished",
            }
        )  # fmt: skip
    )
    (trial / "params.json").write_text(json.dumps({"seed": 0}))
    lines = [_line(1, 10, 0, 100), _line(2, 20, 0, 200), _line(3, 10, 0, 300)]
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in lines))
    collection = collect([experiment])
    assert list(collection.runs["train_time_s"]) == [10, 20, 30]
    assert len(collection.repaired) == 1 and "1 restore" in collection.repaired[0]


def test_progress_clock_goes_on_across_resume(capsys):
    from sweeps.harness.reporting import ProgressCallback

    before = ProgressCallback(time_budget_s=840)
    before._start -= 600  # ran 10 minutes, then was interrupted
    state = before.get_state()  # Tune saves it with the experiment state

    after = ProgressCallback(time_budget_s=840)
    after.setup()
    after.set_state(state)
    assert "[resume] the sweep ran 10:00 before of its 14:00 budget" in capsys.readouterr().out
    assert after.status_line().startswith("[sweep] 10:00 of 14:00")


# ------------------------------------------------------------------------------------------------
# Ape-X: its own training clock and lifetime counters are checkpointed too
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_apex_keeps_its_clocks_over_a_save_and_restore(ray_session, tmp_path: Path):
    from envs import CABS, register_envs
    from sweeps.algorithms.apex import APEX_RESULTS, ApexDQNConfig, cabs_config

    register_envs()
    config = (
        cabs_config(ApexDQNConfig())
        .environment(CABS)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4, rollout_fragment_length=16)
        .apex(num_replay_buffer_shards=1)
        .training(num_steps_sampled_before_learning_starts=200, training_intensity=None)
        .reporting(min_time_s_per_iteration=0.5)
        .callbacks(SuiteCallbacks)
        .debugging(seed=0, log_level="ERROR")
    )
    # Each loop trains until something happened (a 0.5 s iteration on a loaded box may
    # sample or train nothing), within a deadline.
    algo = config.build()
    try:
        deadline, saved = time.monotonic() + 120, None
        while saved is None or not saved[APEX_RESULTS]["env_steps_trained_lifetime"]:
            assert time.monotonic() < deadline, "nothing trained before the save"
            saved = algo.train()
        algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    restored = config.build()
    try:
        since_restore = time.perf_counter()
        restored.load_checkpoint(str(tmp_path / "checkpoint"))  # as Tune restores a trial
        deadline, after = time.monotonic() + 120, saved
        while keys.get(after, keys.ENV_STEPS) <= keys.get(saved, keys.ENV_STEPS):
            assert time.monotonic() < deadline, "nothing sampled after the restore"
            after = restored.train()
        since_restore = time.perf_counter() - since_restore
    finally:
        restored.stop()
    # The clocks go on from the saved ones: grown, by no more than the time since the restore
    # began (a clock restarted from 0 would have fallen; one counted from the build, or twice,
    # grown by more: RLlib's restore_from_path alone, without Tune's load_checkpoint and its
    # on_checkpoint_loaded, counts from the build).
    for key in (keys.TRAIN_TIME_S, (APEX_RESULTS, "training_time_s")):
        grew = keys.get(after, key) - keys.get(saved, key)
        assert 0 < grew <= since_restore, (key, grew, since_restore)
    for counter in ("env_steps_sampled_lifetime", "env_steps_trained_lifetime"):
        assert after[APEX_RESULTS][counter] >= saved[APEX_RESULTS][counter] > 0, counter
    assert math.isfinite(keys.get(after, keys.ENV_STEPS_PER_S))
