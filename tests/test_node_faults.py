"""Whole nodes lost on a local multi-node cluster (``benchmarks/faultlab/nodes.py``, issue 63):
what the harness reads from a run (each trial's env steps/s after the kills against before them)
and what the report says of the runs against the issue's goals. The runs themselves are
``python benchmarks/faults.py nodes|head``.
"""

from __future__ import annotations

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
