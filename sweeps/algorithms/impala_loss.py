"""IMPALA's loss with V-trace run over whole chunks, as APPO's option of the same name.

RLlib 2.60's IMPALA loss, like its APPO loss, cuts the minibatch (laid out flat, chunk after
chunk, each followed by the step RLlib appends) into rows of ``rollout_fragment_length`` steps and
runs V-trace along each row, so the rows drift across the chunks and stop the traces early
(``sweeps/algorithms/appo_loss.py`` says how). With ``learner_config_dict={"vtrace_whole_chunks":
True}`` :func:`impala_loss` runs :func:`~sweeps.algorithms.appo_loss.vtrace_flat` over the flat
minibatch instead: every trace runs to its chunk's end. Every other term of RLlib's loss is per
step, so the flat layout serves it unchanged.

:class:`IMPALALossOptions`, a mixin right before RLlib 2.60's ``IMPALATorchLearner`` (the suite's
IMPALA learner, ``sweeps/algorithms/pg_learner.py``): with the switch off the loss *is* RLlib's
(``super()``). ``tests/test_appo_loss.py`` checks that on rows holding one chunk each (where
RLlib's rows cut no trace) the two give the same loss, and that on drifting rows they do not.
"""

from __future__ import annotations

from sweeps.algorithms.appo_loss import check_whole_chunks, vtrace_flat


class IMPALALossOptions:
    """Mixin right before RLlib's ``IMPALATorchLearner``: with ``vtrace_whole_chunks`` its
    V-trace runs over whole chunks (see the module docstring)."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        if not check_whole_chunks(config.learner_config_dict):
            return super().compute_loss_for_module(
                module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
            )
        return impala_loss(self, module_id, config, batch, fwd_out)


def impala_loss(learner, module_id, config, batch, fwd_out):
    """RLlib 2.60's ``IMPALATorchLearner.compute_loss_for_module`` (comments left out) on
    ``learner``, its V-trace (λ = 1, RLlib's) taken by :func:`vtrace_flat` over the flat
    minibatch."""
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.learner.learner import ENTROPY_KEY

    module = learner.module[module_id].unwrapped()
    loss_mask = batch[Columns.LOSS_MASK].float()
    size_loss_mask = torch.sum(loss_mask)
    target_policy_dist = module.get_train_action_dist_cls().from_logits(
        fwd_out[Columns.ACTION_DIST_INPUTS]
    )
    target_logp = target_policy_dist.logp(batch[Columns.ACTIONS])
    values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
    discounts = (1.0 - batch[Columns.TERMINATEDS].float()) * config.gamma * loss_mask
    vtrace_targets, pg_advantages = vtrace_flat(
        target_action_log_probs=target_logp,
        behaviour_action_log_probs=batch[Columns.ACTION_LOGP],
        discounts=discounts,
        rewards=batch[Columns.REWARDS],
        values=values,
        loss_mask=loss_mask,
        clip_rho_threshold=config.vtrace_clip_rho_threshold,
        clip_pg_rho_threshold=config.vtrace_clip_pg_rho_threshold,
    )
    pi_loss = -torch.sum(target_logp * pg_advantages * loss_mask)
    mean_pi_loss = pi_loss / size_loss_mask
    vf_loss = 0.5 * torch.sum(torch.pow(values - vtrace_targets, 2.0) * loss_mask)
    mean_vf_loss = vf_loss / size_loss_mask
    mean_entropy_loss = -torch.sum(target_policy_dist.entropy() * loss_mask) / size_loss_mask
    entropy_coeff = learner.entropy_coeff_schedulers_per_module[module_id].get_current_value()
    total_loss = (
        mean_pi_loss + mean_vf_loss * config.vf_loss_coeff + mean_entropy_loss * entropy_coeff
    )
    learner.metrics.log_dict(
        {
            "pi_loss": pi_loss,
            "mean_pi_loss": mean_pi_loss,
            "vf_loss": vf_loss,
            "mean_vf_loss": mean_vf_loss,
            ENTROPY_KEY: -mean_entropy_loss,
        },
        key=module_id,
        window=1,
    )
    return total_loss
