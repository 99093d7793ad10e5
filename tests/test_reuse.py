"""A trial's actor reused for the next trial (``--reuse-actors``, ``sweeps/seams/reuse.py``): the
next trial starts from a clean state, each kind of state checked on its own against an algorithm
built new from the same config (its weights, optimizer, replay, RNG streams, schedules, metrics),
and a sweep's trials run one after another in one process, each from its own start."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED

from envs import CABS, register_envs
from sweeps.algorithms.apex import ApexDQN, ApexDQNConfig, cabs_config
from sweeps.harness import keys
from sweeps.seams.reuse import ReusableTrial, reusable

# Env steps the env runners sampled in one iteration (RLlib reduces it per iteration).
PER_ITERATION_SAMPLED = (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED)

register_envs()  # (as tests/test_apex.py: the env runners find the cab env by id)


def test_reusable_keeps_the_class_and_its_name():
    cls = reusable(ApexDQN)
    assert issubclass(cls, ApexDQN) and issubclass(cls, ReusableTrial)
    assert cls.__name__ == "ApexDQN"  # Tune names trials after it: ApexDQN_<id>
    assert reusable(ApexDQN) is cls and reusable(cls) is cls
    assert cls.get_default_config().algo_class is ApexDQN


def test_only_rllib_algorithms_are_reused_and_only_when_asked():
    from sweeps import apex_cabs, sb3_dqn_cabs
    from sweeps.harness.cli import parse_args
    from sweeps.harness.runner import trainable

    base = ["--name", "x", "--storage-path", "/tmp/never-made"]
    for sweep, argv, reused in [
        (apex_cabs.SWEEP, [], False),
        (apex_cabs.SWEEP, ["--reuse-actors"], True),
        (sb3_dqn_cabs.SWEEP, ["--reuse-actors", "--benchmark-seeds", "1"], False),
    ]:
        args = parse_args(sweep, [*base, *argv], new_folder=False)
        config = sweep.make_config(args)
        assert issubclass(trainable(config, args), ReusableTrial) is reused, (sweep.name, argv)


def _config(seed: int, lr: float) -> dict:
    config = (
        cabs_config(ApexDQNConfig())
        .environment(CABS)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4, rollout_fragment_length=16)
        .apex(num_replay_buffer_shards=1, max_weight_sync_delay=64)
        .training(lr=lr, num_steps_sampled_before_learning_starts=200, training_intensity=None)
        .reporting(min_time_s_per_iteration=0.5)
        .debugging(seed=seed, log_level="ERROR")
    )
    return config.to_dict()  # as Tune hands a trial its config


@pytest.fixture(scope="class")  # (its algorithms hold the CPUs: gone before the sweep test)
def reused_and_new(_ray_session_end):
    """One actor's algorithm trained (seed 0), then reset to a second trial's config (seed 1, a
    new learning rate), beside an algorithm built new from that config; the global RNG's first
    draws after each set-up (the set-up seeds it, as in a new process). The tests request the
    shared ``ray_session``, which finds this Ray instance."""
    import ray
    import torch

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)

    cls = reusable(ApexDQN)
    algo = cls(config=_config(seed=0, lr=1e-3))
    trained = [algo.train() for _ in range(3)]
    # Its replay holds data before the reset (asked of the shard itself: the results' shard
    # stats are polled and lag; a loaded box may add nothing in the first 1.5 s).
    deadline = time.monotonic() + 120
    while not (added := algo.replay_stats()[0]["num_env_steps_added"]):
        assert time.monotonic() < deadline, "nothing added to the replay"
        trained.append(algo.train())
    before = {"weights": _weights(algo), "draws": torch.rand(4).tolist(), "added": added}
    assert algo.reset(_config(seed=1, lr=5e-4))
    reused_draws = torch.rand(4).tolist()
    new = cls(config=_config(seed=1, lr=5e-4))
    new_draws = torch.rand(4).tolist()
    yield {
        "reused": algo,
        "new": new,
        "trained": trained,
        "before": before,
        "draws": (reused_draws, new_draws),
    }
    algo.stop()
    new.stop()


def _learner(algo):
    return algo.learner_group._learner


def _weights(algo) -> dict[str, np.ndarray]:
    module = _learner(algo).module
    return {
        f"{mid}/{name}": p.detach().cpu().numpy().copy()
        for mid in module.keys()
        for name, p in module[mid].state_dict().items()
    }


@pytest.mark.slow
class TestReusedActorStartsClean:
    def test_weights_are_the_new_configs_not_the_old_trials(self, reused_and_new, ray_session):
        reused, new = _weights(reused_and_new["reused"]), _weights(reused_and_new["new"])
        assert reused.keys() == new.keys()
        for name in reused:
            np.testing.assert_array_equal(reused[name], new[name], err_msg=name)
        old = reused_and_new["before"]["weights"]
        assert any(not np.array_equal(old[n], reused[n]) for n in reused)

    def test_optimizer_has_taken_no_step_and_runs_the_new_learning_rate(
        self, reused_and_new, ray_session
    ):
        for algo in (reused_and_new["reused"], reused_and_new["new"]):
            learner = _learner(algo)
            for optimizer in learner.get_optimizers_for_module(next(iter(learner.module.keys()))):
                optim = optimizer[1]
                assert all(not state for state in optim.state.values()), "Adam moments kept"
                assert [g["lr"] for g in optim.param_groups] == pytest.approx([5e-4])

    def test_replay_is_empty(self, reused_and_new, ray_session):
        assert reused_and_new["before"]["added"] > 0
        for algo in (reused_and_new["reused"], reused_and_new["new"]):
            assert [s["num_env_steps_added"] for s in algo.replay_stats()] == [0]

    def test_rng_streams_are_seeded_again_as_in_a_new_process(self, reused_and_new, ray_session):
        reused, new = reused_and_new["draws"]
        assert reused == new
        assert reused != reused_and_new["before"]["draws"]

    def test_schedules_and_counters_start_from_zero(self, reused_and_new, ray_session):
        algo = reused_and_new["reused"]
        assert algo.iteration == 0
        assert algo.get_runner_epsilons() == reused_and_new["new"].get_runner_epsilons()
        assert algo.metrics.peek(keys.ENV_STEPS_SAMPLED, default=0) == 0

    def test_metrics_restart_and_match_a_new_algorithms_first_iteration(
        self, reused_and_new, ray_session
    ):
        # Counted from zero: the lifetime count is this algorithm's own iterations' samples
        # (how many a 0.5 s iteration samples depends on the machine's speed, so it is not
        # compared with the last trial's total).
        last_trial = keys.get(reused_and_new["trained"][-1], keys.ENV_STEPS_SAMPLED)
        assert last_trial > 0
        for algo in (reused_and_new["reused"], reused_and_new["new"]):
            result = algo.train()
            assert result["training_iteration"] == 1
            sampled = [keys.get(result, PER_ITERATION_SAMPLED, 0)]
            # On a loaded machine the first iterations can end before the env runner's first
            # batch (no samples counted yet); the next ones then count them.
            deadline = time.monotonic() + 60
            while not keys.get(result, keys.ENV_STEPS_SAMPLED) and time.monotonic() < deadline:
                result = algo.train()
                sampled.append(keys.get(result, PER_ITERATION_SAMPLED, 0))
            steps = keys.get(result, keys.ENV_STEPS_SAMPLED)
            assert steps > 0
            assert steps == sum(sampled), "counted on from the last trial's"
        assert reused_and_new["reused"].trials_in_actor == 2


def _rows(trial: Path) -> list[dict]:
    return [json.loads(line) for line in (trial / "result.json").read_text().splitlines()]


@pytest.mark.slow
def test_a_sweeps_trials_run_in_one_process_each_from_its_own_start(tmp_path, ray_session):
    """Three trials one at a time with --reuse-actors: one process runs them all, and each
    trial's rows count its iterations, env steps and training clock from zero."""
    from sweeps import apex_cabs

    argv = [
        *("--storage-path", str(tmp_path), "--name", "reuse", "--reuse-actors"),
        *("--num-samples", "3", "--max-concurrent-trials", "1", "--search", "random"),
        *("--scheduler", "fifo", "--stop-timesteps", "600", "--eval-episodes", "1"),
        *("--final-episodes", "0", "--checkpoint-freq", "0", "--progress-interval-s", "600"),
    ]
    assert apex_cabs.main(argv) == 0
    trials = sorted((tmp_path / "reuse").glob("ApexDQN_*"))
    assert len(trials) == 3
    rows = {trial.name: _rows(trial) for trial in trials}
    assert len({r[0]["pid"] for r in rows.values()}) == 1, "each trial a new actor"
    in_actor = sorted(keys.get(r[-1], keys.TRIALS_IN_ACTOR) for r in rows.values())
    assert in_actor == [1, 2, 3]
    for name, trial_rows in rows.items():
        first = trial_rows[0]
        assert first["training_iteration"] == 1, name
        # Lifetime env steps are the trial's own, from zero: at its first row that sampled, the
        # sum of its iterations' samples so far (a first iteration on a loaded machine can end
        # before the env runner's first batch: it counts none).
        sampled = [r.get(ENV_RUNNER_RESULTS, {}).get(NUM_ENV_STEPS_SAMPLED, 0) for r in trial_rows]
        at = next(i for i, n in enumerate(sampled) if n > 0)
        steps = keys.get(trial_rows[at], keys.ENV_STEPS)
        assert 0 < steps == sum(sampled[: at + 1]), (name, steps, sampled)
        assert keys.get(first, keys.TRAIN_TIME_S) < 30.0, name
