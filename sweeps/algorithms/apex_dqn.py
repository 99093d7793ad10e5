"""Ape-X DQN's import path before it became the package :mod:`sweeps.algorithms.apex`; kept so
``from sweeps.algorithms.apex_dqn import ApexDQNConfig, ...`` and old checkpoints still load.
New code imports from ``sweeps.algorithms.apex``.
"""

from sweeps.algorithms.apex import *  # noqa: F403
from sweeps.algorithms.apex import __all__  # noqa: F401
