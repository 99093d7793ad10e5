"""What a Q-learner blind to the month's clock can converge to on the base cab variant, exactly.

The base variant's observation is ``(location, hour, day)``: it does not say how many of the
month's 720 hours are used. A Q-function of that observation has one greedy action per state for
the whole month, and its target cannot tell a transition that ends the month from one that does
not. This script computes, without sampling or a network, the policies such a learner can settle
on, and scores each exactly (``envs.optimum.evaluate_policy``).

Method
------
Blind to hours used, ``(state, action) -> next state`` and the reward are deterministic; the
month's end is a termination whose probability ``p(s, a) = P(h + hours(s, a) >= 720 | s)``
depends on when the data visit ``s``: the occupancy ``d(h, s)`` of the policy that collected them.
Q-learning's fixed point on such data (the tabular limit, no function-approximation error) is

    Q(s, a) = r(s, a) + g(s, a) * (1 - p(s, a)) * max_a' Q(s'(s, a), a')

with ``g = gamma`` (per step, as DQN and Ape-X discount: a ride of 1 to 46 hours counts once) or
``g = gamma ** hours(s, a)`` (per hour: a semi-MDP's discount). The data come from the
ε-greedy policy of the previous fixed point (the actors), starting from the direct-ride
heuristic; the table gives the exact % of the optimum of the greedy policy over the last
iterations (they cycle), and where it loses it.

A row for **Monte-Carlo improvement** (``Q(s, a)`` = the occupancy-weighted mean of the policy's
own returns to the month's end, discounted per step, then greedy; what very long n-step returns
approach) shows how far a clock-blind policy can get, against what TD's fixed point reaches.

How to run
----------
    python benchmarks/cabs_aliasing.py --out results/cabs/ALIASING.md     # ~3 min on 2 cores

Results to expect
-----------------
``results/cabs/ALIASING.md``: discounting per step, the fixed points settle several points below
the heuristic, and cycle; per hour, around it (just above it without exploration, below it with
ε = 0.05); Monte-Carlo improvement wanders around it. None stays above 98.5% of the optimum.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from envs.cabs import EPISODE_HOURS, MAX_STEP_HOURS, NUM_STATES, city
from envs.optimum import MONTH_END_HOURS, evaluate_policy
from envs.policies import HeuristicPolicy

ITERATIONS = 12
SHOWN = 4  # the last iterations shown (the fixed points cycle)


def occupancy(policy: np.ndarray, eps: float, tm_seed: int = 0) -> np.ndarray:
    """``(720, 840)``: the probability of being in state ``s`` at hours used ``h`` from the uniform
    start, acting ε-greedily around ``policy`` (uniform over the 25 actions with probability ε)."""
    c = city(tm_seed)
    actions = c.reward.shape[1]
    take = np.full((NUM_STATES, actions), eps / actions)
    take[np.arange(NUM_STATES), policy] += 1.0 - eps
    d = np.zeros((EPISODE_HOURS + MAX_STEP_HOURS, NUM_STATES))
    d[0] = 1.0 / NUM_STATES
    for h in range(EPISODE_HOURS):
        np.add.at(d, (h + c.hours, c.next_state), d[h][:, None] * take)
    return d[:EPISODE_HOURS]


def end_probability(d: np.ndarray, tm_seed: int = 0) -> np.ndarray:
    """``(840, 25)``: the chance that action ``a`` in state ``s`` ends the month, under ``d``."""
    c = city(tm_seed)
    ends = np.arange(EPISODE_HOURS)[:, None, None] + c.hours[None] >= EPISODE_HOURS
    visits = d.sum(axis=0)
    return (d[:, :, None] * ends).sum(axis=0) / np.maximum(visits, 1e-300)[:, None]


def td_fixed_point(
    p_end: np.ndarray, gamma: float, per_hour: bool, tm_seed: int = 0, tol: float = 1e-6
) -> np.ndarray:
    """The greedy policy ``(840,)`` of the tabular Q-learning fixed point on data whose month's
    end comes with probability ``p_end`` (value iteration to ``tol``)."""
    c = city(tm_seed)
    discount = (gamma**c.hours if per_hour else np.full(c.hours.shape, gamma)) * (1.0 - p_end)
    q = np.zeros(c.reward.shape)
    for _ in range(20_000):
        new = c.reward + discount * q.max(axis=1)[c.next_state]
        if np.abs(new - q).max() < tol:
            q = new
            break
        q = new
    return q.argmax(axis=1)


def monte_carlo_improvement(policy: np.ndarray, gamma: float, tm_seed: int = 0) -> np.ndarray:
    """Greedy on the occupancy-weighted mean over hours used of ``policy``'s own action values
    (returns to the month's end, discounted per step): ``(840,)``."""
    c = city(tm_seed)
    states = np.arange(NUM_STATES)
    v = np.zeros((EPISODE_HOURS + MAX_STEP_HOURS, NUM_STATES))
    for h in range(EPISODE_HOURS - 1, -1, -1):
        a = policy
        v[h] = c.reward[states, a] + gamma * v[h + c.hours[states, a], c.next_state[states, a]]
    d = occupancy(policy, 0.0, tm_seed)
    q_bar = np.zeros(c.reward.shape)
    for h in range(EPISODE_HOURS):
        q_bar += d[h][:, None] * (c.reward + gamma * v[h + c.hours, c.next_state])
    return q_bar.argmax(axis=1)


@dataclass
class Row:
    what: str
    pcts: list[float]  # exact % of the optimum, one per iteration
    lost_last: float  # % lost in the last 48 h, last iteration
    lost_before: float  # % lost before hour 600, last iteration


def run(rule: str, gamma: float, eps: float, tm_seed: int = 0) -> Row:
    """Iterate a rule from the heuristic's policy and score every iteration exactly."""
    policy = HeuristicPolicy(tm_seed).base_actions()
    pcts = []
    for _ in range(ITERATIONS):
        if rule == "mc":
            policy = monte_carlo_improvement(policy, gamma, tm_seed)
        else:
            p_end = end_probability(occupancy(policy, eps, tm_seed), tm_seed)
            policy = td_fixed_point(p_end, gamma, rule == "td per hour", tm_seed)
        value = evaluate_policy(policy, tm_seed)
        pcts.append(value.pct_of_optimum)
    what = f"{rule}, γ {gamma}" + ("" if rule == "mc" else f", ε {eps}")
    last = EPISODE_HOURS - MONTH_END_HOURS
    return Row(what, pcts, value.pct_lost(last), value.pct_lost(0, 600))


GRID = [
    *(("td per step", g, e) for e in (0.0, 0.05) for g in (0.9, 0.95, 0.99, 0.999)),
    *(("td per hour", g, e) for e in (0.0, 0.05) for g in (0.99, 0.995, 0.999)),
    *(("mc", g, 0.0) for g in (0.99, 0.999)),
]


def markdown(rows: list[Row], heuristic: float, command: str, seconds: float) -> str:
    from sweeps.harness.record import cpu_model, git_commit, versions

    v = versions()
    lines = [
        "# The base cab variant: what a clock-blind Q-learner can converge to, computed exactly",
        "",
        f"Generated by `{command}` (`benchmarks/cabs_aliasing.py`, whose docstring gives the "
        "method); never hand-edited.",
        f"Machine: {cpu_model()}, {seconds:.0f} s; commit {(git_commit() or '?')[:12]}; "
        f"numpy {np.__version__}, python {v.get('python')}; "
        f"{dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}.",
        "",
        f"City 0. The direct-ride heuristic: **{heuristic:.2f}%** of the optimum, exactly. Each "
        f"row starts from the heuristic's policy and applies its rule {ITERATIONS} times; the "
        f"fixed points cycle, so the last {SHOWN} iterations are shown.",
        "",
        "These are tabular limits, not what a network ends at: the Ape-X policies of record "
        "(`results/cabs/REPORT.md`, the exact figures) sit above the per-step rows, as n-step "
        "returns and the network's generalisation move a learner off its tabular fixed point. "
        "What the table does say: which discounting a clock-blind learner's target can afford, "
        "and that no rule here stays above 98.5% of the optimum.",
        "",
        f"| rule | exact % of optimum, last {SHOWN} iterations | range | above the heuristic | "
        f"% lost in the last {MONTH_END_HOURS} h | % lost before hour 600 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        shown = r.pcts[-SHOWN:]
        above = sum(p > heuristic for p in shown)
        lines.append(
            f"| {r.what} | {', '.join(f'{p:.2f}' for p in shown)} | {min(shown):.2f}–"
            f"{max(shown):.2f}% | {above} of {SHOWN} | {r.lost_last:.2f} | {r.lost_before:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the Markdown table here (else print it)")
    args = parser.parse_args(argv)
    if args.out and not Path(args.out).parent.is_dir():
        parser.error(f"--out: no folder {Path(args.out).parent}")
    start = time.monotonic()
    heuristic = evaluate_policy(HeuristicPolicy().base_actions()).pct_of_optimum
    rows = []
    for i, (rule, gamma, eps) in enumerate(GRID, 1):
        rows.append(run(rule, gamma, eps))
        shown = rows[-1].pcts[-SHOWN:]
        print(f"[{i}/{len(GRID)}] {rows[-1].what}: {min(shown):.2f}–{max(shown):.2f}%", flush=True)
    command = "python benchmarks/cabs_aliasing.py" + (f" --out {args.out}" if args.out else "")
    text = markdown(rows, heuristic, command, time.monotonic() - start)
    if args.out:
        from sweeps.harness.files import atomic_write_text

        atomic_write_text(Path(args.out), text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
