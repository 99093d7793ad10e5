"""The suite's copies of RLlib's metric names equal RLlib's, and reading results loads no RLlib."""

from __future__ import annotations

import subprocess
import sys

import ray.rllib.core
import ray.rllib.utils.metrics

from sweeps.harness import keys


def test_each_copied_name_equals_rllibs_constant():
    core = ("ALL_MODULES", "DEFAULT_MODULE_ID")
    for name in keys.RLLIB_CONSTANTS:
        home = ray.rllib.core if name in core else ray.rllib.utils.metrics
        assert getattr(keys, name) == getattr(home, name), name


def test_the_analysis_command_loads_neither_rllib_nor_torch():
    probe = "import sys, analysis.__main__\nprint({'ray.rllib', 'torch'} & set(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "set()"
