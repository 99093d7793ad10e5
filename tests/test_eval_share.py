"""Periodic greedy evaluation within a share of the training clock (``--eval-share``, issue 64
part 4): the rule, its ledger over a checkpoint, the flag, and a real RLlib algorithm whose
evaluations the share thins (and one it leaves alone)."""

from __future__ import annotations

import math

import pytest
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from sweeps.harness import eval_share, keys


def test_the_first_evaluation_always_runs_then_the_share_decides():
    assert eval_share.due(train_s=0.0, spent_s=0.0, evaluations=0, share=0.25)
    # One evaluation of 1 s so far: the next is guessed at 1 s, so 2 s of evaluation in all
    # needs 8 s of training at 25%.
    assert not eval_share.due(train_s=7.9, spent_s=1.0, evaluations=1, share=0.25)
    assert eval_share.due(train_s=8.0, spent_s=1.0, evaluations=1, share=0.25)
    # The guess is the mean evaluation: 4 of 0.5 s each, the fifth within 25% of 10 s.
    assert eval_share.due(train_s=10.0, spent_s=2.0, evaluations=4, share=0.25)
    assert not eval_share.due(train_s=9.9, spent_s=2.0, evaluations=4, share=0.25)
    assert eval_share.due(train_s=0.0, spent_s=100.0, evaluations=9, share=0.0)  # 0: no cap


def test_the_ledger_goes_on_from_a_checkpoint():
    metrics = MetricsLogger(root=True)
    ledger = eval_share.Ledger(metrics)
    assert ledger.figures() == {keys.PERIODIC_EVAL_S[-1]: 0.0, keys.EVALUATIONS[-1]: 0}
    ledger.spent(0.5)
    ledger.spent(1.5)
    restored = MetricsLogger(root=True)
    restored.set_state(metrics.get_state())  # what RLlib writes into every checkpoint
    again = eval_share.Ledger(restored)
    assert again.figures() == {keys.PERIODIC_EVAL_S[-1]: 2.0, keys.EVALUATIONS[-1]: 2}
    assert not again.due(train_s=11.9, share=0.25) and again.due(train_s=12.0, share=0.25)


def test_the_flag_takes_a_share_and_refuses_a_negative_one(capsys):
    from sweeps.appo_cabs import SWEEP as CABS
    from sweeps.dqn_gym import SWEEP as GYM
    from sweeps.harness.cli import build_parser

    assert build_parser(GYM).parse_args([]).eval_share == 0.25  # the workload's default
    assert build_parser(CABS).parse_args([]).eval_share == 0.0  # cabs: no cap
    assert build_parser(GYM).parse_args(["--eval-share", "0.1"]).eval_share == 0.1
    with pytest.raises(SystemExit) as exit_info:
        build_parser(GYM).parse_args(["--eval-share", "-1"])
    assert exit_info.value.code == 2
    assert "--eval-share: must be >= 0" in capsys.readouterr().err


def _train(share: float, iterations: int = 4) -> list[dict]:
    """A small DQN on CartPole through the generic workload's config, evaluating every iteration
    within ``share``."""
    from sweeps import gym_family
    from sweeps.dqn_gym import SWEEP
    from sweeps.harness.cli import flag_values

    args = flag_values(
        SWEEP, ["--env", "CartPole-v1", "--num-env-runners", "0", "--eval-episodes", "2"]
    ).replace(eval_share=share)
    config = gym_family.make_config("dqn", args).reporting(min_time_s_per_iteration=0.2)
    algo = config.build()
    try:
        return [algo.train() for _ in range(iterations)]
    finally:
        algo.stop()


def test_a_tiny_share_evaluates_once_and_no_share_every_iteration(ray_session):
    thinned = _train(share=1e-9)
    counts = [keys.get(r, keys.EVALUATIONS) for r in thinned]
    assert counts == [1, 1, 1, 1]  # the first, then never within a billionth of the clock
    first = keys.get(thinned[0], keys.EVAL_RETURN_MEAN)
    assert math.isfinite(first) and keys.get(thinned[-1], keys.GREEDY_RETURN) == first
    spent = keys.get(thinned[-1], keys.PERIODIC_EVAL_S)
    assert 0 < spent <= keys.get(thinned[-1], keys.EVAL_TIME_S)
    assert all(eval_share.Ledger.KEY not in r for r in thinned)  # the ledger is not a result

    every = _train(share=0.0)
    assert [keys.get(r, keys.EVALUATIONS) for r in every] == [1, 2, 3, 4]
    assert all(math.isfinite(keys.get(r, keys.EVAL_RETURN_MEAN)) for r in every)


def test_each_evaluation_counts_each_episode_it_plays_once_from_its_own_seeded_start():
    """The N episodes side by side each count once (RLlib's own local evaluation counts the
    first N to end, leaning to short episodes): the figures are those of held_out_eval.play on
    the run's periodic seeds, new starts at every evaluation."""
    from types import SimpleNamespace

    import numpy as np
    import torch
    from ray.rllib.utils.metrics import EPISODE_LEN_MEAN, NUM_EPISODES

    from sweeps.harness.held_out_eval import periodic_seed, play

    class Left(torch.nn.Module):
        """A Q-learner's face: always action 0 (CartPole falls within a few dozen steps)."""

        def forward_inference(self, batch):
            return {"actions": torch.zeros(len(batch["obs"]), dtype=torch.long)}

    config = SimpleNamespace(
        env="CartPole-v1", env_config={}, evaluation_duration=3,
        evaluation_duration_unit="episodes", seed=7,
    )  # fmt: skip
    algorithm = SimpleNamespace(config=config, metrics=MetricsLogger(root=True))
    workers = SimpleNamespace(local_env_runner=SimpleNamespace(module=Left()))
    for evaluation in range(2):
        _, env_steps, agent_steps = eval_share.evaluate_within_share(algorithm, workers, share=0)
        played = play(Left(), "CartPole-v1", {}, 3, periodic_seed(7, 3, evaluation))
        result: dict = {}
        assert eval_share.take_played(algorithm, result)  # (keys.PERIODIC_ONCE in the result)
        evaluation_results = result[keys.EVAL_RETURN_MEAN[0]][keys.EVAL_RETURN_MEAN[1]]
        assert keys.get(result, keys.EVAL_RETURN_MEAN) == np.mean(played)
        assert evaluation_results[NUM_EPISODES] == 3
        assert evaluation_results[EPISODE_LEN_MEAN] == np.mean(played.lengths)
        assert env_steps == agent_steps == sum(played.lengths) > 3
        assert not eval_share.take_played(algorithm, again := {})
        assert again == {}  # taken once: a result without an evaluation carries none
    assert periodic_seed(7, 3, 0) != periodic_seed(7, 3, 1)
    assert eval_share.Ledger(algorithm.metrics).evaluations == 2
