"""The env runner seam: what the suite reads from and leaves on RLlib's env runners and their
group, and the aggregator actors of IMPALA/APPO (read from Ray 2.60.0).

Ape-X's driver (``sweeps/algorithms/apex/algorithm.py``) blocks in one ``ray.wait`` on its
sample requests and its replay requests together: it needs the ObjectRefs of the env runner
group's in-flight requests. Its actors (``sweeps/algorithms/apex/actor.py``) keep one pending
replay add per runner between requests and report the runner's weights version; their
exploration (``sweeps/algorithms/apex/exploration.py``) gives each runner's DQN module a fixed ε.
The CPU-time report (``sweeps/harness/cpu_time.py``) reads the aggregator actors' processes.
"""

from __future__ import annotations

from typing import Any

# The attribute of an env runner holding the suite's per-runner state (``runner_state``).
_STATE = "_sweeps_runner_state"
# The attribute of a DQN module holding the fixed ε it was given (``set_fixed_epsilon``).
_EPSILON = "_apex_epsilon"


def in_flight_refs(env_runner_group: Any, tag: str) -> list[Any]:
    """ObjectRefs of ``env_runner_group``'s in-flight async requests tagged ``tag``.

    Read from Ray 2.60.0 (``ray/rllib/env/env_runner_group.py``,
    ``ray/rllib/utils/actor_manager.py``): the group's ``FaultTolerantActorManager``
    (``_worker_manager``) keeps ``_in_flight_req_to_actor_id``, mapping the ObjectRef of every
    ``foreach_actor_async`` call to ``(tag, actor_id)``. Ray 2.60.0 has no public call that gives
    these refs: ``foreach_env_runner_async`` and ``num_in_flight_async_reqs`` return counts, and
    ``fetch_ready_async_reqs(return_obj_refs=True)`` returns only requests that are already
    done, and removes them.

    Waits for: a public list of an ``EnvRunnerGroup``'s in-flight request refs in RLlib."""
    manager = env_runner_group._worker_manager
    in_flight = getattr(manager, "_in_flight_req_to_actor_id", {})
    return [ref for ref, (t, _) in in_flight.items() if t == tag]


def runner_state(env_runner: Any) -> dict[str, Any]:
    """The suite's own state kept on ``env_runner`` between requests (a dict, created on first
    use and kept in an attribute of the runner object; RLlib never reads it). A remote env
    runner is a Ray actor: functions sent to it with ``foreach_env_runner_async`` have no other
    place that lives as long as the runner (Ray 2.60.0, ``ray/rllib/env/env_runner.py``).

    Waits for: a public per-runner user state on RLlib's ``EnvRunner`` (or the suite's own
    ``EnvRunner`` subclass, which would change the class every Ape-X config names)."""
    state = getattr(env_runner, _STATE, None)
    if state is None:
        state = {}
        setattr(env_runner, _STATE, state)
    return state


def weights_seq_no(env_runner: Any) -> int:
    """The version of the weights ``env_runner`` last loaded (``_weights_seq_no``, 0 where it
    has none), read from Ray 2.60.0 (``ray/rllib/env/single_agent_env_runner.py``).

    Waits for: a public ``weights_seq_no`` of RLlib's ``EnvRunner`` (it is in ``get_state``
    only, with the module's weights)."""
    return int(getattr(env_runner, "_weights_seq_no", 0))


def set_fixed_epsilon(module: Any, epsilon: float | tuple[float, ...]) -> None:
    """Make ``module`` (RLlib's DQN RLModule) explore with the constant ``epsilon`` (one number,
    or one per game as a tensor that RLlib's ε-greedy reads row by row): its
    ``epsilon_schedule`` is replaced by a constant ``Scheduler`` on this object, and the value
    kept beside it (:func:`fixed_epsilon`). RLlib's DQN module builds its schedule once, from the
    config, in ``setup`` and keeps it in this attribute (Ray 2.60.0,
    ``ray/rllib/algorithms/dqn/default_dqn_rl_module.py``); Ape-X gives each runner (or game)
    its own ε on a module RLlib built, so no subclass or config can set it.

    Waits for: a public per-runner exploration setting of RLlib's DQN module."""
    import torch
    from ray.rllib.utils.schedules.scheduler import Scheduler

    value = torch.tensor(epsilon) if isinstance(epsilon, tuple) else epsilon
    module.epsilon_schedule = Scheduler(fixed_value_or_schedule=value, framework="torch")
    setattr(module, _EPSILON, epsilon)


def fixed_epsilon(module: Any) -> float | tuple[float, ...] | None:
    """The ε :func:`set_fixed_epsilon` gave ``module`` (None if none), kept on RLlib's module
    object (Ray 2.60.0, ``ray/rllib/algorithms/dqn/default_dqn_rl_module.py``).

    Waits for: a public per-runner exploration setting of RLlib's DQN module."""
    return getattr(module, _EPSILON, None)


def aggregator_actors(algorithm: Any) -> Any:
    """IMPALA's/APPO's aggregator actors (a ``FaultTolerantActorManager``; None where the
    algorithm has none): RLlib 2.60 keeps them in the private ``_aggregator_actor_manager`` of
    the ``Algorithm`` (``ray/rllib/algorithms/algorithm.py``).

    Waits for: a public handle on an algorithm's aggregator actors in RLlib."""
    return getattr(algorithm, "_aggregator_actor_manager", None)
