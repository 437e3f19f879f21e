"""Learners: the adapter every learner is called through, baselines, and one package per paper method:
``fair_mip_forest`` (000), ``orthogonal`` (002), ``equality_trees`` (003), ``budro`` (004).

Build a learner with :func:`fairmiss.learners.build.make_learner`; each kind's spec, factory and
wrapper live beside its estimator and are registered in :data:`fairmiss.learners.adapter.LEARNER_KINDS`.
The private wrapper classes that lived in the old ``fairmiss.learners`` module are resolved lazily below (with a DeprecationWarning) so
that models logged to MLflow before the package move still unpickle.
"""

from __future__ import annotations

import importlib
import warnings

# Registering every kind: importing the union module runs the discovery of the kind modules (each method
# package's ``spec`` and the top-level modules), so the registry is complete whatever learner module is
# imported first.
import fairmiss.learners.specs  # noqa: E402,F401

#: old name -> the module that defines it now (the paper-method wrappers live beside their method)
_OLD_NAMES = {"_ProjectThenFit": "fairmiss.learners.orthogonal.spec",
              "_FitThenEqualise": "fairmiss.learners.equality_trees.spec",
              "_SensitiveLast": "fairmiss.learners.zafar",
              "_ProtectedFit": "fairmiss.learners.budro.spec",
              "Learner": "fairmiss.learners.adapter",
              "LEARNERS": "fairmiss.learners.build",
              "make_learner": "fairmiss.learners.build"}


def __getattr__(name: str):
    if name in _OLD_NAMES:
        warnings.warn(f"fairmiss.learners.{name} is deprecated: import it from {_OLD_NAMES[name]}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_OLD_NAMES[name]), name)
    raise AttributeError(f"module 'fairmiss.learners' has no attribute {name!r}")
