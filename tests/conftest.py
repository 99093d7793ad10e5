"""Shared fixtures. Ray starts once per test session (``ray_session``), never per test."""

from __future__ import annotations

import os

import pytest

# Keep Ray quiet and local in tests; these machines have 2 cores.
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
# A Ray instance of the tests' own: without an address, ray.init() (here and in the sweeps the
# tests start) joins any cluster started on this machine (`ray start`, or a simulated cluster of
# another test run), whose CPUs and GPUs are not the ones the tests expect. Tests that join a
# cluster pass its address.
os.environ.setdefault("RAY_ADDRESS", "local")


@pytest.fixture(scope="session")
def _ray_session_end():
    """Shuts the session's local Ray down once, at the end of the session."""
    yield
    import ray

    ray.shutdown()


@pytest.fixture
def ray_session(_ray_session_end):
    """A local Ray instance shared by every test that needs one: started on first use and kept
    for the session; started again if a module that needs its own Ray (``tests/test_cluster.py``,
    simulated clusters) shut it down in between."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    return ray
