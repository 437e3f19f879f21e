"""Benchmarks: many methods across datasets × missingness scenarios, and a leaderboard honest about noise.

A *suite* (YAML in ``params/suites/``, :mod:`fairmiss.bench.suite`) names datasets, missingness scenarios and
candidate methods (imputer × learner). It expands into one ordinary experiment config per dataset, run by the
same engine as ``fairmiss run`` (cells cached and resumed in MLflow). The leaderboard
(:mod:`fairmiss.bench.leaderboard`) is built from the runs' per-split cell tables with the pure statistics of
:mod:`fairmiss.bench.stats`: means with t-intervals over splits, paired differences against a reference
candidate, ranks with bootstrap intervals, and the candidates that cannot be told apart from the best.
"""

from fairmiss.bench.suite import BenchSuite, expand, load_suite, parse_suite

__all__ = ["BenchSuite", "expand", "load_suite", "parse_suite"]
