"""The report's table across envs (analysis/family.py), on the committed CartPole runs seen as
two envs: per env each algorithm's seeds at the target and median time, the fastest and how often
each algorithm was, the evaluation's share of the clock, and held-out envs in a table of their
own. A report of one env has no such table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import collect, family, tables
from analysis.workload import workloads

CARTPOLE = Path(__file__).resolve().parents[1] / "results" / "cartpole" / "runs.csv"


def _two_envs() -> pd.DataFrame:
    runs = collect.read_runs_csv(CARTPOLE)
    other = runs.assign(env="Acrobot-v1", experiment=runs["experiment"] + "-acrobot")
    return pd.concat([runs, other], ignore_index=True)


def test_the_table_across_envs_puts_the_held_out_env_apart():
    loads = workloads(_two_envs())
    lines = family.family_section(loads, lambda w: None, held_out={"Acrobot-v1"})
    text = "\n".join(lines)
    tuned, held = text.split("### Held out: envs never tuned on")
    assert "### Envs tuned on" in tuned and "| CartPole-v1 |" in tuned
    assert "| Acrobot-v1 |" in held and "| CartPole-v1 |" not in held
    best = loads[0].best
    winner = str(best["algo"].iloc[0])
    assert f"Fastest: {winner} on 1 of 1." in tuned and f"Fastest: {winner} on 1 of 1." in held
    row = next(line for line in tuned.splitlines() if line.startswith("| CartPole-v1 |"))
    first = best.iloc[0]
    assert f"{int(first['reached'])}/{int(first['seeds'])} · " in row
    assert row.rstrip(" |").endswith(family.eval_share(loads[0].selected))


def test_a_report_of_one_env_has_no_table_across_envs():
    runs = collect.read_runs_csv(CARTPOLE)
    assert family.family_section(workloads(runs), lambda w: None) == []


def test_the_evaluation_share_is_the_median_and_largest_of_the_trials():
    runs = collect.read_runs_csv(CARTPOLE)
    trials = runs.drop_duplicates(["experiment", "trial_id"])[["experiment", "trial_id"]]
    heavy = tuple(trials.iloc[0])
    is_heavy = (runs["experiment"] == heavy[0]) & (runs["trial_id"] == heavy[1])
    share = is_heavy.map({True: 0.5, False: 0.2})
    end = runs.groupby(["experiment", "trial_id"])["train_time_s"].transform("max")
    runs = runs.assign(periodic_eval_s=end * share)
    assert family.eval_share(runs) == "20% (50%)"


def test_runs_whose_estimate_counted_the_first_episodes_to_end_are_named_per_env():
    """A run of the four without ``periodic_once`` (recorded before the suite counted each
    periodic episode once) is named under its env; a run with it, or a single-process baseline
    (which always did), is not; where every run counted each once, nothing is said."""
    runs = _two_envs()
    acrobot = runs["env"] == "Acrobot-v1"
    assert family.estimate_lines(workloads(runs.assign(periodic_once=1.0))) == []
    marked = runs.assign(periodic_once=acrobot.map({True: 1.0, False: float("nan")}))
    loads = workloads(marked)
    text = "\n".join(family.estimate_lines(loads))

    def evaluated(w):  # trials with a periodic greedy evaluation: an estimate to count
        rows = w.selected[w.selected["greedy_return"].notna()]
        return rows.drop_duplicates(["experiment", "trial_id"])

    trials = evaluated(next(w for w in loads if w.env == "CartPole-v1"))
    trials = trials[~trials["algo"].map(tables.is_library)]  # the baselines: always once
    total = sum(len(evaluated(w)) for w in loads)
    assert f"{len(trials)} of {total} runs here took RLlib's count" in text
    assert "RLlib's count: CartPole-v1: " in text and "Acrobot-v1:" not in text
    for config, n in trials["config"].value_counts().items():
        assert f"{config} ×{n}" in text
    text = "\n".join(family.family_section(loads, lambda w: None))
    assert "**How the periodic greedy estimate counted.**" in text


def test_runs_before_a_change_are_named_apart_in_the_same_tables(tmp_path):
    """``--before``: the defaults' runs before a change beside the runs after it, each algorithm
    twice ("apex" and "apex (before)") in every table, the table across envs included."""
    from analysis.__main__ import main
    from analysis.family import BEFORE

    before = Path(__file__).resolve().parents[1] / "results" / "gym" / "before"
    after = [
        str(before / f"family-before-apex-s0-{env}.csv.gz") for env in ("cartpole-v1", "acrobot-v1")
    ]
    after.append(str(before / "family-before-dqn-s0-cartpole-v1.csv.gz"))  # no before of its own
    old = [
        str(before / f"family-before-apex-s1-{env}.csv.gz") for env in ("cartpole-v1", "acrobot-v1")
    ]
    out = tmp_path / "report"
    assert main(["report", *after, "--before", *old, "--out", str(out)]) == 0
    assert not (out / "runs.csv.gz").exists()  # the rows stay in the tables it names
    text = (out / "REPORT.md").read_text()
    runs = [line.split(" | ")[:3] for line in text.splitlines() if "| benchmark |" in line]
    assert {algo for _, _, algo in runs} == {"apex", f"apex{BEFORE}", "dqn"}
    assert {"-s0-" in exp for exp, _, algo in runs if algo == "apex"} == {True}
    assert {"-s1-" in exp for exp, _, algo in runs if algo.endswith(BEFORE)} == {True}
    assert "--before" in text  # the command that made it
    assert f"| env | target | apex | apex{BEFORE} | dqn | fastest |" in text  # across envs
    assert f"Fastest: apex on 1 of 2, apex{BEFORE} on 1 of 2." in text
    # DQN's runs were given once, as its own: the report says it has no before row, and why
    assert "No *(before)* row: dqn. Their runs were given once, as their own" in text
    assert "No *(before)*" not in "\n".join(family.served_lines(["apex", "sb3-dqn"]))
    assert family.served_lines(["apex", f"apex{BEFORE}", "sb3-dqn"]) == []


BEFORE = CARTPOLE.parents[1] / "gym" / "before"


def test_seeds_that_ended_before_their_budget_are_named_with_where_they_ended():
    """MinAtar Breakout's runs of record: SB3's DQN stopped at its recipe's n_timesteps
    (1,000,000 env steps) after 855 s and 902 s of its 1,200 s, both short of the target: named,
    with where and when they ended. IMPALA's seed 1 missed too, at its budget: not named; Ape-X's
    seed 0 reached the target: not named."""
    names = ["sb3-dqn-s0", "sb3-dqn-s1", "before-impala-s1", "before-apex-s0"]
    tables_ = [BEFORE / f"family-{n}-minatar-breakout-v1.csv.gz" for n in names]
    runs = pd.concat([collect.read_runs_csv(t) for t in tables_], ignore_index=True)
    text = "\n".join(family.short_lines(workloads(runs)))
    assert text.startswith("**Ended before their budget without reaching the target**: ")
    assert (
        "sb3-dqn · one process on MinAtar/Breakout-v1: 2 seeds, at 1,000,000 env steps after "
        "855.5 s–902.4 s of training of 1,200 s." in text
    )
    assert "impala" not in text and "apex" not in text
    assert "its recipe's `n_timesteps`" in text  # a library baseline: why it ended
    # The report's table across envs says it too (two envs: the section is there).
    other = runs.assign(env="MinAtar/Asterix-v1", experiment=runs["experiment"] + "-asterix")
    section = "\n".join(family.family_section(workloads(pd.concat([runs, other])), lambda w: None))
    assert "**Ended before their budget without reaching the target**" in section
    # Every seed that missed ran to its budget: nothing to say.
    assert family.short_lines(workloads(runs[runs["algo"] != "sb3-dqn"])) == []
