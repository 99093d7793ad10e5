"""``PlacementReport`` (``sweeps/harness/gpu.py``) asks the actors where they run once, not every
iteration: a question to a busy env runner waits behind its queued sample requests.

A fake algorithm counts the questions; the placement on a real cluster is checked in
``tests/test_cluster.py``."""

from __future__ import annotations

from types import SimpleNamespace

import ray

from sweeps.harness.gpu import PlacementReport


class _Runners:
    def __init__(self) -> None:
        self.ids, self.restarts, self.asked = [1, 2], 0, 0
        self.nodes = {1: "node-a", 2: "node-b"}

    def __bool__(self) -> bool:
        return True

    def healthy_env_runner_ids(self) -> list[int]:
        return list(self.ids)

    def num_remote_worker_restarts(self) -> int:
        return self.restarts

    def foreach_env_runner(self, func, local_env_runner: bool = True) -> list[str]:
        assert local_env_runner is False
        self.asked += 1
        return [self.nodes[i] for i in self.ids]


class _Learners:
    asked = 0

    def foreach_learner(self, func):
        self.asked += 1
        return [SimpleNamespace(ok=True, get=lambda: ("node-h", "cpu"))]


def test_the_actors_are_asked_again_only_when_the_runners_change(monkeypatch) -> None:
    monkeypatch.setattr(
        ray, "get_runtime_context", lambda: SimpleNamespace(get_node_id=lambda: "node-h")
    )
    runners, learners = _Runners(), _Learners()
    algorithm = SimpleNamespace(env_runner_group=runners, learner_group=learners)
    report = PlacementReport()

    def placement() -> dict:
        result: dict = {}
        report.on_train_result(algorithm=algorithm, result=result)
        return result["placement"]

    first = placement()
    assert first == {
        "trial_node": "node-h",
        "learner_nodes": "node-h",
        "learner_devices": "cpu",
        "env_runner_nodes": "node-a,node-b",
    }
    for _ in range(5):
        assert placement() == first
    assert (runners.asked, learners.asked) == (1, 1)
    # A runner lost, then restarted on another node: asked again each time.
    runners.ids = [1]
    assert placement()["env_runner_nodes"] == "node-a"
    runners.ids, runners.restarts, runners.nodes[2] = [1, 2], 1, "node-c"
    assert placement()["env_runner_nodes"] == "node-a,node-c"
    assert placement()["env_runner_nodes"] == "node-a,node-c"
    assert (runners.asked, learners.asked) == (3, 1)
