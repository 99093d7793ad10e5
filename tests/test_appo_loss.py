"""APPO's loss options (sweeps/algorithms/appo_loss.py): the copy of RLlib's loss is RLlib's loss,
the added line standardises over the loss-masked steps only, V-trace's λ is RLlib's V-trace at
1 and GAE on-policy, and V-trace over the flat minibatch gives each chunk its own V-trace; IMPALA's
(sweeps/algorithms/impala_loss.py) over whole chunks is RLlib's loss where the rows cut no trace."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
import torch

from sweeps.algorithms.appo_loss import (
    appo_loss,
    check_lambda,
    check_standardize,
    check_whole_chunks,
    standardize,
    vtrace,
    vtrace_flat,
)

FRAGMENT = 5
ROWS = 4  # fragments per batch


def test_standardised_advantages_have_mean_0_and_std_1_over_the_masked_steps():
    advantages = torch.tensor([[1.0, 2.0, 3.0, 100.0], [5.0, 6.0, 7.0, -100.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    out = standardize(advantages * mask, mask)
    kept = out[mask.bool()]
    assert float(kept.mean()) == pytest.approx(0.0, abs=1e-6)
    assert float(kept.std(unbiased=False)) == pytest.approx(1.0, abs=1e-6)
    assert torch.all(out[~mask.bool()] == 0)  # the masked-off steps stay out of the loss
    # their order is kept: (x - mean) / std of [1, 2, 3, 5, 6, 7] (mean 4, std 2.16)
    assert float(out[0, 0]) == pytest.approx((1 - 4) / 2.1602469, rel=1e-5)


SWITCHES = [
    ("standardize_advantages", check_standardize),
    ("vtrace_whole_chunks", check_whole_chunks),
]


@pytest.mark.parametrize("key, check", SWITCHES)
@pytest.mark.parametrize("value", [1, "yes", None])
def test_the_switches_take_only_a_bool(key, check, value):
    with pytest.raises(ValueError, match="must be true or false"):
        check({key: value})
    assert check({}) is False
    assert check({key: True}) is True


@pytest.mark.parametrize("key", [key for key, _ in SWITCHES])
def test_the_suites_learners_take_the_switches_theirs_read(key):
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.impala import IMPALAConfig

    from sweeps.harness.cli import UsageError, apply_settings, check_learner_settings

    on = {key: True}
    check_learner_settings(APPOConfig().learners(learner_config_dict=on))
    if key == "vtrace_whole_chunks":  # IMPALA's learner reads it too (impala_loss.py)
        check_learner_settings(IMPALAConfig().learners(learner_config_dict=on))
    else:
        with pytest.raises(ValueError, match="only the suite's APPO learner"):
            check_learner_settings(IMPALAConfig().learners(learner_config_dict=on))
    with pytest.raises(UsageError, match="must be true or false"):
        apply_settings(APPOConfig(), [("learner_config_dict", {key: "on"})])


@pytest.fixture(scope="module")
def cartpole_learner():
    """The suite's APPO learner on CartPole and a batch (:func:`_on_cartpole`)."""
    from ray.rllib.algorithms.appo import APPOConfig

    return _on_cartpole(APPOConfig().training(clip_param=0.2, entropy_coeff=0.01))


@pytest.fixture(scope="module")
def impala_learner():
    """The suite's IMPALA learner on CartPole and a batch (:func:`_on_cartpole`)."""
    from ray.rllib.algorithms.impala import IMPALAConfig

    return _on_cartpole(IMPALAConfig().training(entropy_coeff=0.01))


def _on_cartpole(config):
    """The suite's learner for ``config`` on CartPole, built in this process (no Ray), and one
    batch of random states in RLlib's layout: ROWS fragments of FRAGMENT steps, the last of each
    masked off (as RLlib appends one step per chunk), one episode ending mid-batch, the actions'
    behaviour log-probs the module's own (on-policy: every probability ratio is 1)."""
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.columns import Columns

    from sweeps.algorithms.pg_learner import learner_class as bootstrapped_learner

    config = config.environment("CartPole-v1").env_runners(rollout_fragment_length=FRAGMENT)
    config.training(learner_class=bootstrapped_learner(config))
    torch.manual_seed(0)  # the module's initial weights: the same batch, the same losses, each run
    learner = config.build_learner(env=gym.make("CartPole-v1"))
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    gen = torch.Generator().manual_seed(0)
    n = FRAGMENT * ROWS
    mask = torch.ones(n)
    mask[FRAGMENT - 1 :: FRAGMENT] = 0.0
    terminated = torch.zeros(n)
    terminated[7] = 1.0
    batch = {
        Columns.OBS: torch.randn(n, 4, generator=gen),
        Columns.ACTIONS: torch.randint(0, 2, (n,), generator=gen),
        Columns.REWARDS: torch.randn(n, generator=gen),
        Columns.TERMINATEDS: terminated.bool(),
        Columns.LOSS_MASK: mask.bool(),
    }
    with torch.no_grad():
        logits = module.forward_train(batch)[Columns.ACTION_DIST_INPUTS]
        dist = module.get_train_action_dist_cls().from_logits(logits)
        batch[Columns.ACTION_LOGP] = dist.logp(batch[Columns.ACTIONS])
    return learner, config, batch


def _loss(learner, config, batch, fn, lambda_=None, **learner_config):
    """``fn``'s loss (and the policy loss it logged) with ``learner_config`` as the
    learner settings and ``lambda_``, where given, as the (APPO) config's."""
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.learner.learner import POLICY_LOSS_KEY

    lam = {} if lambda_ is None else {"lambda_": lambda_}
    config = config.copy(copy_frozen=False).training(**lam)
    config.learners(learner_config_dict=learner_config)
    fwd_out = learner.module[DEFAULT_MODULE_ID].forward_train(batch)
    loss = fn(module_id=DEFAULT_MODULE_ID, config=config, batch=batch, fwd_out=fwd_out)
    logs = POLICY_LOSS_KEY if isinstance(config, APPOConfig) else "mean_pi_loss"  # IMPALA's
    logged = learner.metrics.peek((DEFAULT_MODULE_ID, logs))
    # (RLlib logs the policy loss as a tensor still in the graph: read its value, detached.)
    logged = logged.detach() if hasattr(logged, "detach") else logged
    return float(loss.detach()), float(logged)


def test_the_copy_of_rllibs_loss_computes_rllibs_loss(cartpole_learner):
    from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner

    learner, config, batch = cartpole_learner

    def rllib(**kw):
        return APPOTorchLearner.compute_loss_for_module(learner, **kw)

    def copy(*, module_id, config, batch, fwd_out):
        return appo_loss(learner, module_id, config, batch, fwd_out, lambda adv, mask: adv)

    expected = _loss(learner, config, batch, rllib)
    assert _loss(learner, config, batch, copy) == pytest.approx(expected, rel=1e-6)


def test_standardised_on_policy_advantages_give_a_policy_loss_of_0(cartpole_learner):
    # On-policy every ratio is 1 and the clip is idle: the policy loss is minus the mean
    # advantage, which standardising makes 0.
    learner, config, batch = cartpole_learner
    _, off = _loss(learner, config, batch, learner.compute_loss_for_module)
    total, on = _loss(
        learner, config, batch, learner.compute_loss_for_module, standardize_advantages=True
    )
    assert abs(off) > 1e-3
    assert on == pytest.approx(0.0, abs=1e-5)
    assert math.isfinite(total)


def _vtrace_inputs(on_policy: bool):
    """Time-major inputs of 6 steps x 3 fragments: random rewards and values, a terminal step
    (discount 0) in one fragment, and behaviour log-probs equal to the target's or not."""
    gen = torch.Generator().manual_seed(1)
    t, b = 6, 3
    target = -torch.rand(t, b, generator=gen)
    behaviour = target if on_policy else target + 0.5 * torch.randn(t, b, generator=gen)
    discounts = torch.full((t, b), 0.99)
    discounts[2, 1] = 0.0
    return {
        "target_action_log_probs": target,
        "behaviour_action_log_probs": behaviour,
        "discounts": discounts,
        "rewards": torch.randn(t, b, generator=gen),
        "values": torch.randn(t, b, generator=gen),
        "bootstrap_values": torch.randn(b, generator=gen),
    }


def test_vtrace_at_lambda_1_is_rllibs():
    from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import vtrace_torch

    inputs = _vtrace_inputs(on_policy=False)
    ours = vtrace(**inputs, lambda_=1.0)
    theirs = vtrace_torch(**inputs)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95])
def test_on_policy_vtrace_with_lambda_is_gae(lam):
    # Every rho is 1: the targets less the values are GAE(gamma, lambda) advantages,
    # A_t = delta_t + gamma_t * lambda * A_{t+1}, with delta_t = r_t + gamma_t V_{t+1} - V_t.
    inputs = _vtrace_inputs(on_policy=True)
    r, v, d = inputs["rewards"], inputs["values"], inputs["discounts"]
    next_v = torch.cat([v[1:], inputs["bootstrap_values"][None]], dim=0)
    deltas = r + d * next_v - v
    gae = torch.zeros_like(v)
    acc = torch.zeros_like(inputs["bootstrap_values"])
    for t in reversed(range(len(r))):
        acc = deltas[t] + d[t] * lam * acc
        gae[t] = acc
    targets, _ = vtrace(**inputs, lambda_=lam)
    torch.testing.assert_close(targets - v, gae)
    if lam == 0.0:  # one-step TD targets
        torch.testing.assert_close(targets, r + d * next_v)


@pytest.mark.parametrize("value", [1.5, -0.1, "0.9", True, None])
def test_lambda_takes_only_a_number_in_0_to_1(value):
    from sweeps.harness.cli import UsageError, apply_settings

    with pytest.raises(ValueError, match="lambda_ must be a number in"):
        check_lambda(value)
    if not isinstance(value, str):
        from ray.rllib.algorithms.appo import APPOConfig

        with pytest.raises(UsageError, match="lambda_"):
            apply_settings(APPOConfig(), [("lambda_", value)])
    assert check_lambda(1) == 1.0 and check_lambda(0.95) == 0.95


def test_the_suites_learner_takes_lambda_which_rllibs_ignores(cartpole_learner):
    from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner

    learner, config, batch = cartpole_learner

    def rllib(**kw):
        return APPOTorchLearner.compute_loss_for_module(learner, **kw)

    rllib_1 = _loss(learner, config, batch, rllib, lambda_=1.0)
    assert _loss(learner, config, batch, rllib, lambda_=0.5) == pytest.approx(rllib_1, rel=1e-6)
    ours_1 = _loss(learner, config, batch, learner.compute_loss_for_module, lambda_=1.0)
    ours_half = _loss(learner, config, batch, learner.compute_loss_for_module, lambda_=0.5)
    assert ours_half[0] != pytest.approx(ours_1[0], rel=1e-4)
    assert all(math.isfinite(x) for x in ours_half)


# V-trace over whole chunks. A flat minibatch as RLlib's learner connector lays it out: chunks of
# unequal length (an episode ended inside a fragment), each followed by the appended step (loss
# mask off), one chunk ending in a terminal step.
CHUNKS = (4, 6, 2, 5)  # real steps per chunk
GAMMA = 0.99


def _flat_minibatch(on_policy: bool, cut_last_chunk: bool = False):
    gen = torch.Generator().manual_seed(2)
    mask = torch.cat([torch.cat([torch.ones(n), torch.zeros(1)]) for n in CHUNKS])
    terminated = torch.zeros_like(mask)
    terminated[CHUNKS[0] + 1 + CHUNKS[1] - 1] = 1.0  # the second chunk's last real step
    if cut_last_chunk:  # the minibatch ends inside its last chunk
        mask, terminated = mask[:-2], terminated[:-2]
    n = len(mask)
    target = -torch.rand(n, generator=gen)
    behaviour = target if on_policy else target + 0.5 * torch.randn(n, generator=gen)
    return {
        "target_action_log_probs": target,
        "behaviour_action_log_probs": behaviour,
        "discounts": (1.0 - terminated) * GAMMA * mask,
        "rewards": torch.randn(n, generator=gen) * mask,
        "values": torch.randn(n, generator=gen),
        "loss_mask": mask,
    }


def _per_chunk(flat, lambda_):
    """Each chunk's V-trace on its own (a column of the time-major :func:`vtrace`), its appended
    step off-policy as the suite's learners make it (sweeps/algorithms/vtrace.py)."""
    behaviour = torch.where(
        flat["loss_mask"].bool(), flat["behaviour_action_log_probs"], torch.tensor(50.0)
    )
    targets, advantages, start = [], [], 0
    for n in CHUNKS:
        part = slice(start, start + n + 1)
        column = {
            key: flat[key][part][:, None]
            for key in ("target_action_log_probs", "discounts", "rewards", "values")
        }
        vs, adv = vtrace(
            **column,
            behaviour_action_log_probs=behaviour[part][:, None],
            bootstrap_values=torch.tensor([123.0]),  # after the appended step: never read
            lambda_=lambda_,
        )
        targets.append(vs[:, 0])
        advantages.append(adv[:, 0])
        start += n + 1
    return torch.cat(targets), torch.cat(advantages)


@pytest.mark.parametrize("lambda_", [1.0, 0.95])
@pytest.mark.parametrize("on_policy", [True, False])
def test_flat_vtrace_gives_each_chunk_its_own_vtrace(lambda_, on_policy):
    flat = _flat_minibatch(on_policy)
    targets, advantages = vtrace_flat(**flat, lambda_=lambda_)
    expected_targets, expected_advantages = _per_chunk(flat, lambda_)
    torch.testing.assert_close(targets, expected_targets)
    torch.testing.assert_close(advantages, expected_advantages)


def test_rllibs_rows_of_a_fragment_stop_the_traces_early():
    # The same minibatch in rows of 5 steps (chunks of up to 4 + 1): the rows drift across the
    # chunks and targets differ from each chunk's own wherever a row ends inside a chunk.
    from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import make_time_major

    flat = _flat_minibatch(on_policy=True)
    flat["behaviour_action_log_probs"] = torch.where(
        flat["loss_mask"].bool(), flat["behaviour_action_log_probs"], torch.tensor(50.0)
    )
    rows = {k: make_time_major(v, trajectory_len=5) for k, v in flat.items() if k != "loss_mask"}
    bootstrap = torch.cat([rows["values"][0][1:], rows["values"][0][:1]])
    targets, _ = vtrace(**rows, bootstrap_values=bootstrap)
    by_rows = targets.T.reshape(-1)[: len(flat["values"])]
    expected, _ = _per_chunk(flat, 1.0)
    assert not torch.allclose(by_rows, expected)
    torch.testing.assert_close(vtrace_flat(**flat)[0], expected)


def test_a_minibatch_ending_inside_a_chunk_leaves_its_last_step_out():
    flat = _flat_minibatch(on_policy=True, cut_last_chunk=True)
    targets, advantages = vtrace_flat(**flat)
    v, r, d = flat["values"], flat["rewards"], flat["discounts"]
    assert float(targets[-1]) == float(v[-1]) and float(advantages[-1]) == 0.0
    # the step before it bootstraps from the last step's value: a one-step target
    assert float(targets[-2]) == pytest.approx(float(r[-2] + d[-2] * v[-1]), rel=1e-6)


def test_whole_chunks_on_rows_that_hold_one_chunk_each_is_rllibs_loss(cartpole_learner):
    # The fixture's rows are one chunk each (FRAGMENT - 1 steps and the appended one): RLlib's
    # rows then stop no trace early, and the two layouts give the same loss.
    learner, config, batch = cartpole_learner
    expected = _loss(learner, config, batch, learner.compute_loss_for_module)
    ours = _loss(learner, config, batch, learner.compute_loss_for_module, vtrace_whole_chunks=True)
    assert ours == pytest.approx(expected, rel=1e-5)


def test_impala_over_whole_chunks_on_rows_that_hold_one_chunk_each_is_rllibs_loss(impala_learner):
    learner, config, batch = impala_learner
    expected = _loss(learner, config, batch, learner.compute_loss_for_module)
    ours = _loss(learner, config, batch, learner.compute_loss_for_module, vtrace_whole_chunks=True)
    assert ours == pytest.approx(expected, rel=1e-5)


def test_impala_over_whole_chunks_runs_each_trace_past_rllibs_rows(impala_learner):
    # Rows of 5 steps over chunks of 9 (8 real and the appended one): RLlib's rows cut each
    # chunk's traces at step 5, the whole-chunks loss does not.
    from ray.rllib.core.columns import Columns

    learner, config, batch = impala_learner
    mask = torch.ones(FRAGMENT * ROWS)
    mask[8::9] = 0.0
    drifting = {**batch, Columns.LOSS_MASK: mask.bool()}
    rllib = _loss(learner, config, drifting, learner.compute_loss_for_module)
    ours = _loss(
        learner, config, drifting, learner.compute_loss_for_module, vtrace_whole_chunks=True
    )
    assert ours[0] != pytest.approx(rllib[0], rel=1e-4)
    assert all(math.isfinite(x) for x in ours)
