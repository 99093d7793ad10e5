"""Ape-X's configuration: :class:`ApexDQNConfig` (``DQNConfig`` plus the Ape-X knobs, their
defaults and validation, and what each replay shard is built with) and :func:`cabs_config`,
the tuned small-problem settings.
"""

from __future__ import annotations

import inspect
from typing import Any

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.dqn.dqn import DQNConfig
from ray.rllib.utils.annotations import override

from sweeps.algorithms.apex.learner import ApexDQNTorchLearner
from sweeps.algorithms.apex.replay import ApexEpisodeReplayBuffer
from sweeps.seams.algorithm import config_error, skip_env_runner_state_sync


class ApexDQNConfig(DQNConfig):
    """Configuration of :class:`ApexDQN`: ``DQNConfig`` plus the Ape-X knobs of :meth:`apex`.

    Defaults follow RLlib's old Ape-X (``rllib/algorithms/apex_dqn/apex_dqn.py``, Ray <= 2.5,
    and ``rllib_contrib/apex_dqn``) and the paper:

    ========================================  ============  ===================================
    knob                                      default       source
    ========================================  ============  ===================================
    num_replay_buffer_shards                  4             old RLlib (``optimizer`` dict)
    max_weight_sync_delay                     400           old RLlib: env steps a runner
                                                            returns between weight syncs
    exploration_epsilon_base / _alpha         0.4 / 7       paper; old ``PerWorkerEpsilonGreedy``
    exploration_per_game                      False         new: each game of a runner's vector
                                                            env is an actor of that schedule
    training_return_max_epsilon               None          new: the training return counts
                                                            only games played at ε <= this
    max_requests_in_flight_per_env_runner     2             old ``..._per_sampler_worker``
    max_requests_in_flight_per_replay_shard   4             old: inf (bounded: stale priorities)
    replay capacity (all shards together)     2,000,000     old RLlib
    prioritized replay alpha / beta / eps     0.6/0.4/1e-6  old RLlib
    n_step / double_q / dueling               3/True/True   old RLlib and paper
    train_batch_size                          512           old RLlib
    target_network_update_freq                500,000       old RLlib, in *trained* env steps
    training_intensity                        1.0           old RLlib (trained/sampled steps,
                                                            sampled counted from the learning
                                                            start; None: learner runs flat out)
    num_steps_sampled_before_learning_starts  50,000        old RLlib
    rollout_fragment_length                   50            old RLlib
    lr / adam_epsilon / grad_clip / loss      DQN's         5e-4 / 1e-8 / 40 / huber
    replay_batches_per_request                1             new (round trips on busy cores)
    replay_shard_num_cpus                     0             old RLlib (shards ``num_cpus=0``)
    compute_initial_priorities                True          paper; old ``worker_side_prio...``
    learner_torch_num_threads                 "auto"        new (see :meth:`apex`)
    sgd_steps_per_learner_call                4             new (RLlib's per-call overhead)
    max_env_steps_sampled_ahead               "auto"        new (replay ratio held both ways)
    idle_wait_s                               0.02          new (driver never busy-spins)
    ========================================  ============  ===================================

    Differences from RLlib's DQN: ``target_network_update_freq`` counts *trained* env steps,
    as in old Ape-X (:class:`ApexDQNTorchLearner`; DQN counts sampled steps).
    ``num_env_runners`` defaults to 2 (old: 32 workers) and the per-iteration reporting
    minimum is 1 s (old: 30 s and 25k steps). The ε schedule (``epsilon``) of DQN is ignored
    on training runners (each has its fixed ε_i); evaluation is greedy (``explore=False``).
    Runners' connector states are not merged and broadcast after each iteration (RLlib's
    IMPALA skips it too): a stateful env-to-module connector (a filter) stays per runner.
    The replay shards are not checkpointed (a restored algorithm refills them before it
    learns again); a shard whose process dies is restarted by Ray, empty, and training goes
    on. Small-problem settings that reach a greedy return of 2,500 on ``Cabs-v0`` in a few
    seconds of training: :func:`cabs_config`.
    """

    def __init__(self, algo_class: type | None = None) -> None:
        if algo_class is None:
            # Imported here, not at the top: the algorithm module imports this one (its training
            # loop reads the config), while a config only names its algorithm as a default.
            from sweeps.algorithms.apex.algorithm import ApexDQN as algo_class
        super().__init__(algo_class=algo_class)
        # --- Ape-X knobs (see `apex()`).
        self.num_replay_buffer_shards = 4
        self.max_weight_sync_delay = 400
        self.exploration_epsilon_base = 0.4
        self.exploration_alpha = 7.0
        self.exploration_per_game = False
        self.training_return_max_epsilon = None
        self.max_requests_in_flight_per_replay_shard = 4
        self.replay_batches_per_request = 1
        self.replay_shard_num_cpus = 0.0
        self.compute_initial_priorities = True
        self.idle_wait_s = 0.02
        self.learner_torch_num_threads = "auto"
        self.sgd_steps_per_learner_call = 4
        self.max_env_steps_sampled_ahead = "auto"
        # --- DQN settings overridden as in old Ape-X.
        self.n_step = 3
        self.double_q = True
        self.dueling = True
        self.train_batch_size = 512
        self.target_network_update_freq = 500_000
        self.training_intensity = 1.0
        self.num_steps_sampled_before_learning_starts = 50_000
        self.replay_buffer_config = {
            "type": ApexEpisodeReplayBuffer,
            "capacity": 2_000_000,  # all shards together
            "alpha": 0.6,
            "beta": 0.4,
            "priority_eps": 1e-6,
            # Ape-X's replay lives in the shard actors, not in the driver.
            "no_local_replay_buffer": True,
        }
        # --- env runners / reporting.
        self.num_env_runners = 2
        self.rollout_fragment_length = 50
        self.max_requests_in_flight_per_env_runner = 2
        self.min_time_s_per_iteration = 1
        self.min_sample_timesteps_per_iteration = 0
        # RLlib's Algorithm syncs every runner's connector states after each iteration, in a
        # blocking call that waits behind the runners' queued sample requests: a third of
        # the driver's (and learner's) wall-clock on Pong. Ape-X's runners need nothing from
        # it (their ε is their own, set with each request), so, as RLlib's IMPALA does, the
        # algorithm skips it; stateful connectors (filters) stay per runner (seam:
        # sweeps.seams.algorithm.skip_env_runner_state_sync).
        skip_env_runner_state_sync(self)
        # Exploration on training runners is each runner's fixed ε; the module-level default
        # schedule is constant at the base value (used only if a runner cannot be told its ε).
        self.epsilon = self.exploration_epsilon_base

    def apex(
        self,
        *,
        num_replay_buffer_shards: int = NotProvided,
        max_weight_sync_delay: int = NotProvided,
        exploration_epsilon_base: float = NotProvided,
        exploration_alpha: float = NotProvided,
        exploration_per_game: bool = NotProvided,
        training_return_max_epsilon: float | None = NotProvided,
        max_requests_in_flight_per_env_runner: int = NotProvided,
        max_requests_in_flight_per_replay_shard: int = NotProvided,
        replay_batches_per_request: int = NotProvided,
        replay_shard_num_cpus: float = NotProvided,
        compute_initial_priorities: bool = NotProvided,
        idle_wait_s: float = NotProvided,
        learner_torch_num_threads: int | str | None = NotProvided,
        sgd_steps_per_learner_call: int = NotProvided,
        max_env_steps_sampled_ahead: int | str | None = NotProvided,
    ) -> ApexDQNConfig:
        """Ape-X specific settings.

        Args:
            num_replay_buffer_shards: Number of replay shard actors; runner i feeds shard
                i % num_replay_buffer_shards. With fewer runners, only one shard per runner
                is built (``num_replay_shards_fed``). The replay capacity is split evenly.
            max_weight_sync_delay: A runner gets the learner's latest weights once it has
                returned this many env steps since its last sync.
            exploration_epsilon_base: ε of Ape-X's per-actor schedule ε^(1 + α i/(N-1)).
            exploration_alpha: α of that schedule.
            exploration_per_game: Each game of a runner's vector env is an actor of that
                schedule (N runners of G games: N·G actors, from ε down to ε^(1+α)), not the
                runner as a whole (all its games at one ε). On a small machine, where one
                runner steps all the games, a single runner's ε is the base 0.4 for every game.
            training_return_max_epsilon: The training return (the mean of each runner's last
                games, ``sweeps.harness.callbacks``) counts only games played at an ε at or
                below this; None (default): all games. Ape-X's high-ε actors play far worse
                than its policy, so the mean over all of them stays below what DQN's training
                games show at its final ε; 0.01 (DQN's final ε in the suite) compares the two
                at the same exploration. RLlib's own all-games mean stays in the results.
            max_requests_in_flight_per_env_runner: Sample requests queued per runner (>= 2
                keeps a runner busy while its previous result travels back).
            max_requests_in_flight_per_replay_shard: Replay-sample requests in flight per
                shard (prefetching batches for the learner).
            replay_batches_per_request: Train batches a shard returns per request (more
                amortise the actor round trip on busy cores; their priorities are
                read before the learner updates the earlier ones).
            replay_shard_num_cpus: CPUs reserved per shard actor (0: shards are mostly idle
                and share the cores with everything else).
            compute_initial_priorities: Runners compute initial priorities (|n-step TD|) with
                their local network (Ape-X); False adds new steps with the max priority.
            idle_wait_s: Longest the driver blocks in ``ray.wait`` when nothing is ready.
            learner_torch_num_threads: Torch intra-op threads of the driver process when the
                learner is local and on CPU (``num_learners=0``, no GPU). "auto" (default):
                ``num_cpus_for_main_process`` (1), so the learner does not oversubscribe the
                cores the runners use (torch's default, one thread per core, made each update
                ~10x slower on 2 busy cores); None leaves torch's setting alone.
            sgd_steps_per_learner_call: Most replay batches one ``LearnerGroup.update``
                call trains on, one SGD step per batch (as minibatches, in order). RLlib's
                per-call cost (batch conversion, metrics reduce) is several times the SGD
                step of a small network, so a call of several steps trains more samples
                per second (``results/cabs/PROFILE.md``); 1 = one step per call. The replay
                ratio (``training_intensity``) is unchanged: a call takes only steps due.
            max_env_steps_sampled_ahead: How far sampling may run ahead of the learner: no
                new sample request goes out while env steps sampled since learning started
                exceed env steps trained / ``training_intensity`` by more than this, so the
                replay ratio holds both ways (the learner never trains less than asked because
                actors raced ahead; on a small machine the waiting actors leave their cores to
                the learner).
                "auto" (default): two requests' worth per runner (rollout fragment x envs
                per runner x 2 x max(num_env_runners, 1)); None: actors never wait (old
                Ape-X; the ratio is then only an upper bound).
        """
        settings = {k: v for k, v in locals().items() if k != "self" and v is not NotProvided}
        for name, value in settings.items():
            setattr(self, name, value)
        if "exploration_epsilon_base" in settings:
            self.epsilon = exploration_epsilon_base
        return self

    @override(DQNConfig)
    def training(self, **kwargs: Any) -> ApexDQNConfig:
        """DQN's ``training()``; also accepts the keyword arguments of :meth:`apex`."""
        apex_keys = set(inspect.signature(ApexDQNConfig.apex).parameters) - {"self"}
        apex_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in apex_keys}
        super().training(**kwargs)
        if apex_kwargs:
            self.apex(**apex_kwargs)
        return self

    @override(DQNConfig)
    def validate(self) -> None:
        """DQN's validation, then Ape-X's; each refusal is RLlib's validation error (seam:
        ``sweeps.seams.algorithm.config_error``)."""
        super().validate()
        if not self.enable_rl_module_and_learner or not self.enable_env_runner_and_connector_v2:
            config_error(self, "ApexDQN runs on RLlib's new API stack only.")
        if self.is_multi_agent:
            config_error(self, "ApexDQN supports single-agent envs only.")
        if self.num_replay_buffer_shards < 1:
            config_error(self, "num_replay_buffer_shards must be >= 1.")
        if self.max_weight_sync_delay < 0:
            config_error(self, "max_weight_sync_delay must be >= 0.")
        ahead = self.max_env_steps_sampled_ahead
        if not (ahead is None or ahead == "auto" or (isinstance(ahead, int) and ahead >= 0)):
            config_error(self, "max_env_steps_sampled_ahead must be 'auto', None or an int >= 0.")
        if not isinstance(self.exploration_per_game, bool):
            config_error(self, "exploration_per_game must be True or False.")
        cap = self.training_return_max_epsilon
        if cap is not None and (
            isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 <= cap <= 1
        ):
            config_error(self, "training_return_max_epsilon must be None or a number in [0, 1].")
        if self.max_requests_in_flight_per_replay_shard < 1:
            config_error(self, "max_requests_in_flight_per_replay_shard must be >= 1.")
        if self.batch_mode != "truncate_episodes" and not self.in_evaluation:
            config_error(self, "ApexDQN needs batch_mode='truncate_episodes'.")
        if self.model_config.get("use_lstm") or self.model_config.get("use_attention"):
            config_error(self, "ApexDQN does not support stateful (recurrent) modules.")
        if isinstance(self.n_step, tuple | list):
            config_error(self, "ApexDQN needs a fixed integer n_step.")
        buffer_type = self.replay_buffer_config.get("type")
        if isinstance(buffer_type, type) and not issubclass(buffer_type, ApexEpisodeReplayBuffer):
            config_error(
                self, "replay_buffer_config['type'] must subclass ApexEpisodeReplayBuffer."
            )

    @override(DQNConfig)
    def get_default_learner_class(self) -> type:
        if self.framework_str != "torch":
            raise ValueError("ApexDQN supports framework='torch' only.")
        return ApexDQNTorchLearner

    def sample_ahead_limit(self) -> int | None:
        """``max_env_steps_sampled_ahead`` in env steps ("auto" resolved; None: no limit)."""
        limit = self.max_env_steps_sampled_ahead
        if limit != "auto":
            return None if limit is None else int(limit)
        per_request = self.get_rollout_fragment_length() * self.num_envs_per_env_runner
        return 2 * per_request * max(self.num_env_runners, 1)

    def replay_shard_buffer_class(self) -> type:
        """The buffer class of each shard (string types map to ApexEpisodeReplayBuffer)."""
        buffer_type = self.replay_buffer_config.get("type")
        return buffer_type if isinstance(buffer_type, type) else ApexEpisodeReplayBuffer

    @property
    def num_replay_shards_fed(self) -> int:
        """The replay shards that get data, and that the algorithm builds: runner i feeds shard
        i % S, so with fewer runners than ``num_replay_buffer_shards`` the others would stay
        empty and the replay would hold only the fed shards' share of its capacity."""
        return max(1, min(int(self.num_replay_buffer_shards), int(self.num_env_runners)))

    def replay_shard_buffer_kwargs(self, shard_index: int) -> dict[str, Any]:
        """Constructor kwargs of shard ``shard_index``'s buffer (the capacity split evenly over
        the shards fed)."""
        cfg = self.replay_buffer_config
        capacity = max(int(cfg.get("capacity", 2_000_000)) // self.num_replay_shards_fed, 1)
        seed = None if self.seed is None else int(self.seed) * 1000 + shard_index
        return {
            "capacity": capacity,
            "alpha": float(cfg.get("alpha", 0.6)),
            "priority_eps": float(cfg.get("priority_eps", 1e-6)),
            "seed": seed,
        }


# Ape-X on a 2-core machine: one replay shard, the actor's weights at most 256 updates old, four
# replay batches per shard request (two in flight) and four SGD steps per learner call, so that
# the driver's round trips stay few while the one learner core trains.
TWO_CORE_APEX: dict[str, Any] = {
    "num_replay_buffer_shards": 1,
    "max_weight_sync_delay": 256,
    "replay_batches_per_request": 4,
    "max_requests_in_flight_per_replay_shard": 2,
    "sgd_steps_per_learner_call": 4,
}


# The cab MDP's tuned values that a sweep's command line also reaches: their one home. The
# DQN family's cab network, one hidden layer of 256 (two layers learned far slower there;
# sweeps/dqn_family.cabs builds it for DQN and Ape-X alike), and Ape-X's actors there, one of 8
# vectorised envs (the sweep's --num-env-runners and --num-envs-per-env-runner default to them).
CABS_HIDDENS: tuple[int, ...] = (256,)
CABS_RUNNERS: dict[str, int] = {"num_env_runners": 1, "num_envs_per_env_runner": 8}


def cabs_config(config: ApexDQNConfig | None = None) -> ApexDQNConfig:
    """Tuned small-problem settings (the cab MDP on 2 cores), updating ``config`` in place.

    One actor with 8 vectorised envs (32-step fragments: 256 env steps per request) and one
    shard; learning from 1,000 steps; a 50k replay; batch 64 at lr 3e-3, four SGD steps per
    learner call; a replay ratio of 8 trained per sampled env step (the learner is the
    bottleneck on 2 cores; a higher ratio needs fewer env steps *and* fewer updates here);
    γ = 0.95 (a trip's own fare decides most of the greedy choice; γ = 0.99 learned slower and
    less stably); target sync every 2,000 trained steps (~31 updates); squared TD loss
    (returns are in the thousands: the Huber loss's unit-slope tails learn that scale slowly).
    Time to a greedy 2,500: ``results/cabs/REPORT.md``; measure it again with
    ``benchmarks/apex_cabs_bench.py``.
    """
    config = config or ApexDQNConfig()
    return (
        config.env_runners(
            **CABS_RUNNERS,
            rollout_fragment_length=32,
            max_requests_in_flight_per_env_runner=2,
        )
        .apex(**TWO_CORE_APEX)
        .training(
            lr=3e-3,
            gamma=0.95,
            train_batch_size=64,
            training_intensity=8.0,
            target_network_update_freq=2000,
            td_error_loss_fn="mse",
            num_steps_sampled_before_learning_starts=1000,
            replay_buffer_config={"capacity": 50_000},
        )
        .rl_module(model_config={"fcnet_hiddens": list(CABS_HIDDENS), "fcnet_activation": "relu"})
        .reporting(min_time_s_per_iteration=0.5, min_sample_timesteps_per_iteration=0)
    )
