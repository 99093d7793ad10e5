"""Environments of the benchmark suite: the cab-driver MDP (two variants) and Atari Pong.

Importing this package registers nothing and imports neither Ray nor Torch; call
:func:`register_envs` once (in the driver, before building RLlib configs) to register

* ``Cabs-v0`` (:data:`CABS`): :class:`envs.cabs.CabsEnv`, every action available;
* ``CabsRequests-v0`` (:data:`CABS_REQUESTS`): :class:`envs.cabs.CabsRequestsEnv`, random ride
  requests and an action mask in the observation;
* ``Pong-v5-rllib`` (:data:`PONG`): :func:`envs.pong.make_pong`, ALE Pong with RLlib's Atari
  preprocessing;

with both Gymnasium and Ray Tune's env registry, so an RLlib config can name them; and any other
Gymnasium env the generic workload names (a registered id or ``package.module:Name``,
``envs/gym.py``) with Ray Tune's registry under that name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

CABS = "Cabs-v0"
CABS_REQUESTS = "CabsRequests-v0"
PONG = "Pong-v5-rllib"

_VARIANT_IDS = {"base": CABS, "requests": CABS_REQUESTS}

__all__ = ["CABS", "CABS_REQUESTS", "PONG", "env_id_for", "exact_optimum", "make", "register_envs"]


def env_id_for(variant: str) -> str:
    """Env id of a cab variant: ``"base"`` -> ``Cabs-v0``, ``"requests"`` -> ``CabsRequests-v0``."""
    try:
        return _VARIANT_IDS[variant]
    except KeyError:
        raise ValueError(
            f"unknown cab variant {variant!r}; expected one of {sorted(_VARIANT_IDS)}"
        ) from None


def exact_optimum(env_id: Any, config: Mapping[str, Any] | None = None) -> float | None:
    """The exact optimal expected return of an env that has one, else None: the cab variants (the
    DP value, ``envs/optimum.py``) and any env registered with Gymnasium that publishes its
    model as its toy-text envs do (Taxi, FrozenLake: ``envs.gym.tabular_optimum``). A name only
    Ray Tune's registry knows (a test's env, an entry point) has none: it is not built here."""
    variant = {CABS: "base", CABS_REQUESTS: "requests"}.get(env_id)
    if variant is None:
        import gymnasium as gym

        if not isinstance(env_id, str) or env_id == PONG or env_id not in gym.registry:
            return None
        from envs.gym import tabular_optimum

        return tabular_optimum(env_id, config)
    from envs.optimum import optimum_value

    return float(optimum_value(variant, tm_seed=int((config or {}).get("tm_seed", 0))))


def _make_cabs(config: Mapping[str, Any] | None = None) -> Any:
    from envs.cabs import CabsEnv

    return CabsEnv(config)


def _make_cabs_requests(config: Mapping[str, Any] | None = None) -> Any:
    from envs.cabs import CabsRequestsEnv

    return CabsRequestsEnv(config)


def _make_pong(config: Mapping[str, Any] | None = None) -> Any:
    from envs.pong import make_pong

    return make_pong(config)


_ENTRY_POINTS: dict[str, tuple[str, Callable[..., Any]]] = {
    CABS: ("envs.cabs:CabsEnv", _make_cabs),
    CABS_REQUESTS: ("envs.cabs:CabsRequestsEnv", _make_cabs_requests),
    PONG: ("envs.pong:make_pong", _make_pong),
}


def make(env_id: str, config: Mapping[str, Any] | None = None) -> Any:
    """One env of a suite id, or of any other Gymnasium env (``envs.gym.make``), built by the
    same creator RLlib's runners use."""
    if env_id not in _ENTRY_POINTS:
        from envs.gym import make as make_gym

        return make_gym(env_id, config)
    return _ENTRY_POINTS[env_id][1](dict(config or {}))


def register_envs(*generic: str) -> None:
    """Register the cab variants and Pong with Gymnasium and Ray Tune (idempotent), and each
    ``generic`` env name (``envs.gym.register``) with Ray Tune.

    Ray Tune's creators take RLlib's ``EnvContext`` (the env config); Gymnasium's entry points
    take the config as keyword arguments or as ``config={...}``.
    """
    import gymnasium as gym
    from ray.tune.registry import register_env

    for env_id, (entry_point, creator) in _ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point)
        register_env(env_id, creator)
    if generic:
        from envs.gym import register

        for name in generic:
            register(name)
