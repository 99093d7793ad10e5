"""V-trace targets at a fragment's end (``sweeps/algorithms/vtrace.py``).

RLlib 2.60's IMPALA/APPO losses append a timestep to each chunk (loss mask off, discount 0) and
run V-trace over it. These tests run RLlib's own ``vtrace_torch`` the way its loss does, on one
three-step chunk plus the appended step, on-policy, no rewards, every value -0.5: the right
target of the last real step is ``gamma * V(x_T)``; RLlib's inputs give 0 (the bootstrap is
cancelled), the suite's learners' inputs give the right one.
"""

from __future__ import annotations

import pytest
import torch
from ray.rllib.algorithms.impala.torch.vtrace_torch_v2 import vtrace_torch
from ray.rllib.core.columns import Columns

from sweeps.algorithms.pg_learner import (
    BootstrappedAPPOTorchLearner,
    BootstrappedIMPALATorchLearner,
)
from sweeps.algorithms.vtrace import _with_appended_steps_off_policy

GAMMA = 0.99
VALUE = -0.5


def _chunk() -> dict[str, torch.Tensor]:
    """Three real steps and the appended one (the batch as RLlib's learner connector makes it)."""
    return {
        Columns.LOSS_MASK: torch.tensor([True, True, True, False]),
        Columns.ACTION_LOGP: torch.full((4,), -1.0),  # behaviour
        Columns.REWARDS: torch.zeros(4),
    }


def _targets(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace targets and advantages as RLlib 2.60's IMPALA loss computes them ([T, B=1])."""
    mask = batch[Columns.LOSS_MASK].float()
    column = lambda x: x.reshape(-1, 1)  # noqa: E731 (time-major, one row)
    vs, advantages = vtrace_torch(
        target_action_log_probs=column(torch.full((4,), -1.0)),  # on-policy
        behaviour_action_log_probs=column(batch[Columns.ACTION_LOGP]),
        discounts=column(GAMMA * mask),  # (1 - terminated) * gamma * loss_mask
        rewards=column(batch[Columns.REWARDS]),
        values=column(torch.full((4,), VALUE)),
        bootstrap_values=torch.tensor([123.0]),  # the next row's: must not matter here
    )
    return vs.flatten(), advantages.flatten()


def test_rllibs_inputs_cancel_the_bootstrap_value():
    vs, advantages = _targets(_chunk())
    assert vs[:3].tolist() == pytest.approx([0.0, 0.0, 0.0])  # as if the game ended there
    assert advantages[2].item() == pytest.approx(-VALUE)


def test_the_suites_learners_keep_it():
    vs, advantages = _targets(_with_appended_steps_off_policy(_chunk()))
    expected = [GAMMA**3 * VALUE, GAMMA**2 * VALUE, GAMMA * VALUE]  # no rewards: gamma^k V(x_T)
    assert vs[:3].tolist() == pytest.approx(expected, abs=1e-6)
    assert vs[3].item() == pytest.approx(VALUE)  # the appended step: V(x_T) itself
    assert advantages[:3].tolist() == pytest.approx(
        [(GAMMA**k - 1) * VALUE for k in (3, 2, 1)], abs=1e-6
    )


def test_only_the_appended_step_is_changed():
    batch = _chunk()
    fixed = _with_appended_steps_off_policy(batch)
    assert fixed[Columns.ACTION_LOGP][:3].tolist() == batch[Columns.ACTION_LOGP][:3].tolist()
    assert fixed[Columns.ACTION_LOGP][3].item() == 50.0
    assert batch[Columns.ACTION_LOGP][3].item() == -1.0  # the caller's batch is left as it was


def test_the_suites_vtrace_configs_use_them():
    from sweeps import appo_cabs, appo_pong, impala_cabs, impala_pong
    from sweeps.harness.cli import parse_args

    for module, learner in [
        (impala_pong, BootstrappedIMPALATorchLearner),
        (appo_pong, BootstrappedAPPOTorchLearner),
        (impala_cabs, BootstrappedIMPALATorchLearner),
        (appo_cabs, BootstrappedAPPOTorchLearner),
    ]:
        config = module.make_config(parse_args(module.SWEEP, []))
        assert config.learner_class is learner, module.__name__


def test_an_update_left_with_no_episodes_is_skipped() -> None:
    """Every episode of a package lost with a dead env runner (RLlib drops those refs): the
    suite's IMPALA/APPO learners skip the update, where RLlib's learner connector failed on the
    empty list and took the trial with it; an update with episodes goes on as before."""
    from ray.rllib.core.learner.training_data import TrainingData

    from sweeps.algorithms.pg_learner import SkipLostEpisodes

    class RLlibLearner:  # stands for RLlib's IMPALA/APPO learner below the mixin
        trained: list = []

        def update(self, training_data, **kwargs):
            self.trained = [*self.trained, (training_data.episodes, kwargs)]
            return {"updated": True}

    class Learner(SkipLostEpisodes, RLlibLearner):
        pass

    learner = Learner()
    assert learner.update(TrainingData(episodes=[]), timesteps={}) == {}
    assert learner.trained == []
    episode = object()
    assert learner.update(TrainingData(episodes=[episode]), timesteps={}) == {"updated": True}
    assert learner.trained == [([episode], {"timesteps": {}})]
    # The outermost update: before anything reads the batch.
    (outermost,) = [c for c in BootstrappedAPPOTorchLearner.__mro__ if "update" in vars(c)][:1]
    assert outermost is SkipLostEpisodes


def test_the_learner_composes_its_extras_in_the_order_its_module_explains():
    """One place (``pg_learner.EXTRAS``): outermost first, then the loss options, then RLlib's."""
    from ray.rllib.algorithms.appo.torch.appo_torch_learner import APPOTorchLearner
    from ray.rllib.algorithms.impala.torch.impala_torch_learner import IMPALATorchLearner

    from sweeps.algorithms import pg_learner, vtrace
    from sweeps.algorithms.appo_loss import APPOLossOptions
    from sweeps.algorithms.impala_loss import IMPALALossOptions

    for learner, loss, rllib in (
        (BootstrappedIMPALATorchLearner, IMPALALossOptions, IMPALATorchLearner),
        (BootstrappedAPPOTorchLearner, APPOLossOptions, APPOTorchLearner),
    ):
        assert learner.__bases__ == (*pg_learner.EXTRAS, loss, rllib)
    names = [cls.__name__ for cls in pg_learner.EXTRAS]
    doc = pg_learner.__doc__
    assert [doc.index(f"``{name}``") for name in names] == sorted(
        doc.index(f"``{name}``") for name in names
    )
    # A config pickled when the learners lived in vtrace.py finds them there still.
    assert vtrace.BootstrappedAPPOTorchLearner is BootstrappedAPPOTorchLearner
    assert vtrace.bootstrapped_learner is pg_learner.learner_class
