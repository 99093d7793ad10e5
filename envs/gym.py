"""Any other Gymnasium env: the generic workload's factory, checked before Ray starts.

An env is named the way ``--env`` takes it:

* a registered id (``CartPole-v1``, ``Acrobot-v1``): built by ``gymnasium.make(id, **env_config)``,
  the spec's own wrappers (time limit, order enforcing) included;
* an ALE id (``ALE/Breakout-v5``): the suite's Atari preprocessing (``envs/pong.py``'s one
  factory, :func:`envs.pong.make_atari`, given the spec's game): 42x42 grayscale frames, frame-skip
  4, a stack of 4, stepped in ale-py's C++ vector env; the env config takes Pong's keys (``dim``,
  ``framestack``, ...);
* an entry point ``package.module:Name``: a ``gymnasium.Env`` subclass, called with the env
  config as keyword arguments (gymnasium's convention: ``gym.make`` passes its kwargs to the
  entry point), or any other callable, called with the env config as one dict (RLlib's
  env-creator convention, ``register_env(name, lambda config: ...)``). A class whose constructor
  takes a single ``config`` or ``env_config`` argument (RLlib's env classes) gets the dict too.

:func:`resolve` imports, builds one env (its own error, one line, when it raises), reads its
spaces and spec and closes it; every bad name or config is one ``ValueError``, which the sweeps
turn into one line and exit code 2. :func:`register` puts the env into Ray Tune's registry under
its name, so that RLlib's env runners build it with the same :func:`make`. :func:`random_returns`
measures a uniformly random policy, the report's reference row, and :func:`tabular_optimum` the
best policy exactly where the env publishes its model (the toy-text envs). :func:`check` says
whether each of the four algorithms can take an env's observation and action spaces
(``ACTION_SPACES``).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np

from envs import observation_scale

ALE_PREFIX = "ALE/"


@dataclass(frozen=True)
class GymEnv:
    """What the suite needs to know of an env, read from one instance and its spec."""

    name: str  # as given to --env: a registered id or "package.module:Name"
    kind: str  # "id" | "atari" | "entry_point"
    observation_space: gym.Space
    action_space: gym.Space
    reward_threshold: float | None  # the spec's "solved" return (CartPole-v1: 475), if any
    max_episode_steps: int | None

    @property
    def discrete_actions(self) -> bool:
        return isinstance(self.action_space, gym.spaces.Discrete)

    @property
    def vector_observations(self) -> bool:
        """A 1-D Box: fed to an MLP as it is (anything else non-Atari is flattened, one-hot for
        Discrete parts)."""
        space = self.observation_space
        return isinstance(space, gym.spaces.Box) and len(space.shape) == 1


def _suggest(name: str) -> str:
    """'; did you mean ...' over gymnasium's registered ids (the ALE ones included)."""
    _register_ale()
    close = difflib.get_close_matches(name, list(gym.registry), n=3, cutoff=0.6)
    if not close:
        lowered = {i.lower(): i for i in gym.registry}
        close = [lowered[c] for c in difflib.get_close_matches(name.lower(), lowered, n=3)]
    return f"; did you mean {', '.join(close)}?" if close else ""


def _register_ale() -> None:
    """ALE ids are registered by importing ale-py (gymnasium >= 1.0 no longer does it)."""
    try:
        import ale_py
    except ImportError:
        return
    gym.register_envs(ale_py)


def _register_namespace(name: str) -> None:
    """The ids of ``name``'s namespace (``ALE/Pong-v5``, ``MinAtar/Breakout-v1``) registered by
    their package, in this process: ale-py on import; any other through the ``gymnasium.envs``
    entry point its package declares under the namespace's name (MinAtar's
    ``minatar.gym:register_envs``), which gymnasium >= 1.0 no longer loads itself. Nothing
    where the id is registered already or the package is not installed."""
    namespace, slash, _ = name.partition("/")
    if not slash or name in gym.registry:
        return
    if name.startswith(ALE_PREFIX):
        _register_ale()
        return
    if any(i.startswith(namespace + slash) for i in gym.registry):
        return  # registered already (a misspelt id: its own error, not a second registration)
    from importlib.metadata import entry_points

    for entry in entry_points(group="gymnasium.envs", name=namespace):
        try:
            entry.load()()
        except Exception:  # a plugin that fails to load: the id stays unknown, and says so
            return


def _entry_point(name: str) -> Callable[..., Any]:
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--env {name}: an entry point is package.module:Name")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # ImportError, or the module's own error while importing
        raise ValueError(f"--env {name}: cannot import {module_name}: {_line(e)}") from None
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"--env {name}: {module_name} has no attribute {part!r}")
        target = getattr(target, part)
    if inspect.isclass(target) and not issubclass(target, gym.Env):
        raise ValueError(
            f"--env {name}: {target.__name__} is not a gymnasium.Env subclass (nor a factory)"
        )
    if not callable(target):
        raise ValueError(f"--env {name}: not a gymnasium.Env subclass or a factory")
    return target


def _takes_config_dict(cls: type) -> bool:
    """RLlib-style env classes: ``__init__(self, config)`` (or ``env_config``)."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return False
    return len(params) == 1 and params[0].name in ("config", "env_config")


def _line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def kind_of(name: str) -> str:
    if ":" in name:
        return "entry_point"
    if name.startswith(ALE_PREFIX):
        return "atari"
    return "id"


def make(name: str, env_config: Mapping[str, Any] | None = None) -> Any:
    """One env (for an ALE id with ``num_envs`` in the config: a vector env of that many games,
    as RLlib's vector entry point asks for); the config's ``obs_scale`` is the suite's
    (``envs/observation_scale.py``): the env gets the rest, and is wrapped with it."""
    config = dict(env_config or {})
    scale = config.pop(observation_scale.KEY, "none")  # the suite's, not the env's
    return observation_scale.wrap(_make(name, config), scale)


def _make(name: str, config: dict[str, Any]) -> Any:
    kind = kind_of(name)
    if kind == "entry_point":
        target = _entry_point(name)
        if inspect.isclass(target) and not _takes_config_dict(target):
            return target(**config)
        return target(config)
    if kind == "atari":
        from envs.pong import make_atari

        _register_ale()
        return make_atari(gym.spec(name).kwargs["game"], config)
    _register_namespace(name)  # (in an env runner's process too)
    return gym.make(name, **config)


@lru_cache(maxsize=32)
def _resolve(name: str, config_json: str) -> GymEnv:
    config = json.loads(config_json)
    kind = kind_of(name)
    if kind == "entry_point":
        _entry_point(name)  # import errors first, each its own line
    else:
        _register_namespace(name)
        if name not in gym.registry:
            raise ValueError(f"--env {name}: no such Gymnasium env{_suggest(name)}")
    spec = gym.spec(name) if kind != "entry_point" else None
    try:
        env = make(name, config)
    except (TypeError, ValueError) as e:  # a key or value the env does not take
        if config:
            raise ValueError(
                f"--env {name} rejected --env-config {config_json}: {_line(e)}"
            ) from None
        raise ValueError(f"--env {name} raised on construction: {_line(e)}") from None
    except Exception as e:  # the env's own error on construction
        raise ValueError(f"--env {name} raised on construction: {_line(e)}") from None
    if not isinstance(env, gym.Env):
        raise ValueError(
            f"--env {name}: the factory returned a {type(env).__name__}, not a gymnasium.Env"
        )
    try:
        spec = spec or env.spec
        threshold = getattr(spec, "reward_threshold", None)
        max_steps = getattr(spec, "max_episode_steps", None)
        return GymEnv(
            name=name,
            kind=kind,
            observation_space=env.observation_space,
            action_space=env.action_space,
            reward_threshold=None if threshold is None else float(threshold),
            max_episode_steps=max_steps,
        )
    finally:
        env.close()


def resolve(name: str, env_config: Mapping[str, Any] | None = None) -> GymEnv:
    """The env ``name`` with ``env_config``, built once and checked; a ``ValueError`` (one line)
    when it cannot be: an unknown id (with close registered ids), an entry point that does not
    import or is not an env, a config the env rejects, or the env's own error on construction."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("--env: expected a Gymnasium id or package.module:Name")
    if env_config is not None and not isinstance(env_config, Mapping):
        raise ValueError(f"--env-config must be a JSON object, got {type(env_config).__name__}")
    return _resolve(name.strip(), json.dumps(dict(env_config or {}), sort_keys=True))


def parse_env_config(text: str) -> dict[str, Any]:
    """``--env-config``: a JSON object, else a ``ValueError`` saying so."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"--env-config is not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--env-config must be a JSON object {{...}}, got {text}")
    return value


def register(name: str) -> None:
    """``name`` in Ray Tune's env registry (idempotent), built by :func:`make` with RLlib's env
    config; Ray's workers find it there by name."""
    from ray.tune.registry import register_env

    from sweeps.seams.tune import env_registered

    if not env_registered(name):
        register_env(name, lambda config, name=name: make(name, config))


def random_returns(
    name: str,
    env_config: Mapping[str, Any] | None,
    episodes: int,
    seed: int,
    *,
    max_steps: int = 100_000,
    max_seconds: float = 60.0,
) -> dict[str, Any]:
    """Returns of a uniformly random policy: ``episodes`` episodes, the i-th reset with seed
    ``seed + i`` and the action space seeded alike; stops early (fewer episodes) past
    ``max_steps`` env steps or ``max_seconds``, so that an env whose episodes never end cannot
    hold a run up. An ALE id plays one game at a time."""
    config = dict(env_config or {})
    env = make(name, config)
    returns: list[float] = []
    steps, started = 0, time.monotonic()
    try:
        for i in range(episodes):
            env.action_space.seed(seed + i)
            env.reset(seed=seed + i)
            total, done = 0.0, False
            while not done and steps < max_steps and time.monotonic() - started < max_seconds:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(reward)
                steps += 1
                done = terminated or truncated
            if not done:
                break
            returns.append(total)
    finally:
        env.close()
    mean = float(np.mean(returns)) if returns else math.nan
    return {
        "policy": "random",
        "mean": mean,
        "episodes": len(returns),
        "seed": seed,
        "steps": steps,
    }


# A tabular env's exact optimum: how many backups at most where its episodes have no time limit.
OPTIMUM_MAX_SWEEPS = 10_000


def tabular_optimum(name: str, env_config: Mapping[str, Any] | None = None) -> float | None:
    """The best expected return from reset, exactly, of an env that publishes its model as
    Gymnasium's toy-text envs do (``unwrapped.P``: state -> action -> [(p, next, reward, done)],
    and ``unwrapped.initial_state_distrib``); None for any other env. The return is the one the
    reports judge: undiscounted, within the spec's time limit (finite-horizon value iteration,
    one backup per step left; without a limit, backups until the values settle). Taxi-v3's is
    7.93, below its spec's reward_threshold of 8."""
    return _tabular_optimum(name, json.dumps(dict(env_config or {}), sort_keys=True))


@lru_cache(maxsize=32)
def _tabular_optimum(name: str, config_json: str) -> float | None:
    if kind_of(name) == "atari":  # (no model, and an emulator to start)
        return None
    env = make(name, json.loads(config_json))
    try:
        model = getattr(env.unwrapped, "P", None)
        start = getattr(env.unwrapped, "initial_state_distrib", None)
        if not isinstance(model, dict) or start is None:
            return None
        horizon = env.spec.max_episode_steps if env.spec is not None else None
    finally:
        env.close()
    rows = [
        (s, a, p, nxt, r, done)
        for s, actions in model.items()
        for a, outcomes in actions.items()
        for p, nxt, r, done in outcomes
    ]
    s, a, p, nxt, r, done = (np.array(col) for col in zip(*rows, strict=True))
    n_states, n_actions = len(model), int(a.max()) + 1
    pair = s * n_actions + a
    value = np.zeros(n_states)
    for _ in range(horizon or OPTIMUM_MAX_SWEEPS):
        q = np.bincount(pair, p * (r + np.where(done, 0.0, value[nxt])), n_states * n_actions)
        new = q.reshape(n_states, n_actions).max(axis=1)
        settled = np.allclose(new, value, rtol=0.0, atol=1e-12)
        value = new
        if settled:
            break
    else:
        if horizon is None:
            return None  # no time limit and the values did not settle: no exact figure
    return float(np.asarray(start, dtype=float) @ value)


# ------------------------------------------------------------------------------------------------
# Which of the four algorithms can take an env's spaces
# ------------------------------------------------------------------------------------------------

# What each algorithm's action head takes.
ACTION_SPACES: dict[str, tuple[type, ...]] = {
    "dqn": (gym.spaces.Discrete,),
    "apex": (gym.spaces.Discrete,),
    "impala": (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box),
    "appo": (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box),
    # The single-process baselines (sweeps/baselines/): Stable-Baselines3's DQN and PPO
    "sb3-dqn": (gym.spaces.Discrete,),
    "sb3-ppo": (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box),
}
# Observation spaces RLlib's FlattenObservations turns into one vector (or an ALE frame stack).
OBSERVATION_SPACES: tuple[type, ...] = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
    gym.spaces.Dict,
    gym.spaces.Tuple,
)
NAMES = {
    "dqn": "DQN",
    "apex": "Ape-X",
    "impala": "IMPALA",
    "appo": "APPO",
    "sb3-dqn": "SB3 DQN",
    "sb3-ppo": "SB3 PPO",
}
# Observation spaces SB3's policies take (a Dict through its MultiInputPolicy; no Tuple).
SB3_OBSERVATION_SPACES: tuple[type, ...] = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
)


def _fits(space: gym.Space, kinds: tuple[type, ...]) -> bool:
    if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple):
        parts = space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces
        return all(_fits(part, kinds) for part in parts)
    return isinstance(space, kinds)


def check(algos: str | list[str], env: Any) -> None:
    """A ``ValueError`` (one line: why, and which algorithms fit) when one of ``algos`` cannot
    take ``env``'s (``envs.gym.GymEnv``) observation or action space."""
    algos = [algos] if isinstance(algos, str) else list(algos)
    if not _fits(env.observation_space, OBSERVATION_SPACES):
        raise ValueError(
            f"--env {env.name}: observation space {env.observation_space} cannot be fed to a "
            "network (Box, Discrete, MultiDiscrete, MultiBinary, or a Dict/Tuple of them)"
        )
    baselines = [a for a in algos if a.startswith("sb3-")]
    space = env.observation_space
    takes = not isinstance(space, gym.spaces.Tuple) and _fits(space, SB3_OBSERVATION_SPACES)
    if baselines and not takes:
        raise ValueError(
            f"--env {env.name}: observation space {env.observation_space} is not one "
            f"Stable-Baselines3's policies take (Box, Discrete, MultiDiscrete, MultiBinary, or a "
            f"Dict of them); drop {','.join(baselines)} from --algos"
        )
    refused = [a for a in algos if not isinstance(env.action_space, ACTION_SPACES[a])]
    if not refused:
        return
    discrete_only = all(ACTION_SPACES[a] == (gym.spaces.Discrete,) for a in refused)
    names = " and ".join(NAMES[a] for a in refused)
    need = "need" if len(refused) > 1 else "needs"
    why = (
        f"{names} {need} Discrete actions"
        if discrete_only
        else f"{names} take(s) Discrete, MultiDiscrete or Box actions only"
    )
    fit = algos_that_fit(env)
    raise ValueError(
        f"--env {env.name} has a {type(env.action_space).__name__} action space "
        f"({env.action_space}): {why}; "
        + (
            f"algorithms that fit: {', '.join(NAMES[a] for a in fit)} (--algos {','.join(fit)})"
            if fit
            else "none of the four algorithms fits"
        )
    )


def algos_that_fit(env: Any) -> list[str]:
    return [a for a, kinds in ACTION_SPACES.items() if isinstance(env.action_space, kinds)]


def targets(env: str, env_config: dict, target: list[float] | None) -> list[float]:
    """A generic env's reward targets: ``target`` (a sweep's --target, sorted), else the spec's
    reward_threshold, else none."""
    if target:
        return sorted(set(target))
    threshold = resolve(env, env_config).reward_threshold
    return [] if threshold is None else [threshold]
