"""Each sweep's trial 0, every setting it ends up with, pinned by a committed snapshot
(``tests/snapshots/trial0/<sweep>.json``; issue 62 part 2): a change to any layer that sets a tuned
value (the algorithm's family, the workload, the sweep file, a flag's default) shows in review as
a changed snapshot. After a deliberate change::

    python -m sweeps.harness.resolved --write tests/snapshots/trial0
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from sweeps.harness import resolved

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots" / "trial0"
REWRITE = "python -m sweeps.harness.resolved --write tests/snapshots/trial0"


def test_every_sweep_has_a_snapshot_and_every_snapshot_a_sweep():
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.json")) == sorted(resolved.sweep_names())


@pytest.mark.parametrize("name", resolved.sweep_names())
def test_trial_zero_resolves_to_its_snapshot(name):
    pinned = json.loads((SNAPSHOTS / f"{name}.json").read_text())
    now = json.loads(json.dumps(resolved.sweep_settings(name)))
    changed = sorted(k for k in set(pinned) | set(now) if pinned.get(k, "-") != now.get(k, "-"))
    lines = [f"{k}: {pinned.get(k, '-')!r} pinned, {now.get(k, '-')!r} now" for k in changed]
    assert not changed, f"{name}'s trial 0 moved (if meant: {REWRITE}):\n" + "\n".join(lines)


def test_the_list_leaves_out_the_defaults_and_names_objects_the_same_in_every_process():
    from ray.rllib.algorithms.dqn import DQNConfig

    config = DQNConfig().training(lr=1e-3).callbacks(functools.partial(resolved.plain, 1))
    values = resolved.settings(config)
    assert values["lr"] == 1e-3 and "gamma" not in values  # DQN's own gamma is left out
    callback = values["callbacks"]
    assert callback["partial"] == "sweeps.harness.resolved.plain" and callback["args"] == [1]
    assert resolved.plain(object()) == "<object object>"  # no address
