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
import math
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeps import keys
from sweeps.cli import build_parser, parse_args
from sweeps.placement import UsageError, make_plan
from sweeps.record import (
    git_commit,
    machine,
    search_space_description,
    versions,
    write_record,
)

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
    from ray.tune.schedulers import FIFOScheduler
    from ray.tune.search import BasicVariantGenerator
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

    if args.iteration_s is not None:  # same iteration length (time resolution) for every algo
        config.reporting(
            min_time_s_per_iteration=args.iteration_s, min_sample_timesteps_per_iteration=0
        )
    if args.num_gpus_per_learner is None:
        has_gpu = ray.cluster_resources().get("GPU", 0) > 0
        config.learners(num_gpus_per_learner=1 if has_gpu else 0)
    algo_cls = config.algo_class
    try:
        plan = make_plan(algo_cls, config, args.max_concurrent_trials)
    except UsageError as e:
        print(f"{build_parser(sweep).prog}: error: {e}", file=sys.stderr)
        return 2
    print(plan.describe(args.benchmark_seeds or args.num_samples), flush=True)

    optimum = None
    if sweep.env == "cabs":
        from envs.optimum import optimum_value

        optimum = float(optimum_value(args.variant, tm_seed=args.tm_seed))

    metric = keys.flat(keys.RETURN_MEAN)
    env_steps = keys.flat(keys.ENV_STEPS)
    stop_key = keys.flat(_stop_key(sweep))
    experiment = Path(args.storage_path).expanduser().resolve() / args.name

    param_space = config.to_dict()
    if args.benchmark_seeds:  # benchmark mode: the tuned defaults, one trial per seed
        seeds = list(range(args.seed, args.seed + args.benchmark_seeds))
        param_space["seed"] = tune.grid_search(seeds)
        searcher, num_samples = BasicVariantGenerator(), 1
        scheduler, scheduler_info = FIFOScheduler(), {"type": "fifo"}
    else:
        sampler = (
            optuna.samplers.TPESampler(seed=args.seed, n_startup_trials=min(5, args.num_samples))
            if args.search == "optuna"
            else optuna.samplers.RandomSampler(seed=args.seed)
        )
        searcher = OptunaSearch(
            space=sweep.sample_params, metric=metric, mode="max", sampler=sampler
        )
        num_samples = args.num_samples
        scheduler, scheduler_info = _scheduler(args, metric, env_steps)

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
        "kind": "benchmark" if args.benchmark_seeds else "sweep",
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
        "git_commit": git_commit(),
        "versions": versions(),
        "machine": machine(plan),
        "plan": {"bundles": plan.bundles, "strategy": plan.strategy, "concurrent": plan.concurrent},
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "ended_at": None,
        "status": "running",
    }
    record_path = experiment / "run.json"
    write_record(record_path, record)

    tuner = tune.Tuner(
        algo_cls,
        param_space=param_space,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=num_samples,
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


def _scheduler(args, metric: str, env_steps: str) -> tuple[Any, dict[str, Any]]:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if args.scheduler == "fifo":
        return FIFOScheduler(), {"type": "fifo"}
    info = {
        "type": "asha",
        "time_attr": env_steps,
        "max_t": args.stop_timesteps,
        "grace_period": min(args.grace_period, args.stop_timesteps),
        "reduction_factor": args.reduction_factor,
    }
    scheduler = ASHAScheduler(
        metric=metric,
        mode="max",
        **{k: v for k, v in info.items() if k != "type"},
    )
    return scheduler, info


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
