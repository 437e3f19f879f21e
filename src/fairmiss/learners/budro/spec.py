"""Paper 004's learner kinds ``budro``, ``budro_project`` and ``reweigh``: their specs, the
protected-columns wrapper and the factories (the estimators are imported only when one is built).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ['BuDROSpec', 'ProjectSpec', 'ReweighSpec']


class BuDROSpec(_LearnerBase):
    """Paper 004's BuDRO: XGBoost with an optimal-transport adversary under a learned fair metric
    whose protected directions come from the ``protected`` feature columns."""

    kind: Literal["budro"] = "budro"
    protected: list[str] = Field(min_length=1)
    eps: Annotated[float, Field(ge=0)] = 1.0
    n_estimators: Annotated[int, Field(ge=1)] = 90
    learning_rate: Annotated[float, Field(gt=0)] = 0.005
    max_depth: Annotated[int, Field(ge=1)] = 4
    min_child_weight: Annotated[float, Field(ge=0)] = 1 / 80
    reg_lambda: Annotated[float, Field(ge=0)] = 1.0
    ot_method: Literal["lp", "greedy", "dual", "entropic", "dual_sgd"] = "dual"
    #: the fair metric's attribute model (logistic): inverse regularisation C, or SenSR's per-sample l2
    #: penalty (C = 1 / (metric_l2 · n_train); the paper's Adult metric came from SenSR with 0.2)
    metric_C: Annotated[float, Field(gt=0)] | None = None
    metric_l2: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _one_metric_knob(self):
        if self.metric_C is not None and self.metric_l2 is not None:
            raise ValueError("set at most one of metric_C and metric_l2")
        return self


class _XGBBaselineBase(_LearnerBase):
    """XGBoost parameters of paper 004's baselines (defaults: the German Table 4 values)."""

    n_estimators: Annotated[int, Field(ge=1)] = 90
    learning_rate: Annotated[float, Field(gt=0)] = 0.005
    max_depth: Annotated[int, Field(ge=1)] = 4
    min_child_weight: Annotated[float, Field(ge=0)] = 1 / 80
    reg_lambda: Annotated[float, Field(ge=0)] = 1.0
    scale_pos_weight: Annotated[float, Field(gt=0)] = 1.0


class ProjectSpec(_XGBBaselineBase):
    """Paper 004's "Project" baseline: XGBoost on XQ, the fair metric's protected subspace projected out;
    the metric is learned from the ``protected`` feature columns as for BuDRO."""

    kind: Literal["budro_project"] = "budro_project"
    protected: list[str] = Field(min_length=1)
    metric_C: Annotated[float, Field(gt=0)] | None = None
    metric_l2: Annotated[float, Field(gt=0)] | None = None


class ReweighSpec(_XGBBaselineBase):
    """Paper 004's "Reweigh" baseline: Kamiran–Calders weights over the ``protected`` feature columns
    (their intersection), then XGBoost."""

    kind: Literal["reweigh"] = "reweigh"
    protected: list[str] = Field(min_length=1)


def _protected_idx(spec, feature_names) -> list[int]:
    names = list(feature_names or [])
    missing = [c for c in spec.protected if c not in names]
    if missing:
        raise ValueError(f"{spec.kind}: protected column(s) {missing} are not features; features: {names}")
    return [names.index(c) for c in spec.protected]


def _xgb_kw(spec) -> dict:
    return {"n_estimators": spec.n_estimators, "learning_rate": spec.learning_rate, "max_depth": spec.max_depth,
            "min_child_weight": spec.min_child_weight, "reg_lambda": spec.reg_lambda}


def _budro(spec, seed, threads, feature_names=None):
    from fairmiss.learners.budro.boosting import BuDROClassifier

    est = BuDROClassifier(eps=spec.eps, ot_method=spec.ot_method, random_state=seed, n_jobs=threads, **_xgb_kw(spec))
    return Learner(_ProtectedFit(est, _protected_idx(spec, feature_names), metric_C=spec.metric_C,
                                 metric_l2=spec.metric_l2))


def _project(spec, seed, threads, feature_names=None):
    from fairmiss.learners.budro.boosting import ProjectClassifier

    est = ProjectClassifier(random_state=seed, n_jobs=threads, scale_pos_weight=spec.scale_pos_weight, **_xgb_kw(spec))
    return Learner(_ProtectedFit(est, _protected_idx(spec, feature_names), metric_C=spec.metric_C,
                                 metric_l2=spec.metric_l2))


def _reweigh(spec, seed, threads, feature_names=None):
    from fairmiss.learners.budro.boosting import ReweighingClassifier

    est = ReweighingClassifier(random_state=seed, n_jobs=threads, scale_pos_weight=spec.scale_pos_weight,
                               **_xgb_kw(spec))
    return Learner(_ProtectedFit(est, _protected_idx(spec, feature_names), mode="reweigh"))


class _ProtectedFit(ClassifierMixin, BaseEstimator):
    """Fit paper 004's estimators with their protected feature columns.

    ``mode="metric"`` (BuDRO, Project): ``fit(X, y, protected_columns=...)``, or with ``metric_C`` /
    ``metric_l2`` a :class:`~fairmiss.learners.budro.fair_metric.FairMetric` with that regularisation is fitted on
    the same rows first and passed as ``fair_metric=``. ``mode="reweigh"``: the columns' values are the
    ``sensitive_features`` of the reweighing. ``est`` stays unfitted; ``fit`` fits a clone, ``est_``.
    """

    def __init__(self, est, protected_idx, *, mode="metric", metric_C=None, metric_l2=None):
        self.est = est
        self.protected_idx = protected_idx
        self.mode = mode
        self.metric_C = metric_C
        self.metric_l2 = metric_l2

    def fit(self, X, y):
        self.est_ = clone(self.est)
        if self.mode == "reweigh":
            self.est_.fit(X, y, sensitive_features=np.asarray(X, dtype=float)[:, self.protected_idx])
        elif self.metric_C is None and self.metric_l2 is None:
            self.est_.fit(X, y, protected_columns=self.protected_idx)
        else:
            from fairmiss.learners.budro.fair_metric import FairMetric

            C = self.metric_C if self.metric_C is not None else 1.0 / (self.metric_l2 * len(y))
            fm = FairMetric(logistic_C=C).fit(X, protected_columns=self.protected_idx,
                                              kind=getattr(self.est_, "protected_kind", "auto"))
            self.est_.fit(X, y, fair_metric=fm)
        self.classes_ = getattr(self.est_, "classes_", None)
        if self.classes_ is None:
            self.classes_ = np.unique(np.asarray(y))
        return self

    def predict(self, X):
        return self.est_.predict(X)

    def predict_proba(self, X):
        return self.est_.predict_proba(X)


LEARNER_KINDS.register("budro", BuDROSpec, _budro, needs_feature_names=True, family="budro")
LEARNER_KINDS.register("budro_project", ProjectSpec, _project, needs_feature_names=True, family="budro")
LEARNER_KINDS.register("reweigh", ReweighSpec, _reweigh, needs_feature_names=True, family="budro")
