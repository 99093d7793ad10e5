"""The trial-actor seam: one trial's actor reused for the next trial (read from Ray 2.60.0).

Tune can keep a finished trial's actor, its process and its placement group, for the next trial
that asks for the same resources (``TuneConfig(reuse_actors=True)``): it calls
``Trainable.reset(config)`` on it, which calls ``reset_config(config)``, and fails the trial if
that returns False. RLlib's ``Algorithm`` keeps Trainable's default (False), so every trial is
a new process that imports Ray, RLlib and Torch again before its set-up starts.

``reusable(algo_class)`` is ``algo_class`` with a ``reset_config`` that ends the old trial's
algorithm as Tune's ``stop`` would (``cleanup``: its env runners, learners, replay shards and
aggregator actors stopped, each a process of its own) and builds the new trial's in place by
running the class's constructor again on the same object: the path a new actor takes, so
everything the constructor and ``setup`` build (the RLModule's weights, the learner and its
optimizer, replay, schedules, the MetricsLogger, callbacks, counters) is new, from the new
config. What no constructor sees is the process's own state: the global RNGs are seeded again by
``setup`` where the config has a seed (RLlib's ``update_global_seed_if_necessary``), as in a
new process; per-process figures (CPU time) are read from the trial's start, not the process's.

What the old trial leaves in the process besides its object, each ended before the new one is
built: Tune's usage monitor thread (``Trainable._monitor``, started by every constructor where
``log_sys_usage`` is on, RLlib's default: stopped and joined), IMPALA/APPO's local learner
thread (``_learner_thread``: ``cleanup`` asks it to stop and waits 5 s; here it is waited for
until it has stopped, else the reset fails and Tune retries the trial in a new actor) and
IMPALA's env-runner state server actor (``_env_runner_state_server``, which ``cleanup`` leaves
running: killed). Every attribute the old trial's object held goes (its ``__dict__`` is emptied,
as a new object's is, so nothing set on it by the suite's callbacks or RLlib survives), except
what ``Trainable.reset`` has just set for the new trial and the constructor would overwrite: the
trial's info (``_trial_info``: ``reset`` pops it from the config) and its log-file redirection
(``_stdout_*``, ``_stderr_*``). A GPU learner is not reused (its loader threads have no stop).

Waits for: RLlib's own ``Algorithm.reset_config``, or a public Tune hook that rebuilds a
trainable inside a kept actor.
"""

from __future__ import annotations

import threading
from typing import Any

import ray

# Trainable's attributes that ``Trainable.reset`` sets for the new trial before it calls
# ``reset_config``, and that the constructor would overwrite with its defaults.
_KEPT = (
    "_trial_info",
    "_stdout_context",
    "_stdout_fp",
    "_stdout_stream",
    "_stdout_file",
    "_stderr_context",
    "_stderr_fp",
    "_stderr_stream",
    "_stderr_file",
    "_stderr_logging_handler",
)
_REUSABLE: dict[type, type] = {}
# How long the old trial's threads may take to stop (a learner thread finishes its update first).
THREAD_STOP_S = 60.0


class ReusableTrial:
    """The mixin ``reusable`` puts in front of an algorithm class.

    Waits for: RLlib's own ``Algorithm.reset_config`` (Trainable's default refuses a reset)."""

    # How many trials this actor has run, this one included (1 for a new actor).
    trials_in_actor: int = 1

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        trials = self.trials_in_actor
        kept = {name: self.__dict__[name] for name in _KEPT if name in self.__dict__}
        storage = self._storage
        threads = _old_threads(self)
        server = getattr(self, "_env_runner_state_server", None)
        self.cleanup()
        if server is not None:
            ray.kill(server)
        for thread in threads:
            thread.join(timeout=THREAD_STOP_S)
            if thread.is_alive():
                raise RuntimeError(
                    f"the last trial's {thread.name} thread did not stop within "
                    f"{THREAD_STOP_S:.0f} s: this actor is not reused"
                )
        self.__dict__.clear()
        type(self).__init__(self, config=new_config, storage=storage)
        self.__dict__.update(kept)
        self.trials_in_actor = trials + 1
        return True


def _old_threads(algorithm: Any) -> list[threading.Thread]:
    """The threads of the old trial that must end before the new one starts: Tune's usage
    monitor (asked to stop here) and a local learner's thread (asked by ``cleanup``)."""
    threads = []
    monitor = getattr(algorithm, "_monitor", None)
    if isinstance(monitor, threading.Thread):
        monitor.stop()
        if monitor.is_alive():
            threads.append(monitor)
    group = getattr(algorithm, "learner_group", None)
    learner = getattr(group, "_learner", None) if group is not None else None
    thread = getattr(learner, "_learner_thread", None)
    if isinstance(thread, threading.Thread) and thread.is_alive():
        threads.append(thread)
    return threads


def reusable(algo_class: type) -> type:
    """``algo_class`` whose actor Tune may reuse for the next trial (``ReusableTrial``), under
    the same name (Tune names trials after it); one class per algorithm class.

    Waits for: an RLlib algorithm that Tune can reuse as it is (``reset_config`` of its own)."""
    if issubclass(algo_class, ReusableTrial):
        return algo_class
    if algo_class not in _REUSABLE:
        _REUSABLE[algo_class] = type(
            algo_class.__name__,
            (ReusableTrial, algo_class),
            {"__module__": __name__, "__qualname__": algo_class.__name__, "__doc__": __doc__},
        )
    return _REUSABLE[algo_class]
