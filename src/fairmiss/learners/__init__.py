"""Learners: the adapter every learner is called through, baselines, and one package per paper method:
``fair_mip_forest`` (000), ``orthogonal`` (002), ``equality_trees`` (003), ``budro`` (004).

Build a learner with :func:`fairmiss.learners.build.make_learner`. The private wrapper classes that
lived in the old ``fairmiss.learners`` module are resolved lazily below (with a DeprecationWarning) so
that models logged to MLflow before issue K's package move still unpickle.
"""

from __future__ import annotations

import importlib
import warnings

_OLD_NAMES = {"_ProjectThenFit", "_FitThenEqualise", "_SensitiveLast", "_ProtectedFit",
              "Learner", "LEARNERS", "make_learner"}


def __getattr__(name: str):
    if name in _OLD_NAMES:
        warnings.warn(f"fairmiss.learners.{name} is deprecated: import it from fairmiss.learners.build",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module("fairmiss.learners.build"), name)
    raise AttributeError(f"module 'fairmiss.learners' has no attribute {name!r}")
