"""The single-process baselines a user would pick instead of the suite: Stable-Baselines3's DQN and
PPO, with rl-baselines3-zoo's tuned hyperparameters where the zoo has the env, run through the
shared runner as a Tune trial (``trainable.py``) and judged as the four are.

``hyperparams.py``: where a baseline's hyperparameters come from; ``config.py``: what the runner
asks of its config; ``trainable.py``: the trial; ``policy.py``: its policy as the suite's players
play it; ``family.py``: the sweeps (``sweeps/sb3_<algo>_<env>.py``).
"""
