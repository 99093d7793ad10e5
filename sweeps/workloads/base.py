"""What the machinery asks of a workload: the ``Workload`` base class.

A workload is one environment as the suite runs it: its command-line flags and their checks, its
RLlib config fragment (``configure``), the targets it is judged against and by which return, the
fields it adds to the run record, its dry-run lines, its raw env for the throughput benchmark,
and what the report says about it. The runner, the parser, the benchmark, the dry run, the
throughput benchmark, the callbacks and the analysis call these methods; none of them branches on
an environment's name. The defaults here are the plain case (no flags, no targets, greedy
evaluation judges); ``sweeps/workloads/cabs.py``, ``pong.py`` and ``gym.py`` override what differs,
and a new workload is one more such file (``tests/toy_workload.py`` is one, in a test).

Importing a workload module imports neither Ray nor torch: the analysis reads its report texts.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

if TYPE_CHECKING:
    from sweeps.harness.settings import Settings


class EnvFlags(Protocol):
    """A workload's own flags, as the sweeps' parser (``Settings``) and the benchmark's give
    them: what the methods both call read (``targets``, ``dry_run_lines``, the benchmark's)."""

    env: str | None  # a Gymnasium env's id or entry point (the benchmark's: any workload's name)
    variant: str | None  # the cab variant
    tm_seed: int | None  # the cab city's seed
    env_config: dict[str, Any] | None  # a Gymnasium env's settings
    target: list[float] | None  # a Gymnasium env's targets


class Workload:
    """One environment as the suite runs it. Subclasses override what differs."""

    name: str = ""  # the sweep files' suffix (sweeps/<algo>_<name>.py) and the record's env
    # Sweep defaults of --final-episodes (held-out greedy episodes at the end) and the
    # benchmark's (greedy games each trial's final policy plays, when the sweep plays none).
    final_episodes: int = 0
    benchmark_final_episodes: int = 0
    # Seeded episodes a crossing of the target plays to confirm it (--confirm-episodes): enough
    # for a tight interval where episodes are short.
    confirm_episodes: int = 100
    # --eval-share: the most periodic greedy evaluation may cost, as a share of the training clock
    # (sweeps/harness/eval_share.py; 0: no cap).
    eval_share: float = 0.25
    # Whether greedy evaluation (when on) judges trials; else the training return does.
    greedy_judged: bool = True
    # Whether a run always has targets (a run record without them is then a broken one).
    has_targets: bool = False

    def __repr__(self) -> str:
        return f"<workload {self.name}>"

    # --- the sweep: flags, checks, config ---------------------------------------------------

    def sweep_name(self, algo: str) -> str:
        """The sweep of ``algo`` on this workload, as run.json names it: a baseline's dash
        becomes an underscore (sb3-dqn on cabs: ``sb3_dqn_cabs``)."""
        return f"{algo.replace('-', '_')}_{self.name}"

    def sweep_module(self, algo: str) -> str:
        """The module that runs ``algo`` on this workload (``python -m <module> <flags>``)."""
        return f"sweeps.{self.sweep_name(algo)}"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The workload's own flags in a sweep's parser."""

    def check(self, algo: str, args: Settings) -> None:
        """Check the parsed flags before Ray starts; a ValueError (one line) when they're bad."""

    def episodes_to_confirm(self, args: Settings) -> int:
        """--confirm-episodes where not given: ``confirm_episodes``."""
        return self.confirm_episodes

    def env_names(self, args: Settings) -> tuple[str, ...]:
        """Env names to register with Ray Tune beyond the suite's own (``envs.register_envs``)."""
        return ()

    def configure(self, config: Any, args: Settings, **options: Any) -> Any:
        """The RLlib config fragment: env, env runners, model, evaluation, callbacks."""
        raise NotImplementedError(f"{self.name}: no configure()")

    def env_spec(self, args: Settings) -> tuple[str, dict[str, Any]]:
        """The env id and config, as ``envs.make`` builds one env of it (RLlib's runners and a
        single-process baseline alike)."""
        raise NotImplementedError(f"{self.name}: no env_spec()")

    # --- what a run is judged by, and records -----------------------------------------------

    def atari(self, args: Settings) -> bool:
        """Whether the env is an Atari game, preprocessed by the suite's Atari factory
        (``envs/pong.py``: frame skip, 42x42 frames, the frame stack)."""
        return False

    def action_mask(self, args: Settings) -> tuple[int, int] | None:
        """Where the observation carries a 0/1 mask of the available actions, its slice
        ``(start, stop)`` (a baseline with masking, sb3-contrib's MaskablePPO, reads it there);
        None: every action is available."""
        return None

    def targets(self, args: EnvFlags) -> list[float]:
        """The returns whose time-to-reward the report shows (ascending; may be empty)."""
        return []

    def record_fields(self, args: Settings) -> dict[str, Any]:
        """What the workload adds to the run record: env, variant, optimum, references."""
        return {"env": self.name, "variant": None, "optimum": None, "references": None}

    def dry_run_lines(self, args: EnvFlags) -> list[str]:
        """What ``--dry-run`` says about the env (sweep and benchmark alike)."""
        return []

    # --- the benchmark ----------------------------------------------------------------------

    def add_benchmark_arguments(self, args: EnvFlags, algos: list[str]) -> None:
        """Check the benchmark's workload flags (``--variant``, ``--env-config``, ``--target``)
        and fill their defaults; a ValueError (one line) when they don't fit."""
        self.refuse(args, ("variant", "env_config", "target"), "{flag}: {env} takes no {flag}")

    @staticmethod
    def refuse(args: EnvFlags, flags: tuple[str, ...], why: str) -> None:
        """A ValueError for the first of ``flags`` that was given: ``why`` with ``{flag}`` (as
        typed) and ``{env}`` filled in."""
        for flag in flags:
            if getattr(args, flag, None) is not None:
                raise ValueError(why.format(flag="--" + flag.replace("_", "-"), env=args.env))

    def benchmark_stem(self, args: EnvFlags) -> str:
        """The start of a benchmark's default folder name."""
        return self.name

    def sweep_flags(self, args: EnvFlags) -> list[str]:
        """The flags that hand the benchmark's workload settings to a sweep."""
        return []

    # --- the raw env rate (the throughput benchmark; every run's machine speed) --------------

    raw_env_note: str = ""  # how the raw env rate is measured, when it isn't one env

    def make_raw_env(self, args: Settings, num_envs: int | None = None) -> Any:
        """The env exactly as an env runner's factory builds it, for the raw env rate."""
        raise NotImplementedError(f"{self.name}: no raw env for the throughput benchmark")

    # --- the report -------------------------------------------------------------------------

    def reference_rows(
        self, runs: pd.DataFrame, episodes: int, seed: int
    ) -> tuple[pd.DataFrame | None, str | None]:
        """Reference policies' returns the report computes itself for this workload's rows of
        ``runs`` (None, and a note saying why when it couldn't). Default: none; the random
        policy a run measured is in its record (``record_fields``)."""
        return None, None

    def computes_references(self) -> bool:
        """Whether ``reference_rows`` stands for the references in the run records."""
        return False

    def rules_note(self) -> list[str]:
        """How the workload is played, stated in the report beside its figures."""
        return []

    def missed_note(self, runs: pd.DataFrame, reached_everywhere: bool) -> list[str]:
        """What the report adds where the target was missed (or nothing could be compared)."""
        return []
