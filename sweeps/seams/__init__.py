"""RLlib and Tune behind one door: every use of a private Ray/RLlib name lives in this package.

Ray keeps no promise about a name with a leading underscore. The suite needs a handful of them
where Ray 2.60 has no public hook; each lives here, in one module per seam, as a small named
function or an adapter class that turns a private hook into a public-named one. Each says in its
docstring what it reaches for and the public alternative it waits for. When RLlib moves, this
package is the one place to read, and ``tests/test_seams.py`` finds any private name used
elsewhere (it scans the project's code against Ray's installed source).

The seams:

- ``tune``: Tune's result and progress loggers, the Optuna searcher's bookkeeping and the env
  registry.
- ``checkpointing``: the checkpoint Tune restarts a trial from, and the seconds an algorithm
  spends writing checkpoints.
- ``metrics``: RLlib's timer objects (a profiling instrument restarts them as running means).
- ``algorithm``: the training step and iteration of RLlib's ``Algorithm`` and DQN, which
  components a state request asks for, and the config's validation helpers and own settings.
- ``env_runner``: the env runner group's in-flight requests, an env runner's weights version
  and per-runner state, a DQN module's exploration schedule, IMPALA's aggregators.
- ``learner``: a learner's optimizers and learning-rate schedules, the local learner of a
  group, DQN's Q-value forward, and Ray Train's worker class.
- ``replay``: the internals of RLlib's prioritized episode replay buffer.
- ``reuse``: a trial's actor reused for the next trial (Tune's ``reset_config``), with what the
  old trial leaves in the process ended first.

Copies of RLlib code (``sweeps/algorithms/appo_loss.py``) stay where they are, pinned to RLlib's
by tests; RLModule's ``_forward*`` methods are RLlib's documented way to write a module and are
not private uses. Importing this package imports neither Ray nor Torch; its modules do.
"""
