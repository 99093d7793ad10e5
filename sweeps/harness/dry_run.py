"""``--dry-run``: what a sweep would do, printed after the placement plan; nothing starts and
nothing is written."""

from __future__ import annotations

from typing import Any

from sweeps.harness import storage
from sweeps.harness.settings import Settings
from sweeps.harness.space import search_space_description
from sweeps.harness.sweep import Sweep
from sweeps.harness.tuned import describe_first_trial, tuned_point


def asha_rungs(info: dict[str, Any]) -> list[int]:
    """The env-step counts at which ASHA compares trials: grace period x reduction factor^k,
    below its max_t."""
    rungs, rung = [], int(info["grace_period"])
    while rung < info["max_t"]:
        rungs.append(rung)
        rung *= int(info["reduction_factor"])
    return rungs


def confirmation_line(args: Settings) -> str:
    """What reaching --stop-reward means for this sweep (sweeps/harness/confirm.py)."""
    if not args.confirm_episodes:
        return (
            f"target {args.stop_reward:g}: reached at the judged return's first crossing "
            "(--confirm-episodes 0)"
        )
    return (
        f"target {args.stop_reward:g}: at each crossing the policy plays {args.confirm_episodes} "
        "seeded episodes (the judged policy: greedy; IMPALA/APPO sampled where the training "
        "return judges), off the training clock; reached where their mean reaches it"
    )


def dry_run_lines(
    sweep: Sweep,
    args: Settings,
    config: Any,
    stop: dict[str, float | None],
    scheduler_info: dict[str, Any],
) -> str:
    """The folder, the budget, the search and its space, and the first trial's tuned point."""
    experiment = storage.sweep_folder(args.storage_path, args.name)
    stops = " or ".join(f"{k} >= {v:g}" for k, v in stop.items() if v is not None)
    budget = f"{args.time_budget_s:g} s" if args.time_budget_s else "unlimited"
    evaluation = (
        f"greedy evaluation every {args.eval_interval} iteration(s), {args.eval_episodes} "
        f"episode(s){_share(args)}"
        if args.eval_interval
        else "greedy evaluation off (trials judged by the training return)"
    )
    lines = [
        f"[dry-run] folder: {experiment} (not created)",
        f"[dry-run] budget: sweep wall-clock {budget}; each trial stops at {stops}",
        f"[dry-run] {evaluation}; a checkpoint every {args.checkpoint_freq} iteration(s)",
    ]
    if args.stop_reward is not None:
        lines.append("[dry-run] " + confirmation_line(args))
    if not args.resume:
        lines += sweep.workload.dry_run_lines(args)
    if args.resume:
        lines.append(f"[dry-run] would resume {args.resume} with its recorded settings")
    elif args.benchmark_seeds:
        seeds = list(range(args.seed, args.seed + args.benchmark_seeds))
        lines.append(f"[dry-run] benchmark: the tuned defaults once per seed {seeds}, FIFO")
    else:
        scheduler = ", ".join(f"{k}={v}" for k, v in scheduler_info.items())
        lines.append(
            f"[dry-run] search: {args.search} ({args.num_samples} trials, seed {args.seed}), "
            f"scheduler: {scheduler}"
        )
        if scheduler_info.get("type") == "asha":
            rungs = ", ".join(f"{r:,}" for r in asha_rungs(scheduler_info))
            lines.append(f"[dry-run] ASHA judges trials at {rungs} env steps")
        for name, dist in search_space_description(sweep.sample_params).items():
            lines.append(f"[dry-run]   {name}: {dist}")
        if args.configs_from:
            lines.append("[dry-run] " + describe_first_trial([], args.configs_from))
        else:
            tuned, unexpressed = tuned_point(sweep.sample_params, config.to_dict())
            lines.append("[dry-run] " + describe_first_trial(unexpressed))
            lines.append("[dry-run]   " + ", ".join(f"{k}={v}" for k, v in tuned.items()))
    if args.final_episodes and not args.resume:
        who = "every trial" if args.benchmark_seeds else "the best trial and those within noise"
        lines.append(
            f"[dry-run] at the end: {who} play {args.final_episodes} held-out greedy episodes "
            "(the same for every trial); the best trial is picked by their mean"
        )
    if args.optuna_storage and not args.resume:
        study = storage.study_call(args.name, args.optuna_storage)
        lines.append(f"[dry-run] Optuna study (not created): {study}")
    if not args.resume:
        lines += _resolved_lines(config, verbose=args.verbose)
    lines.append("[dry-run] nothing started, nothing written")
    return "\n".join(lines)


def _share(args: Settings) -> str:
    share = args.eval_share
    return f", skipped where it would cost over {share:.0%} of the training clock" if share else ""


def _resolved_lines(config: Any, verbose: bool) -> list[str]:
    """How many settings trial 0 moves from the algorithm's defaults; with --verbose, each
    (``sweeps/harness/resolved.py``: the list its snapshot test pins)."""
    from sweeps.harness import resolved

    values = resolved.settings(config)
    head = f"[dry-run] trial 0 sets {len(values)} settings away from the algorithm's defaults"
    if not verbose:
        return [head + " (--verbose lists them)"]
    return [head + ":", *(f"[dry-run]   {line}" for line in resolved.lines(values))]
