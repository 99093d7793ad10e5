"""The fix of IMPALA's and APPO's learners whose V-trace targets lose the bootstrap value at a
fragment's end.

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

``KeepBootstrap`` does it, as one of the extras of the suite's IMPALA and APPO learner
(``sweeps/algorithms/pg_learner.py``, where they are composed and their order explained).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.core.columns import Columns

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


class KeepBootstrap:
    """Mixin before an RLlib IMPALA/APPO torch learner: its loss on the fixed batch."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        return super().compute_loss_for_module(
            module_id=module_id,
            config=config,
            batch=_with_appended_steps_off_policy(batch),
            fwd_out=fwd_out,
        )


# The learners that carry the fix were defined here until they moved to pg_learner.py: a config
# pickled before (a sweep's tuner.pkl, a checkpoint) names them here, and finds them.
_MOVED = {
    "BootstrappedIMPALATorchLearner": "BootstrappedIMPALATorchLearner",
    "BootstrappedAPPOTorchLearner": "BootstrappedAPPOTorchLearner",
    "bootstrapped_learner": "learner_class",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from sweeps.algorithms import pg_learner

        return getattr(pg_learner, _MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
