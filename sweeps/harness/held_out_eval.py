"""Greedy evaluation of a trial's final policy on fixed, seeded (held-out) episodes: the figure the
end of a sweep picks its best trial by (``held_out_pick.py``) and ``python -m sweeps.evaluate``
writes for any run folder (``sweeps/evaluate.py``, whose docstring says how it is made).

``evaluate_trial`` loads a trial's last checkpoint, plays the episodes with inference batched over
them, and writes ``final_evaluation.json``; on the cab env ``held_out_record`` adds the reference
policies on the same episodes and the paired % of the optimum. Asked for, a policy-gradient
module (IMPALA, APPO) also plays them with its actions sampled, as it acts in training.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sweeps.harness import keys
from sweeps.harness.files import EVALUATION_FILE, atomic_write_text


def ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval, Student's t (NaN for fewer than
    2 values)."""
    from scipy.stats import t as student

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return (float(v.mean()) if len(v) else math.nan), math.nan
    t = float(student.ppf(0.975, len(v) - 1))
    return float(v.mean()), float(t * v.std(ddof=1) / math.sqrt(len(v)))


def last_checkpoint(trial_dir: Path) -> Path | None:
    checkpoints = sorted(trial_dir.glob("checkpoint_*"))
    return checkpoints[-1] if checkpoints else None


def load_module(checkpoint: Path) -> Any:
    """The policy a trial's checkpoint holds: its RLModule, or a single-process baseline's
    policy (``sweeps/baselines/policy.py``: it acts by ``greedy``/``sampled``, as below)."""
    from sweeps.baselines.policy import BaselinePolicy

    if BaselinePolicy.holds(checkpoint):
        return BaselinePolicy.load(checkpoint)
    from ray.rllib.core import (
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
        DEFAULT_MODULE_ID,
    )
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = checkpoint.resolve() / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE
    return RLModule.from_checkpoint(path / DEFAULT_MODULE_ID)


def greedy_actions(module: Any, obs: Any) -> np.ndarray:
    """The module's greedy action for each observation of a batch (a baseline's policy: its
    own ``greedy``)."""
    if hasattr(module, "greedy"):
        return module.greedy(obs)
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import convert_to_torch_tensor

    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: convert_to_torch_tensor(obs)})
        if Columns.ACTIONS in out:
            return np.asarray(out[Columns.ACTIONS])
        # as RLlib's env runners act with explore=False: the distribution's deterministic
        # action (arg-max of Categorical logits, a Gaussian's mean)
        inputs = out[Columns.ACTION_DIST_INPUTS]
        dist_cls = getattr(module, "get_inference_action_dist_cls", None)
        if dist_cls is None:  # (a module without RLlib's distributions: its logits' arg-max)
            return inputs.argmax(dim=-1).numpy()
        return dist_cls().from_logits(inputs).to_deterministic().sample().numpy()


def sampled_actions(module: Any, obs: Any) -> np.ndarray | None:
    """Actions drawn from the module's action distribution, as its env runners act in training
    (IMPALA, APPO, PPO); None for a module that acts by Q-values (DQN, Ape-X: its policy is the
    greedy one, its training exploration is ε-greedy). Draws from torch's generator. A
    baseline's policy: its own ``sampled``."""
    if hasattr(module, "sampled"):
        return module.sampled(obs)
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import convert_to_torch_tensor

    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: convert_to_torch_tensor(obs)})
        if Columns.ACTIONS in out or Columns.ACTION_DIST_INPUTS not in out:
            return None
        dist = module.get_exploration_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
        return dist.sample().numpy()


def module_inputs(space: Any, frames: bool) -> Any:
    """What the module takes of a batch of the env's observations: an Atari env's frame stacks
    (``frames``: a CNN's) and a 1-D Box (an MLP's) as they are; any other space flattened as
    RLlib's ``FlattenObservations`` connector flattens it for the suite's MLP (one-hot for
    Discrete; ``sweeps/workloads/gym.py`` puts that connector in front of every such env)."""
    import gymnasium as gym

    if frames or isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
        return lambda obs: obs
    from ray.rllib.utils.numpy import flatten_inputs_to_1d_tensor
    from ray.rllib.utils.spaces.space_utils import get_base_struct_from_space

    struct = get_base_struct_from_space(space)
    return lambda obs: flatten_inputs_to_1d_tensor(obs, spaces_struct=struct, batch_axis=True)


def env_actions(space: Any) -> Any:
    """The module's actions as the env takes them: a bounded Box's unsquashed from [-1, 1] to
    its bounds and clipped (RLlib's default ``normalize_actions``), others as they are."""
    import gymnasium as gym

    if not isinstance(space, gym.spaces.Box):
        return lambda actions: actions
    from ray.rllib.utils.spaces.space_utils import unsquash_action

    return lambda actions: unsquash_action(actions, space)


def _frames(env_id: str) -> bool:
    """Whether the env's observations are an Atari frame stack (Pong, an ``ALE/...`` id)."""
    import envs

    if env_id == envs.PONG:
        return True
    if env_id in (envs.CABS, envs.CABS_REQUESTS):
        return False
    from envs.gym import kind_of

    return kind_of(env_id) == "atari"


MAX_STEPS = 100_000  # a played episode still running after this many steps counts as it stands


PERIODIC_SEED = 3_000_000  # periodic greedy estimates' episodes (periodic_seed)


def periodic_seed(run_seed: int | None, episodes: int, evaluations: int) -> int:
    """The first seed of a run's periodic greedy evaluation after ``evaluations`` of them, each
    of ``episodes`` episodes: every evaluation plays new starts, the same in every run of the
    same seed (the four's and the single-process baselines' alike)."""
    return PERIODIC_SEED + 10_000 * int(run_seed or 0) + episodes * evaluations


class Played(list):
    """Episode returns (a list, as every caller reads them), each episode's length in env steps,
    and whether it ended at the env's time limit (truncated, or still running at ``MAX_STEPS``)
    rather than by the env's own end: a greedy policy that loops from some starts (Taxi's) shows
    there."""

    cut: list[bool]
    lengths: list[int]

    def __init__(self, returns: Any, cut: Any, lengths: Any = ()) -> None:
        super().__init__(float(r) for r in returns)
        self.cut = [bool(c) for c in cut]
        self.lengths = [int(n) for n in lengths]


def play(
    module: Any, env_id: str, env_config: dict, episodes: int, seed: int, sampled: bool = False
) -> Played | None:
    """Returns of ``episodes`` episodes, the i-th reset with seed ``seed + i``, played side by
    side in one vector env (each sub-env's first episode counts): greedy, or with ``sampled``
    the actions drawn from the module's distribution (torch's generator seeded ``seed`` for the
    episodes, and left as it was found); None when ``sampled`` and the module has no
    distribution to sample (``sampled_actions``). An episode still running after ``MAX_STEPS``
    steps (an env without a time limit) counts with its return so far. Which episodes ended at
    the time limit: ``Played.cut``."""
    import gymnasium as gym
    import torch

    import envs

    vector_env = gym.vector.SyncVectorEnv(
        [lambda: envs.make(env_id, env_config) for _ in range(episodes)],
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )
    act = sampled_actions if sampled else greedy_actions
    if getattr(module, "takes_env_io", False):  # a baseline's policy: the env's own spaces
        inputs, to_env = (lambda obs: obs), (lambda actions: actions)
    else:
        inputs = module_inputs(vector_env.single_observation_space, _frames(env_id))
        to_env = env_actions(vector_env.single_action_space)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        obs, _ = vector_env.reset(seed=[seed + i for i in range(episodes)])
        returns = np.zeros(episodes)
        running = np.ones(episodes, dtype=bool)
        cut = np.zeros(episodes, dtype=bool)
        lengths = np.zeros(episodes, dtype=np.int64)
        for _ in range(MAX_STEPS):
            if not running.any():
                break
            actions = act(module, inputs(obs))
            if actions is None:
                vector_env.close()
                return None
            obs, reward, terminated, truncated, _ = vector_env.step(to_env(actions))
            returns += np.where(running, reward, 0.0)
            lengths += running
            cut |= running & truncated & ~terminated
            running &= ~(terminated | truncated)
    vector_env.close()
    return Played(returns, cut | running, lengths)


def periodic_evaluation(
    module: Any,
    env_id: str,
    env_config: dict,
    episodes: int,
    run_seed: int | None,
    evaluations: int,
) -> dict[str, float]:
    """A run's periodic greedy evaluation after ``evaluations`` of them (the four's,
    ``eval_share``, and the single-process baselines'): ``episodes`` episodes, each counted once
    from its own seeded start (``periodic_seed``), as RLlib names an evaluation's figures under
    ``evaluation/env_runners``: the returns' mean, min and max, the mean length, the episodes
    and the env steps they took."""
    played = play(
        module, env_id, env_config, episodes, periodic_seed(run_seed, episodes, evaluations)
    )
    lengths = played.lengths
    return {
        keys.EPISODE_RETURN_MEAN: float(np.mean(played)),
        keys.EPISODE_RETURN_MIN: float(np.min(played)),
        keys.EPISODE_RETURN_MAX: float(np.max(played)),
        keys.EPISODE_LEN_MEAN: float(np.mean(lengths)),
        keys.NUM_EPISODES: float(len(played)),
        keys.NUM_ENV_STEPS_SAMPLED: float(sum(lengths)),
    }


@functools.lru_cache(maxsize=8)
def _cab_references(env_config_json: str, episodes: int, seed: int) -> dict[str, list[float]]:
    from envs.policies import reference_episode_returns

    return reference_episode_returns(json.loads(env_config_json), episodes, seed)


def cab_config(env_id: str, env_config: dict) -> dict | None:
    """The cab env config (``tm_seed``, ``requests``) of ``env_id``, or None for other envs."""
    import envs

    if env_id not in (envs.CABS, envs.CABS_REQUESTS):
        return None
    return {"tm_seed": int(env_config.get("tm_seed", 0)), "requests": env_id == envs.CABS_REQUESTS}


def pct_of_optimum(returns: Sequence[float], optimal: Sequence[float]) -> tuple[float, float]:
    """``returns`` as % of the optimal policy's returns on the same episodes: 100 x mean /
    mean optimal, and the half-width of its paired 95% interval (Student's t over the
    per-episode gaps ``returns - optimal``, divided by the optimal mean)."""
    optimal_mean = float(np.mean(optimal))
    gap, half = ci95(np.asarray(returns, dtype=float) - np.asarray(optimal, dtype=float))
    return 100.0 * (1.0 + gap / optimal_mean), 100.0 * half / abs(optimal_mean)


def held_out_record(
    returns: Sequence[float], env_id: str, env_config: dict, seed: int
) -> dict[str, Any]:
    """The held-out figure of a policy's ``returns`` on the episodes seeded ``seed``, ... : mean,
    95% interval and, on the cab env, % of the optimum with the reference policies on the same
    episodes (mean and % of optimum each)."""
    episodes = len(returns)
    mean, half_width = ci95(returns)
    record: dict[str, Any] = {
        "env": env_id,
        "env_config": env_config,
        "policy": "greedy (arg-max of the module's action distribution inputs or Q-values)",
        "episodes": episodes,
        "seeds": [seed + i for i in range(episodes)],
        "returns": list(map(float, returns)),
        "mean": mean,
        "ci95_half_width": half_width,
    }
    cab = cab_config(env_id, env_config)
    if cab is not None:
        from envs.optimum import optimum_value

        refs = _cab_references(json.dumps(cab, sort_keys=True), episodes, seed)
        pct, pct_half = pct_of_optimum(returns, refs["optimum"])
        variant = "requests" if cab["requests"] else "base"
        record.update(
            pct_of_optimum=pct,
            pct_ci95_half_width=pct_half,
            exact_optimum=float(optimum_value(variant, tm_seed=cab["tm_seed"])),
            references={
                name: {
                    "mean": float(np.mean(values)),
                    "pct_of_optimum": pct_of_optimum(values, refs["optimum"])[0],
                }
                for name, values in refs.items()
            },
        )
    return record


def exact_record(module: Any, env_id: str, env_config: dict) -> dict[str, Any] | None:
    """On the cab env's base variant, the figure without sampling noise: the greedy policy of a
    module that sees ``(location, hour, day)`` only is a stationary policy of the 840 states, so
    its expected return from the uniform start is computed exactly (``envs.optimum
    .evaluate_policy``), the heuristic's likewise, with the share of the optimum each loses in
    the month's last 48 hours (where every stationary policy loses nearly all it loses: it
    cannot see that the month is ending). None on other envs and variants."""
    cab = cab_config(env_id, env_config)
    if cab is None or cab["requests"]:
        return None
    from envs.cabs import EPISODE_HOURS, base_observations
    from envs.optimum import MONTH_END_HOURS, evaluate_policy
    from envs.policies import HeuristicPolicy

    last_two_days = EPISODE_HOURS - MONTH_END_HOURS  # hours used 672..719
    obs = np.array(base_observations())
    learned = evaluate_policy(greedy_actions(module, obs).astype(np.int64), cab["tm_seed"])
    heuristic = evaluate_policy(HeuristicPolicy(cab["tm_seed"]).base_actions(), cab["tm_seed"])
    return {
        "how": "the greedy action in each of the 840 states, evaluated by dynamic programming "
        "over the month (envs.optimum.evaluate_policy); no episodes are sampled",
        "pct_of_optimum": learned.pct_of_optimum,
        "pct_lost_last_48h": learned.pct_lost(last_two_days),
        "heuristic_pct_of_optimum": heuristic.pct_of_optimum,
        "heuristic_pct_lost_last_48h": heuristic.pct_lost(last_two_days),
    }


SAMPLED_POLICY = "sampled (actions drawn from the module's action distribution, as in training)"


def evaluate_module(
    module: Any, env_id: str, env_config: dict, episodes: int, seed: int, sampled: bool = False
) -> dict[str, Any]:
    """:func:`held_out_record` of ``module``'s greedy policy (in memory, e.g. a learner's), and
    on the cab env's base variant its :func:`exact_record` under ``exact``. With ``sampled``,
    a module with an action distribution (IMPALA, APPO, PPO) also plays the same episodes with
    its actions sampled, as it acts in training: under ``sampled`` (returns, mean, interval).
    A policy-gradient policy is trained as a distribution; its arg-max can play far worse."""
    started = time.perf_counter()
    record = held_out_record(
        play(module, env_id, env_config, episodes, seed), env_id, env_config, seed
    )
    exact = exact_record(module, env_id, env_config)
    if exact is not None:
        record["exact"] = exact
    returns = play(module, env_id, env_config, episodes, seed, sampled=True) if sampled else None
    if returns is not None:
        mean, half_width = ci95(returns)
        record["sampled"] = {
            "policy": SAMPLED_POLICY,
            "torch_seed": seed,
            "returns": list(map(float, returns)),
            "mean": mean,
            "ci95_half_width": half_width,
        }
    record["seconds"] = round(time.perf_counter() - started, 1)
    return record


def evaluate_trial(
    trial_dir: Path, episodes: int, seed: int, sampled: bool = False
) -> dict[str, Any] | None:
    """Evaluate one trial's last checkpoint and write EVALUATION_FILE; None without one."""
    checkpoint = last_checkpoint(trial_dir)
    if checkpoint is None:
        return None
    params = json.loads((trial_dir / "params.json").read_text())
    env_id, env_config = params["env"], dict(params.get("env_config") or {})
    started = time.perf_counter()
    module = load_module(checkpoint)
    record = {
        "checkpoint": checkpoint.name,
        **evaluate_module(module, env_id, env_config, episodes, seed, sampled),
    }
    record["seconds"] = round(time.perf_counter() - started, 1)
    atomic_write_text(trial_dir / EVALUATION_FILE, json.dumps(record, indent=1) + "\n")
    return record


def describe(record: dict[str, Any]) -> str:
    """One line: the held-out mean with its interval, and % of optimum where known."""
    text = (
        f"mean {record['mean']:.1f} ± {record['ci95_half_width']:.1f} (95% CI) over "
        f"{record['episodes']} held-out episodes"
    )
    if "pct_of_optimum" in record:
        text += (
            f" = {record['pct_of_optimum']:.2f}% ± {record['pct_ci95_half_width']:.2f} of the "
            "optimum on the same episodes"
        )
    sampled = record.get("sampled")
    if sampled:
        text += (
            f"; sampled from the policy: mean {sampled['mean']:.1f} ± "
            f"{sampled['ci95_half_width']:.1f}"
        )
    exact = record.get("exact")
    if exact:
        text += (
            f"; exactly {exact['pct_of_optimum']:.2f}% (the heuristic "
            f"{exact['heuristic_pct_of_optimum']:.2f}%), {exact['pct_lost_last_48h']:.2f} points "
            "of it lost in the month's last 48 hours"
        )
    return text
