"""Analysis of the suite's runs: it reads Tune experiment folders, never trainer code.

* :mod:`analysis.collect` - experiment folders -> one tidy table (one row per trial iteration),
  each folder read by :mod:`analysis.run_folder`;
* :mod:`analysis.tables` - time to target, speedup, scaling (pure functions);
* :mod:`analysis.predicted` - time to target predicted on a core per process from the runs' CPU
  figures, beside the measured one (pure functions);
* :mod:`analysis.asha` - ASHA's savings and its check against the same configurations at full
  budget (pure functions);
* :mod:`analysis.workload` - one env + variant with its tables, computed once;
* :mod:`analysis.plots` - time-to-target bars, learning curves, scaling and sweep plots;
* :mod:`analysis.summary`, :mod:`analysis.sections`, :mod:`analysis.scaling` (its sentences in
  :mod:`analysis.scaling_words`), :mod:`analysis.sweep_sections`,
  :mod:`analysis.reproducibility` - the report's Markdown (summary, each workload's detail, its
  scaling with env runners, its sweeps, how every run was produced);
* :mod:`analysis.fmt` - the fixed text formats they share;
* :mod:`analysis.report` - ``REPORT.md`` with the plots and how every run was produced.

Command line: ``python -m analysis collect ...`` and ``python -m analysis report ...``.
"""
