"""Learners: the adapter every learner is called through, baselines, and one package per paper method:
``fair_mip_forest`` (000), ``orthogonal`` (002), ``equality_trees`` (003), ``budro`` (004).

Build a learner with :func:`fairmiss.learners.build.make_learner`; each kind's spec, factory and
wrapper live beside its estimator and are registered in :data:`fairmiss.learners.adapter.LEARNER_KINDS`.
"""

from __future__ import annotations

# Registering every kind: importing the union module runs the discovery of the kind modules (each method
# package's ``spec`` and the top-level modules), so the registry is complete whatever learner module is
# imported first.
import fairmiss.learners.specs  # noqa: E402,F401
