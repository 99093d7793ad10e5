"""A baseline's hyperparameters: rl-baselines3-zoo's tuned ones where the zoo has the env, read from
the rl-zoo3 package's own files; the suite's documented defaults, as data, where it has not.

rl-zoo3 keeps one YAML file per algorithm (``rl_zoo3/hyperparams/dqn.yml``, ``ppo.yml``), keyed
by env id, with ``atari`` for every Atari game and ``default`` (SB3's own defaults) for the rest.
A user who picks Stable-Baselines3 runs ``python -m rl_zoo3.train --algo dqn --env <id>``, which
takes the env's entry, else ``atari``, else ``default``. The suite does the same, with one
difference: where the zoo has no entry of its own for the env (the cab env, an env by entry
point), the baseline takes ``DEFAULTS`` below, which say why each value is what it is, rather
than the zoo's bare ``default``.

``zoo_entry`` reads the zoo's file; ``recipe`` picks the entry; ``model_kwargs`` turns it into
the algorithm's constructor arguments as ``rl_zoo3.train`` does (schedules ``lin_<x>``,
``policy_kwargs`` as Python text, ``train_freq`` lists), with the keys that are not the
algorithm's (``n_envs``, ``n_timesteps``, ``frame_stack``, ``env_wrapper``) taken out. A key the
suite does not carry out (``normalize``: VecNormalize's statistics would have to travel to
every evaluation) is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --algos name -> (rl-zoo3's file stem, the SB3 class)
ALGOS: dict[str, tuple[str, str]] = {"sb3-dqn": ("dqn", "DQN"), "sb3-ppo": ("ppo", "PPO")}
# The class that takes an env's action mask (sb3-contrib's), where the env has one; SB3's DQN has
# none (on the cab request variant an unavailable trip is taken as going offline, so an unmasked
# learner still plays the env, as a user of SB3's DQN would).
MASKED: dict[str, str] = {"sb3-ppo": "MaskablePPO"}
NAMES = {"sb3-dqn": "SB3 DQN", "sb3-ppo": "SB3 PPO"}
# The suite's algorithms of the same kind (value-based, policy-gradient): a baseline's updates/s
# are compared with theirs (sweeps.throughput).
COUNTERPARTS: dict[str, tuple[str, ...]] = {
    "sb3-dqn": ("dqn", "apex"),
    "sb3-ppo": ("impala", "appo"),
}
# The zoo's keys that are not the algorithm's constructor arguments.
RUN_KEYS = ("n_envs", "n_timesteps", "frame_stack", "env_wrapper")
# What the zoo's ``atari`` entry does that the suite's Atari factory (envs/pong.py) does already:
# AtariWrapper's frame skip, resize and FIRE reset, and the frame stack.
SUITE_ATARI_DOES = ("env_wrapper", "frame_stack")
REFUSED_KEYS = ("normalize", "vec_env_wrapper", "callback", "env_kwargs", "monitor_kwargs")

# The baselines' defaults for a workload the zoo has no entry for, as the zoo spells them; an env
# id's own entry (``REQUESTS``) before its workload's.
_CABS_DQN: dict[str, Any] = {
    # The cab env: SB3's DQN with the settings of the suite's own DQN recipe (sweeps/dqn_cabs.py)
    # that SB3 has: the same network (one hidden layer of 256), batch, γ, learning rate, n-step,
    # replay size, target period, warm-up and ε schedule (1 -> 0.1 over 5,000 env steps:
    # exploration_fraction x n_timesteps), 8 envs stepped together and one update of 64 per 64
    # env steps (train_freq counts vector steps). What SB3's DQN has not: prioritized replay,
    # double Q and dueling heads; it takes the Huber loss (the suite's DQN the squared one).
    # n_timesteps is a budget, not a schedule here (nothing else anneals over it): large enough
    # that the run's --stop-train-time-s ends a seed, not the recipe.
    "n_timesteps": 1_000_000,
    "policy": "MlpPolicy",
    "n_envs": 8,
    "learning_rate": 3e-3,
    "gamma": 0.95,
    "batch_size": 64,
    "buffer_size": 50_000,
    "learning_starts": 1000,
    "target_update_interval": 500,
    "train_freq": 8,
    "gradient_steps": 1,
    "n_steps": 3,
    "exploration_fraction": 0.005,
    "exploration_final_eps": 0.1,
    "policy_kwargs": "dict(net_arch=[256])",
}
# SB3's PPO defaults (its constructor's) but for the cab recipes' γ and network, and 8 envs of 256
# steps a rollout (SB3's 2,048 steps on one env is three months per update).
_CABS_PPO: dict[str, Any] = {
    "n_timesteps": 1_000_000,
    "policy": "MlpPolicy",
    "n_envs": 8,
    "n_steps": 256,
    "gamma": 0.95,
    "policy_kwargs": "dict(net_arch=[256])",
}
# The request variant: γ as the suite's DQN family takes it there (sweeps/dqn_family.py
# REQUESTS_GAMMA: a month's plan matters), for both.
_REQUESTS_GAMMA = 0.995
DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "cabs": {"sb3-dqn": _CABS_DQN, "sb3-ppo": _CABS_PPO},
    "CabsRequests-v0": {
        "sb3-dqn": {**_CABS_DQN, "gamma": _REQUESTS_GAMMA},
        "sb3-ppo": {**_CABS_PPO, "gamma": _REQUESTS_GAMMA},
    },
}


@dataclass(frozen=True)
class Recipe:
    """A baseline's hyperparameters for one env, as the zoo spells them, and where they are from."""

    algo: str  # "sb3-dqn"
    model_class: str  # "DQN", "PPO"
    hyperparams: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # "rl-zoo3 2.9.2, hyperparams/dqn.yml: CartPole-v1" | "suite defaults ..."


def zoo_file(zoo_algo: str) -> Path:
    """rl-zoo3's hyperparameter file of ``zoo_algo`` (``dqn``, ``ppo``), as installed."""
    import rl_zoo3

    return Path(rl_zoo3.__file__).parent / "hyperparams" / f"{zoo_algo}.yml"


def zoo_entries(zoo_algo: str) -> dict[str, dict[str, Any]]:
    import yaml

    return yaml.safe_load(zoo_file(zoo_algo).read_text())


def zoo_version() -> str:
    from importlib.metadata import version

    return version("rl_zoo3")


def recipe(algo: str, workload: str, env_id: str, atari: bool = False) -> Recipe:
    """The hyperparameters ``algo`` runs ``env_id`` with: the zoo's entry for the env id (an Atari
    game: its ``atari`` entry), else ``DEFAULTS[env_id]``, else ``DEFAULTS[workload]``, else the
    zoo's ``default``."""
    if algo not in ALGOS:
        raise ValueError(f"unknown baseline {algo!r}; choose from {sorted(ALGOS)}")
    zoo_algo, model_class = ALGOS[algo]
    entries = zoo_entries(zoo_algo)
    where = f"rl-zoo3 {zoo_version()}, hyperparams/{zoo_algo}.yml"
    if env_id in entries:
        return Recipe(algo, model_class, dict(entries[env_id]), f"{where}: {env_id}")
    if atari and "atari" in entries:  # the suite's Atari factory preprocesses the frames itself
        hp = {k: v for k, v in entries["atari"].items() if k not in SUITE_ATARI_DOES}
        dropped = ", ".join(k for k in SUITE_ATARI_DOES if k in entries["atari"])
        note = f" without {dropped}: the suite's Atari preprocessing does them (envs/pong.py)"
        return Recipe(algo, model_class, hp, f"{where}: atari" + (note if dropped else ""))
    for key in (env_id, workload):
        if algo in DEFAULTS.get(key, {}):
            source = f"suite defaults for {key} (sweeps/baselines/hyperparams.py DEFAULTS)"
            return Recipe(algo, model_class, dict(DEFAULTS[key][algo]), source)
    return Recipe(algo, model_class, dict(entries["default"]), f"{where}: default")


@dataclass(frozen=True)
class Built:
    """A recipe as a run takes it: the algorithm's keyword arguments and the run's own keys."""

    kwargs: dict[str, Any]
    n_envs: int
    n_timesteps: int
    frame_stack: int | None
    env_wrapper: Any  # rl-zoo3's wrapper callable (env -> env), or None


def check(hyperparams: dict[str, Any]) -> None:
    """A ValueError (one line) for a key the suite does not carry out."""
    refused = [k for k in REFUSED_KEYS if k in hyperparams]
    if refused:
        raise ValueError(
            f"the baseline's hyperparameters set {', '.join(refused)}, which the suite's "
            "baseline runner does not carry out (VecNormalize and custom callbacks would have "
            "to travel to every evaluation); drop them with --set KEY=null"
        )


def model_kwargs(hyperparams: dict[str, Any]) -> Built:
    """The constructor's keyword arguments, as ``rl_zoo3.train`` makes them from an entry."""
    import torch.nn as nn
    from rl_zoo3.utils import get_wrapper_class, linear_schedule

    check(hyperparams)
    hp = {k: v for k, v in hyperparams.items() if v is not None}
    kwargs = {k: v for k, v in hp.items() if k not in RUN_KEYS}
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        value = kwargs.get(key)
        if isinstance(value, str):  # "lin_0.001": linear from 0.001 to 0 over n_timesteps
            kind, _, initial = value.partition("_")
            if kind != "lin":
                raise ValueError(f"{key}: {value!r} is not a schedule the zoo writes (lin_<x>)")
            kwargs[key] = linear_schedule(float(initial))
    if isinstance(kwargs.get("train_freq"), list):
        kwargs["train_freq"] = tuple(kwargs["train_freq"])
    if isinstance(kwargs.get("policy_kwargs"), str):  # the zoo writes them as Python text
        kwargs["policy_kwargs"] = eval(kwargs["policy_kwargs"], {"dict": dict, "nn": nn})
    return Built(
        kwargs=kwargs,
        n_envs=int(hp.get("n_envs", 1)),
        n_timesteps=int(float(hp.get("n_timesteps", 1e6))),
        frame_stack=int(hp["frame_stack"]) if hp.get("frame_stack") else None,
        env_wrapper=get_wrapper_class(hp) if "env_wrapper" in hp else None,
    )
