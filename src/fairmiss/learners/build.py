"""Learners: one factory per config ``kind`` behind a common adapter.

Every learner is wrapped in :class:`~fairmiss.learners.adapter.Learner`, which passes ``sensitive_features`` as
keyword data to estimators that need it (fairness reductions, post-processors, the Fair MIP
Forest) and never to the others. The group is *not* an input feature unless the dataset spec
says ``group_as_feature``.
"""

from __future__ import annotations

import fairmiss.learners.specs  # noqa: F401  (imports every kind's module: each registers its spec and factory)
from fairmiss.learners.adapter import LEARNER_KINDS, Learner

__all__ = ["make_learner", "LEARNERS", "Learner"]

#: ``kind`` -> factory: the built-in kinds in the order this table had before the registry, then added kinds.
_BUILTIN = ["decision_tree", "logistic_regression", "random_forest", "xgboost",
            "hist_gradient_boosting", "exponentiated_gradient", "threshold_optimizer",
            "fair_mip_forest", "equality_constrained",
            "group_covariate", "orthogonal", "zafar", "budro",
            "budro_project", "reweigh"]
LEARNERS = {k: LEARNER_KINDS[k].build for k in _BUILTIN + sorted(set(LEARNER_KINDS.kinds()) - set(_BUILTIN))}


def make_learner(spec, seed: int, threads: int = 1, feature_names=None) -> Learner:
    """The :class:`Learner` for ``spec`` (looked up in the registry at call time, so plugins count)."""
    if spec.kind not in LEARNER_KINDS:
        raise ValueError(f"unknown learner '{spec.kind}'; known: {sorted(LEARNER_KINDS.kinds())}")
    entry = LEARNER_KINDS[spec.kind]
    if entry.flags.get("needs_feature_names"):
        return entry.build(spec, seed, threads, feature_names)
    return entry.build(spec, seed, threads)
