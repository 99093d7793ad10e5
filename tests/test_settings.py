"""Typed settings (sweeps/harness/settings.py): the parser returns them, the machinery takes them,
a name that is no setting is refused where it is written, and a run record's settings read back
as they were run."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from sweeps.harness import cli
from sweeps.harness.settings import Settings, flag_defaults
from sweeps.harness.sweep import Sweep

ROOT = Path(__file__).resolve().parents[1]


def test_the_parser_returns_typed_settings_with_each_flags_default():
    from sweeps.apex_cabs import SWEEP

    args = cli.parse_args(SWEEP, ["--seed", "3", "--dry-run"])
    assert isinstance(args, Settings)
    assert args.seed == 3 and args.dry_run and args.argv == ["--seed", "3", "--dry-run"]
    plain = cli.flag_values(SWEEP)
    for name, default in flag_defaults().items():  # the sweep's own defaults over the shared
        expected = SWEEP.defaults.get(name, default)
        if name in ("final_episodes", "confirm_episodes", "eval_share"):  # the workload's
            expected = SWEEP.defaults.get(name, getattr(SWEEP.workload, name))
        assert getattr(plain, name) == expected, name


def test_a_name_that_is_no_setting_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="no such setting.*num_runners"):
        Settings.from_dict({"num_runners": 2})
    assert Settings.from_dict({"num_runners": 2, "seed": 1}, strict=False).seed == 1
    with pytest.raises(AttributeError):
        Settings().num_runners = 2  # a typo in code, not a new attribute
    with pytest.raises(TypeError):
        Settings().replace(num_runners=2)
    from sweeps.apex_cabs import SWEEP

    with pytest.raises(ValueError, match=r"no such setting\(s\) \['stop_timestep'\]"):
        dataclasses.replace(SWEEP, defaults={**SWEEP.defaults, "stop_timestep": 10})
    assert isinstance(dataclasses.replace(SWEEP, defaults={"stop_timesteps": 10}), Sweep)


def test_a_run_records_settings_read_back_as_run(tmp_path):
    """The record's ``args`` (JSON) give the same settings back: what --resume continues with."""
    import json

    from sweeps.dqn_gym import SWEEP

    argv = ["--env", "CartPole-v1", "--target", "100", "200", "--set", "lr=0.001"]
    args = cli.parse_args(SWEEP, [*argv, "--storage-path", str(tmp_path)])
    recorded = json.loads(json.dumps(args.as_dict()))
    back = Settings.from_dict(recorded)
    assert back.target == [100.0, 200.0] and back.env == "CartPole-v1"
    assert [tuple(s) for s in back.set] == [("lr", 0.001)]
    assert {k: v for k, v in back.as_dict().items() if k != "set"} == {
        k: v for k, v in args.as_dict().items() if k != "set"
    }


def test_no_function_outside_the_parsers_takes_an_argparse_namespace():
    """The machinery takes typed settings (a sweep's ``Settings``, the benchmark's and the
    throughput benchmark's): an argparse namespace is built by a parser and goes no further.
    The analysis subcommands' ``run(args)`` are their entry points."""
    pattern = re.compile(r"(: |-> )argparse\.Namespace")
    found = []
    for path in sorted((ROOT / "sweeps").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
