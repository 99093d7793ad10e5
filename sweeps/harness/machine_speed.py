"""How fast the machine steps the workload's env: the raw env rate, at a run's start and end.

The throughput benchmark's raw env rate (``envs.bench.raw_env_rate``: one process, random
actions drawn in advance, the env exactly as an env runner's factory builds it), taken for
``RUN_SECONDS`` before a run starts Ray,
when it resumes and when it ends, the fastest of ``RUN_WINDOWS`` windows (a moment's contention,
from Ray's processes starting or winding down or from the host, does not count; a plain 1 s
rate of the cab env varied 1.6x between runs on a busy 2-core host);
``run.json`` keeps it under ``machine`` (``raw_env_steps_per_s_at_start``, ``_at_end``; a
resume's in its ``resumes`` entry). A host that throttles its VM, or a neighbour on
its cores, slows every process alike and shows in no load average: the training times of runs made
at different speeds do not compare, and the report says so where the rates of the runs it
compares differ (``analysis.summary``). Env steps do not depend on the machine.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from envs.bench import raw_env_rate
from sweeps.harness.errors import error_line
from sweeps.harness.settings import Settings

if TYPE_CHECKING:
    from sweeps.workloads.base import Workload

# How long a run steps the env at its start and at its end, in RUN_WINDOWS windows, the fastest of
# which counts. SECONDS_ENV shortens it for a test suite, where ~60 sweeps each pay it twice and
# no assertion needs a steady figure (tests/conftest.py); a run of record keeps the default.
SECONDS_ENV = "SWEEPS_MACHINE_SPEED_S"
RUN_SECONDS = 1.0
RUN_WINDOWS = 4


# The env a run measured at its start, kept for its end (``keep``): Pong's vector env of 32
# games takes seconds to build and as long to reset, each time.
_KEPT: dict[str, Any] = {}


def run_seconds() -> float:
    """``RUN_SECONDS``, or ``SECONDS_ENV``'s value where set (an error if no number > 0)."""
    value = os.environ.get(SECONDS_ENV)
    if value is None:
        return RUN_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ValueError(f"{SECONDS_ENV}={value!r}: give the seconds, a number above 0")
    return seconds


def measure(
    workload: Workload, args: Settings, seconds: float | None = None, keep: bool = False
) -> float | None:
    """The workload's raw env rate in env steps/s, rounded; None where the workload has no raw
    env or building or stepping it failed (said in one line: a run does not fail for it).
    ``keep``: the env stays built for this process's next measurement of the same env (a run's
    end), which steps it on from where it was; that one closes it."""
    key = repr((workload.name, args.env, args.variant, args.env_config))
    env = _KEPT.pop(key, None)
    kept = env is not None
    try:
        if env is None:
            env = workload.make_raw_env(args)
        seconds = run_seconds() if seconds is None else seconds
        rate = float(round(raw_env_rate(env, seconds, windows=RUN_WINDOWS, reset=not kept)))
        if keep:
            _KEPT[key], env = env, None
        return rate
    except NotImplementedError:
        return None
    except Exception as e:
        print(f"[sweep] machine speed not measured: {error_line(f'{type(e).__name__}: {e}')}")
        return None
    finally:
        if env is not None:
            env.close()


def line(rate: float, when: str) -> str:
    """The progress line of one measurement."""
    return (
        f"[sweep] machine speed at the {when}: {rate:,.0f} raw env steps/s "
        f"(one process, random actions, the fastest {run_seconds() / RUN_WINDOWS:g} s of "
        f"{run_seconds():g} s)"
    )
