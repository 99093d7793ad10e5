"""The judged training return: the mean of the last 20 training games to end, over all env runners.

Fast tests (no Ray): the suite callback on the runners (each game it counts, logged) and on the
driver (the window) through RLlib's own MetricsLoggers, as an algorithm merges its runners'
metrics: the figure is the same at 1 runner and at 10 for the same games, an iteration without a
game keeps it, and a restored trial judges the same games. The runs that use it (Pong's at 4, 10
and 13 runners) are ``benchmarks/pong_records.py``'s; Ape-X's ε filter is in ``tests/test_apex.py``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from sweeps.harness import callbacks as module
from sweeps.harness import keys
from sweeps.harness.callbacks import SuiteCallbacks

WINDOW = 20
RUNNER = SimpleNamespace(config=SimpleNamespace(in_evaluation=False))  # counts every game


class Game:
    """A game that ended in one chunk."""

    def __init__(self, ret: float) -> None:
        self.ret = ret

    def get_return(self) -> float:
        return self.ret


class Trial:
    """A driver and its runners' MetricsLoggers, one SuiteCallbacks on each (as on Ray's actors),
    merged per iteration as RLlib's algorithms do (``metrics.aggregate`` of each runner's
    ``get_metrics``, then the result's ``reduce``)."""

    def __init__(self, runners: int, monkeypatch) -> None:
        self.ended = 0.0  # the wall clock at which the next game ends
        monkeypatch.setattr(module, "wall_time", lambda: self.ended)
        self.driver, self.metrics = SuiteCallbacks(), MetricsLogger(root=True)
        self.runners = [(SuiteCallbacks(), MetricsLogger()) for _ in range(runners)]

    def play(self, ret: float, runner: int) -> None:
        self.ended += 1.0
        callbacks, metrics = self.runners[runner % len(self.runners)]
        callbacks.on_episode_end(episode=Game(ret), env_runner=RUNNER, metrics_logger=metrics)

    def result(self) -> dict:
        self.metrics.aggregate([m.reduce() for _, m in self.runners], key=ENV_RUNNER_RESULTS)
        result = self.metrics.compile()  # (as Algorithm does: a list of one is its item)
        self.driver.on_train_result(algorithm=None, metrics_logger=self.metrics, result=result)
        return result


def _judged(result: dict) -> float:
    return result[ENV_RUNNER_RESULTS][keys.RETURN_MEAN[-1]]


# A rising curve with noise, 7 games an iteration: the window's edge falls inside iterations.
RETURNS = [float(np.clip(-21 + i * 0.6 + (i * 7) % 5 - 2, -21, 21)) for i in range(70)]
PER_ITERATION = 7


def _figures(runners: int, monkeypatch) -> list[float]:
    trial = Trial(runners, monkeypatch)
    figures = []
    for start in range(0, len(RETURNS), PER_ITERATION):
        for game in range(start, start + PER_ITERATION):
            trial.play(RETURNS[game], runner=game * 3)  # a runner order that is not time order
        figures.append(_judged(trial.result()))
    return figures


def test_the_figure_is_the_last_games_to_end_at_one_runner_and_at_ten(monkeypatch):
    """The same games, played by one runner or spread over 10: after each iteration the figure is
    the mean of the last 20 games to end, at both. (The earlier rule, each runner's own last 20
    averaged over the runners, spanned up to 10 x 20 games at 10 runners and lagged the rise.)"""
    expected = [
        float(np.mean(RETURNS[max(0, n - WINDOW) : n]))
        for n in range(PER_ITERATION, len(RETURNS) + 1, PER_ITERATION)
    ]
    assert _figures(1, monkeypatch) == expected
    assert _figures(10, monkeypatch) == expected


def test_one_game_an_iteration_counts_as_a_game(monkeypatch):
    """RLlib hands a result's list of one game over as the game itself (cabs and the toy env
    end about one game an iteration)."""
    trial = Trial(1, monkeypatch)
    for game in range(3):
        trial.play(float(game), runner=0)
        result = trial.result()
        assert _judged(result) == float(np.mean(range(game + 1)))
    assert result[keys.SUITE][keys.RETURN_WINDOW_GAMES[-1]] == 3


def test_each_result_says_how_many_games_its_figure_is_over(monkeypatch):
    trial = Trial(2, monkeypatch)
    first = trial.result()
    assert math.isnan(_judged(first)) and first[keys.SUITE][keys.RETURN_WINDOW_GAMES[-1]] == 0
    for game in range(25):
        trial.play(-21.0 + game, runner=game)
        if game == 2:
            assert trial.result()[keys.SUITE][keys.RETURN_WINDOW_GAMES[-1]] == 3
    result = trial.result()
    assert result[keys.SUITE][keys.RETURN_WINDOW_GAMES[-1]] == WINDOW
    assert _judged(result) == float(np.mean([-21.0 + g for g in range(5, 25)]))
    assert keys.TRAINING_GAMES[-1] not in result[ENV_RUNNER_RESULTS]  # (a list: no column)


def test_an_iteration_in_which_no_game_ended_keeps_the_training_return():
    """NaN until the first game ends; then an iteration without a game end reports the mean of
    the same last games, not NaN (RLlib's own figure is kept as it came)."""
    callbacks, metrics = SuiteCallbacks(), MetricsLogger(root=True)

    def training_return(**runners) -> float:
        result = {"env_runners": {"num_env_steps_sampled_lifetime": 1000, **runners}}
        callbacks.on_train_result(algorithm=None, metrics_logger=metrics, result=result)
        return result["env_runners"][keys.RETURN_MEAN[-1]]

    assert math.isnan(training_return())
    assert training_return(suite_training_games=[(1.0, -20.5)], episode_return_mean=-20.0) == -20.5
    assert training_return(episode_return_mean=math.nan) == -20.5
    assert training_return(suite_training_games=[]) == -20.5
    assert training_return(suite_training_games=[(2.0, -19.5)]) == -20.0  # the last 2 games


def test_a_restored_trial_judges_the_same_games(monkeypatch):
    """The window goes with the trial's checkpoint (its MetricsLogger's state, taken between
    iterations as Tune does): after a restore the figure is over the same last 20 games, not over
    the first game to end after it alone."""
    trial = Trial(2, monkeypatch)
    for game in range(30):
        trial.play(float(game % 9), runner=game)
    before = _judged(trial.result())
    saved = trial.metrics.get_state()

    restored = Trial(2, monkeypatch)
    restored.metrics.set_state(saved)
    restored.driver.on_checkpoint_loaded(algorithm=SimpleNamespace(metrics=restored.metrics))
    assert _judged(restored.result()) == before  # no game since: the same figure
    restored.ended = trial.ended
    restored.play(21.0, runner=0)
    window = [float(g % 9) for g in range(11, 30)] + [21.0]
    assert _judged(restored.result()) == float(np.mean(window))
