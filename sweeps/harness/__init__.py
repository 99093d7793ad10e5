"""The machinery every sweep shares; a sweep file imports what it needs from here.

The run's steps, each in its own module: ``cli`` parses the shared flags into ``settings.Settings``
(each flag's type and default), ``placement`` plans the CPUs/GPUs of a trial, ``tuned`` and
``configs_from`` choose the first trials (the sweep's tuned defaults, or another sweep's
configurations), ``runner`` searches and fits with Tune and summarises (``outcome``: the record
closed, the best trial and the exit code); ``space`` draws and describes a sweep's search space;
``record`` writes the run record (``machine_speed`` times the machine for it), ``recovery``
handles interrupts and retries, ``budget`` the sweep's wall-clock cap, ``storage`` the sweep
folder (local or a URI), ``reporting`` the progress lines, TensorBoard HParams and the best trial.
Beside the run: ``sweep`` (the ``Sweep`` a sweep file declares; its workload is one file in
``sweeps/workloads/``), ``callbacks`` (the suite's metrics in every result), ``keys`` (result keys),
``gpu`` (the CPU fallback of a learner without CUDA), ``cpu_time`` (CPU time per process of a
trial, and its predicted time on a core per process), ``confirm`` (a target counts when the
policy plays it), ``dry_run``, ``held_out_pick`` and ``held_out_eval`` (the final figure on
held-out episodes, and the pick by it), ``optuna_search`` (Tune's Optuna searcher, resumable),
and the helpers ``errors`` (one-line errors), ``files`` (atomic writes, the files' names),
``subprocs`` (a child that SIGINT stops, however this process was started) and ``values``
(numbers read from results). Importing this package imports neither Ray nor Torch.
"""
