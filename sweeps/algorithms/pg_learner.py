"""The IMPALA and APPO learner the suite trains with: RLlib's torch learner and the suite's extras
on it, composed here, in one place.

Each extra is a mixin placed before RLlib's learner in the class's bases. Python calls them
outermost first (the class's MRO), and each hands on to the next through ``super()``, so their
order is part of what the learner does. Outermost first:

0. ``ExtrasInCheckpoints`` (``get_state``, ``set_state``): what the extras below learn as they go
   (the entropy target's multipliers, the KL scales, the best training return) in the learner's
   checkpointed state, so that a restored learner goes on with it. Outermost: it only adds to
   RLlib's state.
1. ``SkipLostEpisodes`` (``update``): skips an update left with no episodes (a dead env
   runner's were dropped). First, before anything reads the batch.
2. ``AdamEps`` (``configure_optimizers_for_module``): Adam with the configured ``eps``
   (``adam_eps.py``). Touches nothing else.
3. ``KLAdaptiveLR`` (``compute_loss_for_module``, after the loss): the learning rate of the step
   that follows, scaled by the minibatch's KL to the behaviour policy (``kl_lr.py``).
4. ``EntropyTarget`` (``compute_loss_for_module`` after the loss, ``before_gradient_based_update``):
   the loss less ``beta`` x the policy's entropy, ``beta`` kept at an entropy floor
   (``entropy_target.py``).
5. ``KeepBootstrap`` (``compute_loss_for_module``, before the loss): each chunk's appended step
   made off-policy, so that V-trace keeps the bootstrap value (``vtrace.py``). Inside 3 and 4:
   they read the batch as sampled.
6. ``RewardScale`` (``compute_loss_for_module``, before the loss): the rewards the loss sees
   scaled (``reward_scale.py``). Inside 3 and 4, as 5.
7. The loss options (``compute_loss_for_module``): the loss itself, RLlib's where no option is
   set, else V-trace over whole chunks (``impala_loss.py``; APPO's also with λ and standardised
   advantages, ``appo_loss.py``). Last before RLlib's learner: it is the loss.

Every extra is off unless ``learner_config_dict`` sets it (6: a scale of 1), except 0, 1 and 5:
1 and 5 are fixes of RLlib 2.60's learner and always on, 0 keeps what is there.
``learner_class(config)`` gives the class for an IMPALA or APPO config
(``sweeps/workloads/rllib_config.py`` sets it on every one of the suite's).
"""

from __future__ import annotations

import copy
from typing import Any

from ray.rllib.algorithms.appo.appo import APPOConfig
from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner
from ray.rllib.algorithms.impala.torch.impala_torch_learner import IMPALATorchLearner

from sweeps.algorithms.adam_eps import AdamEps
from sweeps.algorithms.appo_loss import APPOLossOptions
from sweeps.algorithms.entropy_target import COEFFS_ATTR, EntropyTarget
from sweeps.algorithms.impala_loss import IMPALALossOptions
from sweeps.algorithms.kl_lr import SCALES_ATTR, KLAdaptiveLR
from sweeps.algorithms.reward_scale import RewardScale
from sweeps.algorithms.training_return import BEST_ATTR
from sweeps.algorithms.vtrace import KeepBootstrap


class SkipLostEpisodes:
    """An update left with no episodes is skipped. RLlib 2.60 drops the episode refs of an env
    runner that died before the learner fetched them (``TrainingData.solve_refs`` logs each),
    and where none is left its learner connector fails on the empty list (an IndexError in
    ``AddOneTsToEpisodesAndTruncate``): the trial failed and Tune started it again
    (``benchmarks/faults.py runners``, an env runner killed on a slow host;
    ``tests/test_faults.py``)."""

    def update(self, training_data, **kwargs):
        training_data.solve_refs()  # (the learner's own call then finds nothing left to do)
        if training_data.episodes is not None and not training_data.episodes:
            return {}
        return super().update(training_data, **kwargs)


class ExtrasInCheckpoints:
    """The extras' running state (``STATE``: attributes on the learner) in the learner's state
    under ``STATE_KEY``, saved with every checkpoint and set again on restore; left out where only
    some components are asked for (the weights a sync sends). A checkpoint from before it has
    none, and a learner restored from one starts these afresh, as it used to."""

    STATE_KEY = "suite_learner_extras"
    STATE = (BEST_ATTR, COEFFS_ATTR, SCALES_ATTR)

    def get_state(self, components=None, *, not_components=None, **kwargs):
        state = super().get_state(components, not_components=not_components, **kwargs)
        if components is None:
            kept = {name: getattr(self, name) for name in self.STATE if hasattr(self, name)}
            state[self.STATE_KEY] = copy.deepcopy(kept)
        return state

    def set_state(self, state):
        super().set_state(state)
        for name, value in state.get(self.STATE_KEY, {}).items():
            if name in self.STATE:
                setattr(self, name, copy.deepcopy(value))


# The extras, outermost first (the table above); the loss options and RLlib's learner follow.
EXTRAS: tuple[type, ...] = (
    ExtrasInCheckpoints,
    SkipLostEpisodes,
    AdamEps,
    KLAdaptiveLR,
    EntropyTarget,
    KeepBootstrap,
    RewardScale,
)


class BootstrappedIMPALATorchLearner(*EXTRAS, IMPALALossOptions, IMPALATorchLearner):
    """IMPALA's torch learner with the suite's extras (the module docstring's table)."""


class BootstrappedAPPOTorchLearner(*EXTRAS, APPOLossOptions, APPOTorchLearner):
    """APPO's torch learner with the suite's extras (the module docstring's table)."""


def learner_class(config: Any) -> type:
    """The learner class for an IMPALA or APPO config (APPO is IMPALA's subclass)."""
    if isinstance(config, APPOConfig):
        return BootstrappedAPPOTorchLearner
    return BootstrappedIMPALATorchLearner
