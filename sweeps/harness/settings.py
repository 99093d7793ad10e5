"""A sweep's settings, typed: what the shared parser (``sweeps.harness.cli``) returns, and what the
machinery (the runner, the plan, the budget, the record, the sweep files' ``make_config``) takes.

Each flag of the shared parser is a field here, and its default is stated here, once: the parser
reads them (``flag_defaults``), a sweep file overrides them (``Sweep.defaults``), and a workload
its own three (``Workload.final_episodes``, ``confirm_episodes``, ``eval_share``: the defaults
below are the plain workload's). Two fields are no flags: what ``cli.parse_args`` adds.

A name that is not a field is refused, so a typo in a flag's name fails where it is made: at a
sweep file's defaults, in a test, or in a run record read back (``from_dict``; a record written
before a flag was removed keeps its other settings with ``strict=False``).

Importing this module imports neither Ray nor Torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sweeps.workloads.base import Workload

# Fields no flag sets: ``cli.parse_args`` fills them in.
DERIVED = ("argv", "cap_from_plan")


@dataclass(slots=True, kw_only=True)
class Settings:
    """One sweep's parsed, checked flags (``python sweeps/<algo>_<env>.py --help`` says what each
    does), and what the parser derived from them."""

    # --- search
    num_samples: int = 8
    max_concurrent_trials: int = 0  # 0: as many as the cluster's resources hold
    reuse_actors: bool = False
    search: str = "optuna"  # "optuna" | "random"
    scheduler: str = "asha"  # "asha" | "fifo"
    grace_period: int = 10_000
    reduction_factor: int = 3
    seed: int = 0
    configs_from: str | None = None
    optuna_storage: str | None = None
    benchmark_seeds: int | None = None
    set: list[tuple[str, Any]] = field(default_factory=list)  # --set KEY=VALUE, in order
    # --- budget
    stop_timesteps: int = 50_000
    stop_reward: float | None = None
    confirm_episodes: int = Workload.confirm_episodes
    time_budget_s: float | None = None
    stop_train_time_s: float | None = None
    as_test: bool = False
    smoke: bool = False
    # --- resources
    num_env_runners: int = 1
    num_envs_per_env_runner: int = 1
    num_gpus_per_learner: float | None = None  # None: 1 when the cluster has a GPU, else 0
    num_learners: int = 0
    address: str | None = None
    num_cpus: int | None = None
    env_runner_resource: str = "auto"
    placement_strategy: str = "PACK"
    # --- output
    storage_path: str = "runs"
    name: str | None = None  # None: <sweep>-<date>-<time>, set by the parser
    eval_interval: int = 1
    eval_episodes: int = 5
    eval_share: float = Workload.eval_share
    iteration_s: float | None = None
    checkpoint_freq: int = 5  # ~20 ms and ~1.4 MB per cab DQN checkpoint (no replay buffer)
    final_episodes: int = Workload.final_episodes
    max_failures: int = 2
    verbose: bool = False
    resume: str | None = None
    progress_interval_s: float = 20.0
    dry_run: bool = False
    # --- the workload's (cabs: --variant, --tm-seed; a Gymnasium env: --env, --env-config,
    # --target; refused where the workload has none)
    variant: str | None = "base"
    tm_seed: int | None = 0
    env: str | None = None
    env_config: dict[str, Any] | None = None
    target: list[float] | None = None
    # --- derived by the parser
    argv: list[str] = field(default_factory=list)  # the command line as given
    cap_from_plan: bool = False  # --time-budget-s not given: the plan's prediction sets it

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], *, strict: bool = True) -> Settings:
        """Settings from ``values`` (a parser's namespace, a run record's ``args``); a name that
        is no field is a ValueError naming it, or dropped where ``strict`` is off."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown and strict:
            raise ValueError(f"no such setting(s): {', '.join(unknown)}")
        return cls(**{k: v for k, v in values.items() if k in names})

    def as_dict(self) -> dict[str, Any]:
        """Every field by name (a shallow copy: the run record's ``args``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)


def flag_defaults() -> dict[str, Any]:
    """Every flag's default, by its destination: what the shared parser starts from."""
    defaults = {}
    for f in dataclasses.fields(Settings):
        if f.name in DERIVED:
            continue
        if f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
        else:
            defaults[f.name] = f.default
    return defaults


def is_setting(name: str) -> bool:
    """Whether ``name`` is one of the settings (a flag's destination or a derived field)."""
    return name in Settings.__dataclass_fields__
