"""The entropy target (sweeps/algorithms/entropy_target.py): a floor under the policy's entropy."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pytest
import torch

from sweeps.algorithms.entropy_target import (
    COEFF_METRIC,
    MAX_COEFF,
    MERGED_METRIC,
    TARGET_METRIC,
    EntropyTarget,
    Target,
    check_groups,
    check_target,
    merged_entropy,
    next_coeff,
    target_at,
)
from sweeps.algorithms.training_return import (
    best_training_return,
    note_training_return,
    share_training_return,
)


def test_the_multiplier_rises_below_the_target_and_falls_to_zero_above():
    assert next_coeff(0.0, entropy=0.1, target=0.3, rate=1e-3) == pytest.approx(2e-4)
    assert next_coeff(0.001, entropy=0.5, target=0.3, rate=1e-3) == pytest.approx(8e-4)
    assert next_coeff(0.0, entropy=1.0, target=0.3, rate=1e-3) == 0.0  # never negative
    assert next_coeff(MAX_COEFF, entropy=0.0, target=1.0, rate=1.0) == MAX_COEFF  # bounded


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"entropy_target": "high"}, "must be a number"),
        ({"entropy_target": -0.1}, "must be >= 0"),
        ({"entropy_target": 0.3, "entropy_target_rate": 0}, "must be a number > 0"),
        ({"entropy_target": True}, "must be a number"),
        ({"entropy_target": []}, "or a schedule such as"),
        ({"entropy_target": [[0, 0.3], [5, -1]]}, r"nats >= 0\] pairs, got \[5, -1\]"),
        ({"entropy_target": [[-1, 0.3]]}, r"\[env steps >= 0, nats >= 0\] pairs"),
        ({"entropy_target": [[0, 0.3, 1]]}, "pairs"),
        ({"entropy_target": [[10, 0.3]]}, "starting at step 0"),
        ({"entropy_target": [[0, 0.3], [9, 0.2], [9, 0.1]]}, "increasing points"),
        ({"entropy_target": 0.3, "entropy_target_by": "steps"}, "'env_steps' or 'return'"),
        (
            {"entropy_target": [[5, 0.6], [-5, 0.0]], "entropy_target_by": "return"},
            "increasing points",
        ),
        (
            {"entropy_target": [[-5, -0.6]], "entropy_target_by": "return"},
            r"\[training return, nats >= 0\]",
        ),
    ],
)
def test_a_bad_target_is_one_clear_error(settings, words):
    with pytest.raises(ValueError, match=words):
        check_target(settings)
    assert check_target({}) is None
    assert check_target({"entropy_target": 0.0}) is None  # none: a search space's "no floor"
    assert check_target({"entropy_target": 0.3}) == Target(((0.0, 0.3),), 1e-4, "env_steps")


def test_a_scheduled_target_is_linear_between_its_points_and_held_after_the_last():
    schedule = check_target(
        {"entropy_target": [[0, 0.3], [4_000_000, 0.3], [6_000_000, 0]]}
    ).schedule
    assert [target_at(schedule, s) for s in (0, 3e6, 4e6, 5e6, 6e6, 9e6)] == pytest.approx(
        [0.3, 0.3, 0.3, 0.15, 0.0, 0.0]
    )
    assert target_at(((0.0, 0.6),), 1e9) == 0.6  # a number: the same target throughout


class _Base:
    """Stands in for RLlib's learner: its own loss is 0."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        return torch.zeros(())

    def before_gradient_based_update(self, *, timesteps):
        pass


class _Learner(EntropyTarget, _Base):
    def __init__(self):
        from ray.rllib.models.torch.torch_distributions import TorchCategorical

        module = SimpleNamespace(get_train_action_dist_cls=lambda: TorchCategorical)
        self.module = {"p": SimpleNamespace(unwrapped=lambda: module)}
        self.logged: dict = {}
        self.metrics = SimpleNamespace(log_value=lambda k, v, window: self.logged.update({k: v}))


def _loss(learner, logits, settings, env_steps=None):
    from ray.rllib.core.columns import Columns

    batch = {Columns.LOSS_MASK: torch.ones(logits.shape[0], dtype=torch.bool)}
    config = SimpleNamespace(learner_config_dict=settings)
    fwd_out = {Columns.ACTION_DIST_INPUTS: logits}
    if env_steps is not None:
        learner.before_gradient_based_update(
            timesteps={"num_env_steps_sampled_lifetime": env_steps}
        )
    return learner.compute_loss_for_module(
        module_id="p", config=config, batch=batch, fwd_out=fwd_out
    )


def test_a_collapsed_policy_is_pushed_back_toward_the_target():
    learner = _Learner()
    logits = torch.tensor([[8.0, 0.0, 0.0, 0.0, 0.0, 0.0]] * 4, requires_grad=True)
    settings = {"entropy_target": 0.3, "entropy_target_rate": 1e-2}
    for _ in range(5):
        loss = _loss(learner, logits, settings)
    beta = learner.logged[("p", COEFF_METRIC)]
    assert beta > 0
    loss.backward()
    assert logits.grad[0, 0] > 0  # descending the loss lowers the dominant logit: more entropy


def test_above_the_target_or_without_one_the_loss_is_the_learners_own():
    learner = _Learner()
    uniform = torch.zeros(4, 6, requires_grad=True)  # entropy ln 6 > the target
    assert _loss(learner, uniform, {"entropy_target": 0.3}).item() == 0.0
    assert learner.logged[("p", COEFF_METRIC)] == 0.0
    assert _loss(_Learner(), uniform, {}).item() == 0.0


def test_the_learner_follows_the_schedule_by_the_env_steps_rllib_passes_it():
    learner = _Learner()
    collapsed = torch.tensor([[8.0, 0.0, 0.0, 0.0, 0.0, 0.0]] * 4)
    settings = {"entropy_target": [[0, 0.3], [100, 0.0]], "entropy_target_rate": 1e-2}
    _loss(learner, collapsed, settings, env_steps=50)
    assert learner.logged[("p", TARGET_METRIC)] == pytest.approx(0.15)
    assert learner.logged[("p", COEFF_METRIC)] > 0  # the collapsed policy is below 0.15
    for _ in range(20):  # beta falls by rate * entropy (~1.4e-4) an update, to 0
        _loss(learner, collapsed, settings, env_steps=200)
    assert learner.logged[("p", TARGET_METRIC)] == 0.0
    assert learner.logged[("p", COEFF_METRIC)] == 0.0  # no floor left: beta back down to 0


def test_by_return_the_target_follows_the_best_training_return_handed_to_the_learner():
    settings = {"entropy_target": [[-5, 0.6], [15, 0.0]], "entropy_target_by": "return"}
    schedule = check_target(settings).schedule  # returns may be negative, from any point
    assert [target_at(schedule, r) for r in (-21, -5, 5, 15, 21)] == pytest.approx(
        [0.6, 0.6, 0.3, 0.0, 0.0]
    )
    learner = _Learner()
    collapsed = torch.tensor([[8.0, 0.0, 0.0, 0.0, 0.0, 0.0]] * 4)
    _loss(learner, collapsed, settings, env_steps=9e6)  # env steps do not move this target
    assert learner.logged[("p", TARGET_METRIC)] == pytest.approx(0.6)  # no return yet
    note_training_return(learner, 5.0)
    _loss(learner, collapsed, settings)
    assert learner.logged[("p", TARGET_METRIC)] == pytest.approx(0.3)
    note_training_return(learner, -20.0)  # a worse iteration does not raise the floor again
    _loss(learner, collapsed, settings)
    assert learner.logged[("p", TARGET_METRIC)] == pytest.approx(0.3)


def test_the_training_return_reaches_the_learners_only_where_a_schedule_is_keyed_by_it():
    from sweeps.harness.callbacks import learners_need_return

    assert not learners_need_return({"entropy_target": [[0, 0.6], [10, 0.0]]})  # by env steps
    assert not learners_need_return({}) and not learners_need_return(None)
    assert learners_need_return({"entropy_target": [[0, 0.6]], "entropy_target_by": "return"})
    assert learners_need_return({"lr_scale_by_return": [[5, 1.0], [15, 0.2]]})

    learner = _Learner()
    calls = []

    def foreach_learner(func, *, timeout_seconds, **kwargs):  # as RLlib's: func(learner, **kwargs)
        calls.append(timeout_seconds)
        func(learner, **kwargs)

    algorithm = SimpleNamespace(learner_group=SimpleNamespace(foreach_learner=foreach_learner))
    share_training_return(algorithm, 5.0, wanted=False)
    share_training_return(algorithm, float("nan"), wanted=True)  # no game has ended yet
    assert calls == [] and best_training_return(learner) == -math.inf
    share_training_return(algorithm, 4.0, wanted=True)
    share_training_return(algorithm, 2.0, wanted=True)  # worse: the best stays
    assert calls == [0.0, 0.0]  # remote learners are not waited for
    assert best_training_return(learner) == 4.0


@pytest.mark.slow
def test_a_real_appo_learner_lowers_its_floor_and_rate_as_the_training_return_rises(ray_session):
    """CartPole, RLlib's APPO with the suite's learner and callbacks: the return the driver
    reports reaches the learner, whose target in force and learning-rate scale follow it."""
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.core import DEFAULT_MODULE_ID

    from sweeps.algorithms.kl_lr import RETURN_SCALE_METRIC
    from sweeps.algorithms.pg_learner import learner_class as bootstrapped_learner
    from sweeps.harness import keys
    from sweeps.harness.callbacks import SuiteCallbacks

    schedule = [[0, 0.6], [200, 0.0]]
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4, rollout_fragment_length=32)
        .training(train_batch_size_per_learner=256, lr=5e-4)
        .learners(
            num_learners=0,  # as the suite's sweeps: the learner in the driver
            learner_config_dict={
                "entropy_target": schedule,
                "entropy_target_by": "return",
                "lr_scale_by_return": [[0, 1.0], [200, 0.5]],
            },
        )
        .reporting(min_time_s_per_iteration=0.5)
        .callbacks(SuiteCallbacks)
        .debugging(seed=0, log_level="ERROR")
    )
    config.learners(learner_class=bootstrapped_learner(config))
    algo = config.build()
    try:
        returns, targets, scales = [], [], []
        # APPO's learner updates in its own thread: on a loaded machine an iteration may end
        # before an update has run with the return handed over, and the env runner may take
        # many 0.5-s iterations to start (a CPU-bound neighbour: none sampled in 30), so train
        # until one has, for at least 3 iterations and at most 2 minutes
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            result = algo.train()
            returns.append(keys.get(result, keys.RETURN_MEAN))
            learner = result.get("learners", {}).get(DEFAULT_MODULE_ID, {})
            targets.append(learner.get(TARGET_METRIC))  # none before the learner's first update
            scales.append(learner.get(RETURN_SCALE_METRIC))
            reported = any(not math.isnan(r) for r in returns)  # an episode ended (loaded box)
            if len(returns) >= 3 and reported and targets[-1] is not None and targets[-1] < 0.6:
                break
        best = best_training_return(algo.learner_group._learner)
    finally:
        algo.stop()
    assert best == max(r for r in returns if not math.isnan(r)) > 0
    logged = [t for t in targets if t is not None]
    # the floor came down from 0.6 with the returns handed over, never below the best's target
    assert logged and logged[-1] < 0.6
    assert min(logged) >= target_at(((0, 0.6), (200, 0.0)), best) - 1e-9
    # the rate's scale came down too (the return it read may be an iteration newer)
    assert 1.0 - 0.5 * best / 200 - 1e-9 <= scales[-1] < 1.0


PONG_MOVES = [[0, 1], [2, 4], [3, 5]]  # NOOP/FIRE, RIGHT/RIGHTFIRE, LEFT/LEFTFIRE


@pytest.mark.parametrize(
    "groups, message",
    [
        ([[0, 1]], "at least two"),
        ([[0, 1], []], "at least two"),
        ([[0, 1], [1, 2]], "an index in two groups"),
        ([[0, -1], [2]], "indices >= 0"),
        ("0,1", "such as"),
    ],
)
def test_bad_action_groups_are_refused(groups, message):
    with pytest.raises(ValueError, match=message):
        check_target({"entropy_target": 0.3, "entropy_target_groups": groups})
    with pytest.raises(ValueError, match=message):  # checked without a target too
        check_groups({"entropy_target_groups": groups})


def test_the_merged_entropy_counts_duplicate_actions_as_one_move():
    split = torch.log(torch.tensor([[0.5, 0.0, 0.5, 0.0, 0.0, 0.0]]) + 1e-12)
    one_move = check_groups({"entropy_target_groups": [[0, 2], [1], [3, 4, 5]]})
    assert merged_entropy(split, one_move)[0].item() == pytest.approx(0.0, abs=1e-6)
    moves = check_groups({"entropy_target_groups": PONG_MOVES})
    assert merged_entropy(torch.zeros(1, 6), moves)[0].item() == pytest.approx(math.log(3))
    with pytest.raises(ValueError, match="names action 5, but the policy has 4 actions"):
        merged_entropy(torch.zeros(1, 4), moves)


def test_with_groups_the_floor_holds_on_the_merged_entropy():
    # Always "up", split evenly between RIGHT and RIGHTFIRE: 0.69 nats over the actions, above a
    # target of 0.3, but 0 over the moves: the floor on the moves pushes the policy back.
    up = torch.log(torch.tensor([[1e-6, 1e-6, 0.5, 1e-6, 0.5, 1e-6]] * 4))
    plain = {"entropy_target": 0.3, "entropy_target_rate": 1e-2}
    learner = _Learner()
    _loss(learner, up.clone(), plain)
    assert learner.logged[("p", COEFF_METRIC)] == 0.0
    learner = _Learner()
    logits = up.clone().requires_grad_(True)
    for _ in range(5):
        loss = _loss(learner, logits, {**plain, "entropy_target_groups": PONG_MOVES})
    assert learner.logged[("p", MERGED_METRIC)] == pytest.approx(0.0, abs=1e-3)
    assert learner.logged[("p", COEFF_METRIC)] > 0
    loss.backward()
    assert logits.grad[0, 0] < 0 and logits.grad[0, 2] > 0  # toward NOOP, away from RIGHT


def test_groups_without_a_target_only_log_the_merged_entropy():
    learner = _Learner()
    uniform = torch.zeros(4, 6, requires_grad=True)
    assert _loss(learner, uniform, {"entropy_target_groups": PONG_MOVES}).item() == 0.0
    assert learner.logged == {("p", MERGED_METRIC): pytest.approx(math.log(3))}


def test_a_restored_learner_goes_on_with_its_floor_its_kl_scale_and_best_return(tmp_path):
    """What the extras learn as they go is in a real APPO learner's checkpoint: restored, the
    floor keyed by the best training return stays where it was (it used to start again from the
    schedule's first value until the first games ended). The weights a sync sends carry none of
    it, and a learner restored from a checkpoint without it starts afresh."""
    import gymnasium as gym
    from ray.rllib.algorithms.appo import APPOConfig

    from sweeps.algorithms.entropy_target import COEFFS_ATTR
    from sweeps.algorithms.kl_lr import SCALES_ATTR
    from sweeps.algorithms.pg_learner import ExtrasInCheckpoints, learner_class

    settings = {"entropy_target": [[-5, 0.6], [15, 0.0]], "entropy_target_by": "return"}
    config = APPOConfig().environment("CartPole-v1")
    config.learners(learner_config_dict={**settings, "lr_kl_target": 0.01})
    config.learners(learner_class=learner_class(config))

    def build():
        return config.build_learner(env=gym.make("CartPole-v1"))

    learner = build()
    note_training_return(learner, 12.0)
    setattr(learner, COEFFS_ATTR, {"default_policy": 0.02})
    setattr(learner, SCALES_ATTR, {"default_policy": 2.25})
    learner.save_to_path(str(tmp_path / "learner"))
    restored = build()
    assert best_training_return(restored) == -math.inf  # a new learner: nothing yet
    restored.restore_from_path(str(tmp_path / "learner"))
    assert best_training_return(restored) == 12.0
    assert getattr(restored, COEFFS_ATTR) == {"default_policy": 0.02}
    assert getattr(restored, SCALES_ATTR) == {"default_policy": 2.25}
    schedule = check_target(settings).schedule
    assert target_at(schedule, best_training_return(restored)) == pytest.approx(0.09)  # not 0.6
    weights = learner.get_state(components="rl_module")
    assert ExtrasInCheckpoints.STATE_KEY not in weights
    before = {k: v for k, v in learner.get_state().items() if k != ExtrasInCheckpoints.STATE_KEY}
    fresh = build()
    fresh.set_state(before)
    assert best_training_return(fresh) == -math.inf and not hasattr(fresh, COEFFS_ATTR)
