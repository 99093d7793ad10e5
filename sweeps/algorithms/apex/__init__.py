"""Ape-X DQN (Horgan et al. 2018, "Distributed Prioritized Experience Replay") on RLlib 2.60's
new API stack: EnvRunners, RLModule, Learner/LearnerGroup and episode replay buffers.

One module per concern, each readable top to bottom:

* ``exploration.py``: each actor's fixed ε.
* ``replay.py``: the prioritized episode replay buffer and its shard actor.
* ``actor.py``: what a runner does in one sample request (sample, initial priorities, store).
* ``learner.py``: DQN's torch learner with the target network on the trained-steps clock.
* ``config.py``: ``ApexDQNConfig`` (knobs, defaults, validation) and ``cabs_config``.
* ``algorithm.py``: ``ApexDQN``, the driver's training loop, and ``register``.
* ``metrics.py``: what the driver reports under ``result["apex"]`` (a mixin of ``ApexDQN``).

Usage
-----
    from sweeps.algorithms.apex import ApexDQNConfig, cabs_config, register

    algo = cabs_config(ApexDQNConfig()).environment("Cabs-v0").build()  # tuned, 2 cores
    algo = (
        ApexDQNConfig()
        .environment("Cabs-v0")
        .env_runners(num_env_runners=2, num_envs_per_env_runner=16)
        .apex(num_replay_buffer_shards=2, max_weight_sync_delay=400)
        .training(lr=1e-3, train_batch_size=64, training_intensity=1.0)
        .build()
    )
    algo.train()

    register()  # then tune.Tuner("ApexDQN", param_space=config) works

How data flows
--------------
* Actors = the EnvRunners. Each runs with its own fixed ε_i = ε^(1 + α·i/(N−1)) (ε = 0.4,
  α = 7, i = 0..N−1 over the N remote runners; N = 1 uses ε). The driver keeps up to
  ``max_requests_in_flight_per_env_runner`` requests of :func:`sample_and_store` queued on
  every runner (``EnvRunnerGroup.foreach_env_runner_async``, IMPALA's pattern), so runners
  never wait for the learner. Inside the request a runner samples
  ``rollout_fragment_length × num_envs_per_env_runner`` steps, computes the initial priority
  of every transition with its local network (|n-step TD error|, :func:`initial_priorities`,
  from the Q-values its exploration computed where the module keeps them: Pong's), and sends
  episodes + priorities straight to its replay shard (runner i → shard i % S; at most one
  shard per runner is built) with a
  fire-and-forget actor call (at most one add in flight per runner: back-pressure). Only counts
  and the runner's metrics go back to the driver.
* Replay = S :class:`ApexReplayShard` Ray actors (``num_cpus=replay_shard_num_cpus``, default
  0), each wrapping an :class:`ApexEpisodeReplayBuffer`, i.e. RLlib's
  ``PrioritizedEpisodeReplayBuffer`` plus per-step initial priorities and index-carrying
  sample / priority-update calls (see its docstring for why the subclass is needed).
* Learner = the LearnerGroup with DQN's own torch learner and loss (double-Q, dueling, n-step,
  importance weights; TD errors come back in the results as in DQN;
  :class:`ApexDQNTorchLearner` only moves the target-network clock to trained steps). The
  driver keeps a few replay-sample requests in flight (each returning
  ``replay_batches_per_request`` ready train batches, round-robin over the shards), does one
  ``LearnerGroup.update(batch=...)`` per ``training_step`` call (re-issuing sample requests in
  between) and sends the |TD errors| back to that shard (fire-and-forget).
  ``training_intensity`` caps trained / sampled env steps (None: train as fast as possible).
  The local learner uses one torch thread (``learner_torch_num_threads``).
* Weight sync (Ape-X's ``max_weight_sync_delay``): once a runner has returned that many env
  steps since its last sync, its next sample request carries the latest weights (one
  ``ray.put`` per learner version), which it loads before sampling. No runner ever stops.
* When nothing is ready the driver blocks in ``ray.wait`` on the in-flight requests (up to
  ``idle_wait_s``) instead of spinning, leaving the cores to the runners.

Results: RLlib's usual keys plus ``result["apex"]`` (:data:`APEX_RESULTS`): env steps sampled
and trained (lifetime and per second), learner updates, per-shard replay fill and mean
priority, per-runner ε (the mean over its games where each game has its own), weight-sync lag,
training_step calls and idle time.
"""

from sweeps.algorithms.apex.actor import initial_priorities, sample_and_store
from sweeps.algorithms.apex.algorithm import APEX_RESULTS, SAMPLE_TAG, ApexDQN, register
from sweeps.algorithms.apex.config import ApexDQNConfig, cabs_config
from sweeps.algorithms.apex.exploration import (
    apply_runner_epsilon,
    current_epsilon,
    game_epsilons,
    per_runner_epsilon,
)
from sweeps.algorithms.apex.learner import ApexDQNTorchLearner
from sweeps.algorithms.apex.replay import (
    ITEM_ID,
    TREE_IDX,
    ApexEpisodeReplayBuffer,
    ApexReplayShard,
    strip_for_replay,
)

__all__ = [
    "APEX_RESULTS",
    "ITEM_ID",
    "SAMPLE_TAG",
    "TREE_IDX",
    "ApexDQN",
    "ApexDQNConfig",
    "ApexDQNTorchLearner",
    "ApexEpisodeReplayBuffer",
    "ApexReplayShard",
    "apply_runner_epsilon",
    "cabs_config",
    "current_epsilon",
    "game_epsilons",
    "initial_priorities",
    "per_runner_epsilon",
    "register",
    "sample_and_store",
    "strip_for_replay",
]
