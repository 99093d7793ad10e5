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
# The machine's speed that every sweep measures at its start and end (1 s each): a tenth of it
# here, where ~60 sweeps pay it and no assertion needs a steady figure (machine_speed.SECONDS_ENV).
os.environ.setdefault("SWEEPS_MACHINE_SPEED_S", "0.1")
# Ray starts as many idle Python workers as the node has CPUs when its first driver connects
# (the raylet's prestart, for a first task's latency). The tests start ~20 Rays and simulated
# clusters, whose prestarted workers mostly sat idle, each having imported Ray; without them a
# worker starts when an actor or task asks for one.
os.environ.setdefault("RAY_prestart_worker_first_driver", "0")


@pytest.fixture(scope="session")
def _ray_session_end():
    """Shuts the session's local Ray down once, at the end of the session."""
    yield
    import ray

    ray.shutdown()


def _shared_ray():
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    return ray


@pytest.fixture
def ray_session(_ray_session_end):
    """A local Ray instance shared by every test that needs one: started on first use and kept
    for the session; started again if a module that needs its own Ray (``tests/test_cluster.py``,
    simulated clusters) shut it down in between."""
    return _shared_ray()


@pytest.fixture(scope="module")
def children_join_the_shared_ray(_ray_session_end) -> dict[str, str]:
    """The environment for a command whose sweeps join the session's Ray (``RAY_ADDRESS``)
    instead of each starting one of its own, a Ray start fewer per sweep. For commands whose
    point is not their own Ray (a benchmark's report, a workload's wiring); its sweeps must fit
    the 2 CPUs."""
    address = _shared_ray().get_runtime_context().gcs_address
    return {**os.environ, "RAY_ADDRESS": address}


class FakeClock:
    """``time.perf_counter`` for the modules that keep the training clock: time passes only when
    a test says so (``sleep``), so a clock's figures are exact on any box under any load."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def install(self, monkeypatch, *modules) -> FakeClock:
        """Each module's ``time`` replaced by this clock for the test."""
        from types import SimpleNamespace

        fake = SimpleNamespace(perf_counter=self.perf_counter, sleep=self.sleep)
        for module in modules:
            monkeypatch.setattr(module, "time", fake)
        return self


@pytest.fixture
def fake_clock(monkeypatch) -> FakeClock:
    """The training clock's modules (the suite callback, the confirmed target's checks, the
    checkpoint-saving timer) on a FakeClock."""
    from sweeps.harness import callbacks, confirm
    from sweeps.seams import checkpointing

    return FakeClock().install(monkeypatch, callbacks, confirm, checkpointing)
