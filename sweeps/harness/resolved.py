"""A sweep's trial 0 as it runs: every setting its algorithm config ends up with that differs from
the algorithm's own default, its tuned defaults and the shared flags' defaults applied.

A tuned value can be written at more than one layer (the algorithm's family, the workload, the
sweep file, a flag's default), and the last writer wins without a word. This list is what wins.
``--dry-run`` prints it, and ``tests/snapshots/trial0/<sweep>.json`` pins it for every sweep
(``tests/test_resolved.py``), so a change to any layer that moves a setting shows in review as a
changed snapshot. After a deliberate change, write the snapshots again and commit them::

    python -m sweeps.harness.resolved --write tests/snapshots/trial0

A single-process baseline (``sweeps/baselines/``) has no RLlib default to differ from: its list
is its whole config (recipe, env and run settings).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The flags a sweep of each workload needs to resolve (a generic env's sweep needs an env).
WORKLOAD_FLAGS = {"gym": ["--env", "CartPole-v1"]}
# Settings that are where the trial runs, not what it computes (the plan sets them per machine).
PLACEMENT = ("num_gpus_per_learner", "custom_resources_per_env_runner", "placement_strategy")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def plain(value: Any) -> Any:
    """``value`` as JSON can hold it the same in every process: a dataclass as the fields it sets
    away from its defaults (all of them where it has none), a class
    or function by its qualified name, a partial with its keywords, an object's repr without its
    address."""
    if isinstance(value, functools.partial):
        keywords = {k: plain(v) for k, v in sorted(value.keywords.items())}
        return {"partial": plain(value.func), "args": plain(list(value.args)), **keywords}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(_changed_fields(value))
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan"
    try:
        json.dumps(value)
        return value
    except TypeError:
        return _ADDRESS.sub("", repr(value))


def _changed_fields(value: Any) -> dict[str, Any]:
    fields = dataclasses.asdict(value)
    try:
        default = dataclasses.asdict(type(value)())
    except TypeError:  # required fields: no default to differ from
        return fields
    return {k: v for k, v in fields.items() if default.get(k) != v}


def settings(config: Any) -> dict[str, Any]:
    """The config's settings that differ from its algorithm's defaults, by key (sorted)."""
    from sweeps.baselines.config import is_rllib

    now = {k: plain(v) for k, v in config.to_dict().items() if k not in PLACEMENT}
    if not is_rllib(config):
        return dict(sorted(now.items()))
    default = {k: plain(v) for k, v in type(config)().to_dict().items()}
    return {k: v for k, v in sorted(now.items()) if k not in default or default[k] != v}


def sweep_settings(name: str, argv: Sequence[str] = ()) -> dict[str, Any]:
    """``settings`` of sweep ``sweeps/<name>.py`` parsed with ``argv`` (and its workload's
    flags), before Ray starts."""
    from sweeps.harness.runner import parse

    sweep = importlib.import_module(f"sweeps.{name}").SWEEP
    flags = [*WORKLOAD_FLAGS.get(sweep.workload.name, []), *argv]
    _, config = parse(sweep, flags, new_folder=False)
    return settings(config)


def sweep_names() -> list[str]:
    """Every sweep file's name (``sweeps/<algo>_<workload>.py``)."""
    from sweeps.__main__ import sweeps

    return list(sweeps())


def lines(values: dict[str, Any]) -> list[str]:
    """One ``key = value`` line per setting (what ``--dry-run`` prints)."""
    return [f"{key} = {json.dumps(value, sort_keys=True)}" for key, value in values.items()]


def write(folder: Path, names: Sequence[str]) -> list[Path]:
    """The snapshots of ``names`` written in ``folder`` (one JSON file each)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        path = folder / f"{name}.json"
        path.write_text(json.dumps(sweep_settings(name), indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sweeps.harness.resolved", description=__doc__)
    p.add_argument("sweeps", nargs="*", help="sweep names (default: every sweep file)")
    p.add_argument("--write", type=Path, metavar="FOLDER", help="write <sweep>.json snapshots")
    args = p.parse_args(argv)
    names = args.sweeps or sweep_names()
    unknown = sorted(set(names) - set(sweep_names()))
    if unknown:
        p.error(f"no sweep file sweeps/{unknown[0]}.py")
    if args.write:
        for path in write(args.write, names):
            print(f"wrote {path}")
        return 0
    for name in names:
        print(f"# {name}")
        print("\n".join(lines(sweep_settings(name))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
