"""IMPALA and APPO learners whose V-trace targets keep the bootstrap value at a fragment's end.

RLlib 2.60's new-stack IMPALA and APPO losses append one timestep to every episode chunk
(``AddOneTsToEpisodesAndTruncate``: the last observation again, reward 0, loss mask off) so that
the value of the state after the chunk is computed in the same forward pass. They then give that
timestep a discount of 0 (via the loss mask) but leave its V-trace delta in the recursion:
``delta_T = rho_T * (0 + 0 * V - V(x_T)) = -V(x_T)``. Carried back into the last real step, it
cancels the bootstrap term ``gamma * V(x_T)`` exactly (on-policy: ``v_{T-1} = r_{T-1}``), so every
value target is the discounted sum of the rewards left *in the fragment*, as if the game ended
where the fragment does, and an action near a fragment's end gets no credit for rewards after
it. On Pong, where a point comes tens of steps after the hit that won it, this is most of the
signal (``tests/test_vtrace.py`` shows the cancelled bootstrap on a three-step chunk).

The fix sets the appended timestep's importance weight to 0 (its behaviour log-prob is set far
above any target log-prob, only where the loss mask is off), which is what V-trace means by
"no information here": that step's delta and trace are 0, its target is ``V(x_T)``, and the last
real step's target is ``r + gamma * V(x_T)``. Nothing else in the loss changes: every term that
reads the appended timestep is already masked out.

Use: ``config.training(learner_class=bootstrapped_learner(config))``
(``sweeps/workloads/rllib_config.py`` does it for every IMPALA and APPO config of the suite). The
same learners take an optional entropy target (``sweeps/algorithms/entropy_target.py``: a floor
under the policy's entropy) and an optional KL-adapted learning rate
(``sweeps/algorithms/kl_lr.py``), each off unless ``learner_config_dict`` sets it, and both can run
V-trace over whole chunks (``sweeps/algorithms/appo_loss.py``, ``impala_loss.py``); APPO's
optionally standardises its advantages per minibatch and takes V-trace with the config's
``lambda_``, which RLlib's own APPO learner ignores (``sweeps/algorithms/appo_loss.py``). An
update whose episodes were all lost with a dead env runner is skipped (``_SkipLostEpisodes``).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.appo.appo import APPOConfig
from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner
from ray.rllib.algorithms.impala.torch.impala_torch_learner import IMPALATorchLearner
from ray.rllib.core.columns import Columns

from sweeps.algorithms.adam_eps import AdamEps
from sweeps.algorithms.appo_loss import APPOLossOptions
from sweeps.algorithms.entropy_target import EntropyTarget
from sweeps.algorithms.impala_loss import IMPALALossOptions
from sweeps.algorithms.kl_lr import KLAdaptiveLR

# log rho = target logp - behaviour logp <= 0 - OFF_POLICY = -50: rho = 2e-22, i.e. 0 in float32
# arithmetic, and exp(+50 + 2) in APPO's (clipped) ratio of behaviour to target network is finite.
OFF_POLICY = 50.0


def _with_appended_steps_off_policy(batch: Any) -> Any:
    """The batch with the behaviour log-prob of every loss-masked timestep (the one appended
    after each chunk) set to ``OFF_POLICY``: its V-trace weights rho and c are then 0."""
    import torch

    mask = batch[Columns.LOSS_MASK].bool()
    logp = batch[Columns.ACTION_LOGP]
    fixed = torch.where(mask, logp, torch.full_like(logp, OFF_POLICY))
    return {**batch, Columns.ACTION_LOGP: fixed}


class _KeepBootstrap:
    """Mixin before an RLlib IMPALA/APPO torch learner: its loss on the fixed batch."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        return super().compute_loss_for_module(
            module_id=module_id,
            config=config,
            batch=_with_appended_steps_off_policy(batch),
            fwd_out=fwd_out,
        )


class _SkipLostEpisodes:
    """Mixin before an RLlib IMPALA/APPO learner: an update left with no episodes is skipped.
    RLlib 2.60 drops the episode refs of an env runner that died before the learner fetched
    them (``TrainingData.solve_refs`` logs each), and where none is left its learner connector
    fails on the empty list (an IndexError in ``AddOneTsToEpisodesAndTruncate``): the trial
    failed and Tune started it again (``benchmarks/faults.py runners``, an env runner killed
    on a slow host; ``tests/test_faults.py``)."""

    def update(self, training_data, **kwargs):
        training_data.solve_refs()  # (the learner's own call then finds nothing left to do)
        if training_data.episodes is not None and not training_data.episodes:
            return {}
        return super().update(training_data, **kwargs)


class BootstrappedIMPALATorchLearner(
    _SkipLostEpisodes,
    AdamEps,
    KLAdaptiveLR,
    EntropyTarget,
    _KeepBootstrap,
    IMPALALossOptions,
    IMPALATorchLearner,
):
    """IMPALA's torch learner with the bootstrap value kept at each fragment's end (and an
    optional entropy target, learning-rate scales, Adam epsilon and V-trace over whole
    chunks)."""


class BootstrappedAPPOTorchLearner(
    _SkipLostEpisodes,
    AdamEps,
    KLAdaptiveLR,
    EntropyTarget,
    _KeepBootstrap,
    APPOLossOptions,
    APPOTorchLearner,
):
    """APPO's torch learner with the bootstrap value kept at each fragment's end (and an
    optional entropy target, learning-rate scales, Adam epsilon, standardised advantages,
    V-trace's λ and V-trace over whole chunks)."""


def bootstrapped_learner(config: Any) -> type:
    """The fixed learner class for an IMPALA or APPO config (APPO is IMPALA's subclass)."""
    if isinstance(config, APPOConfig):
        return BootstrappedAPPOTorchLearner
    return BootstrappedIMPALATorchLearner
