"""Ape-X's driver: :class:`ApexDQN`, the training loop that keeps sample requests queued on
every runner, feeds the learner from the replay shards, writes priorities back and syncs
weights; and :func:`register`. What it reports under ``result["apex"]`` is in ``metrics.py``.
The data flow is described in the package docstring (``sweeps/algorithms/apex/__init__.py``).
One file (over 500 lines): the loop's request queues, replay feeding and weight syncs share one
state, as RLlib keeps each algorithm's training step in one file.
"""

from __future__ import annotations

import functools
import math
import time
from collections import defaultdict, deque
from typing import Any

import numpy as np
import ray
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.dqn.dqn import DQN
from ray.rllib.core import (
    COMPONENT_LEARNER,
    COMPONENT_RL_MODULE,
    DEFAULT_MODULE_ID,
)
from ray.rllib.core.columns import Columns
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    TIMERS,
)

from sweeps.algorithms.apex.actor import PENDING_ADD, sample_and_store
from sweeps.algorithms.apex.config import ApexDQNConfig
from sweeps.algorithms.apex.exploration import apply_runner_epsilon, current_epsilon
from sweeps.algorithms.apex.metrics import ApexMetricsMixin
from sweeps.algorithms.apex.replay import ITEM_ID, TREE_IDX, ApexReplayShard
from sweeps.algorithms.columnar_dqn import pop_td_errors
from sweeps.harness.keys import APEX as APEX_RESULTS  # result key of the Ape-X metrics ("apex")
from sweeps.seams.algorithm import DQNHooks, checkpoint_component_requested
from sweeps.seams.env_runner import in_flight_refs, runner_state

# Tag of the sample-and-store requests on the EnvRunnerGroup.
SAMPLE_TAG = "apex_sample"
# The checkpointed state's entry for Ape-X's own training clock (restored with the trial).
CLOCK_STATE = "apex_clock"
# A replay shard whose process dies (killed, out of memory) is restarted by Ray, empty, behind
# the same handle: its contents are lost (they are never checkpointed), the trial goes on, and
# its restarts and the requests lost with it are counted (``apex/replay_shard_restarts``,
# ``apex/replay_shard_failures``). -1: no limit.
SHARD_MAX_RESTARTS = -1


class ApexDQN(ApexMetricsMixin, DQNHooks):
    """Ape-X DQN: asynchronous actors with fixed per-actor ε, sharded prioritized replay fed
    directly by the actors, one learner (the LearnerGroup, GPU if configured) and periodic
    non-blocking weight broadcast. See the module docstring for the data flow.

    RLlib's DQN, with the steps of its training iteration that Ape-X changes under public names
    (seam: ``sweeps.seams.algorithm.DQNHooks``)."""

    @classmethod
    @override(DQN)
    def get_default_config(cls) -> ApexDQNConfig:
        return ApexDQNConfig()

    @override(DQNHooks)
    def create_local_replay_buffer_if_necessary(self, config: Any) -> None:
        return None  # Ape-X's replay lives in the shard actors.

    @override(DQN)
    def setup(self, config: AlgorithmConfig) -> None:
        # The replay shards' processes boot while RLlib's setup builds the env runners (each a
        # process that takes seconds to boot: one after the other, half of a 2-core machine
        # waits). They answer before training starts: the suite's `on_algorithm_init` callback,
        # which ends RLlib's setup, pings them to count their CPU time, and the pids below
        # are taken before the first iteration either way: start-up, never training time.
        shard_cls = ray.remote(
            num_cpus=config.replay_shard_num_cpus, max_restarts=SHARD_MAX_RESTARTS
        )(ApexReplayShard)
        buffer_cls = config.replay_shard_buffer_class()
        self._shards = [
            shard_cls.options(name=None).remote(buffer_cls, config.replay_shard_buffer_kwargs(i))
            for i in range(config.num_replay_shards_fed)
        ]
        # Each shard's first process, so that a shard killed before its first stats answer is
        # still seen as restarted (`_count_shard_restarts`).
        pings = [s.ping.remote() for s in self._shards]
        super().setup(config)
        self._shard_pids = dict(enumerate(ray.get(pings)))
        cfg = self.config
        self._limit_learner_threads()
        self._num_runners = self.env_runner_group.num_remote_env_runners()
        self._sample_fn = functools.partial(
            sample_and_store,
            shards=self._shards,
            num_runners=max(self._num_runners, 1),
            epsilon_base=cfg.exploration_epsilon_base,
            epsilon_alpha=cfg.exploration_alpha,
            epsilon_per_game=bool(cfg.exploration_per_game),
            n_step=int(cfg.n_step),
            gamma=float(cfg.gamma),
            compute_priorities=bool(cfg.compute_initial_priorities),
        )
        # Counters (driver side).
        self._sampled = 0
        self._trained = 0
        self._num_updates = 0  # SGD steps
        self._num_learner_calls = 0  # LearnerGroup.update calls
        self._num_weight_syncs = 0
        self._num_training_step_calls = 0
        self._idle_s = 0.0
        self._train_time_s = 0.0  # time inside training iterations (no eval, no setup)
        # Env steps sampled and trained before the checkpoint this run was restored from (the
        # counters above restart with the replay; the lifetime figures add these).
        self._restored_steps = (0, 0)
        self._shard_steps = [0] * len(self._shards)  # env steps sent per shard
        self._replay_reqs: list[tuple[int, ray.ObjectRef]] = []
        self._batch_queue: deque[tuple[int, dict[str, np.ndarray]]] = deque()
        self._next_shard = 0
        self._weights_ref: ray.ObjectRef | None = None
        self._weights_ref_updates = -1
        self._steps_since_sync: dict[int, int] = defaultdict(int)
        self._updates_at_sync: dict[int, int] = defaultdict(int)
        self._runner_seq_no: dict[int, int] = {}
        self._runner_epsilon: dict[int, float] = {}
        self._runner_timing: dict[str, float] = defaultdict(float)
        self._num_sample_results = 0
        self._replay_add_errors = 0
        self._replay_shard_failures = 0  # replay/stats requests lost to a shard that died
        self._replay_shard_restarts = 0  # shards seen answering from a new process
        self._steps_not_owed = 0.0  # env steps the learner was let off (lost with a shard)
        self._in_flight_at_update: list[int] = []
        self._shard_stats: list[dict[str, float]] = [{} for _ in self._shards]
        self._stats_reqs: list[ray.ObjectRef] | None = None
        self._last_stats_t = 0.0
        self._iter_snapshot = (0, 0, 0, 0)
        # Give every runner its fixed ε right away (the sample function re-applies it, which
        # also covers runners restarted after a failure).
        self._runner_epsilon = self.get_runner_epsilons()

    def _limit_learner_threads(self) -> None:
        threads = self.config.learner_torch_num_threads
        local_cpu = self.config.num_learners == 0 and not self.config.num_gpus_per_learner
        if threads is None or not local_cpu:
            return
        if threads == "auto":
            threads = max(int(self.config.num_cpus_for_main_process or 1), 1)
        import torch

        torch.set_num_threads(int(threads))

    # ----------------------------------------------------------------- public helpers

    def get_runner_epsilons(self) -> dict[int, float]:
        """Apply and return each runner's fixed ε (the mean over its games where each has its
        own), keyed by worker index (0 = local)."""
        cfg = self.config
        n = max(self._num_runners, 1)
        base, alpha = cfg.exploration_epsilon_base, cfg.exploration_alpha
        per_game = bool(cfg.exploration_per_game)

        def _apply(er: Any) -> tuple[int, float]:
            apply_runner_epsilon(er, n, base, alpha, per_game)
            return int(er.worker_index), current_epsilon(er)

        if self._num_runners:
            pairs = self.env_runner_group.foreach_env_runner(_apply, local_env_runner=False)
        else:
            pairs = [_apply(self.env_runner)]
        return dict(pairs)

    @property
    def replay_shards(self) -> list[Any]:
        """The replay shard actor handles."""
        return list(self._shards)

    def replay_stats(self) -> list[dict[str, float]]:
        """Current stats of every shard (blocking)."""
        return ray.get([s.stats.remote() for s in self._shards])

    # ------------------------------------------------------------------ training loop

    @override(DQNHooks)
    def run_one_training_iteration(self):
        t0 = time.perf_counter()
        out = super().run_one_training_iteration()
        self._train_time_s += time.perf_counter() - t0
        self._apex_results = self._iteration_metrics(time.perf_counter() - t0)
        return out

    @override(DQN)
    def get_state(self, components=None, *, not_components=None, **kwargs) -> dict[str, Any]:
        """RLlib's state plus Ape-X's training clock, so that a restored trial's throughput
        figures continue from the checkpoint (its counters restart: the replay, which is not
        checkpointed, refills first)."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        if checkpoint_component_requested(self, CLOCK_STATE, components, not_components):
            sampled, trained = self._lifetime_steps()
            state[CLOCK_STATE] = {
                "train_time_s": self._train_time_s,
                "env_steps_sampled": sampled,
                "env_steps_trained": trained,
            }
        return state

    @override(DQN)
    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if CLOCK_STATE in state:
            clock = state[CLOCK_STATE]
            self._train_time_s = float(clock["train_time_s"])
            self._restored_steps = (
                int(clock["env_steps_sampled"]),
                int(clock["env_steps_trained"]),
            )

    def _lifetime_steps(self) -> tuple[int, int]:
        """Env steps sampled and trained over the trial's life, restores included."""
        return self._sampled + self._restored_steps[0], self._trained + self._restored_steps[1]

    @override(DQNHooks)
    def compile_iteration_results(self, *, train_results, eval_results):
        results = super().compile_iteration_results(
            train_results=train_results, eval_results=eval_results
        )
        # RLlib compiles its MetricsLogger inside the training iteration; the Ape-X figures
        # are per-iteration snapshots computed right after it, so they are added here.
        results[APEX_RESULTS] = getattr(self, "_apex_results", {})
        return results

    @override(DQN)
    def training_step(self) -> None:
        """One pass of the driver loop: keep sample requests queued on every runner, account
        for finished ones, train on replay batches (as many as ``training_intensity``
        allows), keep replay requests in flight. Blocks in ``ray.wait`` (up to
        ``idle_wait_s``) only when none of that has anything to do."""
        self._num_training_step_calls += 1
        if self._num_runners == 0:
            if not self._sampling_ahead():
                self._sample_locally()
            self._receive_batches(None)
            self._train_from_queue()
            self._request_replay()
            self._poll_shard_stats()
            return
        self._request_samples()
        sample_refs = self._sample_refs()
        can_train = self._updates_due() >= 1
        replay_refs = [ref for _, ref in self._replay_reqs] if can_train else []
        watch = sample_refs + replay_refs
        ready = set(ray.wait(watch, num_returns=len(watch), timeout=0)[0]) if watch else set()
        if not ready and not (can_train and self._batch_queue):
            t0 = time.perf_counter()
            if watch:
                ready = set(ray.wait(watch, num_returns=1, timeout=self.config.idle_wait_s)[0])
            else:
                time.sleep(min(self.config.idle_wait_s, 0.005))
            self._idle_s += time.perf_counter() - t0
        if ready.intersection(sample_refs):
            self._collect_samples()
            self._request_samples()
        if ready.intersection(replay_refs):
            self._receive_batches(ready)
        self._train_from_queue()
        self._request_replay()
        self._poll_shard_stats()

    def _sample_refs(self) -> list[ray.ObjectRef]:
        """ObjectRefs of this algorithm's in-flight sample requests (read, never resolved), to
        block in one ``ray.wait`` on sample and replay requests together (seam:
        ``sweeps.seams.env_runner.in_flight_refs``)."""
        return in_flight_refs(self.env_runner_group, SAMPLE_TAG)

    # -- sampling

    def _weights_for(self, runner_id: int) -> Any:
        """Latest learner weights (an ObjectRef) if ``runner_id`` is due for a sync."""
        if self._num_updates == 0 or self._updates_at_sync[runner_id] == self._num_updates:
            return None
        if self._steps_since_sync[runner_id] < self.config.max_weight_sync_delay:
            return None
        if self._weights_ref_updates != self._num_updates:
            state = self.learner_group.get_state(
                components=COMPONENT_LEARNER + "/" + COMPONENT_RL_MODULE, inference_only=True
            )[COMPONENT_LEARNER]
            self._weights_ref = ray.put(state)
            self._weights_ref_updates = self._num_updates
        return self._weights_ref

    def _mark_synced(self, runner_id: int) -> None:
        self._steps_since_sync[runner_id] = 0
        self._updates_at_sync[runner_id] = self._num_updates
        self._num_weight_syncs += 1

    def _sampling_ahead(self) -> bool:
        """True while sampling is more than ``max_env_steps_sampled_ahead`` env steps ahead
        of what the learner has trained at ``training_intensity``: runners then wait for
        the learner (which then gets their cores), so the replay ratio holds both ways."""
        limit = self.config.sample_ahead_limit()
        intensity = self.config.training_intensity
        if limit is None or not intensity or not self._learning_started():
            return False
        return self._sampled_since_learning_started() - self._trained / intensity > limit

    def _request_samples(self) -> None:
        if self._sampling_ahead():
            return
        for runner_id in self.env_runner_group.healthy_env_runner_ids():
            weights = self._weights_for(runner_id)
            sent = self.env_runner_group.foreach_env_runner_async(
                self._sample_fn,
                tag=SAMPLE_TAG,
                kwargs={"weights": weights},
                remote_worker_ids=[runner_id],
            )
            if sent and weights is not None:
                self._mark_synced(runner_id)

    def _collect_samples(self) -> None:
        results = self.env_runner_group.fetch_ready_async_reqs(tags=SAMPLE_TAG, timeout_seconds=0)
        for runner_id, result in results:
            self._on_sample_result(runner_id, result)
        if results:
            self.metrics.aggregate([r["metrics"] for _, r in results], key=ENV_RUNNER_RESULTS)

    def _sample_locally(self) -> None:
        """No remote runners: the local EnvRunner samples synchronously (debugging mode)."""
        weights = self._weights_for(0)
        if weights is not None:
            weights = ray.get(weights)
            self._mark_synced(0)
        result = self._sample_fn(self.env_runner, weights=weights)
        ray.get(runner_state(self.env_runner)[PENDING_ADD])
        self._on_sample_result(0, result)
        self.metrics.aggregate([result["metrics"]], key=ENV_RUNNER_RESULTS)

    def _on_sample_result(self, runner_id: int, result: dict[str, Any]) -> None:
        steps = int(result["env_steps"])
        self._sampled += steps
        self._shard_steps[result["shard"]] += steps
        self._steps_since_sync[runner_id] += steps
        self._runner_seq_no[runner_id] = result["weights_seq_no"]
        self._runner_epsilon[runner_id] = result["epsilon"]
        self._num_sample_results += 1
        self._replay_add_errors += result.get("add_errors", 0)
        for key in ("sample_s", "priority_s", "add_wait_s"):
            self._runner_timing[key] += result[key]

    # -- learning

    def _learning_started(self) -> bool:
        return self._sampled >= self.config.num_steps_sampled_before_learning_starts

    def _sampled_since_learning_started(self) -> int:
        """Env steps sampled that the learner owes training for: the steps taken before
        ``num_steps_sampled_before_learning_starts`` only fill the buffer, so the replay
        ratio counts from there (from step 0 the learner would start 50k steps x ratio in
        debt on Pong, and runners would wait for minutes until it paid)."""
        warm_up = self.config.num_steps_sampled_before_learning_starts
        return max(self._sampled - warm_up - self._steps_not_owed, 0)

    def _on_shard_restart(self, shard_index: int) -> None:
        """Replay shard ``shard_index`` came back empty (its process died; Ray restarted it):
        what it held is lost. The learner no longer owes training for the steps sampled so far
        (it cannot replay them), and sampling goes on without waiting for it until the shard
        holds its share of the warm-up again; otherwise runners wait for a learner that waits
        for data, for ever."""
        self._shard_steps[shard_index] = 0
        if not self._learning_started():
            return
        intensity = self.config.training_intensity
        warm_up = self.config.num_steps_sampled_before_learning_starts
        paid = self._trained / intensity if intensity else self._sampled_since_learning_started()
        self._steps_not_owed += (
            self._sampled_since_learning_started() - paid + warm_up / len(self._shards)
        )

    def _updates_due(self) -> float:
        """Learner updates allowed now by ``training_intensity`` (inf when uncapped)."""
        if not self._learning_started():
            return 0
        intensity = self.config.training_intensity
        if not intensity:
            return math.inf
        batch = self.config.total_train_batch_size
        owed = self._sampled_since_learning_started() * intensity - self._trained
        return max(math.floor(owed / batch), 0)

    def _request_replay(self) -> None:
        """Keep enough replay batches queued or in flight for the updates now due (at most
        ``max_requests_in_flight_per_replay_shard`` requests per shard)."""
        if not self._learning_started():
            return
        cfg = self.config
        batch = cfg.total_train_batch_size
        k = max(int(cfg.replay_batches_per_request), 1)
        per_shard = cfg.max_requests_in_flight_per_replay_shard
        num_shards = len(self._shards)
        # Batches queued or in flight: what is due plus one request, at most
        # `max_requests_in_flight_per_replay_shard` requests' worth in total (prefetched
        # batches carry priorities from when they were drawn, so keep the queue short).
        want = min(self._updates_due() + k, per_shard * k)
        in_flight = defaultdict(int)
        for shard_index, _ in self._replay_reqs:
            in_flight[shard_index] += 1
        while len(self._batch_queue) + k * len(self._replay_reqs) < want:
            shard_index = next(
                (
                    i % num_shards
                    for i in range(self._next_shard, self._next_shard + num_shards)
                    if self._shard_steps[i % num_shards] >= batch
                    and in_flight[i % num_shards] < per_shard
                ),
                None,
            )
            if shard_index is None:
                break
            self._next_shard = (shard_index + 1) % num_shards
            ref = self._shards[shard_index].sample.remote(
                batch,
                int(cfg.n_step),
                float(cfg.gamma),
                float(cfg.replay_buffer_config.get("beta", 0.4)),
                k,
            )
            self._replay_reqs.append((shard_index, ref))
            in_flight[shard_index] += 1

    def _receive_batches(self, ready: set | None) -> None:
        """Move the replay batches of finished requests (``ready``; None: all, blocking) into
        the local queue, oldest request first."""
        remaining = []
        for shard_index, ref in self._replay_reqs:
            if ready is not None and ref not in ready:
                remaining.append((shard_index, ref))
                continue
            try:
                self._batch_queue.extend((shard_index, b) for b in ray.get(ref))
            except ray.exceptions.RayActorError:  # the shard died; Ray restarts it, empty
                self._replay_shard_failures += 1
        self._replay_reqs = remaining

    def _train_from_queue(self) -> None:
        # One learner call per training_step: between two calls the driver re-issues sample
        # requests, so a long run of updates never leaves the runners without work. A call
        # takes up to `sgd_steps_per_learner_call` queued batches, one SGD step each, so
        # RLlib's per-call cost (batch conversion, metrics reduce) is paid once for all.
        due = self._updates_due()
        if not self._batch_queue or due < 1:
            return
        k = min(len(self._batch_queue), due, max(int(self.config.sgd_steps_per_learner_call), 1))
        self._update([self._batch_queue.popleft() for _ in range(int(k))])

    def _update(self, items: list[tuple[int, dict[str, np.ndarray]]]) -> None:
        """One ``LearnerGroup.update`` over ``items`` ((shard index, batch) pairs): one SGD
        step per batch, in order; the new |TD errors| go back to each batch's shard."""
        origins = [(shard, b.pop(TREE_IDX), b.pop(ITEM_ID)) for shard, b in items]
        batches = [b for _, b in items]
        sizes = [len(b[Columns.ACTIONS]) for b in batches]
        n = sum(sizes)
        batch = batches[0]
        if len(batches) > 1:
            batch = {c: np.concatenate([b[c] for b in batches]) for c in batch}
        self._in_flight_at_update.append(
            self.env_runner_group.num_in_flight_async_reqs(tag=SAMPLE_TAG)
        )
        train_batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(batch)}, env_steps=n)
        # Equal-sized batches (always, unless a custom buffer returns others) become the
        # minibatches of one call, in order; otherwise one step on their union.
        minibatch = sizes[0] if len(set(sizes)) == 1 and len(sizes) > 1 else None
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = self.learner_group.update(
                batch=train_batch,
                minibatch_size=minibatch,
                num_epochs=1,
                shuffle_batch_per_epoch=False,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: self._sampled,
                    NUM_ENV_STEPS_TRAINED_LIFETIME: self._trained + n,
                },
            )
        td = pop_td_errors(learner_results)
        self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        if td is not None and len(td) == n:
            self._send_priorities(origins, np.split(td, np.cumsum(sizes)[:-1]))
        self._trained += n
        self._num_updates += len(batches) if minibatch else 1
        self._num_learner_calls += 1

    def _send_priorities(self, origins: list[tuple], td_parts: list[np.ndarray]) -> None:
        """Fire-and-forget priority updates, one call per shard."""
        by_shard: dict[int, list[tuple]] = defaultdict(list)
        for (shard, tree_idx, item_id), td in zip(origins, td_parts, strict=True):
            by_shard[shard].append((tree_idx, item_id, td))
        for shard, parts in by_shard.items():
            tree_idx, item_id, td = (np.concatenate(column) for column in zip(*parts, strict=True))
            self._shards[shard].update_priorities.remote(tree_idx, item_id, td)

    @override(DQN)
    def cleanup(self) -> None:
        for shard in getattr(self, "_shards", []):
            try:
                ray.kill(shard)
            except Exception:  # already gone
                pass
        self._shards = []
        super().cleanup()


def register(name: str = "ApexDQN") -> str:
    """Register :class:`ApexDQN` as a Tune trainable under ``name`` (idempotent); returns it."""
    from ray.tune.registry import register_trainable

    register_trainable(name, ApexDQN)
    return name
