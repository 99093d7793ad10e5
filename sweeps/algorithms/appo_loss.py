"""APPO's loss with the suite's three options: advantages standardised per minibatch, V-trace
with RLlib's ``lambda_``, and V-trace run over whole chunks.

Standardised advantages. Every PPO recipe that learns Pong in few env steps (CleanRL's
``ppo_atari.py``, rl_games, Stable-Baselines3, Sample Factory) standardises the policy-gradient
advantages of each minibatch to mean 0 and standard deviation 1 before the clipped surrogate.
RLlib 2.60's APPO loss does not: its V-trace advantages enter the surrogate at their own scale,
which on Pong's sparse ±1 points can be small next to the entropy bonus while the value function
is still poor, and shifts as the game's score does. Standardised, the surrogate weighs every
minibatch alike against the entropy and value terms. On with
``learner_config_dict={"standardize_advantages": True}``.

λ. ``APPOConfig.training(lambda_=...)`` is documented as "GAE (lambda) parameter", but RLlib
2.60's new-stack APPO learner never reads it: its V-trace runs with λ = 1 whatever the config
says. Here it is V-trace's λ, as the IMPALA paper defines it (Espeholt et al. 2018, section 4.1):
the traces are ``c_s = λ · min(1, ρ_s)``. On-policy (every ρ = 1) the V-trace target less the
value is then the GAE(γ, λ) advantage that PPO's Atari recipes take with λ = 0.95, a shorter,
lower-variance credit horizon than the fragment's full return; λ = 1 is RLlib's V-trace.

Whole chunks. RLlib's loss cuts the minibatch, laid out flat chunk after chunk, into rows of
``rollout_fragment_length`` steps and runs V-trace along each row. But every chunk is one step
longer than a fragment (RLlib appends a step to each: ``sweeps/algorithms/vtrace.py``), so the
rows drift across the chunks: a row ends a few steps into a chunk, and each step's trace stops at
its row's end or its chunk's, whichever comes first (with 20-step fragments, about 7 steps ahead
on average instead of about 10), the rest of the chunk reached only through the value function.
With ``learner_config_dict={"vtrace_whole_chunks": True}`` V-trace runs over the flat minibatch as
one sequence (:func:`vtrace_flat`): the appended step (loss mask off, discount 0) ends each
chunk's recursion, so every trace runs to its chunk's end, as the IMPALA paper's does to its
fragment's. (A minibatch can also end inside a chunk; RLlib then bootstraps that last step from
an unrelated value, :func:`vtrace_flat` leaves it out.)

:class:`APPOLossOptions`, a mixin right before RLlib 2.60's ``APPOTorchLearner`` (the suite's APPO
learner, ``sweeps/algorithms/pg_learner.py``): with any option on, the loss is :func:`appo_loss`,
RLlib's own with the advantages passed through a transform and V-trace taken from :func:`vtrace`
(RLlib's recursion with λ in the traces) or :func:`vtrace_flat`; with all off it *is* RLlib's loss
(``super()``). ``tests/test_appo_loss.py`` checks that :func:`appo_loss` with all off computes
RLlib's loss on a real learner, that :func:`vtrace` at λ = 1 is RLlib's and on-policy is GAE, and
that :func:`vtrace_flat` on a flat minibatch gives each chunk's own V-trace.
"""

from __future__ import annotations

from typing import Any

KEY = "standardize_advantages"
CHUNKS_KEY = "vtrace_whole_chunks"
KEYS = (KEY, CHUNKS_KEY)
EPSILON = 1e-8  # CleanRL's and SB3's


def _switch(settings: dict[str, Any] | None, key: str) -> bool:
    value = (settings or {}).get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"learner_config_dict[{key!r}] must be true or false, got {value!r}")
    return value


def check_standardize(settings: dict[str, Any] | None) -> bool:
    """Whether ``learner_config_dict`` asks for standardised advantages; a ValueError names a
    value that is not a bool."""
    return _switch(settings, KEY)


def check_whole_chunks(settings: dict[str, Any] | None) -> bool:
    """Whether ``learner_config_dict`` asks for V-trace over whole chunks; a ValueError names a
    value that is not a bool."""
    return _switch(settings, CHUNKS_KEY)


def check_lambda(value: Any) -> float:
    """``APPOConfig.lambda_`` as a float in [0, 1]; a ValueError names any other value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"lambda_ must be a number in [0, 1] (V-trace's λ), got {value!r}")
    return float(value)


def standardize(advantages: Any, mask: Any) -> Any:
    """``advantages`` less their mean, over their standard deviation, both taken over the steps
    where ``mask`` is 1 (the others come out 0)."""
    import torch

    count = torch.clamp(torch.sum(mask), min=1.0)
    mean = torch.sum(advantages * mask) / count
    std = torch.sqrt(torch.sum(torch.square(advantages - mean) * mask) / count)
    return (advantages - mean) / (std + EPSILON) * mask


def _identity(advantages: Any, mask: Any) -> Any:
    return advantages


class APPOLossOptions:
    """Mixin right before RLlib's ``APPOTorchLearner``: with ``standardize_advantages`` its loss
    standardises the V-trace advantages of each minibatch, with ``lambda_`` below 1 its V-trace
    cuts its traces by λ, and with ``vtrace_whole_chunks`` its V-trace runs over whole chunks
    (see the module docstring)."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        standardized = check_standardize(config.learner_config_dict)
        whole_chunks = check_whole_chunks(config.learner_config_dict)
        if not standardized and not whole_chunks and check_lambda(config.lambda_) == 1.0:
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        transform = standardize if standardized else _identity
        return appo_loss(self, module_id, config, batch, fwd_out, transform, whole_chunks)


def vtrace(
    *,
    target_action_log_probs: Any,
    behaviour_action_log_probs: Any,
    discounts: Any,
    rewards: Any,
    values: Any,
    bootstrap_values: Any,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    lambda_: float = 1.0,
) -> tuple[Any, Any]:
    """RLlib 2.60's ``vtrace_torch`` (time-major ``[T, B]`` tensors, ``bootstrap_values`` ``[B]``)
    with V-trace's λ: the traces are ``lambda_ * min(1, rho)``. Returns the value targets and the
    policy-gradient advantages, detached."""
    import torch

    rhos = torch.exp(target_action_log_probs - behaviour_action_log_probs)
    clipped_rhos = rhos if clip_rho_threshold is None else torch.clamp(rhos, max=clip_rho_threshold)
    cs = lambda_ * torch.clamp(rhos, max=1.0)
    values_t_plus_1 = torch.cat([values[1:], bootstrap_values.unsqueeze(0)], dim=0)
    deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
    acc = torch.zeros_like(bootstrap_values)
    vs_minus_v_xs = []
    for t in reversed(range(len(discounts))):
        acc = deltas[t] + discounts[t] * cs[t] * acc
        vs_minus_v_xs.append(acc)
    vs = torch.stack(vs_minus_v_xs[::-1]) + values
    vs_t_plus_1 = torch.cat([vs[1:], bootstrap_values.unsqueeze(0)], dim=0)
    pg_clip = clip_pg_rho_threshold
    pg_rhos = rhos if pg_clip is None else torch.clamp(rhos, max=pg_clip)
    pg_advantages = pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
    return vs.detach(), pg_advantages.detach()


def vtrace_flat(
    *,
    target_action_log_probs: Any,
    behaviour_action_log_probs: Any,
    discounts: Any,
    rewards: Any,
    values: Any,
    loss_mask: Any,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    lambda_: float = 1.0,
) -> tuple[Any, Any]:
    """V-trace over a minibatch laid out flat (1-D tensors, chunk after chunk, each followed by
    RLlib's appended step, ``loss_mask`` 0): the recursion of :func:`vtrace` over the whole
    minibatch as one sequence, each step's next value the next step's. A step with the loss mask
    off carries no information (its delta and trace are 0, as V-trace's ρ = 0 would make them)
    and, its discount being 0, ends the recursion of the chunk before it; the minibatch's last
    step, whose next value is not in the minibatch, carries none either. Returns the value
    targets and the policy-gradient advantages, detached."""
    import torch

    with torch.no_grad():
        informative = loss_mask.clone()
        informative[-1] = 0.0
        rhos = torch.exp(target_action_log_probs - behaviour_action_log_probs)
        clipped_rhos = rhos if clip_rho_threshold is None else rhos.clamp(max=clip_rho_threshold)
        decays = informative * discounts * lambda_ * torch.clamp(rhos, max=1.0)
        next_values = torch.cat([values[1:], values[-1:]])
        deltas = informative * clipped_rhos * (rewards + discounts * next_values - values)
        # acc_t = delta_t + decay_t * acc_{t+1}, by repeated substitution: after k rounds each
        # step within k of the end of its run of non-zero decays holds its value.
        zero = torch.zeros_like(deltas[:1])
        acc = deltas
        for _ in range(_longest_run(decays != 0)):
            acc = deltas + decays * torch.cat([acc[1:], zero])
        vs = values + acc
        vs_t_plus_1 = torch.cat([vs[1:], values[-1:]])
        pg_clip = clip_pg_rho_threshold
        pg_rhos = rhos if pg_clip is None else torch.clamp(rhos, max=pg_clip)
        pg_advantages = informative * pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
    return vs.detach(), pg_advantages.detach()


def _longest_run(flags: Any) -> int:
    """The length of the longest run of True in a 1-D boolean tensor."""
    import numpy as np

    edges = np.diff(np.concatenate([[0], flags.cpu().numpy().astype(np.int8), [0]]))
    return int(np.max(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1), initial=0))


def appo_loss(learner, module_id, config, batch, fwd_out, transform, whole_chunks=False):
    """RLlib 2.60's ``APPOTorchLearner.compute_loss_for_module`` (comments and asserts left out)
    on ``learner``, V-trace taken with the config's ``lambda_`` (:func:`vtrace` over rows of a
    fragment, RLlib's layout, or :func:`vtrace_flat` over the flat minibatch where
    ``whole_chunks``) and its advantages passed through ``transform(advantages, loss mask)``."""
    import torch
    from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import make_time_major
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS

    module = learner.module[module_id].unwrapped()
    frag, seq_lens = config.get_rollout_fragment_length(), batch.get("seq_lens")

    def time_major(x):
        if whole_chunks:  # every term below is per step: the flat layout serves as well
            return x
        return make_time_major(x, trajectory_len=frag, recurrent_seq_len=seq_lens)

    loss_mask = batch[Columns.LOSS_MASK].float()
    loss_mask_tm = time_major(loss_mask)
    size_loss_mask = torch.sum(loss_mask)

    values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
    dist_cls = module.get_train_action_dist_cls()
    target_policy_dist = dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
    old_target_policy_dist = dist_cls.from_logits(
        module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
    )
    old_logp_tm = time_major(old_target_policy_dist.logp(batch[Columns.ACTIONS]))
    behaviour_logp_tm = time_major(batch[Columns.ACTION_LOGP])
    target_logp_tm = time_major(target_policy_dist.logp(batch[Columns.ACTIONS]))
    rewards_tm = time_major(batch[Columns.REWARDS])
    values_tm = time_major(values)
    discounts_tm = (
        (1.0 - time_major(batch[Columns.TERMINATEDS]).float()) * config.gamma * loss_mask_tm
    )
    trace_inputs = {
        "target_action_log_probs": old_logp_tm,
        "behaviour_action_log_probs": behaviour_logp_tm,
        "discounts": discounts_tm,
        "rewards": rewards_tm,
        "values": values_tm,
        "clip_pg_rho_threshold": config.vtrace_clip_pg_rho_threshold,
        "clip_rho_threshold": config.vtrace_clip_rho_threshold,
        "lambda_": check_lambda(config.lambda_),
    }
    if whole_chunks:
        vtrace_targets, pg_advantages = vtrace_flat(**trace_inputs, loss_mask=loss_mask)
    else:
        bootstrap_values = torch.cat([values_tm[0][1:], values_tm[0][0:1]], dim=0)
        vtrace_targets, pg_advantages = vtrace(**trace_inputs, bootstrap_values=bootstrap_values)
    pg_advantages = transform(pg_advantages * loss_mask_tm, loss_mask_tm)  # the added line

    is_ratio = torch.clip(torch.exp(behaviour_logp_tm - old_logp_tm), 0.0, 2.0)
    logp_ratio = is_ratio * torch.exp(target_logp_tm - behaviour_logp_tm)
    surrogate_loss = torch.minimum(
        pg_advantages * logp_ratio,
        pg_advantages * torch.clip(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
    )
    mean_is_ratio = torch.sum(is_ratio * loss_mask_tm) / size_loss_mask
    var_is_ratio = torch.sum(torch.square(is_ratio - mean_is_ratio) * loss_mask_tm) / size_loss_mask
    if config.use_kl_loss:
        action_kl = old_target_policy_dist.kl(target_policy_dist) * loss_mask
        mean_kl_loss = torch.sum(action_kl) / size_loss_mask
    else:
        mean_kl_loss = 0.0
    mean_pi_loss = -(torch.sum(surrogate_loss) / size_loss_mask)
    delta = values_tm - vtrace_targets
    mean_vf_loss = 0.5 * torch.sum(torch.pow(delta, 2.0) * loss_mask_tm) / size_loss_mask
    mean_entropy_loss = -torch.sum(target_policy_dist.entropy() * loss_mask) / size_loss_mask
    entropy_coeff = learner.entropy_coeff_schedulers_per_module[module_id].get_current_value()
    total_loss = (
        mean_pi_loss
        + mean_vf_loss * config.vf_loss_coeff
        + mean_entropy_loss * entropy_coeff
        + mean_kl_loss * learner.curr_kl_coeffs_per_module[module_id]
    )
    _log(learner, module_id, mean_pi_loss, mean_vf_loss, -mean_entropy_loss, mean_kl_loss)
    _log_is_ratio(learner, module_id, mean_is_ratio, var_is_ratio)
    return total_loss


def _log(learner, module_id, policy_loss, vf_loss, entropy, kl) -> None:
    """The loss terms, into the learner's metrics under RLlib 2.60's APPO keys."""
    from ray.rllib.algorithms.appo.appo import (
        LEARNER_RESULTS_CURR_KL_COEFF_KEY,
        LEARNER_RESULTS_KL_KEY,
    )
    from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY

    terms = {
        POLICY_LOSS_KEY: policy_loss,
        VF_LOSS_KEY: vf_loss,
        ENTROPY_KEY: entropy,
        LEARNER_RESULTS_KL_KEY: kl,
        LEARNER_RESULTS_CURR_KL_COEFF_KEY: learner.curr_kl_coeffs_per_module[module_id],
    }
    learner.metrics.log_dict(terms, key=module_id, window=1)


def _log_is_ratio(learner, module_id, mean, var) -> None:
    """The importance ratio's mean and variance, under RLlib 2.60's APPO keys."""
    from ray.rllib.algorithms.appo.appo import (
        LEARNER_RESULTS_MEAN_IS_KEY,
        LEARNER_RESULTS_VAR_IS_KEY,
    )

    stats = {LEARNER_RESULTS_MEAN_IS_KEY: mean, LEARNER_RESULTS_VAR_IS_KEY: var}
    learner.metrics.log_dict(stats, key=module_id, window=1)
