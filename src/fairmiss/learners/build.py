"""Learners: one factory per config ``kind`` behind a common adapter.

Every learner is wrapped in :class:`~fairmiss.learners.adapter.Learner`, which passes ``sensitive_features`` as
keyword data to estimators that need it (fairness reductions, post-processors, the Fair MIP
Forest) and never to the others. The group is *not* an input feature unless the dataset spec
says ``group_as_feature``.
"""

from __future__ import annotations

import fairmiss.learners.specs  # noqa: F401  (imports every kind's module: each registers its spec and factory)
from fairmiss.learners.adapter import LEARNER_KINDS, Learner
# the wrappers and factories that were defined here, re-exported (models logged before the package move name them)
from fairmiss.learners.baselines import _group_covariate, _hgb, _logreg, _lr, _rf, _tree, _xgb  # noqa: F401
from fairmiss.learners.budro.spec import (_budro, _project, _protected_idx, _ProtectedFit,  # noqa: F401
                                          _reweigh, _xgb_kw)
from fairmiss.learners.equality_trees.spec import _eqtree, _FitThenEqualise  # noqa: F401
from fairmiss.learners.fair_mip_forest.spec import _fair_mip  # noqa: F401
from fairmiss.learners.fairlearn_baselines import _base, _expgrad, _threshold  # noqa: F401
from fairmiss.learners.orthogonal.spec import _orthogonal, _ProjectThenFit  # noqa: F401
from fairmiss.learners.zafar import _SensitiveLast, _zafar  # noqa: F401

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
