"""Algorithms the suite adds to RLlib 2.60's new API stack.

* :mod:`sweeps.algorithms.apex`: Ape-X DQN, one module per concern (``ApexDQNConfig`` /
  ``ApexDQN``; call ``sweeps.algorithms.apex.register()`` to make ``"ApexDQN"`` a Tune trainable
  name).
* :mod:`sweeps.algorithms.columnar_dqn`: RLlib's DQN with its prioritized replay sampled as a
  train batch (``ColumnarDQNConfig``; DQN's Pong recipe); the replay is
  :mod:`~sweeps.algorithms.columnar_replay`, RLlib's buffer sampled as columns, whose running games
  grow in place (:mod:`~sweeps.algorithms.growing_replay`); Ape-X's shards hold the same buffer.
* :mod:`sweeps.algorithms.masked_dqn`: the action-masked DQN RLModule for ``CabsRequests-v0``
  (used by DQN and Ape-X alike) and ``dqn_module_spec(env_id)``.
* :mod:`sweeps.algorithms.masking`: the action-masked IMPALA / APPO RLModules for the same env.
* :mod:`sweeps.algorithms.pg_learner`: the IMPALA / APPO learner every IMPALA and APPO config
  of the suite uses, RLlib's with the extras composed on it (their order explained there):
  :mod:`~sweeps.algorithms.vtrace` keeps the V-trace bootstrap value at each fragment's end
  (RLlib 2.60's loss cancels it); :mod:`~sweeps.algorithms.entropy_target` and
  :mod:`~sweeps.algorithms.kl_lr` are their optional entropy target and learning-rate scales (by
  the KL, by the training return), :mod:`~sweeps.algorithms.training_return` hands both the
  training return, :mod:`~sweeps.algorithms.adam_eps` sets their Adam's epsilon, and
  :mod:`~sweeps.algorithms.appo_loss` is APPO's optional standardised advantages and V-trace over
  whole chunks (``learner_config_dict``) and V-trace's λ (``lambda_``, which RLlib's APPO learner
  ignores); :mod:`~sweeps.algorithms.impala_loss` is IMPALA's V-trace over whole chunks.
* :mod:`sweeps.algorithms.fast_cnn`: RLlib's default IMPALA / APPO / DQN modules with the Atari
  net's symmetric padding done by the conv (same parameters, same outputs).

Importing this package imports neither Ray nor Torch; import the submodules you need.
"""
