"""The one shared runner: parse → plan → search → fit → summarise.

A sweep file (``sweeps/<algo>_<env>.py``) states only what differs and hands a ``Sweep``
(``sweeps/harness/sweep.py``) to ``run()``. Everything else — the flags, Optuna/ASHA, placement,
TensorBoard HParams, the run record, the summary and exit code — lives here, once (the
summarise step's pieces in ``sweeps/harness/outcome.py``).

One file (over 500 lines): the run's steps share its searcher, scheduler and stop criteria, and
read top to bottom in the order they run.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sweeps.baselines.config import is_rllib
from sweeps.harness import (
    budget,
    confirm,
    cpu_time,
    keys,
    machine_speed,
    outcome,
    recovery,
    storage,
)
from sweeps.harness.cli import apply_settings, build_parser, parse_args, scaling_line
from sweeps.harness.configs_from import source_points
from sweeps.harness.dry_run import dry_run_lines
from sweeps.harness.errors import UsageError, error_line
from sweeps.harness.placement import (
    Plan,
    available_memory_gb,
    make_plan,
    oversubscription_lines,
)
from sweeps.harness.placement import configure as configure_placement
from sweeps.harness.record import (
    RECORD_FILE,
    RunRecord,
    cpu_model,
    git_commit,
    git_dirty,
    machine,
    versions,
)
from sweeps.harness.settings import Settings
from sweeps.harness.space import hyperparameters, search_space_description
from sweeps.harness.sweep import Sweep
from sweeps.harness.tuned import describe_first_trial, tuned_point

# Tune's switch for its own SIGINT handler (ray.tune.tune._setup_signal_catching); the runner's
# is recovery.on_stop_signal, which hands the stop to Tune's SIGUSR1 handler.
TUNE_SIGINT_OFF = "TUNE_DISABLE_SIGINT_HANDLER"
# Tune adds its own CSV, JSON and TensorBoard loggers unless told not to; the runner passes its
# own three (``_callbacks``), so Tune's would only write the same files twice, and its
# TensorBoard logger's presence makes Tune's reporter print a temporary folder to look in.
TUNE_AUTO_LOGGERS_OFF = "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"
INTERRUPTED_IN_START_UP = (
    "[sweep] interrupted during start-up: nothing trained; a sweep folder this call resumed is as "
    "it was"
)


def _targets(sweep: Sweep, args: Settings) -> list[float]:
    """The returns whose time-to-reward the report shows (the workload's: the cab env's
    fractions of its exact optimum, Pong's three, on any other env ``--target`` or the spec's
    reward_threshold; none: the report says so and shows final returns and curves)."""
    return sweep.workload.targets(args)


def _judged_by(sweep: Sweep, args: Settings) -> keys.Key:
    """The return that judges a trial: what Optuna maximises, what ASHA compares, what
    --stop-reward/--as-test and the best-trial pick use. Greedy (explore=False) on cabs: the
    training return there is the exploring actors' (Ape-X runs up to ε = 0.4), which ranks
    trials by their exploration more than by their policy; the same on any other env (the
    generic workload, whose targets are greedy returns: CartPole's 475 is "solved" greedily).
    Pong, and the others with greedy evaluation off (--eval-interval 0): the training return."""
    greedy = sweep.workload.greedy_judged and args.eval_interval > 0
    return keys.GREEDY_RETURN if greedy else keys.RETURN_MEAN


def _confirmation(sweep: Sweep, args: Settings) -> confirm.Spec | None:
    """The trial's confirmed target: --stop-reward, checked on --confirm-episodes seeded
    episodes at each crossing of the judged return (None: no --stop-reward, or 0 episodes)."""
    return confirm.spec(args.stop_reward, args.confirm_episodes, _judged_by(sweep, args))


def _stop_key(sweep: Sweep, args: Settings) -> keys.Key:
    """What --stop-reward stops on and --as-test asks for: the confirmation's return where
    the target is confirmed, else the judged return's first crossing."""
    return keys.CONFIRM_RETURN if _confirmation(sweep, args) else _judged_by(sweep, args)


def _live_estimate(sweep: Sweep, args: Settings) -> str:
    """What the progress line's best figure is: the last greedy evaluation's few episodes, or
    the training games' running mean; the sweep's held-out figure comes at its end."""
    if _judged_by(sweep, args) == keys.GREEDY_RETURN:
        n = args.eval_episodes
        return f"{n}-episode greedy estimate"
    return "running mean of training games"


def _experiment_dir(args: Settings) -> str:
    """The sweep folder: a local path (resolved) or a storage URI (``harness/storage.py``)."""
    return storage.sweep_folder(args.storage_path, args.name)


# ------------------------------------------------------------------------------------------------
# The run, in five steps
# ------------------------------------------------------------------------------------------------


def run(sweep: Sweep, argv: Sequence[str] | None = None) -> int:
    """Run one sweep: parse → plan → search → fit → summarise. Returns the process exit code:
    0, 1 (a trial errored, or --as-test missed its target), 2 (bad input), 130 (interrupted)."""
    recovery.INTERRUPTED.clear()
    budget.arm(None)
    with recovery.stop_signals_noted():  # Ctrl-C/SIGTERM, from here to the end: an interruption
        try:
            args, config = parse(sweep, argv)
            if sweep.no_search and not args.benchmark_seeds and not args.resume:
                raise UsageError(f"{sweep.name} has no search: {sweep.no_search}")
            # The machine's speed before Ray starts its processes (they share the cores)
            speed = None if args.dry_run else _machine_speed(sweep, args, "start")
            busy_at_start = cpu_time.read_machine(cpu_time.affinity())
            placement = plan(sweep, args, config)
            # The search's work, its predicted wall-clock here and the cap's default from it
            cores, cpu = cpu_time.cores(), cpu_model()
            for line in budget.plan_lines(sweep, args, speed, cores, cpu):
                print(line, flush=True)
            if args.dry_run:
                _, scheduler_info = _scheduler(args, "", keys.flat(keys.ENV_STEPS))
                stop = _stop_criteria(sweep, args)
                print(dry_run_lines(sweep, args, config, stop, scheduler_info), flush=True)
                return 0
            tuner, record = search(sweep, args, config, placement, speed)
        except UsageError as e:
            print(f"{build_parser(sweep).prog}: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(INTERRUPTED_IN_START_UP, file=sys.stderr, flush=True)
            return 130
        print(start_lines(args), flush=True)
        budget.arm(args.time_budget_s)  # the sweep's wall-clock cap (a resume's, where given)
        # A Ctrl-C whose KeyboardInterrupt a library dropped (recovery.stop_signals_noted) is
        # still an interruption: Tune does not start, the record says so, exit 130.
        try:
            results = None if recovery.INTERRUPTED.is_set() else fit(tuner)
            return summarise(sweep, args, results, record, busy_at_start)
        finally:
            budget.disarm()


def parse(
    sweep: Sweep, argv: Sequence[str] | None, *, new_folder: bool = True
) -> tuple[Settings, Any]:
    """The checked flags and the sweep's algorithm config (its tuned defaults), before Ray
    starts. Bad flags exit 2 in the parser; a config the flags make invalid is a UsageError.
    ``new_folder=False``: the flags of a run whose folder exists (``parse_args``)."""
    args = parse_args(sweep, argv, new_folder=new_folder)
    try:
        config = sweep.make_config(args)
    except ValueError as e:  # e.g. an ill-typed env-config value
        raise UsageError(str(e)) from None
    apply_settings(config, args.set)  # --set key=value on the tuned defaults
    # --stop-reward is a confirmed target: the policy plays --confirm-episodes seeded episodes
    # at each crossing, and the target counts only where they reach it (harness/confirm.py)
    from sweeps.harness.callbacks import with_confirmation

    if is_rllib(config):
        with_confirmation(config, _confirmation(sweep, args))
    else:  # a single-process baseline's trial confirms its own (sweeps/baselines/)
        config.with_confirmation(_confirmation(sweep, args))
    if args.iteration_s is not None:  # same iteration length (time resolution) for every algo
        config.reporting(
            min_time_s_per_iteration=args.iteration_s, min_sample_timesteps_per_iteration=0
        )
    try:  # RLlib's own checks of how settings fit together, before Ray starts
        config.validate()
    except ValueError as e:  # e.g. --set rollout_fragment_length=50 with a minibatch of 160
        given = " with --set " + ", ".join(key for key, _ in args.set) if args.set else ""
        raise UsageError(f"{sweep.name}'s tuned defaults{given}: {_first_line(e)}") from None
    return args, config


def _first_line(error: Exception) -> str:
    """An RLlib validation error's message without its advice to switch validation off."""
    return str(error).strip().splitlines()[0]


def start_lines(args: Settings) -> str:
    """Where the sweep writes and the one TensorBoard command that lasts (the run folder, not
    Tune's temporary copy inside Ray's session folder)."""
    experiment = _experiment_dir(args)
    return (
        f"[sweep] run folder: {experiment}\n[sweep] TensorBoard: tensorboard --logdir {experiment}"
    )


def plan(sweep: Sweep, args: Settings, config: Any) -> Plan:
    """Start (or join) Ray, fit the config's resources to the cluster and print the plan; a
    UsageError when one trial cannot fit."""
    import ray

    from envs import register_envs

    address = args.address or os.environ.get("RAY_ADDRESS") or "local"
    num_cpus = getattr(args, "num_cpus", None) if address == "local" else None
    if not ray.is_initialized():
        if address == "local" and num_cpus is None and args.max_concurrent_trials > 1:
            # More trials at once than the cores hold (the main job's two on 2 cores: one
            # trial's start-up runs beside the other's training): its own Ray declares them.
            wanted = math.ceil(args.max_concurrent_trials * cpu_time.trial_cpus(config))
            num_cpus = wanted if wanted > cpu_time.cores() else None
        if num_cpus is not None and num_cpus > cpu_time.cores():
            # More CPUs declared than cores (on purpose): Ray's processes inherit this, and every
            # process of a trial runs one thread (sweeps/harness/callbacks.py).
            os.environ[cpu_time.OVERSUBSCRIBED_ENV] = "1"
        # Trial processes' own logs (RLlib's warnings) stay in the sweep folder's Ray logs unless
        # --verbose: the terminal shows the progress table.
        ray.init(
            # No --address: a Ray instance of the sweep's own, as --help says (Ray's default,
            # None, joins any cluster already running on the machine, e.g. another user's
            # `ray start`); RAY_ADDRESS, when set, is Ray's as usual.
            address=address,
            num_cpus=num_cpus,
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=args.verbose,
        )
    elif num_cpus is not None and ray.cluster_resources().get("CPU") != num_cpus:
        # (a sweep started from Python in a process whose Ray already runs, e.g. a test)
        raise UsageError(
            f"--num-cpus {num_cpus}: this process's Ray already runs with "
            f"{ray.cluster_resources().get('CPU', 0):g} CPUs; run the sweep as its own process"
        )
    register_envs(*sweep.workload.env_names(args))
    # GPU learner when the cluster has a GPU, env runners on CPU workers, placement strategy,
    # CPU fallback for a GPU node without CUDA (sweeps/harness/placement.py, sweeps/harness/gpu.py).
    if is_rllib(config):  # (a baseline's trial is one CPU bundle: nothing of RLlib's to place)
        configure_placement(config, args, ray.cluster_resources())
    placement = make_plan(config.algo_class, config, args.max_concurrent_trials)
    print(placement.describe(args.benchmark_seeds or args.num_samples), flush=True)
    scaled = scaling_line(sweep, args)
    if scaled:
        print(scaled, flush=True)
    if address == "local":
        lines = oversubscription_lines(placement, cpu_time.cores(), available_memory_gb())
        if lines:
            print("\n".join(lines), flush=True)
    return placement


def search(
    sweep: Sweep,
    args: Settings,
    config: Any,
    placement: Plan,
    speed: float | None = None,
) -> tuple[Any, RunRecord]:
    """The Tuner and the run record, written to the sweep folder: a resumed sweep's restored
    from its folder; a new one's planned (``plan_trials``), recorded and built (``build_tuner``).
    Sweep mode: Optuna over ``sweep.sample_params`` with ASHA (or FIFO); benchmark mode: the
    tuned defaults once per seed, FIFO. ``speed``: the machine's raw env rate at the start."""
    param_space = _param_space(args, config)
    if args.resume:
        return resume(args, config, param_space, speed)
    trials = plan_trials(sweep, args, placement, param_space)
    stop = _stop_criteria(sweep, args)
    record = _new_record(sweep, args, config, placement, stop, trials.scheduler_info)
    record.machine.raw_env_steps_per_s_at_start = speed
    record.first_trial = trials.first_trial  # the tuned defaults as search parameters
    record.write(_record_path(args))
    tuner = build_tuner(sweep, args, config, param_space, placement, trials, stop, record)
    return tuner, record


def _machine_speed(sweep: Sweep, args: Settings, when: str) -> float | None:
    """The workload's raw env rate now (sweeps/harness/machine_speed.py), printed."""
    speed = machine_speed.measure(sweep.workload, args, keep=when == "start")
    if speed is not None:
        print(machine_speed.line(speed, when), flush=True)
    return speed


def _param_space(args: Settings, config: Any) -> dict[str, Any]:
    """The config as Tune's param space; in benchmark mode, one trial per seed."""
    from ray import tune

    param_space = config.to_dict()
    if args.benchmark_seeds:  # benchmark mode: the tuned defaults, one trial per seed
        seeds = list(range(args.seed, args.seed + args.benchmark_seeds))
        param_space["seed"] = tune.grid_search(seeds)
    return param_space


def _record_path(args: Settings) -> str:
    return storage.join(_experiment_dir(args), RECORD_FILE)


def resume(
    args: Settings,
    config: Any,
    param_space: dict[str, Any],
    speed: float | None = None,
) -> tuple[Any, RunRecord]:
    """The Tuner restored from the sweep folder, and its run record marked resumed (written;
    ``speed``: the machine's raw env rate now). The same config and param space as the first
    start (rebuilt from the recorded args); Tune brings back the trials, the searcher, the
    scheduler, the stopper and callbacks."""
    from ray import tune

    experiment = _experiment_dir(args)
    storage.repair_journal(args.optuna_storage)  # a record half-written by a killed driver
    try:
        tuner = tune.Tuner.restore(
            experiment,
            trainable=trainable(config, args),
            param_space=param_space,
            resume_unfinished=True,
            restart_errored=True,
        )
    except Exception as e:  # a damaged tuner.pkl, or a sweep file changed since
        msg = error_line(f"{type(e).__name__}: {e}")
        raise UsageError(f"cannot restore {experiment}: {msg}") from None
    record_path = _record_path(args)
    record = recovery.resumed_record(record_path, args, raw_env_steps_per_s=speed)
    record.write(record_path)
    return tuner, record


def reuses_actors(config: Any, args: Settings) -> bool:
    """Whether a finished trial's actor runs the next trial (--reuse-actors): RLlib's
    algorithms only, and not with a GPU learner (``sweeps/seams/reuse.py`` says why)."""
    return bool(args.reuse_actors) and is_rllib(config) and not config.num_gpus_per_learner


def trainable(config: Any, args: Settings) -> type:
    """What Tune runs for each trial: the algorithm's class, one whose actor runs the next
    trial too where ``reuses_actors``."""
    if reuses_actors(config, args):
        from sweeps.seams.reuse import reusable

        return reusable(config.algo_class)
    return config.algo_class


@dataclass
class TrialPlan:
    """How a new sweep's trials come: the searcher that draws them, how many, the scheduler
    that stops them early (and its settings, for the record), and the first trial (the tuned
    defaults as search parameters; None in benchmark mode)."""

    searcher: Any
    num_samples: int
    scheduler: Any
    scheduler_info: dict[str, Any]
    first_trial: dict[str, Any] | None


def plan_trials(
    sweep: Sweep, args: Settings, placement: Plan, param_space: dict[str, Any]
) -> TrialPlan:
    """Benchmark mode: one trial per seed of the param space's grid, FIFO. Sweep mode: Optuna
    from the tuned defaults (or, with --configs-from, the source sweep's trials), ASHA or
    FIFO."""
    if args.benchmark_seeds:
        from ray.tune.schedulers import FIFOScheduler
        from ray.tune.search import BasicVariantGenerator

        # The limit goes into the generator itself: Tune applies max_concurrent_trials only to
        # a Searcher (via ConcurrencyLimiter) and ignores it, with a warning, for a generator.
        searcher = BasicVariantGenerator(max_concurrent=placement.concurrent)
        return TrialPlan(searcher, 1, FIFOScheduler(), {"type": "fifo"}, first_trial=None)
    metric = keys.flat(_judged_by(sweep, args))  # one signal searches, prunes and stops
    # The first trial is the tuned defaults (the config as the flags left it); with
    # --configs-from, every trial is the source sweep's (sweeps/harness/configs_from.py).
    if args.configs_from:
        points, unexpressed = source_points(sweep, args), []
    else:
        tuned, unexpressed = tuned_point(sweep.sample_params, param_space)
        points = [tuned]
    searcher = make_searcher(sweep, args, metric, points_to_evaluate=points)
    print("[sweep] " + describe_first_trial(unexpressed, args.configs_from), flush=True)
    if args.optuna_storage:
        print(
            f"[sweep] Optuna study: {storage.study_call(args.name, args.optuna_storage)}",
            flush=True,
        )
    scheduler, scheduler_info = _scheduler(args, metric, keys.flat(keys.ENV_STEPS))
    first_trial = {"params": points[0], "not_expressed": unexpressed}
    return TrialPlan(searcher, args.num_samples, scheduler, scheduler_info, first_trial)


def build_tuner(
    sweep: Sweep,
    args: Settings,
    config: Any,
    param_space: dict[str, Any],
    placement: Plan,
    trials: TrialPlan,
    stop: dict[str, float | None],
    record: RunRecord,
) -> Any:
    """A new sweep's Tuner: the trials as planned, the run's callbacks, checkpoints and
    retries."""
    from ray import tune

    return tune.Tuner(
        trainable(config, args),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            search_alg=trials.searcher,
            scheduler=trials.scheduler,
            num_samples=trials.num_samples,
            max_concurrent_trials=placement.concurrent,
            # Not Tune's time_budget_s: the cap is budget.WallClockCap's, which leaves a sweep it
            # stops resumable (sweeps/harness/budget.py).
            time_budget_s=None,
            reuse_actors=reuses_actors(config, args),
            trial_name_creator=_trial_name,
            trial_dirname_creator=_trial_name,
        ),
        run_config=tune.RunConfig(
            name=args.name,
            storage_path=storage.root(args.storage_path),  # a URI goes to Tune untouched
            # Tune stops a trial once result[key] >= value for any key (flat, "/"-joined);
            # a key not reported yet never stops it; NaN (no greedy evaluation yet) never does.
            stop={key: value for key, value in stop.items() if value is not None},
            callbacks=_callbacks(sweep, args, trials, stop, record),
            checkpoint_config=tune.CheckpointConfig(
                checkpoint_frequency=args.checkpoint_freq,
                checkpoint_at_end=args.checkpoint_freq > 0,
                num_to_keep=2,
            ),
            failure_config=tune.FailureConfig(max_failures=args.max_failures),
            verbose=0,
        ),
    )


def _callbacks(
    sweep: Sweep,
    args: Settings,
    trials: TrialPlan,
    stop: dict[str, float | None],
    record: RunRecord,
) -> list[Any]:
    """TensorBoard HParams, the progress line, the failure log, interrupt watch and checkpoint
    guard, and Tune's result loggers trimmed to a trial's checkpoint."""
    from sweeps.harness.reporting import HParamsLoggerCallback, ProgressCallback

    stop_reward = args.stop_reward
    return [
        HParamsLoggerCallback(
            sweep.extra_metrics,
            metric=_judged_by(sweep, args),
            target=stop_reward if stop_reward is not None else max(record.targets, default=None),
        ),
        ProgressCallback(
            interval_s=args.progress_interval_s,
            metric=_judged_by(sweep, args),
            stop=stop,
            time_budget_s=args.time_budget_s,
            num_samples=_planned(args, trials),
            pruning=trials.scheduler_info["type"] == "asha",
            estimate=_live_estimate(sweep, args),
            random_return=((record.references or {}).get("random") or {}).get("mean"),
        ),
        budget.WallClockCap(planned=_planned(args, trials)),
        recovery.FailureLog(),
        # A resumed trial whose checkpoint Tune deleted after the last saved state goes on
        # from a newer one (before the loggers below trim its rows to it).
        recovery.CheckpointGuard(),
        # Tune's result.json / progress.csv loggers, trimmed to the checkpoint a trial
        # restarts from: no (trial, iteration) row written twice.
        recovery.ResultJsonLogger(),
        recovery.ProgressCsvLogger(),
    ]


def _planned(args: Settings, trials: TrialPlan) -> int:
    """The trials the sweep plans: its samples, or one per benchmark seed."""
    return args.benchmark_seeds or trials.num_samples


def fit(tuner: Any) -> Any:
    """Run the Tuner; Ctrl-C or SIGTERM stops it cleanly (Tune saves the experiment state and
    ``recovery.INTERRUPTED`` is set: ``recovery.on_stop_signal``, in place from before Tune
    starts to its end, in place of Tune's own SIGINT handler). Tune's ResultGrid, or None when
    interrupted before Tune took over."""
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", str(recovery.EXPERIMENT_STATE_PERIOD_S))
    previous = {name: os.environ.get(name) for name in (TUNE_SIGINT_OFF, TUNE_AUTO_LOGGERS_OFF)}
    os.environ.update(dict.fromkeys(previous, "1"))
    try:
        with recovery.stop_signals_noted():  # (run holds it too: fit alone is safe as well)
            return tuner.fit()
    except KeyboardInterrupt:  # a second Ctrl-C, or one before Tune listened
        recovery.INTERRUPTED.set()
        return None
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def summarise(
    sweep: Sweep,
    args: Settings,
    results: Any,
    record: RunRecord,
    busy_at_start: tuple[float, float] | None = None,
) -> int:
    """Close the run record (the machine's speed and busy seconds, status, failures, end time,
    the held-out figure), print the best trial, the failures and errors, and return the exit
    code. ``busy_at_start``: the cores' busy seconds when the run started (/proc/stat)."""
    experiment = _experiment_dir(args)
    if not recovery.INTERRUPTED.is_set():
        try:
            record.machine.raw_env_steps_per_s_at_end = _machine_speed(sweep, args, "end")
        except KeyboardInterrupt:  # a Ctrl-C while timing: noted in INTERRUPTED, as any other
            pass
    interrupted = recovery.INTERRUPTED.is_set()
    cut = None if interrupted else budget.at_cut()  # stopped by its wall-clock cap
    errors = [] if results is None else [r for r in results if r.error is not None]
    failures = recovery.read_failures(experiment)
    outcome.close_record(args, record, results, errors, failures, interrupted, cut)
    judged = _judged_by(sweep, args)
    best, held_out = outcome.pick_best(args, results, judged, record, interrupted)
    busy_now = cpu_time.read_machine(cpu_time.affinity())
    if busy_at_start is not None and busy_now is not None:  # this run's, added to the runs before
        before = record.machine.busy_s or 0.0
        record.machine.busy_s = round(before + busy_now[0] - busy_at_start[0], 2)
    record.write(storage.join(experiment, RECORD_FILE))

    print()
    if results is None or len(results) == 0:
        print(f"[sweep] no results; sweep folder: {experiment}")
        return 130 if interrupted else 1
    if cut is not None:  # said first, and the command that finishes the same search
        print(f"[sweep] {cut.line()}")
        print(f"[sweep] finish the same search with: {cut.resume_command(sweep.name, experiment)}")
    outcome.print_outcome(experiment, results, errors, failures, best, held_out, record, judged)
    if cut is not None:
        print(f"[sweep] cut short: {cut.resume_command(sweep.name, experiment)} finishes it")
    stop_key = _stop_key(sweep, args)  # --as-test: the confirmed target where it is one
    return outcome.exit_code(sweep.name, experiment, args, results, errors, interrupted, stop_key)


# ------------------------------------------------------------------------------------------------
# What the steps build: searcher, scheduler, stop criteria, run record
# ------------------------------------------------------------------------------------------------


def make_searcher(
    sweep: Sweep,
    args: Settings,
    metric: str,
    points_to_evaluate: list[dict[str, Any]] | None = None,
) -> Any:
    """Optuna TPE (or random) over ``sweep.sample_params``, seeded by ``--seed``: the same seed
    gives the same suggestions; the study lives in ``--optuna-storage`` when given.
    ``points_to_evaluate`` (search-parameter values, e.g. the tuned defaults from
    ``sweeps.harness.tuned``) are enqueued and tried first."""
    import optuna

    from sweeps.harness.optuna_search import ResumableOptunaSearch

    sampler = (
        optuna.samplers.TPESampler(seed=args.seed, n_startup_trials=min(5, args.num_samples))
        if args.search == "optuna"
        else optuna.samplers.RandomSampler(seed=args.seed)
    )
    return ResumableOptunaSearch(
        space=sweep.sample_params,
        metric=metric,
        mode="max",
        sampler=sampler,
        points_to_evaluate=points_to_evaluate or None,
        # --optuna-storage: the study in a database, named after the run (Optuna's
        # create_study(..., load_if_exists=True), as OptunaSearch calls it); else in memory.
        study_name=args.name,
        storage=storage.optuna_storage(args.optuna_storage) if args.optuna_storage else None,
    )


def _scheduler(args: Settings, metric: str, env_steps: str) -> tuple[Any, dict[str, Any]]:
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


def _stop_criteria(sweep: Sweep, args: Settings) -> dict[str, float | None]:
    """A trial stops once any of these (flat result key: threshold) is reached; None: unset."""
    return {
        keys.flat(keys.ENV_STEPS): args.stop_timesteps,
        keys.flat(_stop_key(sweep, args)): args.stop_reward,
        keys.flat(keys.TRAIN_TIME_S): args.stop_train_time_s,
    }


def _new_record(
    sweep: Sweep,
    args: Settings,
    config: Any,
    placement: Plan,
    stop: dict[str, float | None],
    scheduler_info: dict[str, Any],
) -> RunRecord:
    """The run record of a new sweep (``run.json``): how to reproduce it; analysis reads it."""
    # The workload's env, variant, optimum and references (a generic env's random policy is
    # measured here, in the run, and the report reads it from this record).
    fields = sweep.workload.record_fields(args)
    return RunRecord(
        sweep=sweep.name,
        algo=sweep.algo,
        env=fields["env"],
        variant=fields["variant"],
        env_id=config.env,
        kind="benchmark" if args.benchmark_seeds else "sweep",
        # A database password in --optuna-storage is not kept (the searcher holds the URL).
        command=storage.without_password(
            shlex.join(["python", f"sweeps/{sweep.name}.py", *args.argv])
        ),
        argv=[storage.without_password(a) for a in args.argv],
        args={
            k: storage.without_password(v) if isinstance(v, str) else v
            for k, v in args.as_dict().items()
            if k != "argv"
        },
        hyperparameters=hyperparameters(sweep.sample_params),
        search_space=search_space_description(sweep.sample_params),
        base_config=config.to_dict(),
        metric=keys.flat(_judged_by(sweep, args)),
        mode="max",
        stop=stop,
        scheduler=scheduler_info,
        optimum=fields["optimum"],
        references=fields["references"],
        targets=_targets(sweep, args),
        git_commit=git_commit(),
        git_dirty=git_dirty(),
        versions=versions(),
        machine=machine(placement),
        plan={
            "bundles": placement.bundles,
            "strategy": placement.strategy,
            "concurrent": placement.concurrent,
        },
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        ended_at=None,
        status="running",
    )


def _trial_name(trial: Any) -> str:
    return f"{trial.trainable_name}_{trial.trial_id}"
