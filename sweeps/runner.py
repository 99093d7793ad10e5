"""The one shared runner: parse → validate → plan resources → Tune search → summary.

A sweep file (``sweeps/<algo>_<env>.py``) states only what differs and hands a ``Sweep`` to
``run()``: the algorithm config with tuned defaults, its Optuna search space (a zoo-style
``sample_params(trial)`` function returning real config values), and its default budget. Everything
else — the flags, Optuna/ASHA, placement, TensorBoard HParams, the run record, the summary and exit
code — lives here, once.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeps import keys

# ------------------------------------------------------------------------------------------------
# What a sweep file provides
# ------------------------------------------------------------------------------------------------

SampleFn = Callable[[Any], dict[str, Any]]  # optuna.Trial -> {config key ("a/b" nested): value}
ConfigFn = Callable[[argparse.Namespace], Any]  # args -> AlgorithmConfig (tuned defaults)


@dataclass(frozen=True)
class Sweep:
    """What differs between sweeps. ``defaults`` and ``smoke`` override the shared flags."""

    name: str  # "dqn_cabs"
    algo: str  # "dqn" | "apex" | "impala" | "appo"
    env: str  # "cabs" | "pong"
    make_config: ConfigFn
    sample_params: SampleFn
    defaults: dict[str, Any] = field(default_factory=dict)
    smoke: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    # Extra metrics (beyond the curated set) shown in TensorBoard's HParams tab.
    extra_metrics: tuple[keys.Key, ...] = ()
    # Called once in the driver before Tune starts (e.g. to register a custom trainable).
    setup: Callable[[], None] | None = None


# Flags whose values a sweep may override; every sweep shares this parser.
SHARED_DEFAULTS: dict[str, Any] = {
    "num_samples": 8,
    "max_concurrent_trials": 0,
    "stop_timesteps": 50_000,
    "stop_reward": None,
    "time_budget_s": None,
    "storage_path": "runs",
    "name": None,
    "seed": 0,
    "search": "optuna",
    "scheduler": "asha",
    "grace_period": 10_000,
    "reduction_factor": 3,
    "num_env_runners": 1,
    "num_envs_per_env_runner": 1,
    "num_gpus_per_learner": None,
    "num_learners": 0,
    "eval_interval": 1,
    "eval_episodes": 5,
    "checkpoint_freq": 0,
    "max_failures": 2,
    "address": None,
    "variant": "base",
    "tm_seed": 0,
    "progress_interval_s": 20.0,
    "verbose": False,
}

# --smoke: same code path, tiny budget (one or two trials, a few hundred env steps).
SMOKE_DEFAULTS: dict[str, Any] = {
    "num_samples": 2,
    "stop_timesteps": 400,
    "grace_period": 200,
    "time_budget_s": 240.0,
    "progress_interval_s": 5.0,
}


# ------------------------------------------------------------------------------------------------
# Parsing and validation (before Ray starts and before anything is written)
# ------------------------------------------------------------------------------------------------


class UsageError(Exception):
    """Bad input: one clear line, exit code 2, nothing written."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage too by default)
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _count(min_value: int) -> Callable[[str], int]:
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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return value


def _gpus(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GPUs, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def build_parser(sweep: Sweep) -> argparse.ArgumentParser:
    """The shared parser: kebab-case flags with help text; a sweep changes defaults only."""
    p = _Parser(
        prog=f"python sweeps/{sweep.name}.py",
        description=sweep.description or f"{sweep.algo} sweep on {sweep.env}",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    s = p.add_argument_group("search")
    s.add_argument("--num-samples", type=_count(1), help="trials to sample")
    s.add_argument(
        "--max-concurrent-trials",
        type=_count(0),
        help="trials running at once (0: as many as the cluster's resources hold)",
    )
    s.add_argument("--search", choices=["optuna", "random"], help="Optuna TPE or random sampling")
    s.add_argument("--scheduler", choices=["asha", "fifo"], help="ASHA early stopping or none")
    s.add_argument(
        "--grace-period", type=_count(1), help="ASHA: env steps before a trial can be stopped"
    )
    s.add_argument("--reduction-factor", type=_count(2), help="ASHA: keep 1/this per rung")
    s.add_argument("--seed", type=_count(0), help="seeds the searcher and every trial")

    b = p.add_argument_group("budget")
    b.add_argument("--stop-timesteps", type=_count(1), help="env steps sampled per trial")
    b.add_argument(
        "--stop-reward",
        type=_finite_float,
        help="stop a trial once its return reaches this (greedy return on cabs)",
    )
    b.add_argument("--time-budget-s", type=_positive_float, help="wall-clock budget of the sweep")
    b.add_argument(
        "--as-test",
        action="store_true",
        help="exit non-zero unless some trial reached --stop-reward",
    )
    b.add_argument(
        "--smoke", action="store_true", help="same code path, tiny budget (a few hundred steps)"
    )

    r = p.add_argument_group("resources")
    r.add_argument("--num-env-runners", type=_count(0), help="CPU env runners per trial")
    r.add_argument("--num-envs-per-env-runner", type=_count(1), help="vectorised envs per runner")
    r.add_argument(
        "--num-gpus-per-learner",
        type=_gpus,
        help="GPUs per learner (default: 1 when the cluster has a GPU, else 0)",
    )
    r.add_argument("--num-learners", type=_count(0), help="remote learners (0: in the trial)")
    r.add_argument(
        "--address", help="existing Ray cluster to run on (e.g. auto); default: start a local Ray"
    )

    o = p.add_argument_group("output")
    o.add_argument("--storage-path", help="where sweep folders are written")
    o.add_argument("--name", help="sweep folder name (default: <sweep>-<date>-<time>)")
    o.add_argument("--eval-interval", type=_count(1), help="greedy evaluation every N iterations")
    o.add_argument("--eval-episodes", type=_count(1), help="episodes per greedy evaluation")
    o.add_argument("--checkpoint-freq", type=_count(0), help="checkpoint every N iterations")
    o.add_argument("--max-failures", type=_count(0), help="retries of a failing trial")
    o.add_argument("--verbose", action="store_true", help="show the trial processes' own logs")
    o.add_argument(
        "--progress-interval-s", type=_positive_float, help="seconds between progress tables"
    )

    if sweep.env == "cabs":
        c = p.add_argument_group("cab env")
        c.add_argument(
            "--variant",
            choices=["base", "requests"],
            help="base: the seed article's env; requests: the full SuperCabs MDP (masked)",
        )
        c.add_argument("--tm-seed", type=_count(0), help="seed of the city's travel-time matrix")

    p.set_defaults(**{**SHARED_DEFAULTS, **sweep.defaults})
    return p


def parse_args(sweep: Sweep, argv: Sequence[str] | None) -> argparse.Namespace:
    parser = build_parser(sweep)
    args = parser.parse_args(argv)
    if args.smoke:
        explicit = _explicit_flags(parser, argv)
        for key, value in {**SMOKE_DEFAULTS, **sweep.smoke}.items():
            if key not in explicit:
                setattr(args, key, value)
    if args.as_test and args.stop_reward is None:
        parser.error("--as-test needs --stop-reward")
    if args.name is None:
        args.name = f"{sweep.name}-{dt.datetime.now():%Y%m%d-%H%M%S}"
    if os.sep in args.name or args.name in {".", ".."}:
        parser.error(f"--name must be a plain folder name, got {args.name!r}")
    try:
        _check_storage(Path(args.storage_path), args.name)
    except UsageError as e:
        parser.error(str(e))
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def _explicit_flags(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """Destinations the user set on the command line (they win over --smoke's budget)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    explicit = set()
    for action in parser._actions:
        if any(a == opt or a.startswith(opt + "=") for a in argv for opt in action.option_strings):
            explicit.add(action.dest)
    return explicit


def _check_storage(storage: Path, name: str) -> None:
    target = storage.expanduser().resolve() / name
    if target.exists():
        raise UsageError(
            f"{target} already exists; choose another --name, or continue it with --resume {target}"
        )
    existing = storage.expanduser().resolve()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--storage-path {storage} cannot be written")


# ------------------------------------------------------------------------------------------------
# Resources: read the cluster, print the plan, refuse what cannot fit
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    cpus: float
    gpus: float
    bundles: list[dict[str, float]]
    strategy: str
    concurrent: int

    @property
    def trial_cpus(self) -> float:
        return sum(b.get("CPU", 0.0) for b in self.bundles)

    @property
    def trial_gpus(self) -> float:
        return sum(b.get("GPU", 0.0) for b in self.bundles)

    def describe(self, num_samples: int) -> str:
        parts = []
        for i, bundle in enumerate(self.bundles):
            what = "learner/driver" if i == 0 else "env runner"
            res = ", ".join(f"{v:g} {k}" for k, v in sorted(bundle.items()) if v)
            parts.append(f"{what}: {res or 'nothing'}")
        return "\n".join(
            [
                f"[plan] cluster: {self.cpus:g} CPUs, {self.gpus:g} GPUs",
                f"[plan] each trial: {len(self.bundles)} bundles ({'; '.join(parts)}), "
                f"placement {self.strategy}",
                f"[plan] learner on {'GPU' if self.trial_gpus else 'CPU'}; "
                f"{self.concurrent} trial(s) at once, {num_samples} in all",
            ]
        )


def make_plan(algo_cls: Any, config: Any, max_concurrent: int) -> Plan:
    import ray

    total = ray.cluster_resources()
    cpus, gpus = float(total.get("CPU", 0)), float(total.get("GPU", 0))
    pgf = algo_cls.default_resource_request(config)
    bundles = [dict(b) for b in pgf.bundles]
    plan = Plan(cpus, gpus, bundles, pgf.strategy, 0)
    if plan.trial_cpus > cpus or plan.trial_gpus > gpus:
        raise UsageError(
            f"one trial needs {plan.trial_cpus:g} CPUs and {plan.trial_gpus:g} GPUs but the "
            f"cluster has {cpus:g} CPUs and {gpus:g} GPUs; lower --num-env-runners "
            f"(now {config.num_env_runners}) or --num-gpus-per-learner"
        )
    fits = int(cpus // plan.trial_cpus) if plan.trial_cpus else 1 << 16
    if plan.trial_gpus:
        fits = min(fits, int(gpus // plan.trial_gpus))
    concurrent = max(1, fits if max_concurrent == 0 else min(fits, max_concurrent))
    return Plan(cpus, gpus, bundles, pgf.strategy, concurrent)


# ------------------------------------------------------------------------------------------------
# The run record
# ------------------------------------------------------------------------------------------------


def _git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=5,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("ray", "torch", "gymnasium", "ale-py", "optuna", "numpy", "tensorboard"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _machine(plan: Plan) -> dict[str, Any]:
    import platform

    cpu_model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": plan.cpus,
        "gpus": plan.gpus,
        "cpu_model": cpu_model,
        "platform": platform.platform(),
    }


def search_space_description(sample_params: SampleFn) -> dict[str, str]:
    """Run the sample function against a recorder to describe the space (for run.json)."""
    import optuna

    space: dict[str, str] = {}

    class Recorder:
        def suggest_float(self, name, low, high, *, log=False, step=None):
            space[name] = f"{'loguniform' if log else 'uniform'}({low:g}, {high:g})"
            return low

        def suggest_int(self, name, low, high, *, step=1, log=False):
            space[name] = f"{'logint' if log else 'int'}({low}, {high})"
            return low

        def suggest_categorical(self, name, choices):
            space[name] = f"choice({list(choices)})"
            return choices[0]

    sample_params(Recorder())
    _ = optuna  # the real searcher passes an optuna.Trial with the same interface
    return space


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        if isinstance(value, dict):
            return {str(k): _jsonable(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_jsonable(v) for v in value]
        return repr(value)


def write_record(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_jsonable(record), indent=2, sort_keys=True))
    tmp.replace(path)


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------


def _targets(sweep: Sweep, optimum: float | None) -> list[float]:
    if sweep.env == "cabs":
        return [2500.0] + ([round(0.95 * optimum, 1)] if optimum else [])
    return [18.0, 20.0]


def _stop_key(sweep: Sweep) -> keys.Key:
    """The return a trial must reach for --stop-reward/--as-test: greedy on cabs."""
    return keys.GREEDY_RETURN if sweep.env == "cabs" else keys.RETURN_MEAN


def run(sweep: Sweep, argv: Sequence[str] | None = None) -> int:
    """Parse, validate, plan and run one sweep. Returns the process exit code."""
    args = parse_args(sweep, argv)  # exits 2 on bad input, before Ray starts

    import optuna
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler
    from ray.tune.search.optuna import OptunaSearch

    from envs import register_envs

    try:
        config = sweep.make_config(args)
    except ValueError as e:  # e.g. an ill-typed env-config value
        print(f"{build_parser(sweep).prog}: error: {e}", file=sys.stderr)
        return 2

    if not ray.is_initialized():
        # Trial processes' own logs (RLlib's warnings) stay in the sweep folder's Ray logs unless
        # --verbose: the terminal shows the progress table.
        ray.init(
            address=args.address,
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=args.verbose,
        )
    register_envs()
    if sweep.setup is not None:
        sweep.setup()

    if args.num_gpus_per_learner is None:
        has_gpu = ray.cluster_resources().get("GPU", 0) > 0
        config.learners(num_gpus_per_learner=1 if has_gpu else 0)
    algo_cls = config.algo_class
    try:
        plan = make_plan(algo_cls, config, args.max_concurrent_trials)
    except UsageError as e:
        print(f"{build_parser(sweep).prog}: error: {e}", file=sys.stderr)
        return 2
    print(plan.describe(args.num_samples), flush=True)

    optimum = None
    if sweep.env == "cabs":
        from envs.optimum import optimum_value

        optimum = float(optimum_value(args.variant, tm_seed=args.tm_seed))

    metric = keys.flat(keys.RETURN_MEAN)
    env_steps = keys.flat(keys.ENV_STEPS)
    stop_key = keys.flat(_stop_key(sweep))
    experiment = Path(args.storage_path).expanduser().resolve() / args.name

    sampler = (
        optuna.samplers.TPESampler(seed=args.seed, n_startup_trials=min(5, args.num_samples))
        if args.search == "optuna"
        else optuna.samplers.RandomSampler(seed=args.seed)
    )
    searcher = OptunaSearch(space=sweep.sample_params, metric=metric, mode="max", sampler=sampler)
    if args.scheduler == "asha":
        scheduler = ASHAScheduler(
            time_attr=env_steps,
            metric=metric,
            mode="max",
            max_t=args.stop_timesteps,
            grace_period=min(args.grace_period, args.stop_timesteps),
            reduction_factor=args.reduction_factor,
        )
        scheduler_info = {
            "type": "asha",
            "time_attr": env_steps,
            "max_t": args.stop_timesteps,
            "grace_period": min(args.grace_period, args.stop_timesteps),
            "reduction_factor": args.reduction_factor,
        }
    else:
        scheduler, scheduler_info = FIFOScheduler(), {"type": "fifo"}

    stop_reward = args.stop_reward

    def stopper(trial_id: str, result: dict) -> bool:
        if (keys.get(result, keys.ENV_STEPS) or 0) >= args.stop_timesteps:
            return True
        reached = keys.get(result, _stop_key(sweep))
        return stop_reward is not None and reached is not None and reached >= stop_reward

    from sweeps.reporting import HParamsLoggerCallback, ProgressCallback

    progress = ProgressCallback(interval_s=args.progress_interval_s)
    record = {
        "sweep": sweep.name,
        "algo": sweep.algo,
        "env": sweep.env,
        "variant": args.variant if sweep.env == "cabs" else None,
        "env_id": config.env,
        "kind": "sweep",
        "command": " ".join(["python", f"sweeps/{sweep.name}.py", *args.argv]),
        "argv": args.argv,
        "args": {k: v for k, v in vars(args).items() if k != "argv"},
        "hyperparameters": sorted(k.replace("/", ".") for k in _sampled_keys(sweep.sample_params)),
        "search_space": search_space_description(sweep.sample_params),
        "base_config": config.to_dict(),
        "metric": metric,
        "mode": "max",
        "stop": {env_steps: args.stop_timesteps, stop_key: stop_reward},
        "scheduler": scheduler_info,
        "optimum": optimum,
        "targets": _targets(sweep, optimum),
        "git_commit": _git_commit(),
        "versions": _versions(),
        "machine": _machine(plan),
        "plan": {"bundles": plan.bundles, "strategy": plan.strategy, "concurrent": plan.concurrent},
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "ended_at": None,
        "status": "running",
    }
    record_path = experiment / "run.json"
    write_record(record_path, record)

    tuner = tune.Tuner(
        algo_cls,
        param_space=config.to_dict(),
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=args.num_samples,
            max_concurrent_trials=plan.concurrent,
            time_budget_s=args.time_budget_s,
            reuse_actors=False,
            trial_name_creator=_trial_name,
            trial_dirname_creator=_trial_name,
        ),
        run_config=tune.RunConfig(
            name=args.name,
            storage_path=str(experiment.parent),
            stop=stopper,
            callbacks=[HParamsLoggerCallback(sweep.extra_metrics), progress],
            checkpoint_config=tune.CheckpointConfig(
                checkpoint_frequency=args.checkpoint_freq,
                checkpoint_at_end=args.checkpoint_freq > 0,
                num_to_keep=2,
            ),
            failure_config=tune.FailureConfig(max_failures=args.max_failures),
            verbose=0,
        ),
    )
    interrupted = {"flag": False}
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):  # SIGTERM: behave like Ctrl-C (Tune saves and stops)
        interrupted["flag"] = True
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, on_term)
    try:
        results = tuner.fit()
    except KeyboardInterrupt:
        interrupted["flag"] = True
        results = None
    finally:
        signal.signal(signal.SIGTERM, previous)

    return _finish(sweep, args, results, record, record_path, experiment, interrupted["flag"])


def _sampled_keys(sample_params: SampleFn) -> list[str]:
    class Recorder:
        def suggest_float(self, name, low, high, **kw):
            return low

        def suggest_int(self, name, low, high, **kw):
            return low

        def suggest_categorical(self, name, choices):
            return choices[0]

    return sorted(sample_params(Recorder()).keys())


def _finish(sweep, args, results, record, record_path, experiment, interrupted) -> int:
    errors = [] if results is None else [r for r in results if r.error is not None]
    record["ended_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if interrupted or results is None:
        record["status"] = "interrupted"
    else:
        record["status"] = "failed" if errors else "finished"
    write_record(record_path, record)

    print()
    if results is None or len(results) == 0:
        print(f"[sweep] no results; sweep folder: {experiment}")
        return 130 if interrupted else 1
    best = None
    best_value = -math.inf
    stop_key = _stop_key(sweep)
    reached_any = False
    for r in results:
        m = r.metrics or {}
        value = keys.get(m, stop_key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            value = keys.get(m, keys.RETURN_MEAN)
        if value is not None and not math.isnan(value) and value > best_value:
            best, best_value = r, value
        if (
            args.stop_reward is not None
            and (keys.get(m, stop_key) or -math.inf) >= args.stop_reward
        ):
            reached_any = True
    print(f"[sweep] {len(results)} trial(s), {len(errors)} errored; folder: {experiment}")
    if best is not None:
        m = best.metrics
        print(f"[sweep] best trial: {Path(best.path).name}")
        print(
            f"[sweep]   return {_f(keys.get(m, keys.RETURN_MEAN))}, greedy "
            f"{_f(keys.get(m, keys.GREEDY_RETURN))}, env steps {_f(keys.get(m, keys.ENV_STEPS), 0)}"
            f", training time {_f(keys.get(m, keys.TRAIN_TIME_S))} s"
        )
        pct = keys.get(m, keys.PCT_OF_OPTIMUM)
        if pct is not None:
            print(
                f"[sweep]   greedy return = {_f(pct)}% of the exact optimum "
                f"({record['optimum']:.1f})"
            )
        from sweeps.reporting import _short

        hp = {h: _dotted(best.config, h) for h in record["hyperparameters"]}
        print("[sweep]   hyperparameters: " + ", ".join(f"{k}={_short(v)}" for k, v in hp.items()))
    for r in errors:
        print(f"[sweep] ERROR in {Path(r.path).name}: {str(r.error).strip().splitlines()[-1]}")
    print(f"[sweep] TensorBoard: tensorboard --logdir {experiment}")
    if interrupted:
        print(
            f"[sweep] interrupted; continue with: "
            f"python sweeps/{sweep.name}.py --resume {experiment}"
        )
        return 130
    if errors:
        return 1
    if args.as_test and not reached_any:
        print(f"[sweep] --as-test: no trial reached {keys.flat(stop_key)} >= {args.stop_reward}")
        return 1
    return 0


def _dotted(config: dict, path: str) -> Any:
    """A dotted hyperparameter from a config dict (RLlib stores some as ``_<name>``)."""
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node[part] if part in node else node.get(f"_{part}")
    return node


def _trial_name(trial: Any) -> str:
    return f"{trial.trainable_name}_{trial.trial_id}"


def _f(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"
