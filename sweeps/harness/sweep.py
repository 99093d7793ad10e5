"""What a sweep file provides: the ``Sweep`` description that the parser (``sweeps.harness.cli``)
and the runner (``sweeps.harness.runner``) both read.

A sweep file (``sweeps/<algo>_<env>.py``) states only what differs: the algorithm config with
tuned defaults, its Optuna search space (a zoo-style ``sample_params(trial)`` function returning
real config values), and its default budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sweeps.harness import keys
from sweeps.harness.settings import Settings, is_setting
from sweeps.workloads.base import Workload

SampleFn = Callable[[Any], dict[str, Any]]  # optuna.Trial -> {config key ("a/b" nested): value}
ConfigFn = Callable[[Settings], Any]  # settings -> AlgorithmConfig (tuned defaults)


@dataclass(frozen=True)
class Scaling:
    """How a recipe tuned at its default env-runner count goes to N runners
    (``--num-env-runners N``), stated beside the recipe and printed in the plan.

    ``spread_envs``: the envs the recipe steps in all (its default runners × envs per runner)
    stay that many, spread over the N runners (at least one each; ``--num-envs-per-env-runner``
    given on the command line wins): the same stream of games, stepped by more processes, so
    what changes with N is what distribution changes (policy lag, replay ratio), not the data.
    ``note``: what the rest of the recipe does at N runners, in a sentence."""

    spread_envs: bool = True
    note: str = ""

    def envs_per_runner(self, base_runners: int, base_envs: int, runners: int) -> int:
        """Envs per runner at ``runners`` for a recipe of ``base_envs`` at ``base_runners``."""
        if not self.spread_envs or runners <= 0 or runners == base_runners:
            return base_envs
        total = max(base_runners, 1) * base_envs
        return max(1, -(-total // runners))  # ceil: never fewer games than the recipe's


@dataclass(frozen=True)
class Cost:
    """What the sweep's default search took where it was measured (a run of record): the plan's
    prediction for another machine (``sweeps/harness/budget.py``) scales it by the machine's
    speed and cores.

    ``wall_s``: the sweep's wall-clock, start to summary; ``busy_s``: the CPU seconds the machine
    spent busy over it, all processes (``/proc/stat`` on the run's cores: run.json's
    ``machine.busy_s``); ``raw_env_rate``: the machine's raw env rate at its start
    (``sweeps/harness/machine_speed.py``); ``cores``: the cores it ran on; ``work``: the flags
    that set the work (trials, env steps, ASHA's rungs, runners), as run; ``source``: the run;
    ``cpu``: the CPU model it ran on (run.json's ``machine.cpu_model``: the raw env rate scales
    a run between machines of one CPU model, not between models); ``env_steps``: the env steps
    its trials ran, summed (the search's work as it came out: the same flags run more or fewer
    env steps as ASHA's promotions go with the seed; 0: not counted)."""

    wall_s: float
    busy_s: float
    raw_env_rate: float
    cores: int
    work: dict[str, Any]
    source: str
    cpu: str = ""
    env_steps: float = 0.0


@dataclass(frozen=True)
class Sweep:
    """What differs between sweeps. ``defaults`` and ``smoke`` override the shared flags."""

    name: str  # "dqn_cabs"
    algo: str  # "dqn" | "apex" | "impala" | "appo"
    workload: Workload  # the env as the suite runs it (sweeps/workloads/)
    make_config: ConfigFn
    sample_params: SampleFn
    defaults: dict[str, Any] = field(default_factory=dict)
    smoke: dict[str, Any] = field(default_factory=dict)
    # Defaults of one cab variant over ``defaults`` (its own budget), e.g. {"requests": {...}};
    # a flag given on the command line wins, and --smoke's tiny budget wins over them.
    variant_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    description: str = ""
    # The --help text, when the sweep is built elsewhere than in its file (sweeps/gym_family.py);
    # else the docstring of the module that defines ``make_config``.
    doc: str = ""
    # Extra metrics (beyond the curated set) shown in TensorBoard's HParams tab.
    extra_metrics: tuple[keys.Key, ...] = ()
    # How the recipe goes to more env runners (None: nothing changes but the runner count).
    scaling: Scaling | None = None
    # The default search's measured costs per cab variant ("" for a sweep without variants),
    # one per core count it was measured on: the plan predicts the search's wall-clock on this
    # machine from the one measured on the nearest core count.
    costs: dict[str, tuple[Cost, ...]] = field(default_factory=dict)
    # Why the sweep has no search of its own (its tuned defaults run in benchmark mode only:
    # --benchmark-seeds N), or "" where it searches ``sample_params``.
    no_search: str = ""

    @classmethod
    def of_file(
        cls,
        name: str,
        algo: str,
        workload: Workload,
        make_config: ConfigFn,
        sample_params: SampleFn,
        doc: str,
        **fields: Any,
    ) -> Sweep:
        """A sweep file's ``Sweep`` as its family builds it: the first line of the file's
        docstring (``doc``) as its description, ``fields`` as given."""
        return cls(
            name=name,
            algo=algo,
            workload=workload,
            make_config=make_config,
            sample_params=sample_params,
            description=doc.split("\n")[0],
            **fields,
        )

    def __post_init__(self) -> None:
        named = [
            *self.defaults,
            *self.smoke,
            *(k for v in self.variant_defaults.values() for k in v),
        ]
        unknown = sorted({k for k in named if not is_setting(k)})
        if unknown:  # a typo would otherwise be a default no flag reads, silently
            raise ValueError(
                f"sweep {self.name}: no such setting(s) {unknown} (sweeps/harness/settings.py)"
            )

    @property
    def env(self) -> str:
        """The workload's name: ``sweeps/<algo>_<env>.py``."""
        return self.workload.name
