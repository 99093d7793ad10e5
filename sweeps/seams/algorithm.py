"""The algorithm seam: the training iteration and training step of RLlib's ``Algorithm`` and
DQN, and the config's validation helpers and own settings (read from Ray 2.60.0).

Ape-X (``sweeps/algorithms/apex/``) times each training iteration, adds its own figures to the
iteration's results, builds no driver-side replay and checkpoints its training clock as a state
component of its own; the columnar DQN (``sweeps/algorithms/columnar_dqn.py``) replaces DQN's
new-stack training step and samples as it does. Both refuse a config with RLlib's validation
error. The command line (``sweeps/harness/cli.py``) merges settings over a config's own model
config.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.dqn.dqn import DQN
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample


class DQNHooks(DQN):
    """RLlib's DQN with the private steps of its training iteration under public names, each
    calling RLlib's own through ``super()`` by default (a subclass overrides the public one):

    * ``_run_one_training_iteration()``: :meth:`run_one_training_iteration` (the iteration's
      training part, ``training_step`` repeated until the iteration's minimum is met);
    * ``_compile_iteration_results(train_results=, eval_results=)``:
      :meth:`compile_iteration_results` (the iteration's result dict);
    * ``_create_local_replay_buffer_if_necessary(config)``:
      :meth:`create_local_replay_buffer_if_necessary` (the driver-side replay, at setup);
    * ``_training_step_new_api_stack()``: :meth:`training_step_new_api_stack` (DQN's
      ``training_step`` on the new API stack).

    Read from Ray 2.60.0 (``ray/rllib/algorithms/algorithm.py``,
    ``ray/rllib/algorithms/dqn/dqn.py``).

    Waits for: public hooks around an RLlib algorithm's training iteration and its result dict
    (callbacks run in the iteration, before the result is compiled), and a public replay
    factory and new-stack training step of DQN, in RLlib."""

    def _run_one_training_iteration(self):
        return self.run_one_training_iteration()

    def run_one_training_iteration(self):
        """RLlib's own: returns ``(results, train_iter_ctx)``."""
        return super()._run_one_training_iteration()

    def _compile_iteration_results(self, *, train_results, eval_results):
        return self.compile_iteration_results(
            train_results=train_results, eval_results=eval_results
        )

    def compile_iteration_results(self, *, train_results, eval_results):
        """RLlib's own: the iteration's result dict."""
        return super()._compile_iteration_results(
            train_results=train_results, eval_results=eval_results
        )

    def _create_local_replay_buffer_if_necessary(self, config):
        return self.create_local_replay_buffer_if_necessary(config)

    def create_local_replay_buffer_if_necessary(self, config):
        """RLlib's own: the replay buffer of ``replay_buffer_config`` (None without one)."""
        return super()._create_local_replay_buffer_if_necessary(config)

    def _training_step_new_api_stack(self):
        return self.training_step_new_api_stack()

    def training_step_new_api_stack(self):
        """RLlib's own DQN training step on the new API stack."""
        return super()._training_step_new_api_stack()


def sample_episodes(env_runner_group: Any, sample_timeout_s: float | None) -> tuple[list, list]:
    """One synchronous round of sampling on every env runner of the group, as RLlib's new-stack
    DQN samples: ``(episodes, env runner metrics)``. ``synchronous_parallel_sample`` takes the
    new stack's behaviour only through its private keywords ``_uses_new_env_runners=True`` and
    ``_return_metrics=True``; read from Ray 2.60.0 (``ray/rllib/execution/rollout_ops.py``,
    ``ray/rllib/algorithms/dqn/dqn.py``).

    Waits for: a public new-stack ``synchronous_parallel_sample`` (or ``EnvRunnerGroup``
    call that returns episodes and metrics) in RLlib."""
    return synchronous_parallel_sample(
        worker_set=env_runner_group,
        concat=True,
        sample_timeout_s=sample_timeout_s,
        _uses_new_env_runners=True,
        _return_metrics=True,
    )


def config_error(config: Any, message: str) -> None:
    """Refuse ``config`` as RLlib's own validation does (``AlgorithmConfig._value_error``: a
    ValueError, or only a logged warning where ``experimental(_validate_config=False)`` turns
    validation off), read from Ray 2.60.0 (``ray/rllib/algorithms/algorithm_config.py``).

    Waits for: a public validation-error helper of RLlib's ``AlgorithmConfig``."""
    config._value_error(message)


def checkpoint_component_requested(
    checkpointable: Any, name: str, components: Any, not_components: Any
) -> bool:
    """Whether a ``get_state(components, not_components=...)`` request of ``checkpointable``
    asks for its state component ``name`` (``Checkpointable._check_component``), read from
    Ray 2.60.0 (``ray/rllib/utils/checkpoints.py``).

    Waits for: a public ``check_component`` of RLlib's ``Checkpointable``."""
    return checkpointable._check_component(name, components, not_components)


def own_model_config(config: Any) -> Any:
    """The model config set on ``config`` itself (``AlgorithmConfig._model_config``: a dict or
    a ``DefaultModelConfig``), without what the algorithm adds to it (the public
    ``model_config`` is their merged dict), read from Ray 2.60.0
    (``ray/rllib/algorithms/algorithm_config.py``).

    Waits for: a public read of the model config a user set on RLlib's ``AlgorithmConfig``."""
    return config._model_config


def skip_env_runner_state_sync(config: Any) -> None:
    """Have the algorithm of ``config`` skip RLlib's sync of every env runner's connector
    states after each iteration (``AlgorithmConfig._dont_auto_sync_env_runner_states``, set as
    RLlib's IMPALA sets it), read from Ray 2.60.0 (``ray/rllib/algorithms/algorithm.py``,
    ``impala/impala.py``).

    Waits for: a public setting for the env runner state sync of RLlib's ``AlgorithmConfig``."""
    config._dont_auto_sync_env_runner_states = True
