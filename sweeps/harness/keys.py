"""Every metric key the suite reads or writes, defined once.

RLlib's keys are the values of its constants in ``ray.rllib.core`` and ``ray.rllib.utils.metrics``,
written out here under the same names: importing those modules loads all of RLlib and torch (~3 CPU
seconds), which ``python -m analysis`` and every light process that reads results would pay for
eleven strings. RLlib renamed them before and will again: ``tests/test_keys.py`` compares each with
RLlib's own constant, so an upgrade that renames one fails there, not in a report. The suite's own
keys live under ``SUITE`` in each training result. Keys are tuples (nested dict paths); ``flat()``
joins them with "/" the way Tune flattens results (``progress.csv``, TensorBoard).

This module imports nothing of Ray, so analysis can use it without touching trainer code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# RLlib's constants, by their names there (ray.rllib.core: the first two; ray.rllib.utils.metrics).
RLLIB_CONSTANTS = (
    "ALL_MODULES DEFAULT_MODULE_ID ENV_RUNNER_RESULTS EPISODE_LEN_MEAN EPISODE_RETURN_MAX "
    "EPISODE_RETURN_MEAN EPISODE_RETURN_MIN EVALUATION_RESULTS LEARNER_RESULTS "
    "NUM_ENV_STEPS_SAMPLED NUM_ENV_STEPS_SAMPLED_LIFETIME NUM_ENV_STEPS_TRAINED_LIFETIME "
    "NUM_EPISODES NUM_EPISODES_LIFETIME NUM_MODULE_STEPS_TRAINED_LIFETIME"
).split()
ALL_MODULES = "__all_modules__"
DEFAULT_MODULE_ID = "default_policy"
ENV_RUNNER_RESULTS = "env_runners"
EPISODE_LEN_MEAN = "episode_len_mean"
EPISODE_RETURN_MAX = "episode_return_max"
EPISODE_RETURN_MEAN = "episode_return_mean"
EPISODE_RETURN_MIN = "episode_return_min"
EVALUATION_RESULTS = "evaluation"
LEARNER_RESULTS = "learners"
NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"
NUM_ENV_STEPS_TRAINED_LIFETIME = "num_env_steps_trained_lifetime"
NUM_EPISODES = "num_episodes"
NUM_EPISODES_LIFETIME = "num_episodes_lifetime"
NUM_MODULE_STEPS_TRAINED_LIFETIME = "num_module_steps_trained_lifetime"

Key = tuple[str, ...]

# --- RLlib's own results -------------------------------------------------------------------------
RETURN_MEAN: Key = (ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN)
RETURN_MIN: Key = (ENV_RUNNER_RESULTS, EPISODE_RETURN_MIN)
RETURN_MAX: Key = (ENV_RUNNER_RESULTS, EPISODE_RETURN_MAX)
EPISODE_LEN: Key = (ENV_RUNNER_RESULTS, EPISODE_LEN_MEAN)
EPISODES_LIFETIME: Key = (ENV_RUNNER_RESULTS, NUM_EPISODES_LIFETIME)
ENV_STEPS_SAMPLED: Key = (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
ENV_STEPS_TRAINED: Key = (LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME)
# Samples the learner trained on, each counted once per pass: RLlib's NUM_ENV_STEPS_TRAINED counts
# the whole batch once per minibatch (a 500-step batch in minibatches of 160 counts 1,500), its
# module steps count each minibatch's own rows.
MODULE_STEPS_TRAINED: Key = (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME)
# The policy's entropy (nats) of the default module at its last update: policy-gradient learners
# (APPO, IMPALA) report it under the Learner's ENTROPY_KEY, "entropy"; Q-learners do not.
ENTROPY: Key = (LEARNER_RESULTS, DEFAULT_MODULE_ID, "entropy")
EVAL_RETURN_MEAN: Key = (EVALUATION_RESULTS, ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN)
TIME_TOTAL_S: Key = ("time_total_s",)
TRAINING_ITERATION: Key = ("training_iteration",)

# --- The suite's own results (written by sweeps.harness.callbacks.SuiteCallbacks) ------------
SUITE = "suite"
# Top-level copies of the env-step counter and the search metric, so that Tune's stoppers and
# schedulers (which take flat "a/b" keys) read the same numbers everywhere.
ENV_STEPS: Key = (SUITE, "env_steps")  # env steps sampled, lifetime
TRAIN_TIME_S: Key = (SUITE, "train_time_s")  # wall-clock in training_step, evaluation excluded
EVAL_TIME_S: Key = (SUITE, "eval_time_s")  # wall-clock spent in greedy evaluation, cumulative
# Periodic greedy evaluation alone (the confirmed target's checks excluded): its seconds and its
# count, lifetime (sweeps/harness/eval_share.py keeps it within a share of the training clock).
PERIODIC_EVAL_S: Key = (SUITE, "periodic_eval_s")
EVALUATIONS: Key = (SUITE, "evaluations")
# 1 in a result whose periodic evaluation counted each of its episodes once, from its own seeded
# start (held_out_eval.periodic_evaluation); absent where RLlib's count of the first N episodes
# to end made the figure (the cab env's, whose episodes all have one length, and runs recorded
# before the suite played them itself: that count leans to short episodes).
PERIODIC_ONCE: Key = (SUITE, "periodic_once")
ENV_STEPS_PER_S: Key = (SUITE, "env_steps_per_s")  # env steps sampled / train_time_s (lifetime)
GREEDY_RETURN: Key = (SUITE, "greedy_return")  # latest greedy (explore=False) eval return mean
PCT_OF_OPTIMUM: Key = (
    SUITE,
    "pct_of_optimum",
)  # greedy_return / exact optimum * 100 (cabs, toy text)
OPTIMUM: Key = (SUITE, "optimum")  # exact optimal expected return of the env (cabs)
LEARNER_STEPS_PER_S: Key = (SUITE, "learner_env_steps_per_s")  # env steps trained / train_time_s
LOSS: Key = (SUITE, "loss")  # total loss of the default module, last update
# CPU time per process of the trial, and what it predicts (sweeps/harness/cpu_time.py): the
# figures of cpu_time.Summary.figures() under CPU; PREDICTED_TRAIN_TIME_S is TRAIN_TIME_S on a
# machine with a core per process of the trial (a prediction, never a measurement).
CPU: Key = (SUITE, "cpu")
# The trials this trial's actor has run, this one included (--reuse-actors: sweeps/seams/reuse.py;
# 1: a new actor).
TRIALS_IN_ACTOR: Key = (SUITE, "trials_in_actor")
PREDICTED_TRAIN_TIME_S: Key = (SUITE, "predicted_train_time_s")
# RETURN_MEAN is rewritten by SuiteCallbacks as the mean return of the last
# ``metrics_num_episodes_for_smoothing`` training games to end over all env runners (each runner
# logs its games, (end time, return), under TRAINING_GAMES: taken out of the result); RLlib's own
# figure, which is not that in RLlib 2.60, is kept under RLLIB_RETURN_MEAN. RETURN_WINDOW_GAMES:
# how many games RETURN_MEAN is the mean of. A result without it was made under the earlier rule,
# the mean over runners of each runner's own last N games (the same figure at one runner).
TRAINING_GAMES: Key = (ENV_RUNNER_RESULTS, "suite_training_games")
RETURN_WINDOW_GAMES: Key = (SUITE, "return_window_games")
RLLIB_RETURN_MEAN: Key = (ENV_RUNNER_RESULTS, "rllib_episode_return_mean")
# The confirmed target (sweeps/harness/confirm.py): when the judged return crosses the run's
# target, the policy plays seeded episodes; the target counts only where their mean reaches it.
# Each check's figures are in the result of the iteration it followed (NaN in the others).
CONFIRM_RETURN: Key = (SUITE, "confirm_return")  # the judged policy's (harness/confirm.py)
CONFIRM_CI95: Key = (SUITE, "confirm_ci95")  # half-width of its 95% interval
CONFIRM_GREEDY_RETURN: Key = (SUITE, "confirm_greedy_return")  # greedy, on the same episodes
CONFIRM_SAMPLED_RETURN: Key = (SUITE, "confirm_sampled_return")  # sampled (NaN: a Q-learner)
CONFIRM_SAMPLED: Key = (SUITE, "confirm_sampled")  # 1: CONFIRM_RETURN is the sampled policy's
CONFIRM_EPISODES: Key = (SUITE, "confirm_episodes")
CONFIRM_CUT: Key = (SUITE, "confirm_cut")  # of them, episodes ended at the env's time limit
CONFIRM_TARGET: Key = (SUITE, "confirm_target")
CONFIRM_CHECKS: Key = (SUITE, "confirm_checks")  # checks so far, lifetime
TARGET_CONFIRMED: Key = (SUITE, "target_confirmed")  # 1 once a check reached the target
# Written by the TensorBoard logger (sweeps.harness.reporting), not into results: training
# seconds until the trial's judged return first reached the target.
TIME_TO_TARGET_S: Key = (SUITE, "time_to_target_s")


def flat(key: Key) -> str:
    """Tune's flattened spelling of a nested key (``"env_runners/episode_return_mean"``)."""
    return "/".join(key)


def get(result: Mapping[str, Any], key: Key, default: Any = None) -> Any:
    """Read a nested key from a result dict; accepts flattened results too."""
    flat_key = flat(key)
    if flat_key in result:
        return result[flat_key]
    node: Any = result
    for part in key:
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def set_default(result: dict[str, Any], key: Key, value: Any) -> Any:
    """Set a nested key in a result dict unless it is already there; return its value."""
    node = result
    for part in key[:-1]:
        node = node.setdefault(part, {})
    return node.setdefault(key[-1], value)


# --- Ape-X's own results (``sweeps.algorithms.apex``, under result["apex"]) ---------------------
APEX = "apex"
APEX_METRICS: tuple[Key, ...] = (
    (APEX, "env_steps_sampled_per_s"),
    (APEX, "env_steps_trained_per_s"),
    (APEX, "replay_fill_mean"),
    (APEX, "replay_mean_priority"),
    (APEX, "weight_sync_lag_updates_max"),
    (APEX, "learner_updates_per_s"),
)


def trained_steps(result: Mapping[str, Any], default: float = 0.0) -> float:
    """Samples the learner trained on, lifetime, one per sample per pass over it: Ape-X's own
    count (one per replayed row per SGD step), else RLlib's module steps, else its env steps
    trained (results without module steps); ``default`` where the result has none."""
    for key in ((APEX, "env_steps_trained_lifetime"), MODULE_STEPS_TRAINED, ENV_STEPS_TRAINED):
        value = get(result, key)
        if value is not None:
            return float(value)
    return default
