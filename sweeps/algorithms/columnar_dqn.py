"""DQN whose replay is sampled as a train batch: :class:`ColumnarDQN` and its config.

RLlib's DQN samples its prioritized replay as one ``SingleAgentEpisode`` per row and has the
learner connector rebuild a batch from them, for every update; on Pong a large share of the
update's time (``python -m sweeps.profiling``: the replay-sample and learner-connector timers).
Here the replay
(:class:`~sweeps.algorithms.columnar_replay.ColumnarPrioritizedEpisodeReplayBuffer`, as Ape-X's
shards) returns the columns the DQN loss reads, and the learner takes them as they are
(``LearnerGroup.update(batch=...)``). Everything else is RLlib's DQN: the same ``training_step``
(sample, store, then ``training_intensity``'s number of updates, then a weight sync), the same
learner and loss, the target net on the sampled clock.

What differs from RLlib's sample, by design (see the replay's docstring): a finished game's last
n−1 steps are sampled too, with the shorter n-step return to the terminal. And learning starts
once *this* algorithm's replay has had ``num_steps_sampled_before_learning_starts`` env steps (the
same step as RLlib's in a new run): a restored one, whose replay is not in the checkpoint,
refills it first (``ColumnarDQN._replay_warmed_up``).
"""

from __future__ import annotations

import numpy as np
from ray.rllib.algorithms.dqn.dqn import DQN, DQNConfig, calculate_rr_weights
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_RESULTS,
    REPLAY_BUFFER_SAMPLE_TIMER,
    REPLAY_BUFFER_UPDATE_PRIOS_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TD_ERROR_KEY,
    TIMERS,
)
from ray.rllib.utils.numpy import convert_to_numpy

from sweeps.algorithms.columnar_replay import (
    ITEM_ID,
    TREE_IDX,
    ColumnarPrioritizedEpisodeReplayBuffer,
)
from sweeps.seams.algorithm import DQNHooks, config_error, sample_episodes


class ColumnarDQNConfig(DQNConfig):
    """``DQNConfig`` for :class:`ColumnarDQN`; its replay type defaults to the columnar buffer."""

    def __init__(self, algo_class: type | None = None) -> None:
        super().__init__(algo_class=algo_class or ColumnarDQN)
        self.replay_buffer_config = {
            **self.replay_buffer_config,
            "type": ColumnarPrioritizedEpisodeReplayBuffer,
        }

    @override(DQNConfig)
    def validate(self) -> None:
        if not isinstance(self.n_step, int):  # before DQN's checks, which compare it
            config_error(self, f"ColumnarDQN needs a fixed integer n_step, not {self.n_step!r}.")
        super().validate()
        replay = self.replay_buffer_config.get("type")
        columnar = isinstance(replay, type) and issubclass(
            replay, ColumnarPrioritizedEpisodeReplayBuffer
        )
        if not columnar:
            config_error(
                self,
                "ColumnarDQN's replay_buffer_config['type'] must subclass "
                f"ColumnarPrioritizedEpisodeReplayBuffer, not {replay!r}.",
            )


class ColumnarDQN(DQNHooks):
    """RLlib's DQN, its replay sampled as columns (see the module docstring); its new-stack
    training step under a public name (seam: ``sweeps.seams.algorithm.DQNHooks``)."""

    @classmethod
    @override(DQN)
    def get_default_config(cls) -> ColumnarDQNConfig:
        return ColumnarDQNConfig()

    # RLlib's ``DQN.training_step`` calls this on the new API stack; the suite's callbacks rely
    # on ``training_step`` staying RLlib's (DQN samples, then trains: sweeps/harness/callbacks.py).
    @override(DQNHooks)
    def training_step_new_api_stack(self) -> None:
        cfg = self.config
        store_weight, num_updates = calculate_rr_weights(cfg)
        for _ in range(store_weight):
            with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
                # As RLlib's DQN samples (seam: sweeps.seams.algorithm.sample_episodes).
                episodes, env_runner_results = sample_episodes(
                    self.env_runner_group, cfg.sample_timeout_s
                )
            self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
                self.local_replay_buffer.add(episodes)

        if not self._replay_warmed_up():
            return
        trained = False
        for _ in range(num_updates):
            if not self._update():
                break
            trained = True
        if trained:
            with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                self.env_runner_group.sync_weights(
                    from_worker_or_learner_group=self.learner_group,
                    policies=[DEFAULT_MODULE_ID],
                    global_vars=None,
                    inference_only=True,
                )
        self.metrics.aggregate([self.local_replay_buffer.get_metrics()], key=REPLAY_BUFFER_RESULTS)

    def _replay_warmed_up(self) -> bool:
        """Whether this algorithm's replay has been given
        ``num_steps_sampled_before_learning_starts`` env steps. RLlib's DQN counts the lifetime
        env steps sampled instead: the same step in a new algorithm, but a restored one has
        them all behind it while its replay (not in RLlib's checkpoints on the new API stack)
        starts empty, and it trained at once, over and over, on the first fragments after a
        resume. Now a restored DQN refills its replay before it learns, as Ape-X does."""
        added = self.local_replay_buffer.get_added_timesteps()
        return added >= self.config.num_steps_sampled_before_learning_starts

    def _update(self) -> bool:
        """One prioritized batch from the replay, one SGD step on it, its new priorities
        written back. False while the replay cannot fill a batch yet."""
        cfg, replay = self.config, self.local_replay_buffer
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
            batch = replay.sample_transitions(
                int(cfg.total_train_batch_size),
                n_step=int(cfg.n_step),
                gamma=float(cfg.gamma),
                beta=float(cfg.replay_buffer_config.get("beta", 0.4)),
            )
        if batch is None:
            return False
        tree_idx, item_id = batch.pop(TREE_IDX), batch.pop(ITEM_ID)
        n = len(batch[Columns.ACTIONS])
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(batch)}, env_steps=n),
                num_epochs=1,
                shuffle_batch_per_epoch=False,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
                    ),
                    NUM_AGENT_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
                    ),
                },
            )
        td = pop_td_errors(learner_results)
        self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        if td is not None and len(td) == n:
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_UPDATE_PRIOS_TIMER)):
                replay.update_priorities_at(tree_idx, item_id, td)
        return True


def pop_td_errors(learner_results: list[dict]) -> np.ndarray | None:
    """The TD errors (new priorities) of one ``LearnerGroup.update``, popped from its results
    before they are logged, as RLlib's DQN does; with minibatches RLlib concatenates them in
    the batch's row order. None when the learner reported none."""
    td_errors = []
    for result in learner_results:
        module_results = result.get(DEFAULT_MODULE_ID, {})
        if TD_ERROR_KEY in module_results:
            td_errors.append(convert_to_numpy(module_results.pop(TD_ERROR_KEY).peek()))
    if not td_errors:
        return None
    return np.concatenate([np.asarray(t).reshape(-1) for t in td_errors])
