"""Whole nodes lost on a local multi-node cluster (``benchmarks/faultlab/nodes.py``, issue 63):
what the harness reads from a run (each trial's env steps/s after the kills against before them)
and what the report says of the runs against the issue's goals. The runs themselves are
``python benchmarks/faults.py nodes|head``.
"""

from __future__ import annotations

import pytest

from benchmarks.faultlab import nodes


def _rows(trial, stamps_steps_clock):
    import json

    trial.mkdir(parents=True)
    rows = [
        {"timestamp": t, "training_iteration": i, "suite": {"env_steps": s, "train_time_s": c}}
        for i, (t, s, c) in enumerate(stamps_steps_clock, start=1)
    ]
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_throughput_after_the_kills_is_read_against_before_them(tmp_path):
    # 100 env steps per training second before the kill at t=100; 80 from 10 s after it on
    _rows(tmp_path / "T_a", [(90, 0, 0), (99, 1000, 10), (105, 1200, 12), (120, 2000, 20),
                             (130, 2800, 30)])  # fmt: skip
    kills = [{"at_unix": 100.0}]
    (rate,) = nodes.rates_around(tmp_path, kills)
    assert (rate["before"], rate["after"], rate["ratio"]) == (100.0, 80.0, 0.8)
    assert nodes.rates_around(tmp_path, []) == []


def test_the_report_counts_node_kills_and_head_losses_against_the_goals():
    from benchmarks.faultlab.report import _node_goals, _node_table

    check = {"ok": True, "problems": [], "tune_retries": 2, "trials_in_tune_state": 3}
    check |= {"trials_expected": 3, "raw_duplicated_rows": 0, "collected_duplicated_rows": 0}
    kills = {"kills": [{}] * 7, "rc": 0, "check": check, "rates": [{"ratio": 0.95}]}
    runs = [{"sweep": "apex_cabs", "seed": s, "faulty": kills} for s in range(3)]
    lost = {"head_lost": True, "lost_at_s": 41.0, "rc": 0, "check": check}
    head = [{"sweep": "apex_cabs", "seed": 0, "faulty": lost}]
    lines = _node_goals([{"kind": "nodes", "runs": runs}, {"kind": "head", "runs": head}])
    assert lines[0].startswith("**Worker nodes lost** (local multi-node cluster): 21 node kills")
    assert "over 3 sweep(s) (goal >= 20 over >= 3); checks passed in 3 of 3" in lines[0]
    assert "median 0.95x (goal within 10%)" in lines[0]
    assert "1 time(s), finished with nothing lost in 1" in lines[2]
    table = _node_table("head", head)
    assert "| apex_cabs | 0 | head lost at 41 s | 2 | 3 of 3 | 0 / 0 | - | passed |" in table


class _FakeCluster:
    """Worker nodes as names; kills and joins in the order they happen."""

    def __init__(self, workers):
        self.nodes = [f"n{i}" for i in range(workers)]
        self.events, self.joined = [], workers

    def workers(self):
        return [type("Node", (), {"node_id": n})() for n in self.nodes]

    def kill(self, node):
        self.nodes.remove(node.node_id)
        self.events.append(("kill", node.node_id))

    def add_worker(self):
        self.nodes.append(f"n{self.joined}")
        self.events.append(("join", f"n{self.joined}"))
        self.joined += 1


def test_nodes_are_killed_and_replaced_from_the_calling_thread_on_schedule():
    import random

    now = [0.0]
    cluster = _FakeCluster(2)
    killer = nodes.NodeKiller(
        cluster, random.Random(0), p=1.0, interval_s=1.0, warmup_s=5.0, replace_after_s=2.0,
        max_kills=3, clock=lambda: now[0],
    )  # fmt: skip
    for t in [0.0, 3.0, 5.9]:  # warm-up and first interval: nothing yet
        now[0] = t
        assert killer.tick() is False
    assert cluster.events == []
    now[0] = 6.0  # both nodes drawn; their successors join 2 s later, none drawn meanwhile
    killer.tick()
    assert cluster.events == [("kill", "n0"), ("kill", "n1")]
    now[0] = 7.5
    killer.tick()
    assert len(cluster.events) == 2
    now[0] = 8.0
    killer.tick()
    assert cluster.events[2:] == [("join", "n2"), ("join", "n3")]
    now[0] = 9.0  # the third kill is the last (max_kills)
    killer.tick()
    now[0] = 30.0
    killer.tick()
    assert [e for e in cluster.events if e[0] == "kill"][2:] == [("kill", "n2")]
    assert len(killer.kills) == 3 and cluster.nodes == ["n3", "n4"]


def test_a_trials_last_result_is_read_from_its_run_metadata():
    import json

    last = {"training_iteration": 8, "suite": {"greedy_return": 2880.0}}
    meta = json.dumps({"num_failures": 0, "last_result": last})
    assert nodes._last_result(meta) == last
    assert nodes._last_result(None) == {}


@pytest.mark.slow
def test_a_sweep_finishes_with_nothing_lost_when_its_worker_node_dies(tmp_path):
    # dqn_cabs, one trial, on a head and one worker node of 1 CPU each (its env runner on the
    # worker): the worker killed at the trial's first result, a fresh one joined 2 s later.
    import random

    argv = [
        *("--num-samples", "1", "--stop-timesteps", "8000", "--num-env-runners", "1"),
        *("--eval-episodes", "1", "--checkpoint-freq", "1", "--progress-interval-s", "600"),
        *("--max-failures", "50", "--time-budget-s", "240"),
        *("--storage-path", str(tmp_path), "--name", "exp"),
    ]
    run = nodes.node_kills(
        "dqn_cabs", argv, tmp_path / "exp", rng=random.Random(0), workers=1, p=1.0,
        interval_s=1.0, warmup_s=0.0, replace_after_s=2.0, budget=8000,
        log=tmp_path / "exp.log", max_kills=1, timeout_s=300,
    )  # fmt: skip
    log = (tmp_path / "exp.log").read_text()[-3000:]
    assert run["rc"] == 0, log
    assert len(run["kills"]) == 1
    assert run["check"]["ok"], (run["check"]["problems"], log)
    assert run["check"]["env_steps_sampled"] >= 8000
