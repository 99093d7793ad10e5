"""Fault injection: kill a sweep at random moments drawn from a seed, then check what survived.

Five kinds of fault, each on a real sweep run in a subprocess (its own process group and its own
local Ray instance; Ray's workers run in sessions of their own and are found by the raylet they
belong to, so that the harness kills the processes of that sweep and nothing else on the machine,
and cleans up what a SIGKILL left before it resumes):

* ``driver``: SIGKILL of the sweep's whole process group, SIGINT to the group (a terminal's
  Ctrl-C) or SIGTERM to the driver (``kill PID``), chosen at random at random times; each fault is
  followed by ``--resume <folder>`` (the path alone) until the sweep finishes. The overhead is the
  wall-clock of the faulty run against a fault-free run of the same sweep and seed.
* ``runners``: SIGKILL of the env-runner process (``ray::SingleAgentEnvRunner``) of a one-trial
  sweep, ``--kills`` times, for DQN, Ape-X, IMPALA and APPO; RLlib restarts the runner
  (``fault_tolerance/num_remote_worker_restarts`` counts it); the env steps to the cab env's greedy
  2,500 are compared with a fault-free run of the same seed.
* ``shard``: SIGKILL of an Ape-X replay-shard actor (``ray::ApexReplayShard``); the shard is a
  restartable actor that comes back empty (``apex/replay_shard_restarts`` counts it,
  ``apex/replay_shard_failures`` the requests lost with it), or, if it cannot come back, the trial
  is retried from its checkpoint (``failures.jsonl``). The harness reports which happened.
* ``nodes`` and ``head`` (``benchmarks/faultlab/nodes.py``): the sweep on a local multi-node
  cluster (``ray.cluster_utils.Cluster``: a head and ``--workers`` 1-CPU worker nodes, the sweep
  joining it with ``--address``). ``nodes``: after a warm-up each worker node dies with
  ``--kill-p`` per ``--interval-s`` (its raylet and workers SIGKILLed) and a fresh one replaces
  it, as in Tune's release test; ``head``: the head and the driver lost once, the sweep resumed
  on a new cluster. Checked as below, and each trial's last row against Tune's record of it;
  the env steps/s of each trial after the kills against before them.

After each run ``check_sweep`` reads only the sweep folder and says: every trial finished exactly
once (one folder per trial, none orphaned, all TERMINATED in Tune's state); no (trial, iteration)
row duplicated or missing in result.json, progress.csv and the collected table
(``analysis.collect``); run.json and the Optuna study readable, no Optuna trial left RUNNING; the
best trial; restarts counted (RLlib's env-runner restarts, Tune's retries, resumes).

How to run
----------
    python benchmarks/faults.py driver --seeds 0-9 --faults 5        # the main job, reduced
    python benchmarks/faults.py driver --sweep dqn_cabs --seeds 0 --faults 3 \
        --sweep-args="--num-samples 3 --stop-timesteps 2000"        # a tiny sweep (the CI test's)
    python benchmarks/faults.py runners --algos dqn,apex,impala,appo --kills 3
    python benchmarks/faults.py shard --kills 3
    python benchmarks/faults.py nodes --seeds 0-2 --kill-p 0.1     # the main job, reduced
    python benchmarks/faults.py nodes --sweep impala_cabs --seeds 0 \
        --sweep-args="--num-samples 2 --stop-timesteps 200000"
    python benchmarks/faults.py head --seeds 0
    python benchmarks/faults.py driver --seeds 0-2 --faults 5 --name driver-same-work \
        --sweep-args="--search random --scheduler fifo --num-samples 6 --stop-timesteps 20000"
    python benchmarks/faults.py recheck runs/faults/<driver run>   # today's checks, old folders
    python benchmarks/faults.py report runs/faults --out results/RELIABILITY.md

Each command writes ``<--out-dir>/<name>/summary.json`` (default ``runs/faults/<kind>-<time>``);
``report`` turns every summary.json below its folders into ``results/RELIABILITY.md`` (generated,
never hand-edited), with the commands, machine, load, commit and versions. Exit code 0 when
every check passed, 1 when one failed, 2 on bad input.

Results to expect
-----------------
Every check passes: no trial lost or run twice, no row duplicated or missing, the study loadable
with no trial left RUNNING; env-runner restarts counted equal to the kills. The measured figures
(overhead of the interruptions, env steps to 2,500 with runner kills, what a shard kill costs):
``results/RELIABILITY.md``.

The harness lives in ``benchmarks/faultlab/``, one module per role: ``procs`` (a sweep's
processes), ``inject`` (the faults), ``checks`` (what a sweep folder says after them),
``experiments`` (the three one-machine kinds, each against a fault-free run), ``nodes`` (the
cluster's two), ``report``
(results/RELIABILITY.md), ``parser`` and ``cli``. This file is its command.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: import the suite from this checkout
    sys.path.insert(0, str(REPO))

from benchmarks.faultlab.checks import check_sweep  # noqa: E402
from benchmarks.faultlab.cli import main  # noqa: E402
from benchmarks.faultlab.inject import drive_with_interruptions  # noqa: E402
from benchmarks.faultlab.report import report  # noqa: E402

__all__ = ["check_sweep", "drive_with_interruptions", "main", "report"]

if __name__ == "__main__":
    sys.exit(main())
