"""The report's reproducibility section as Markdown lines: every run (status, dates, load, the
machine's speed, commit), the exact command of each, the machines, package versions and commits
they ran on, and what collecting them skipped, de-duplicated or repaired."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.fmt import DASH, fmt_int, is_missing, markdown_table
from sweeps.harness.machine_speed import RUN_SECONDS, RUN_WINDOWS

RUNS_NOTE = (
    "At each run's start -> end: the machine's 1-minute load average, and its speed, the "
    "workload's env stepped with random actions in one process (raw env steps/s, the fastest "
    f"{RUN_SECONDS / RUN_WINDOWS:g} s of {RUN_SECONDS:g} s; a dash: the run predates the "
    "measurement). A machine that runs slower shows in the second, not always in the first "
    "(a host throttling its VM)."
)


def reproducibility_section(
    runs: pd.DataFrame,
    skipped: Sequence[str],
    deduped: Sequence[str] = (),
    repaired: Sequence[str] = (),
    superseded: Sequence[str] = (),
) -> list[str]:
    """The runs behind the report and how to run each again; ``skipped``, ``deduped`` and
    ``repaired``: what collecting them left out, counted once or repaired; ``superseded``: runs
    a later run of the same seed replaced."""
    exps = runs.drop_duplicates("experiment").sort_values(["env", "variant", "kind", "experiment"])
    lines = ["## Reproducibility", "", "### Runs", "", _runs_table(runs, exps), "", RUNS_NOTE, ""]
    lines += _commands(exps)
    lines += _environments(exps)
    lines += _collection_notes(skipped, deduped, repaired)
    if superseded:
        lines += [
            "### Runs replaced by a later run of the same seed",
            "",
            "A seed a configuration ran more than once counts once, by its latest run; these "
            "earlier runs are listed above and not counted:",
            "",
            *(f"- {name}" for name in superseded),
            "",
        ]
    return lines


def _runs_table(runs: pd.DataFrame, exps: pd.DataFrame) -> str:
    """One row per run: what it ran, how many trials, its status, dates, load, the machine's
    speed and commit."""
    n_trials = runs.groupby("experiment")["trial_id"].nunique()
    header = ["experiment", "kind", "algorithm", "env", "variant", "trials", "status"]
    header += ["started", "ended", "load (1 min)", "raw env steps/s", "git commit"]
    rows = [
        [
            e["experiment"],
            e["kind"],
            e["algo"],
            e["env"],
            e["variant"] or DASH,
            str(n_trials[e["experiment"]]),
            e["run_status"] or DASH,
            e["started_at"] or DASH,
            e["ended_at"] or DASH,
            e.get("load") if isinstance(e.get("load"), str) and e.get("load") else DASH,
            _speed_cell(e),
            _commit_cell(e, 12),
        ]
        for _, e in exps.iterrows()
    ]
    return markdown_table(header, rows)


def _speed_cell(experiment: pd.Series) -> str:
    """``"4,458 -> 1,421"``: the machine's raw env rate at a run's start and end, as recorded
    (sweeps/harness/machine_speed.py); a dash for a run that predates the measurement."""
    ends = [experiment.get("raw_env_start"), experiment.get("raw_env_end")]
    if all(is_missing(v) for v in ends):
        return DASH
    return " -> ".join("?" if is_missing(v) else fmt_int(v) for v in ends)


def _commit_cell(experiment: pd.Series, width: int | None = None) -> str:
    """A run's commit, flagged when it ran from a modified working tree (run.json git_dirty)."""
    commit = experiment["git_commit"]
    if not commit:
        return DASH
    dirty = str(experiment.get("git_dirty", "")) == "true"
    return f"`{commit[:width]}`" + (" + uncommitted changes" if dirty else "")


def _commands(exps: pd.DataFrame) -> list[str]:
    """The exact command of each run, from its run.json."""
    lines = ["### Commands", "", "The exact command that produced each run (from run.json):", ""]
    lines += ["```bash"]
    for _, e in exps.iterrows():
        lines += [f"# {e['experiment']}", e["command"] or "# (command not recorded)"]
    return lines + ["```", ""]


def _environments(exps: pd.DataFrame) -> list[str]:
    """The machines, package versions and commits the runs ran on, each with its runs."""
    machine_cols = ["cpus", "gpus", "cpu_model", "platform"]
    lines = ["### Machines", ""]
    lines += [
        markdown_table(
            ["CPUs", "GPUs", "CPU model", "platform", "experiments"],
            [
                [fmt_int(r[0]) if r[0] != DASH else DASH, *r[1:]]
                for r in _grouped(exps, machine_cols)
            ],
        ),
        "",
    ]
    version_cols = ["ray_version", "torch_version", "python_version"]
    lines += ["### Package versions", ""]
    lines += [
        markdown_table(["ray", "torch", "python", "experiments"], _grouped(exps, version_cols)),
        "",
    ]
    commits = sorted({_commit_cell(e) for _, e in exps.iterrows() if e["git_commit"]})
    return lines + ["### Git commits", ""] + [f"- {c}" for c in commits] + [""]


def _grouped(exps: pd.DataFrame, cols: list[str]) -> list[list[str]]:
    """One row per distinct value of ``cols``: the values and the runs that share them."""
    out = []
    for keys, g in exps.groupby(cols, sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        out.append([*(str(k) if str(k) else DASH for k in keys), ", ".join(g["experiment"])])
    return out


def _collection_notes(
    skipped: Sequence[str], deduped: Sequence[str], repaired: Sequence[str]
) -> list[str]:
    """What collecting the runs skipped, counted once (rows reported twice) or repaired (a
    training clock restarted at a restore)."""
    lines = []
    if skipped:
        lines += ["### Skipped while collecting", ""] + [f"- {s}" for s in skipped] + [""]
    if deduped:
        lines += [
            "### Rows reported twice",
            "",
            "A trial restored from a checkpoint reports the iterations after it again; each "
            "(trial, iteration) is counted once, from its last report.",
            "",
            *(f"- {d}" for d in deduped),
            "",
        ]
    if repaired:
        lines += [
            "### Training clocks repaired",
            "",
            "These trials were restored from a checkpoint by a version of the suite whose "
            "training clock started again from zero at a restore; their clock (time to "
            "target, env steps/s) was continued from its value at the checkpoint.",
            "",
            *(f"- {r}" for r in repaired),
            "",
        ]
    return lines
