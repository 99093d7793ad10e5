"""The one shared argument parser: kebab-case flags with help text; sweeps change defaults only.

Validation happens here, before Ray starts and before any folder is created: bad input gets one
clear line and exit code 2. What it returns is typed: ``sweeps.harness.settings.Settings``, where
each flag's type and default are stated; the machinery takes that, never an argparse namespace.

One file (over 500 lines) because the flags are one parser: splitting its groups across modules
would scatter the flags' help and checks from one another.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sweeps.algorithms import adam_eps, appo_loss, entropy_target, kl_lr, reward_scale
from sweeps.harness import storage
from sweeps.harness.errors import OneLineErrorParser, UsageError, error_line
from sweeps.harness.files import check_writable
from sweeps.harness.record import RECORD_FILE, RunRecord
from sweeps.harness.settings import Settings, flag_defaults
from sweeps.harness.sweep import Sweep

# Every flag's default, from its one home (``sweeps.harness.settings.Settings``); a sweep file
# overrides them (``Sweep.defaults``), a workload three of them (``build_parser``).
SHARED_DEFAULTS: dict[str, Any] = flag_defaults()

# What a flag added since means for a run recorded before it (--resume continues it as begun):
# a run recorded before the confirmed target stopped at the first crossing.
RECORDED_BEFORE: dict[str, Any] = {"confirm_episodes": 0, "eval_share": 0.0, "reuse_actors": False}

# What --resume may change: how the sweep is shown and where it runs, never what it computes.
RESUME_RUNTIME_FLAGS = ("address", "verbose", "progress_interval_s")
# What --resume may change where given: the sweep's wall-clock cap (how much of the planned search
# runs, never what a trial computes): a sweep cut short by its cap finishes with a larger one.
RESUME_CAP_FLAGS = ("time_budget_s",)

# --smoke: same code path, tiny budget (one or two trials, a few hundred env steps). The env
# steps end it; its wall-clock cap only stops a hang (a smoke on a simulated 4-node cluster, on a
# slow box beside another test process, takes minutes).
SMOKE_FINAL_EPISODES = 10
SMOKE_DEFAULTS: dict[str, Any] = {
    "num_samples": 2,
    "stop_timesteps": 400,
    "grace_period": 200,
    "time_budget_s": 900.0,
    "progress_interval_s": 5.0,
    "iteration_s": 1.0,
}


def count(min_value: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < min_value:
            raise argparse.ArgumentTypeError(f"must be >= {min_value}, got {value}")
        return value

    parse.__name__ = f"integer >= {min_value}"
    return parse


def _number(text: str, what: str = "a number") -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_float(text: str) -> float:
    value = _number(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _finite_float(text: str) -> float:
    value = _number(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return value


def _share(text: str) -> float:
    value = _number(text, "a share")
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (0: no cap), got {text}")
    return value


def _gpus(text: str) -> float:
    value = _number(text, "a number of GPUs")
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def setting(text: str) -> tuple[str, Any]:
    """A ``--set KEY=VALUE`` argument: the value read as JSON (numbers, true/false, lists,
    quoted strings), else as a bare string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def apply_settings(config: Any, settings: Sequence[Sequence[Any]]) -> Any:
    """``--set`` overrides on an AlgorithmConfig; a UsageError names a key that is not one of
    its settings (a method, a private attribute, a typo) or a value it refuses.
    ``model_config={...}`` (a JSON object) changes those keys of the RLModule's model config and
    keeps the rest (``--set 'model_config={"head_fcnet_hiddens": [128]}'``)."""
    for key, value in settings:
        if key == "model_config":
            _merge_model_config(config, value)
            continue
        if hasattr(config, "has_setting"):  # a baseline's (sweeps/baselines/config.py)
            known = config.has_setting(key)
        else:
            known = not key.startswith("_") and hasattr(config, key)
            known = known and not callable(getattr(config, key))
        if not known:
            raise UsageError(f"--set {key}=...: {type(config).__name__} has no setting {key!r}")
        try:
            config.update_from_dict({key: value})
            if key == "learner_config_dict":  # refused before Ray starts, not on the first update
                check_learner_settings(config)
            if key == "lambda_":  # APPO's: V-trace's λ in the suite's learner
                appo_loss.check_lambda(value)
        except (TypeError, ValueError) as e:
            raise UsageError(f"--set {key}={value!r}: {e}") from None
    return config


def check_learner_settings(config: Any) -> None:
    """A ValueError names a ``learner_config_dict`` key the suite's learners do not read (a typo
    would otherwise change nothing, silently), one given to an algorithm whose learner does not
    read it, or a bad entropy or KL target, advantage switch or reward scale."""
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.impala import IMPALAConfig

    settings = config.learner_config_dict or {}
    known = (*entropy_target.KEYS, *kl_lr.KEYS, *adam_eps.KEYS, *appo_loss.KEYS, *reward_scale.KEYS)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown}; the suite's learners read {list(known)}")
    if settings and not isinstance(config, IMPALAConfig):
        raise ValueError(f"only the suite's IMPALA and APPO learners read {sorted(settings)}")
    if appo_loss.KEY in settings and not isinstance(config, APPOConfig):
        raise ValueError(f"only the suite's APPO learner reads {[appo_loss.KEY]}")
    entropy_target.check_target(settings)
    kl_lr.check_kl_target(settings)
    kl_lr.check_return_scale(settings)
    adam_eps.check_adam_eps(settings)
    appo_loss.check_standardize(settings)
    appo_loss.check_whole_chunks(settings)
    reward_scale.check_scale(settings)


def _merge_model_config(config: Any, value: Any) -> None:
    """``value``'s keys over the config's own model config (a DefaultModelConfig stays one, so
    an unknown key is refused as RLlib refuses it)."""
    if not isinstance(value, dict):
        raise UsageError(f"--set model_config=...: expected a JSON object, got {value!r}")
    from sweeps.seams.algorithm import own_model_config  # (imports RLlib, as the config has)

    own = own_model_config(config)
    try:
        if dataclasses.is_dataclass(own):
            merged: Any = dataclasses.replace(own, **value)
        else:
            merged = {**(own or {}), **value}
    except TypeError as e:
        raise UsageError(f"--set model_config={json.dumps(value)}: {e}") from None
    config.rl_module(model_config=merged)


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The sweep docstring as written ("How to run", "Results to expect"), and each flag's
    default once: not appended where the help text already says it, nor for an unset value
    (None) or an off switch."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False) or action.default == []:
            return text
        return super()._get_help_string(action)


def _docstring(sweep: Sweep) -> str:
    """The sweep file's module docstring (its description for --help)."""
    module = sys.modules.get(getattr(sweep.make_config, "__module__", ""))
    return (sweep.doc or getattr(module, "__doc__", None) or sweep.description).strip()


def build_parser(sweep: Sweep) -> argparse.ArgumentParser:
    """The shared parser: kebab-case flags with help text; a sweep changes defaults only."""
    p = OneLineErrorParser(
        prog=f"python sweeps/{sweep.name}.py",
        description=_docstring(sweep) or f"{sweep.algo} sweep on {sweep.env}",
        formatter_class=HelpFormatter,
        # No abbreviations: a typo is refused, and --smoke/--resume see every flag given.
        allow_abbrev=False,
    )
    s = p.add_argument_group("search")
    s.add_argument("--num-samples", type=count(1), help="trials to sample")
    s.add_argument(
        "--max-concurrent-trials",
        type=count(0),
        help="trials running at once (0: as many as the cluster's resources hold; more than its "
        "CPUs hold, on the sweep's own Ray: it declares the CPUs they ask for, on purpose)",
    )
    s.add_argument(
        "--reuse-actors",
        action=argparse.BooleanOptionalAction,
        help="a finished trial's actor (its process, with Ray, RLlib and Torch imported) runs "
        "the next trial, its algorithm rebuilt from the new config (sweeps/seams/reuse.py)",
    )
    s.add_argument("--search", choices=["optuna", "random"], help="Optuna TPE or random sampling")
    s.add_argument("--scheduler", choices=["asha", "fifo"], help="ASHA early stopping or none")
    s.add_argument(
        "--grace-period", type=count(1), help="ASHA: env steps before a trial can be stopped"
    )
    s.add_argument("--reduction-factor", type=count(2), help="ASHA: keep 1/this per rung")
    s.add_argument("--seed", type=count(0), help="seeds the searcher and every trial")
    s.add_argument(
        "--configs-from",
        metavar="PATH",
        help="run the configurations the sweep in PATH sampled, in its order, instead of "
        "sampling (one trial each; same config flags required): with --scheduler fifo, an ASHA "
        "sweep's configurations at full budget, to check what ASHA saved and lost",
    )
    s.add_argument(
        "--optuna-storage",
        metavar="PATH_OR_URL",
        help="keep the Optuna study, named after the run (--name), in this file (Optuna's "
        "journal file, which survives a killed sweep; e.g. runs/optuna.journal) or database "
        "(e.g. sqlite:///runs/optuna.db), to inspect or continue it with optuna.load_study; a "
        "study of that name already there is continued",
    )
    s.add_argument(
        "--benchmark-seeds",
        type=count(1),
        help="benchmark mode: no search; run the tuned defaults once per seed "
        "(--seed, --seed+1, ...) with FIFO scheduling",
    )

    s.add_argument(
        "--set",
        action="append",
        type=setting,
        metavar="KEY=VALUE",
        help="override a tuned default: an AlgorithmConfig setting, the value read as JSON, "
        "else as a string (e.g. --set lr=1e-3 --set gamma=0.9); repeatable",
    )

    b = p.add_argument_group("budget")
    b.add_argument("--stop-timesteps", type=count(1), help="env steps sampled per trial")
    b.add_argument(
        "--stop-reward",
        type=_finite_float,
        help="the target: stop a trial once its policy plays this. Where the judged return "
        "(greedy estimate; on Pong the training games' running mean) crosses it, the policy "
        "plays --confirm-episodes seeded episodes off the training clock (the judged policy: "
        "greedy; IMPALA/APPO sampled where the training return judges); the target counts when "
        "their mean reaches it",
    )
    b.add_argument(
        "--confirm-episodes",
        type=count(0),
        help="seeded episodes a crossing of --stop-reward plays to confirm it (0: the first "
        "crossing counts, as RLlib's tuned examples stop)",
    )
    b.add_argument(
        "--time-budget-s",
        type=positive_float,
        help="the sweep's wall-clock cap, its runs and resumes together: where it runs out the "
        "sweep stops as at Ctrl-C, says it was cut short and prints the --resume command (with a "
        "larger cap: --resume FOLDER --time-budget-s N) that finishes the same search",
    )
    b.add_argument(
        "--stop-train-time-s",
        type=positive_float,
        help="stop a trial after this much training wall-clock (evaluation excluded)",
    )
    b.add_argument(
        "--as-test",
        action="store_true",
        help="exit non-zero unless some trial reached --stop-reward",
    )
    b.add_argument(
        "--smoke", action="store_true", help="same code path, tiny budget (a few hundred steps)"
    )

    r = p.add_argument_group("resources")
    r.add_argument("--num-env-runners", type=count(0), help="CPU env runners per trial")
    r.add_argument("--num-envs-per-env-runner", type=count(1), help="vectorised envs per runner")
    r.add_argument(
        "--num-gpus-per-learner",
        type=_gpus,
        help="GPUs per learner (default: 1 when the cluster has a GPU, else 0)",
    )
    r.add_argument("--num-learners", type=count(0), help="remote learners (0: in the trial)")
    r.add_argument(
        "--address", help="existing Ray cluster to run on (e.g. auto); default: start a local Ray"
    )
    r.add_argument(
        "--num-cpus",
        type=count(1),
        help="CPUs the sweep's own Ray declares (as ray start --num-cpus; default: the "
        "machine's cores). More than the cores runs more env runners than cores on purpose: "
        "each process single-threaded, each busy one at a share of a core; env steps to target "
        "compare, and each result predicts its time on a core per process (docs/scaling.md)",
    )
    r.add_argument(
        "--env-runner-resource",
        metavar="NAME",
        help="custom resource that only CPU worker nodes declare; env runners ask for 0.01 of it "
        "so they run there (auto: cpu_worker if the cluster declares it; none: no constraint)",
    )
    r.add_argument(
        "--placement-strategy",
        choices=["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"],
        help="how a trial's bundles spread over nodes (RLlib's placement_strategy)",
    )

    o = p.add_argument_group("output")
    o.add_argument("--storage-path", help="where sweep folders are written")
    o.add_argument("--name", help="sweep folder name (default: <sweep>-<date>-<time>)")
    o.add_argument(
        "--eval-interval",
        type=count(0),
        help="greedy evaluation every N iterations (0: off; cab trials are then judged by the "
        "training return)",
    )
    o.add_argument("--eval-episodes", type=count(1), help="episodes per greedy evaluation")
    o.add_argument(
        "--eval-share",
        type=_share,
        help="the most periodic greedy evaluation may cost, as a share of the training clock: "
        "an evaluation --eval-interval asks for is skipped where it would take evaluation over "
        "it (the first always runs; the confirmed target's checks never skip); 0: every "
        "--eval-interval iterations whatever it costs",
    )
    o.add_argument(
        "--iteration-s",
        type=positive_float,
        help="minimum wall-clock per training iteration (the resolution of time-to-reward); "
        "default: the algorithm's own",
    )
    o.add_argument(
        "--checkpoint-freq",
        type=count(0),
        help="checkpoint every N iterations and at the end (0: never; resume then restarts "
        "unfinished trials)",
    )
    o.add_argument(
        "--final-episodes",
        type=count(0),
        help="at the end, the best trial's final checkpoint and the runners-up within noise "
        "of it (every trial in benchmark mode) play this many held-out greedy episodes, the "
        "same for every trial; the best trial is picked by their mean (0: off; default: 100 "
        "on cabs, 0 elsewhere)",
    )
    o.add_argument("--max-failures", type=count(0), help="retries of a failing trial")
    o.add_argument("--verbose", action="store_true", help="show the trial processes' own logs")
    o.add_argument(
        "--resume",
        metavar="PATH",
        help="continue the interrupted sweep in PATH with its recorded settings (finished "
        "trials are kept, unfinished ones resume from their checkpoints, errored ones restart); "
        "only --address, --verbose and --progress-interval-s may be given with it",
    )
    o.add_argument(
        "--progress-interval-s", type=positive_float, help="seconds between progress tables"
    )
    o.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (resources, bundles, trials at once), the folder, the budget and "
        "the search space, then exit without starting trials or writing anything",
    )

    sweep.workload.add_arguments(p)  # --variant (cabs), --env / --env-config / --target (gym)
    # Held-out episodes at the end (sweeps/harness/held_out_pick.py): a second or two per cab trial;
    # on Pong a greedy game takes seconds to minutes, so it is asked for there.
    # Seeded episodes that confirm a crossing of --stop-reward (sweeps/harness/confirm.py): the
    # workload's (Pong: 10 full games; elsewhere 100, a tight interval).
    per_workload = {
        "final_episodes": sweep.workload.final_episodes,
        "confirm_episodes": sweep.workload.confirm_episodes,
        "eval_share": sweep.workload.eval_share,
    }
    p.set_defaults(**{**SHARED_DEFAULTS, **per_workload, **sweep.defaults})
    return p


def env_config(text: str) -> dict[str, Any]:
    """``--env-config``: a JSON object."""
    from envs.gym import parse_env_config

    try:
        return parse_env_config(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--env-config ")) from None


class NoVariants(argparse.Action):
    """``--variant`` / ``--tm-seed`` on a generic env: refused, one line saying why."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        env = getattr(namespace, "env", None) or "this env"
        parser.error(
            f"{option_string}: {env} has no variants (only the cab env has: --env cabs, or "
            "sweeps/<algo>_cabs.py); pass the env's own settings with --env-config '{...}'"
        )


def add_gym_arguments(group: Any, *, without_variant_flags: bool = False) -> None:
    """``--env``, ``--env-config`` and ``--target`` of the generic workload (the sweeps
    ``sweeps/<algo>_gym.py``; the benchmark shares the last two and has its own ``--env``),
    and ``--variant`` / ``--tm-seed`` refused with a reason."""
    if not without_variant_flags:
        group.add_argument(
            "--env",
            metavar="ID",
            help="a registered Gymnasium id (CartPole-v1, ALE/Breakout-v5) or an entry point "
            "package.module:Name (a gymnasium.Env subclass, or a factory taking the env config)",
        )
    group.add_argument(
        "--env-config",
        type=env_config,
        metavar="JSON",
        help="the env's settings as a JSON object, e.g. '{\"size\": 8}' (gym.make keyword "
        "arguments for an id)",
    )
    group.add_argument(
        "--target",
        type=_finite_float,
        nargs="+",
        metavar="RETURN",
        help="greedy returns whose time-to-reward the report shows (default: the env spec's "
        "reward_threshold, if it has one)",
    )
    if not without_variant_flags:
        group.add_argument("--variant", nargs="?", action=NoVariants)
        group.add_argument("--tm-seed", nargs="?", action=NoVariants)


def flag_values(sweep: Sweep, argv: Sequence[str] | None = None) -> Settings:
    """The sweep's flags as given and defaulted, without the run's checks and derived settings
    (``parse_args`` has them): the settings a tool builds a sweep's config from."""
    return Settings.from_dict(vars(build_parser(sweep).parse_args(list(argv or []))))


def parse_args(sweep: Sweep, argv: Sequence[str] | None, *, new_folder: bool = True) -> Settings:
    """The sweep's settings, checked; ``new_folder=False`` reads the flags of a run whose folder
    exists (the benchmark's check of a folder it may reuse) without refusing it."""
    parser = build_parser(sweep)
    args = Settings.from_dict(vars(parser.parse_args(argv)))
    if args.resume is not None:
        return _resume_args(sweep, parser, args, argv)
    variant_defaults = sweep.variant_defaults.get(getattr(args, "variant", None), {})
    if variant_defaults:
        explicit = _explicit_flags(parser, argv)
        for key, value in variant_defaults.items():
            if key not in explicit:
                setattr(args, key, value)
    _scale_recipe(sweep, args, _explicit_flags(parser, argv))
    try:  # the workload's flags (a Gymnasium env: built and checked against the algorithm)
        sweep.workload.check(sweep.algo, args)
    except ValueError as e:
        parser.error(str(e))
    if "confirm_episodes" not in _explicit_flags(parser, argv):  # e.g. an ALE game's 10
        args.confirm_episodes = sweep.workload.episodes_to_confirm(args)
    # The cap's default comes from the plan's prediction where none is given (budget.py)
    args.cap_from_plan = "time_budget_s" not in _explicit_flags(parser, argv)
    if args.benchmark_seeds and "max_concurrent_trials" not in _explicit_flags(parser, argv):
        # A sweep's trials at once are its search's: a benchmark's seeds run one at a time where
        # the cores hold one (their times are the records), unless asked
        args.max_concurrent_trials = SHARED_DEFAULTS["max_concurrent_trials"]
    if args.benchmark_seeds and "time_budget_s" not in _explicit_flags(parser, argv):
        # The sweep's default budget is its search's: a benchmark runs every seed to its stop
        # (a 900 s budget cut the third seed of a 600 s benchmark).
        args.time_budget_s = None
    if args.smoke:
        explicit = _explicit_flags(parser, argv)
        for key, value in {**SMOKE_DEFAULTS, **sweep.smoke}.items():
            if key not in explicit:
                setattr(args, key, value)
        if "final_episodes" not in explicit:  # the same end, on a few held-out episodes
            args.final_episodes = min(args.final_episodes, SMOKE_FINAL_EPISODES)
    if args.as_test and args.stop_reward is None:
        parser.error("--as-test needs --stop-reward")
    if args.num_cpus is not None and (args.address or os.environ.get("RAY_ADDRESS")):
        parser.error(
            "--num-cpus sizes the sweep's own Ray; a cluster (--address, RAY_ADDRESS) declares "
            "its CPUs itself (ray start --num-cpus on each node)"
        )
    if args.configs_from is not None:
        _configs_from(sweep, parser, args, argv)
    if args.name is None:
        args.name = f"{sweep.name}-{dt.datetime.now():%Y%m%d-%H%M%S}"
    if os.sep in args.name or args.name in {".", ".."}:
        parser.error(f"--name must be a plain folder name, got {args.name!r}")
    try:
        if new_folder:
            _check_storage(args.storage_path, args.name)
    except UsageError as e:
        parser.error(str(e))
    if args.optuna_storage is not None:
        if args.benchmark_seeds:
            parser.error("--optuna-storage: --benchmark-seeds runs no search; drop one of them")
        try:
            args.optuna_storage = storage.optuna_storage_url(args.optuna_storage)
        except UsageError as e:
            parser.error(f"--optuna-storage {args.optuna_storage}: {e}")
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def _scale_recipe(sweep: Sweep, args: Settings, explicit: set[str]) -> None:
    """--num-env-runners N on a recipe with a scaling rule (``Sweep.scaling``): its envs spread
    over the N runners unless --num-envs-per-env-runner was given."""
    if sweep.scaling is None or "num_envs_per_env_runner" in explicit:
        return
    base_runners = int(sweep.defaults.get("num_env_runners", SHARED_DEFAULTS["num_env_runners"]))
    args.num_envs_per_env_runner = sweep.scaling.envs_per_runner(
        base_runners, int(args.num_envs_per_env_runner), int(args.num_env_runners)
    )


def scaling_line(sweep: Sweep, args: Settings) -> str | None:
    """What the plan says of a recipe run at another env-runner count than its own."""
    scaling = sweep.scaling
    base_runners = int(sweep.defaults.get("num_env_runners", SHARED_DEFAULTS["num_env_runners"]))
    if scaling is None or args.num_env_runners == base_runners:
        return None
    base_envs = sweep.defaults.get(
        "num_envs_per_env_runner", SHARED_DEFAULTS["num_envs_per_env_runner"]
    )
    envs = args.num_envs_per_env_runner
    return (
        f"[plan] the recipe at {args.num_env_runners} env runner(s) (tuned at {base_runners} x "
        f"{base_envs} envs): {envs} env(s) per runner, {envs * max(args.num_env_runners, 1)} in "
        f"all; {scaling.note}"
    )


def _configs_from(
    sweep: Sweep,
    parser: argparse.ArgumentParser,
    args: Settings,
    argv: Sequence[str] | None,
) -> None:
    """--configs-from: one trial per configuration of the source sweep (its folder checked and
    read here, before Ray starts)."""
    from sweeps.harness.configs_from import source_points

    clash = _explicit_flags(parser, argv) & {"num_samples", "benchmark_seeds", "search"}
    if clash:
        names = ", ".join(sorted("--" + d.replace("_", "-") for d in clash))
        parser.error(f"--configs-from runs that sweep's configurations; drop {names}")
    try:
        args.num_samples = len(source_points(sweep, args))
    except UsageError as e:
        parser.error(str(e))
    args.configs_from = str(Path(args.configs_from).expanduser().resolve())


def _explicit_flags(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """Destinations the user set on the command line (they win over --smoke's budget)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    explicit = set()
    for action in parser._actions:
        if any(a == opt or a.startswith(opt + "=") for a in argv for opt in action.option_strings):
            explicit.add(action.dest)
    return explicit


def _check_storage(storage_path: str, name: str) -> None:
    """A new sweep folder ``<storage>/<name>``, checked without writing anything: refused when
    it exists (continue it with --resume), when a local folder cannot be created or written,
    or when a storage URI names a filesystem pyarrow cannot use or cannot reach."""
    flag = f"--storage-path {storage_path}"
    scheme = storage.mangled_scheme(storage_path)
    if scheme:
        raise UsageError(f"{flag}: a storage URI takes two slashes ({scheme}://...)")
    target = storage.sweep_folder(storage_path, name)
    try:
        storage.filesystem(storage.root(storage_path))  # a scheme pyarrow knows
        local = storage.local_path(target)
        exists = local.exists() if local is not None else storage.kind(target) != "missing"
    except UsageError as e:
        raise UsageError(f"{flag}: {e}") from None
    except OSError as e:  # no credentials, no network, no such bucket
        raise UsageError(f"{flag} cannot be reached: {error_line(str(e))}") from None
    if exists:
        raise UsageError(
            f"{target} already exists; choose another --name, or continue it with --resume {target}"
        )
    if local is not None:
        try:
            check_writable(local)
        except UsageError as e:
            raise UsageError(f"{flag} cannot be written: {e}") from None


def read_resumable(sweep_name: str, path: str) -> tuple[str, RunRecord]:
    """The sweep folder ``path`` (a local path, resolved, or a storage URI) and its run record,
    or a UsageError saying why it cannot be resumed by ``sweep_name``: not a folder, no
    (readable) run.json, another sweep's folder, no Tune experiment state, already finished, or
    not writable."""
    experiment = storage.root(path)
    try:
        kind = storage.kind(experiment)
        names = storage.names(experiment) if kind == "dir" else []
    except UsageError as e:
        raise UsageError(f"--resume {path}: {e}") from None
    except OSError as e:
        raise UsageError(f"--resume {path} cannot be reached: {error_line(str(e))}") from None
    if kind == "missing":
        raise UsageError(f"--resume {path}: no such folder")
    if kind == "file":
        raise UsageError(f"--resume {path}: not a folder (expected a sweep folder)")
    if RECORD_FILE not in names:
        raise UsageError(f"--resume {path}: not a sweep folder (no {RECORD_FILE})")
    try:
        record = RunRecord.read(storage.join(experiment, RECORD_FILE))
    except OSError:
        raise UsageError(f"--resume {path}: {RECORD_FILE} cannot be read") from None
    except ValueError as e:
        raise UsageError(f"--resume {path}: {e}") from None
    if record.args is None:
        raise UsageError(f"--resume {path}: {RECORD_FILE} holds no recorded arguments")
    other = record.sweep
    if other != sweep_name:
        raise UsageError(
            f"--resume {path}: this folder belongs to sweep {other!r}; continue it with "
            f"python sweeps/{other}.py --resume {experiment}"
        )
    if "tuner.pkl" not in names or not any(
        n.startswith("experiment_state-") and n.endswith(".json") for n in names
    ):
        raise UsageError(
            f"--resume {path}: no Tune experiment state (the sweep never started); start it anew"
        )
    if record.status == "finished":
        raise UsageError(f"--resume {path}: the sweep already finished; nothing to resume")
    local = storage.local_path(experiment)
    if local is not None and not os.access(local, os.W_OK | os.X_OK):
        raise UsageError(f"--resume {path}: the folder cannot be written")
    return experiment, record


def _resume_args(
    sweep: Sweep,
    parser: argparse.ArgumentParser,
    args: Settings,
    argv: Sequence[str] | None,
) -> Settings:
    """The recorded settings of the sweep to resume (the run record is the source of truth)."""
    given = _explicit_flags(parser, argv)
    explicit = given - {"resume", *RESUME_RUNTIME_FLAGS, *RESUME_CAP_FLAGS}
    if explicit:
        names = ", ".join(sorted("--" + d.replace("_", "-") for d in explicit))
        parser.error(f"--resume continues with the recorded settings; drop {names}")
    try:
        experiment, record = read_resumable(sweep.name, args.resume)
    except UsageError as e:
        parser.error(str(e))
    # Defaults first (flags added since the record was written), then the recorded values; the
    # runtime flags come from this command line.
    merged = {**vars(parser.parse_args([])), **RECORDED_BEFORE, **(record.args or {})}
    merged.update({k: getattr(args, k) for k in RESUME_RUNTIME_FLAGS})
    merged.update({k: getattr(args, k) for k in RESUME_CAP_FLAGS if k in given})
    parent, name = storage.split(experiment)
    merged.update(
        storage_path=parent,
        name=name,
        resume=experiment,
        argv=list(sys.argv[1:] if argv is None else argv),
    )
    # A flag recorded then and since removed is dropped: nothing reads it any more.
    return Settings.from_dict(merged, strict=False)
