"""The tuned defaults as a point of the search space: the sweep's first trial.

A sweep file's ``make_config`` holds its tuned defaults and ``sample_params(trial)`` maps search
parameters (``hp/one_minus_gamma``) to config values (``gamma = 1 - x``). Tune's
``points_to_evaluate`` (Optuna's ``enqueue_trial``) wants search-parameter values, so this module
inverts ``sample_params`` at the config the run actually uses (flags and ``--set`` included): it
finds, per search parameter, the value whose output equals the config. Nothing is declared twice
in the sweep files, and the point follows the config when a flag changes it.

The inversion assumes what zoo-style samplers do: every config value (each number inside a list
such as an ε schedule) depends on one search parameter, monotonically for a float one. The result
is checked by running ``sample_params`` on it; a parameter whose config value lies outside what the
space can express (a choice not offered) is left out of the point, so Optuna samples it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sweeps.algorithms import entropy_target, kl_lr, reward_scale
from sweeps.harness.space import ask_trial
from sweeps.harness.sweep import SampleFn
from sweeps.harness.values import dotted

# The suite's learner options a search space may draw, and what the learners take where
# learner_config_dict leaves one out (it is empty in every tuned default).
LEARNER_DEFAULTS: dict[str, Any] = {
    f"learner_config_dict/{reward_scale.KEY}": reward_scale.DEFAULT,
    f"learner_config_dict/{entropy_target.TARGET_KEY}": entropy_target.NONE,
    f"learner_config_dict/{kl_lr.TARGET_KEY}": kl_lr.NONE,
}
# Int parameters are searched this far beyond their range (out-of-range values are allowed in an
# enqueued point; Optuna warns): --set train_batch_size=512 is 2**9 above a 2**5..2**8 space.
_INT_MARGIN = 32


class _Fixed:
    """An ``optuna.Trial`` stand-in whose ``suggest_*`` answer from a dict."""

    def __init__(self, values: Mapping[str, Any]):
        self.values = values

    def suggest_float(self, name, low, high, *, step=None, log=False):
        return self.values[name]

    def suggest_int(self, name, low, high, *, step=1, log=False):
        return self.values[name]

    def suggest_categorical(self, name, choices):
        return self.values[name]


def _leaves(value: Any, path: tuple = ()) -> dict[tuple, Any]:
    """Scalars inside ``value`` by their path (lists/tuples and dicts opened)."""
    if isinstance(value, Mapping):
        out: dict[tuple, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, (*path, k)))
        return out
    if isinstance(value, list | tuple):
        out = {}
        for i, v in enumerate(value):
            out.update(_leaves(v, (*path, i)))
        return out
    return {path: value}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b and type(a) is type(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def config_values(sample_params: SampleFn, config: Mapping[str, Any]) -> dict[str, Any]:
    """``{searched config key: its value in config}`` (keys as ``sample_params`` names them); a
    learner option the config leaves out is its default (``LEARNER_DEFAULTS``)."""
    _, drawn = ask_trial(sample_params)
    values = {key: dotted(config, key.replace("/", ".")) for key in drawn}
    return {k: LEARNER_DEFAULTS.get(k) if v is None else v for k, v in values.items()}


def tuned_point(
    sample_params: SampleFn, config: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The search-parameter values whose ``sample_params`` output equals ``config`` (a config
    dict, e.g. ``AlgorithmConfig.to_dict()``), and the config keys it cannot express (their
    parameters are left out of the point)."""
    trial, _ = ask_trial(sample_params)
    dists = dict(trial.distributions)
    x = {name: _some_value(d) for name, d in dists.items()}
    target = _leaves(config_values(sample_params, config))
    left_out: set[str] = set()
    unsolved: set[str] = set()

    def out(values: Mapping[str, Any]) -> dict[tuple, Any]:
        return _leaves(sample_params(_Fixed(values)))

    feeds: dict[str, set[str]] = {}  # parameter -> the config keys it sets
    for name, dist in dists.items():
        depends = _dependent_leaves(out, x, name, dist)
        feeds[name] = {str(p[0]) for p in depends}
        if not depends:
            continue

        def fits(v: Any, name=name, depends=depends) -> bool:
            got = out({**x, name: v})
            return all(p in target and _same(got[p], target[p]) for p in depends)

        value = _solve(out, x, name, dist, depends, target, fits)
        if value is None:  # not expressible: Optuna samples it (x keeps a filler value)
            unsolved.add(name)
            left_out |= feeds[name]
        else:
            x[name] = value

    # Check: the point gives every other key (a parameter feeding a wrong key is left out too).
    got = out(x)
    wrong = {str(p[0]) for p in target if p not in got or not _same(got[p], target[p])}
    unsolved |= {name for name, keys in feeds.items() if keys & wrong}
    unexpressed = sorted(wrong | left_out)
    return {name: x[name] for name in dists if name not in unsolved}, unexpressed


def _some_value(dist: Any) -> Any:
    from optuna.distributions import CategoricalDistribution

    if isinstance(dist, CategoricalDistribution):
        return dist.choices[0]
    return dist.low


def _other_value(dist: Any) -> Any:
    from optuna.distributions import CategoricalDistribution

    if isinstance(dist, CategoricalDistribution):
        return dist.choices[-1] if len(dist.choices) > 1 else dist.choices[0]
    return dist.high


def _dependent_leaves(out, x, name, dist) -> list[tuple]:
    base = out(x)
    changed: set[tuple] = set()
    for v in (_some_value(dist), _other_value(dist)):
        other = out({**x, name: v})
        changed |= {p for p in other if not _same(other[p], base.get(p))}
    return sorted(changed, key=str)


def _solve(out, x, name, dist, depends, target, fits) -> Any:
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    if isinstance(dist, CategoricalDistribution):
        return next((c for c in dist.choices if fits(c)), None)
    if not isinstance(dist, FloatDistribution):  # int: the range first, then around it
        inside = range(dist.low, dist.high + 1)
        around = range(dist.low - _INT_MARGIN, dist.high + _INT_MARGIN + 1)
        return next((v for v in [*inside, *around] if fits(v)), None)
    numeric = [p for p in depends if isinstance(target.get(p), int | float)]
    if not numeric:
        return None
    leaf, goal = numeric[0], float(target[numeric[0]])

    def gap(v: float) -> float:
        return float(out({**x, name: v})[leaf]) - goal

    found = _bisect(gap, dist.low, dist.high, dist.log)
    if found is None:
        return None
    for digits in range(1, 17):  # the shortest value that gives the config exactly (0.05, not
        short = float(f"{found:.{digits}g}")  # 0.04999999999999) when there is one
        if fits(short) and _exact(out({**x, name: short}), target, depends):
            return short
    return found if fits(found) else None


def _exact(got, target, depends) -> bool:
    return all(got[p] == target[p] for p in depends)


def _bisect(f, low: float, high: float, log: bool) -> float | None:
    """A root of the monotone ``f`` in [low, high], the bracket widened when needed."""
    to = (lambda u: math.exp(u)) if log else (lambda u: u)
    lo, hi = (math.log(low), math.log(high)) if log else (low, high)
    width = hi - lo or 1.0
    for _ in range(8):  # widen: out-of-range tuned values are allowed in an enqueued point
        f_lo, f_hi = f(to(lo)), f(to(hi))
        if f_lo == 0:
            return to(lo)
        if f_hi == 0:
            return to(hi)
        if (f_lo < 0) != (f_hi < 0):
            break
        lo, hi = lo - width, hi + width
        width *= 2
    else:
        return None
    for _ in range(200):
        mid = (lo + hi) / 2
        f_mid = f(to(mid))
        if f_mid == 0 or hi - lo < 1e-15:
            return to(mid)
        if (f_mid < 0) == (f_lo < 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    return to((lo + hi) / 2)


def describe_first_trial(unexpressed: list[str], configs_from: str | None = None) -> str:
    if configs_from:
        return f"every trial: a configuration of {configs_from}, in its order (--configs-from)"
    if not unexpressed:
        return "trial 1: the tuned defaults; the search samples the rest"
    return (
        "trial 1: the tuned defaults, except " + ", ".join(unexpressed) + " (sampled: the "
        "search space cannot express their tuned values); the search samples the rest"
    )
