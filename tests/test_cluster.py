"""Placement at scale on a simulated Ray cluster (``ray.cluster_utils.Cluster``, one machine):
a GPU head and two CPU-only workers that declare ``cpu_worker``.

The head declares 2 GPUs that torch cannot use (no CUDA here), so the learners take the CPU
fallback of ``sweeps/harness/gpu.py`` while their GPU bundles stay reserved on the head:
placement runs for real. Checked: a sweep run with ``--address`` puts each learner on the GPU
node and its env runners on the CPU workers, as many trials at once as the printed plan says;
remote learners (``--num-learners 2``, one GPU each) are counted and placed; what cannot fit is
refused with one line before any trial starts; a worker node removed mid-trial is survived.

This module needs its own Ray: its fixture shuts down the session's local Ray first (the
``ray_session`` fixture starts it again when a later test asks).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sweeps.harness import keys

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


class SimCluster:
    def __init__(self):
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 2, "num_gpus": 2, "include_dashboard": False},
        )
        self.workers = [self.add_worker() for _ in range(2)]
        self.cluster.wait_for_nodes()

    def add_worker(self):
        return self.cluster.add_node(num_cpus=2, resources={"cpu_worker": 1000})

    @property
    def address(self) -> str:
        return self.cluster.address

    @property
    def head_id(self) -> str:
        return self.cluster.head_node.node_id

    @property
    def worker_ids(self) -> set[str]:
        return {n.node_id for n in self.cluster.worker_nodes}


@pytest.fixture(scope="module")
def cluster():
    import ray

    ray.shutdown()  # the session's local Ray, if any
    sim = SimCluster()
    ray.init(address=sim.address, include_dashboard=False, log_to_driver=False)
    try:
        yield sim
    finally:
        ray.shutdown()
        sim.cluster.shutdown()


def _sweep(tmp_path: Path, cluster: SimCluster, *argv: str) -> list[str]:
    return [
        "--smoke",
        "--address",
        cluster.address,
        "--storage-path",
        str(tmp_path),
        "--name",
        "exp",
        *argv,
    ]


def _trials(experiment: Path) -> list[list[dict]]:
    """Each trial's result rows."""
    return [
        [json.loads(line) for line in (d / "result.json").read_text().splitlines()]
        for d in sorted(experiment.iterdir())
        if (d / "result.json").exists()
    ]


def _placement_pgs() -> dict[str, dict]:
    """Placement groups that exist now (Tune's, one per running trial)."""
    import ray

    return {
        pg_id: pg
        for pg_id, pg in ray.util.placement_group_table().items()
        if pg["state"] == "CREATED"
    }


def test_sweep_on_existing_cluster_places_learner_on_gpu_node(cluster, tmp_path):
    """``--address``: a real driver process joins the cluster; learners on the GPU head, env
    runners on the CPU workers, and exactly as many trials at once as the plan says."""
    cmd = [
        sys.executable,
        "sweeps/dqn_cabs.py",
        *_sweep(tmp_path, cluster, "--num-env-runners", "1"),
    ]
    log_out, log_err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with log_out.open("w") as out_f, log_err.open("w") as err_f:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out_f, stderr=err_f, text=True)
        most_at_once = 0
        bundle_nodes: list[dict] = []
        while proc.poll() is None:
            pgs = _placement_pgs()
            most_at_once = max(most_at_once, len(pgs))
            bundle_nodes += [pg["bundles_to_node_id"] for pg in pgs.values()]
            time.sleep(0.2)
    out = log_out.read_text()
    assert proc.returncode == 0, log_err.read_text()[-3000:]

    plan = [line for line in out.splitlines() if line.startswith("[plan]")]
    assert "2 GPUs" in plan[0] and "3 node(s)" in plan[0]
    assert "learner/driver: 1 CPU, 1 GPU; env runner: 1 CPU, 0.01 cpu_worker" in plan[1]
    assert "2 trial(s) at once" in plan[2]
    assert any("no CUDA" in line for line in plan)  # the CPU fallback, said once, up front
    record = json.loads((tmp_path / "exp" / "run.json").read_text())
    assert record["plan"]["concurrent"] == 2
    assert most_at_once == 2  # both trials' placement groups lived at the same time

    # Bundle 0 (driver + learner, 1 GPU) on the head, bundle 1 (env runner) on a CPU worker.
    assert bundle_nodes
    for mapping in bundle_nodes:
        assert mapping[0] == cluster.head_id
        assert mapping[1] in cluster.worker_ids
    # ... and the actors themselves, as each trial reported them.
    trials = _trials(tmp_path / "exp")
    assert len(trials) == 2
    for rows in trials:
        where = rows[-1]["placement"]
        assert where["trial_node"] == where["learner_nodes"] == cluster.head_id
        assert where["learner_devices"] == "cpu"  # GPU declared, no CUDA: CPU fallback
        assert where["env_runner_nodes"] in cluster.worker_ids
        assert keys.get(rows[-1], keys.ENV_STEPS) > 0


def test_remote_learners_one_gpu_each(cluster, tmp_path, capsys):
    """``--num-learners 2``: the plan counts two 1-GPU learner bundles; both learners train (gloo
    instead of NCCL without CUDA) on the GPU node, the env runners on the CPU workers."""
    from sweeps import dqn_cabs

    argv = _sweep(tmp_path, cluster, "--num-learners", "2", "--num-env-runners", "2")
    rc = dqn_cabs.main([*argv, "--num-samples", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "2 x learner: 1 GPU" in out and "2 learner(s) on GPU (2 GPU per trial)" in out
    assert "1 trial(s) at once" in out
    (rows,) = _trials(tmp_path / "exp")
    where = rows[-1]["placement"]
    assert where["learner_nodes"].split(",") == [cluster.head_id] * 2
    assert where["learner_devices"] == "cpu,cpu"
    assert set(where["env_runner_nodes"].split(",")) <= cluster.worker_ids
    assert keys.get(rows[-1], keys.ENV_STEPS) > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-learners", "3"], "needs 1 CPUs and 3 GPUs"),
        (["--num-env-runners", "6"], "needs 7 CPUs"),
        # 5 CPUs in all would fit the cluster's 6, but env runners only fit the workers' 4.
        (["--num-env-runners", "5", "--num-gpus-per-learner", "0"], "cannot be placed together"),
        (["--env-runner-resource", "gpu_free"], "no node of the cluster declares it"),
        (["--num-env-runners", "2", "--placement-strategy", "STRICT_PACK"], "cannot be placed"),
    ],
)
def test_unfittable_trial_refused(cluster, tmp_path, capsys, argv, message):
    from sweeps import dqn_cabs

    rc = dqn_cabs.main(_sweep(tmp_path, cluster, *argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "error" in err[0] and message in err[0], err
    assert not any(tmp_path.iterdir())  # refused before any trial or folder


def test_plan_counts_trials_by_node():
    """The plan places whole trials on nodes: a GPU bundle needs its CPU on the GPU node."""
    from sweeps.harness.placement import trials_that_fit

    head = {"CPU": 1.0, "GPU": 1.0}
    worker = {"CPU": 4.0, "cpu_worker": 1000.0}
    learner = {"CPU": 1.0, "GPU": 0.5}
    runner = {"CPU": 1.0, "cpu_worker": 0.01}
    # Two half-GPU learners fit the GPU, but the head has one CPU for them.
    assert trials_that_fit([head, worker, worker], [learner, runner], "PACK") == 1
    assert trials_that_fit([{"CPU": 2.0, "GPU": 1.0}, worker], [learner, runner], "PACK") == 2
    # CPU-only trials leave the GPU node's CPU for last.
    assert trials_that_fit([head, worker], [{"CPU": 1.0}, {"CPU": 1.0}], "PACK") == 2
    assert trials_that_fit([worker], [runner] * 2, "STRICT_SPREAD") == 0
    assert trials_that_fit([worker, worker], [runner] * 2, "STRICT_SPREAD") == 4
    assert trials_that_fit([worker, worker], [runner] * 3, "STRICT_PACK") == 2


def test_cpu_fallback_learner_without_cuda(caplog):
    """A learner given a GPU on a machine without CUDA builds on the CPU, with one warning; RLlib's
    own learner class fails there."""
    import torch
    from ray.rllib.algorithms.dqn import DQNConfig

    from envs.cabs import CabsEnv
    from sweeps.harness.gpu import FALLBACK_WARNING, CpuFallbackLearner, with_cpu_fallback

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: no fallback to test")
    config = DQNConfig().environment(CabsEnv).learners(num_gpus_per_learner=1)
    with pytest.raises((AssertionError, RuntimeError)):
        config.build_learner(env=CabsEnv())
    with_cpu_fallback(config)
    assert issubclass(config.learner_class, CpuFallbackLearner)
    learner = config.build_learner(env=CabsEnv())
    assert str(learner._device) == "cpu"
    assert caplog.text.count(FALLBACK_WARNING) == 1


def test_worker_node_lost_mid_trial_is_survived(cluster, tmp_path):
    """A CPU worker holding a trial's env runner dies mid-trial: the placement group bundle is
    rescheduled on a spare worker, RLlib restarts the env runner (or Tune retries the trial)
    and the sweep completes. Runs last: it removes a node from the module's cluster."""
    from sweeps import dqn_cabs

    cluster.add_worker()  # a spare CPU worker to take the lost node's bundle
    cluster.cluster.wait_for_nodes()
    nodes = {n.node_id: n for n in cluster.cluster.worker_nodes}
    removed: list[str] = []

    def kill_env_runner_node():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not removed:
            trial_dirs = list((tmp_path / "exp").glob("*/result.json"))
            pgs = list(_placement_pgs().values())
            if trial_dirs and trial_dirs[0].read_text().strip() and pgs:
                node = pgs[0]["bundles_to_node_id"][1]
                cluster.cluster.remove_node(nodes[node], allow_graceful=False)
                removed.append(node)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_env_runner_node, daemon=True)
    killer.start()
    argv = _sweep(tmp_path, cluster, "--num-env-runners", "1", "--num-samples", "1")
    # Several iterations (~2k env steps each) must follow the removal: with 4k steps a trial
    # could end one short iteration after the kill, before the raylet was gone (CI saw it).
    # The wall-clock cap is only a net for a hang: the 12k env steps end the trial. A 150-s cap
    # cut a slow CI box's trial short at 8,486 env steps (its sweep then ends with 0, as at
    # Ctrl-C), so the cap is now far above what the work takes.
    rc = dqn_cabs.main([*argv, "--stop-timesteps", "12000", "--time-budget-s", "480"])
    killer.join(timeout=5)
    assert removed, "the env runner's node was never removed"
    assert rc == 0
    (rows,) = _trials(tmp_path / "exp")
    reached = keys.get(rows[-1], keys.ENV_STEPS)
    assert reached >= 12000, f"the trial ended at {reached:,.0f} env steps: cut short by the cap?"
    # The env runner sampled on the removed node; by the end it is not there any more: either
    # restarted on a surviving worker, or still restarting ("": RLlib then samples on the
    # trial's local runner, so the trial keeps going). Any node it is seen on later survives.
    runner_nodes = [r["placement"]["env_runner_nodes"] for r in rows]
    assert runner_nodes[0] == removed[0]
    assert runner_nodes[-1] != removed[0], runner_nodes
    later = [node for node in runner_nodes if node and node != removed[0]]
    assert set(later) <= cluster.worker_ids, runner_nodes
