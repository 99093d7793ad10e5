"""The search space of a sweep file's ``sample_params``: one draw of it, the config keys it sets
and its distributions described for the run record and ``--dry-run``. Used by the search setup
(``tuned``, ``configs_from``) and by the run record alike, so neither calls into the other."""

from __future__ import annotations

from typing import Any

from sweeps.harness.sweep import SampleFn


def ask_trial(sample_params: SampleFn) -> tuple[Any, dict[str, Any]]:
    """One draw from the search space: an ``optuna.Trial`` asked of a throwaway in-memory study
    (random sampler, fixed seed) and the config values ``sample_params`` returns for it. The
    trial's ``distributions`` describe the space."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" line
    try:
        trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0)).ask()
    finally:
        optuna.logging.set_verbosity(verbosity)
    return trial, sample_params(trial)


def hyperparameters(sample_params: SampleFn) -> list[str]:
    """The config keys the search sets, dotted (``replay_buffer_config.capacity``), sorted."""
    _, values = ask_trial(sample_params)
    return sorted(key.replace("/", ".") for key in values)


def search_space_description(sample_params: SampleFn) -> dict[str, str]:
    """``{search parameter: its distribution}`` for run.json, e.g. ``loguniform(0.0001, 0.003)``."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    trial, _ = ask_trial(sample_params)
    space: dict[str, str] = {}
    for name, d in trial.distributions.items():
        if isinstance(d, CategoricalDistribution):
            space[name] = f"choice({list(d.choices)})"
        elif isinstance(d, FloatDistribution):
            space[name] = f"{'loguniform' if d.log else 'uniform'}({d.low:g}, {d.high:g})"
        else:  # IntDistribution
            space[name] = f"{'logint' if d.log else 'int'}({d.low}, {d.high})"
    return space
