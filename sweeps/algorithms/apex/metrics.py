"""What Ape-X reports under ``result["apex"]`` (:class:`ApexMetricsMixin`, mixed into
:class:`~sweeps.algorithms.apex.algorithm.ApexDQN`): env steps sampled and trained (lifetime and
per second), the replay ratio, learner SGD steps and calls, weight syncs and their lag, per-runner
ε, replay fill and priorities per shard (polled without blocking), runner-side timings and the
driver's idle time. It only reads the driver's counters; the training loop owns them.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import ray


class ApexMetricsMixin:
    """The per-iteration Ape-X figures, from the counters ``ApexDQN`` keeps."""

    def _poll_shard_stats(self, interval_s: float = 0.5) -> None:
        now = time.perf_counter()
        if now - self._last_stats_t < interval_s:
            return
        if self._stats_reqs is not None:
            ready, _ = ray.wait(self._stats_reqs, num_returns=len(self._stats_reqs), timeout=0)
            if len(ready) < len(self._stats_reqs):
                return
            try:
                self._shard_stats = ray.get(self._stats_reqs)
            except ray.exceptions.RayActorError:  # a shard died (restarted by Ray): ask again
                self._replay_shard_failures += 1
            self._count_shard_restarts()
        self._stats_reqs = [s.stats.remote() for s in self._shards]
        self._last_stats_t = now

    def _count_shard_restarts(self) -> None:
        """A shard answering from another process than before was restarted (by Ray, empty)."""
        pids = self._shard_pids
        for i, stats in enumerate(self._shard_stats):
            pid = stats.get("pid") if stats else None
            if pid is not None and pids.get(i, pid) != pid:
                self._replay_shard_restarts += 1
                self._on_shard_restart(i)
            if pid is not None:
                pids[i] = pid
        self._shard_pids = pids

    def _iteration_metrics(self, iteration_s: float) -> dict[str, Any]:
        sampled0, trained0, updates0, calls0 = self._iter_snapshot
        self._iter_snapshot = (
            self._sampled,
            self._trained,
            self._num_updates,
            self._num_learner_calls,
        )
        per_s = 1.0 / iteration_s if iteration_s > 0 else math.nan
        life_s = 1.0 / self._train_time_s if self._train_time_s > 0 else math.nan
        sampled_life, trained_life = self._lifetime_steps()
        runner_keys = {rid: f"runner_{rid}" for rid in self._runner_epsilon}
        lag_updates = {
            runner_keys[r]: self._num_updates - self._updates_at_sync[r]
            for r in self._runner_epsilon
        }
        lag_seq = {
            runner_keys[r]: self._num_updates - self._runner_seq_no.get(r, 0)
            for r in self._runner_epsilon
        }
        shards = {f"shard_{i}": dict(stats) for i, stats in enumerate(self._shard_stats) if stats}
        fills = [s["fill"] for s in self._shard_stats if s]
        prios = [s["mean_priority"] for s in self._shard_stats if s]
        n_results = max(self._num_sample_results, 1)
        owed = self._sampled_since_learning_started()  # what training_intensity applies to
        apex = {
            "env_steps_sampled_lifetime": sampled_life,
            "env_steps_trained_lifetime": trained_life,
            "env_steps_sampled_per_s": (self._sampled - sampled0) * per_s,
            "env_steps_trained_per_s": (self._trained - trained0) * per_s,
            "env_steps_sampled_per_s_lifetime": sampled_life * life_s,
            "env_steps_trained_per_s_lifetime": trained_life * life_s,
            # Trained per sampled step since learning started: the ratio training_intensity
            # sets and the driver holds (the steps before it only fill the buffer).
            "replay_ratio": self._trained / owed if owed else 0.0,
            "learner_updates_lifetime": self._num_updates,
            "learner_updates_per_s": (self._num_updates - updates0) * per_s,
            "learner_calls_lifetime": self._num_learner_calls,
            "learner_calls_per_s": (self._num_learner_calls - calls0) * per_s,
            "weight_syncs_lifetime": self._num_weight_syncs,
            "training_step_calls_lifetime": self._num_training_step_calls,
            "training_time_s": self._train_time_s,
            "driver_idle_s_lifetime": self._idle_s,
            "epsilon": {runner_keys[r]: e for r, e in self._runner_epsilon.items()},
            "weight_sync_lag_updates": lag_updates,
            "weight_sync_lag_seq_no": lag_seq,
            "weight_sync_lag_updates_max": max(lag_updates.values(), default=0),
            "sample_requests_in_flight_at_update_mean": (
                float(np.mean(self._in_flight_at_update)) if self._in_flight_at_update else 0.0
            ),
            "replay_requests_in_flight": len(self._replay_reqs),
            "replay_batches_queued": len(self._batch_queue),
            "replay": shards,
            "replay_fill_mean": float(np.mean(fills)) if fills else 0.0,
            "replay_add_errors_lifetime": self._replay_add_errors,
            # Replay shards that died and were restarted by Ray (empty), and the requests lost
            # with them.
            "replay_shard_restarts": self._replay_shard_restarts,
            "replay_shard_failures": self._replay_shard_failures,
            "replay_mean_priority": float(np.mean(prios)) if prios else math.nan,
            "runner_sample_s_mean": self._runner_timing["sample_s"] / n_results,
            "runner_priority_s_mean": self._runner_timing["priority_s"] / n_results,
            "runner_add_wait_s_mean": self._runner_timing["add_wait_s"] / n_results,
        }
        self._in_flight_at_update = self._in_flight_at_update[-1000:]
        return apex
