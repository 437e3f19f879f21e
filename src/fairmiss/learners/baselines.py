"""Baseline learners: decision tree, logistic regression, random forest, XGBoost, histogram gradient
boosting, and paper 002's group-covariate comparators: their specs and factories.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ['DecisionTreeSpec', 'LogisticRegressionSpec', 'GroupCovariateSpec', 'RandomForestSpec', 'XGBoostSpec',
           'HistGBSpec']


class DecisionTreeSpec(_LearnerBase):
    kind: Literal["decision_tree"] = "decision_tree"
    max_depth: Annotated[int, Field(ge=1)] | None = 3
    min_samples_leaf: Annotated[int, Field(ge=1)] = 1
    criterion: Literal["gini", "entropy", "log_loss"] = "gini"


class LogisticRegressionSpec(_LearnerBase):
    kind: Literal["logistic_regression"] = "logistic_regression"
    C: Annotated[float, Field(gt=0)] = 1.0
    penalty: Literal["l2", "l1", "none"] = "l2"
    max_iter: Annotated[int, Field(ge=1)] = 1000


class GroupCovariateSpec(_LearnerBase):
    """Paper 002's comparators: logistic regression with the group as covariate (``covariate``),
    Pope & Sydnor (``zero``: group coefficient zeroed at prediction; ``mean``: group replaced by its
    mean), or group ignored (``unaware``)."""

    kind: Literal["group_covariate"] = "group_covariate"
    strategy: Literal["zero", "mean", "covariate", "unaware"] = "zero"
    C: Annotated[float, Field(gt=0)] = 1.0


class RandomForestSpec(_LearnerBase):
    kind: Literal["random_forest"] = "random_forest"
    n_estimators: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] | None = None
    n_jobs: Annotated[int, Field(ge=1)] = 1


class XGBoostSpec(_LearnerBase):
    kind: Literal["xgboost"] = "xgboost"
    n_estimators: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] = 3
    learning_rate: Annotated[float, Field(gt=0)] = 0.1
    reg_lambda: Annotated[float, Field(ge=0)] = 1.0
    min_child_weight: Annotated[float, Field(ge=0)] = 1.0
    base_score: Annotated[float, Field(gt=0, lt=1)] | None = None
    scale_pos_weight: Annotated[float, Field(gt=0)] = 1.0
    n_jobs: Annotated[int, Field(ge=1)] = 1


class HistGBSpec(_LearnerBase):
    kind: Literal["hist_gradient_boosting"] = "hist_gradient_boosting"
    max_iter: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] | None = None
    learning_rate: Annotated[float, Field(gt=0)] = 0.1


def _tree(spec, seed, threads):
    return Learner(DecisionTreeClassifier(max_depth=spec.max_depth, min_samples_leaf=spec.min_samples_leaf,
                                          criterion=spec.criterion, random_state=seed))


def _lr(C=1.0, penalty="l2", max_iter=1000, seed=0):
    if penalty == "l1":
        return LogisticRegression(C=C, l1_ratio=1.0, solver="saga", max_iter=max_iter, random_state=seed)
    if penalty == "none":
        return LogisticRegression(C=np.inf, max_iter=max_iter)
    return LogisticRegression(C=C, max_iter=max_iter)


def _logreg(spec, seed, threads):
    return Learner(make_pipeline(StandardScaler(), _lr(spec.C, spec.penalty, spec.max_iter, seed)))


def _group_covariate(spec, seed, threads):
    from fairmiss.learners.orthogonal.comparators import GroupCovariateModel

    est = GroupCovariateModel(estimator=LogisticRegression(C=spec.C, max_iter=1000), strategy=spec.strategy)
    return Learner(est, needs_sensitive_fit=True, needs_sensitive_predict=True)


def _rf(spec, seed, threads):
    return Learner(RandomForestClassifier(n_estimators=spec.n_estimators, max_depth=spec.max_depth,
                                          n_jobs=min(spec.n_jobs, threads), random_state=seed))


def _xgb(spec, seed, threads):
    from xgboost import XGBClassifier

    return Learner(XGBClassifier(n_estimators=spec.n_estimators, max_depth=spec.max_depth,
                                 learning_rate=spec.learning_rate, n_jobs=min(spec.n_jobs, threads),
                                 reg_lambda=spec.reg_lambda, min_child_weight=spec.min_child_weight,
                                 base_score=spec.base_score, scale_pos_weight=spec.scale_pos_weight,
                                 random_state=seed, tree_method="hist"))


def _hgb(spec, seed, threads):
    return Learner(HistGradientBoostingClassifier(max_iter=spec.max_iter, max_depth=spec.max_depth,
                                                  learning_rate=spec.learning_rate, random_state=seed))


LEARNER_KINDS.register("decision_tree", DecisionTreeSpec, _tree, accepts_nan=True, mi=True, family="baseline")
LEARNER_KINDS.register("logistic_regression", LogisticRegressionSpec, _logreg, mi=True, family="baseline")
LEARNER_KINDS.register("random_forest", RandomForestSpec, _rf, accepts_nan=True, mi=True, family="baseline")
LEARNER_KINDS.register("xgboost", XGBoostSpec, _xgb, accepts_nan=True, mi=True, family="baseline")
LEARNER_KINDS.register("hist_gradient_boosting", HistGBSpec, _hgb, accepts_nan=True, mi=True, family="baseline")
LEARNER_KINDS.register("group_covariate", GroupCovariateSpec, _group_covariate, needs_groups=True, family="orthogonal")
