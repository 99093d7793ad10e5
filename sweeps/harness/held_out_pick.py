"""The end of a sweep: its best trials' final policies on held-out episodes, and the pick by them.

A sweep's periodic greedy return is a mean over a few episodes from random start states; the
highest of ten such figures is biased upward (the winner's curse), and an ASHA-pruned trial
can top the table with a figure from its last, lucky evaluation. So at the end of a sweep the
trial with the highest final judged return and the runners-up within noise of it (a final
judged return within ``NOISE_FRACTION`` of the best's) have their last checkpoint played
greedily on the same ``--final-episodes`` seeded episodes (``harness/held_out_eval.py``, as
``python -m sweeps.evaluate`` does: mean, 95% interval and, on the cab env, % of the optimum
with the reference policies on the same episodes), and the best trial is the one with the
highest held-out mean. In benchmark mode (one trial per seed of the tuned defaults) every trial
is evaluated. A trial without a checkpoint (pruned before its first) has no final policy to
evaluate and is not picked while one with a held-out figure exists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeps.harness import keys
from sweeps.harness.values import number

# A runner-up is "within noise" of the best trial when its final judged return is at least
# (1 - NOISE_FRACTION) x the best's: a 5-episode greedy mean from random cab start states
# moves by about 1% between evaluations of one policy (the start states' own spread), and a
# policy's own figure moves by a few percent between checkpoints.
NOISE_FRACTION = 0.03


@dataclass
class Evaluated:
    """One trial's held-out figure (``record``: ``sweeps.evaluate``'s final_evaluation.json)."""

    result: Any  # Tune's Result
    judged: float  # its final judged return (the noisy figure)
    record: dict[str, Any]


@dataclass
class HeldOut:
    """What the held-out evaluation of a sweep found."""

    episodes: int
    seed: int
    evaluated: list[Evaluated] = field(default_factory=list)  # best held-out mean first
    skipped: list[str] = field(default_factory=list)  # trial name: why

    @property
    def best(self) -> Evaluated | None:
        return self.evaluated[0] if self.evaluated else None

    def summary(self) -> dict[str, Any]:
        """For the run record (run.json ``held_out``)."""
        return {
            "episodes": self.episodes,
            "seed": self.seed,
            "noise_fraction": NOISE_FRACTION,
            "best_trial": Path(self.best.result.path).name if self.best else None,
            "trials": [
                {
                    "trial": Path(e.result.path).name,
                    "final_judged_return": e.judged,
                    **{k: e.record[k] for k in _SUMMARY_KEYS if k in e.record},
                }
                for e in self.evaluated
            ],
            "references": self.best.record.get("references") if self.best else None,
            "skipped": self.skipped,
        }


_SUMMARY_KEYS = ("checkpoint", "mean", "ci95_half_width", "pct_of_optimum", "pct_ci95_half_width")


def final_judged(result: Any, judged: keys.Key) -> float:
    """A trial's final judged return (-inf when it has none)."""
    value = number(keys.get(result.metrics or {}, judged))
    return value if math.isfinite(value) else -math.inf


def candidates(results: Sequence[Any], judged: keys.Key, everyone: bool = False) -> list[Any]:
    """The trials to evaluate, best final judged return first: the best and those within
    ``NOISE_FRACTION`` of it (``everyone``: all trials, as in benchmark mode)."""
    ranked = sorted(
        (r for r in results if r.error is None and r.path),
        key=lambda r: final_judged(r, judged),
        reverse=True,
    )
    finite = [r for r in ranked if math.isfinite(final_judged(r, judged))]
    if everyone or not finite:
        return ranked
    best = final_judged(finite[0], judged)
    floor = best - NOISE_FRACTION * abs(best)
    return [r for r in finite if final_judged(r, judged) >= floor]


def evaluate_best(
    results: Sequence[Any], judged: keys.Key, episodes: int, seed: int, everyone: bool = False
) -> HeldOut:
    """Play each candidate's last checkpoint on the held-out episodes (writing its
    final_evaluation.json); ranked by held-out mean, best first."""
    from sweeps.harness import held_out_eval

    found = HeldOut(episodes, seed)
    for r in candidates(results, judged, everyone):
        name = Path(r.path).name
        try:
            record = held_out_eval.evaluate_trial(Path(r.path), episodes, seed)
        except Exception as err:  # one bad checkpoint must not lose the sweep's summary
            found.skipped.append(f"{name}: {type(err).__name__}: {err}")
            continue
        if record is None:
            found.skipped.append(f"{name}: no checkpoint")
            continue
        found.evaluated.append(Evaluated(r, final_judged(r, judged), record))
    found.evaluated.sort(key=lambda e: e.record["mean"], reverse=True)
    return found


def lines(found: HeldOut, optimum: float | None) -> list[str]:
    """The summary's held-out block: how the figure was made, every evaluated trial, the
    reference policies on the same episodes."""
    from sweeps.harness.held_out_eval import describe

    out = [
        f"held-out evaluation: the final checkpoint of the best trial and of the runners-up "
        f"within {100 * NOISE_FRACTION:g}% of its final greedy return, {found.episodes} greedy "
        f"episodes seeded {found.seed}.. (the same for every trial); best held-out mean first:"
    ]
    for e in found.evaluated:
        out.append(f"  {Path(e.result.path).name}: {describe(e.record)}")
    for s in found.skipped:
        out.append(f"  not evaluated: {s}")
    refs = found.best.record.get("references") if found.best else None
    if refs:
        parts = [
            f"{name} {ref['mean']:.1f} ({ref['pct_of_optimum']:.2f}%)" for name, ref in refs.items()
        ]
        exact = f"; the exact optimum (DP, uniform start) is {optimum:.1f}" if optimum else ""
        out.append("  reference policies on the same episodes: " + ", ".join(parts) + exact)
    return out
