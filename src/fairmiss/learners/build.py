"""Learners: one factory per config ``kind`` behind a common adapter.

Every learner is wrapped in :class:`FittedLearner`, which passes ``sensitive_features`` as
keyword data to estimators that need it (fairness reductions, post-processors, the Fair MIP
Forest) and never to the others. The group is *not* an input feature unless the dataset spec
says ``group_as_feature``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

logger = logging.getLogger(__name__)

__all__ = ["make_learner", "LEARNERS", "Learner"]


@dataclass
class Learner:
    """An unfitted estimator plus how to call it."""

    estimator: object
    needs_sensitive_fit: bool = False
    needs_sensitive_predict: bool = False
    carve_validation: float | None = None  # fit the post-processor on a split carved from train
    randomized_predict: bool = False  # predict samples (fairlearn EG): pass the cell's seed
    seed: int = 0
    info: dict = field(default_factory=dict)

    def fit(self, X, y, sensitive_features):
        est = self.estimator
        if self.carve_validation:
            # Hardt et al.: base model on train-minus-validation, thresholds on validation.
            tr, va = train_test_split(
                np.arange(len(y)), test_size=self.carve_validation, random_state=self.seed,
                stratify=np.asarray(sensitive_features).astype(str) + "|" + np.asarray(y).astype(str),
            )
            base = clone(est.estimator).fit(X[tr], y[tr])
            est.set_params(estimator=base, prefit=True)
            est.fit(X[va], y[va], sensitive_features=np.asarray(sensitive_features)[va])
        elif self.needs_sensitive_fit:
            est.fit(X, y, sensitive_features=sensitive_features)
        else:
            est.fit(X, y)
        return self

    def predict(self, X, sensitive_features):
        if self.needs_sensitive_predict:
            kw = {"random_state": self.seed} if self.carve_validation else {}  # randomized post-processor
            return np.asarray(self.estimator.predict(X, sensitive_features=sensitive_features, **kw))
        if self.randomized_predict:
            return np.asarray(self.estimator.predict(X, random_state=self.seed))
        return np.asarray(self.estimator.predict(X))

    def score(self, X, sensitive_features):
        """Scores for AUC: P(y = 1) where the estimator offers it, else the hard prediction."""
        est = self.estimator
        if not self.needs_sensitive_predict and hasattr(est, "_pmf_predict"):  # fairlearn EG: P(y=1), not a draw
            return np.asarray(est._pmf_predict(X))[:, 1]
        if not self.needs_sensitive_predict and hasattr(est, "predict_proba"):
            try:
                return np.asarray(est.predict_proba(X))[:, 1]
            except (AttributeError, NotImplementedError):
                pass
        if self.needs_sensitive_predict and hasattr(est, "_pmf_predict"):
            return np.asarray(est._pmf_predict(X, sensitive_features=sensitive_features))[:, 1]
        if self.needs_sensitive_predict and hasattr(est, "predict_proba"):
            return np.asarray(est.predict_proba(X, sensitive_features=sensitive_features))[:, 1]
        return self.predict(X, sensitive_features).astype(float)


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


class _ProjectThenFit(ClassifierMixin, BaseEstimator):
    """Group-orthogonal projection (002) fitted on train, then a head model on the projected data."""

    def __init__(self, projector, head):
        self.projector = projector
        self.head = head

    def fit(self, X, y, sensitive_features):
        Z = self.projector.fit_transform(X, sensitive_features=sensitive_features)
        self.head.fit(Z, y)
        self.is_fitted_ = True
        return self

    def _z(self, X, sensitive_features):
        return self.projector.transform(X, sensitive_features=sensitive_features)

    def predict(self, X, sensitive_features):
        return self.head.predict(self._z(X, sensitive_features))

    def predict_proba(self, X, sensitive_features):
        return self.head.predict_proba(self._z(X, sensitive_features))


def _orthogonal(spec, seed, threads):
    from fairmiss.learners.orthogonal.projection import OrthogonalGroupSVD, SparseOrthogonalGroupSVD

    if spec.projection == "sog":
        proj = SparseOrthogonalGroupSVD(n_components=spec.n_components, t=spec.t, output=spec.output,
                                        random_state=seed)
    else:
        proj = OrthogonalGroupSVD(n_components=spec.n_components, output=spec.output,
                                  variant="paper" if spec.projection == "og_paper" else "optimal", random_state=seed)
    if spec.head == "random_forest":
        head = RandomForestClassifier(n_estimators=spec.n_estimators, n_jobs=threads, random_state=seed)
    else:
        head = make_pipeline(StandardScaler(), _lr(spec.C, "l1" if spec.head == "lasso" else "l2", 1000, seed))
    return Learner(_ProjectThenFit(proj, head), needs_sensitive_fit=True, needs_sensitive_predict=True)


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


def _base(spec, seed):
    if spec.base == "decision_tree":
        return DecisionTreeClassifier(max_depth=spec.max_depth, random_state=seed)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def _expgrad(spec, seed, threads):
    from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient, TruePositiveRateParity
    from fairlearn.reductions import FalsePositiveRateParity

    # Constraint matched to the evaluated metric (spec 000 §4): FNR gap = TPR gap.
    cons = {"fnr": TruePositiveRateParity, "tpr": TruePositiveRateParity, "fpr": FalsePositiveRateParity,
            "equalized_odds": EqualizedOdds, "demographic_parity": DemographicParity}[spec.constraint]
    est = ExponentiatedGradient(_base(spec, seed), constraints=cons(difference_bound=spec.eps), eps=spec.eps,
                                max_iter=spec.max_iter)
    return Learner(est, needs_sensitive_fit=True, randomized_predict=True, seed=seed)


def _threshold(spec, seed, threads):
    from fairlearn.postprocessing import ThresholdOptimizer

    est = ThresholdOptimizer(estimator=_base(spec, seed), constraints=spec.constraint,
                             objective="accuracy_score", predict_method="predict_proba")
    return Learner(est, needs_sensitive_fit=True, needs_sensitive_predict=True,
                   carve_validation=spec.validation_size, seed=seed)


def _fair_mip(spec, seed, threads):
    from fairmiss.learners.fair_mip_forest.forest import FairMIPForestClassifier

    est = FairMIPForestClassifier(max_depth=spec.max_depth, lambda_=spec.lambda_, fairness=spec.fairness,
                                  eo_weight=spec.eo_weight, n_trees=spec.n_trees, batch_size=spec.batch_size,
                                  time_limit=spec.time_limit, node_limit=spec.node_limit,
                                  stratify_batches=spec.stratify_batches,
                                  warm_start=None if spec.warm_start == "none" else spec.warm_start,
                                  search_restarts=spec.search_restarts,
                                  search_max_thresholds=spec.search_max_thresholds,
                                  solver=spec.solver, dp_node_limit=spec.dp_node_limit,
                                  dp_max_thresholds=spec.dp_max_thresholds,
                                  threads=threads, random_state=seed)
    return Learner(est, needs_sensitive_fit=True)


def _eqtree(spec, seed, threads):
    from fairmiss.learners.equality_trees.eqtree import EqualityConstrainedTrees

    if spec.base == "random_forest":
        base = RandomForestClassifier(n_estimators=spec.n_estimators, max_depth=spec.max_depth, n_jobs=threads,
                                      random_state=seed)
    elif spec.base == "decision_tree":
        base = DecisionTreeClassifier(max_depth=spec.max_depth, random_state=seed)
    else:
        from xgboost import XGBClassifier

        base = XGBClassifier(n_estimators=spec.n_estimators, max_depth=spec.max_depth or 3, n_jobs=threads,
                             random_state=seed)
    return Learner(_FitThenEqualise(base, EqualityConstrainedTrees(mode=spec.mode, bounds=spec.bounds)),
                   needs_sensitive_fit=True)


class _FitThenEqualise(ClassifierMixin, BaseEstimator):
    """Fit a tree model, then equalise group means of its scores on the training split (003)."""

    def __init__(self, base, post):
        self.base = base
        self.post = post

    def fit(self, X, y, sensitive_features):
        self.base.fit(X, y)
        self.post.set_params(estimator=self.base)
        self.post.fit(X, sensitive_features=sensitive_features)
        self.is_fitted_ = True
        return self

    def predict_proba(self, X):
        return self.post.predict_proba(X)

    def predict(self, X):
        return (np.asarray(self.predict_proba(X))[:, 1] >= 0.5).astype(int)


def _zafar(spec, seed, threads):
    from fairmiss.learners.zafar import DisparateMistreatmentClassifier

    est = make_pipeline(StandardScaler(), DisparateMistreatmentClassifier(
        constraint=spec.constraint, tau=spec.tau, mu=spec.mu, max_iter=spec.max_iter, cov_factor=spec.cov_factor,
        n_starts=spec.n_starts, random_state=seed))
    return Learner(_SensitiveLast(est), needs_sensitive_fit=True)


class _SensitiveLast(ClassifierMixin, BaseEstimator):
    """Route ``sensitive_features`` to the last step of a scaling pipeline."""

    def __init__(self, pipe):
        self.pipe = pipe

    def fit(self, X, y, sensitive_features):
        Xs = self.pipe[:-1].fit_transform(X)
        self.pipe[-1].fit(Xs, y, sensitive_features=sensitive_features)
        self.is_fitted_ = True
        return self

    def predict(self, X):
        return self.pipe.predict(X)

    def predict_proba(self, X):
        return self.pipe.predict_proba(X)


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
    ``sensitive_features`` of the reweighing.
    """

    def __init__(self, est, protected_idx, *, mode="metric", metric_C=None, metric_l2=None):
        self.est = est
        self.protected_idx = protected_idx
        self.mode = mode
        self.metric_C = metric_C
        self.metric_l2 = metric_l2

    def fit(self, X, y):
        if self.mode == "reweigh":
            self.est.fit(X, y, sensitive_features=np.asarray(X, dtype=float)[:, self.protected_idx])
        elif self.metric_C is None and self.metric_l2 is None:
            self.est.fit(X, y, protected_columns=self.protected_idx)
        else:
            from fairmiss.learners.budro.fair_metric import FairMetric

            C = self.metric_C if self.metric_C is not None else 1.0 / (self.metric_l2 * len(y))
            fm = FairMetric(logistic_C=C).fit(X, protected_columns=self.protected_idx,
                                              kind=getattr(self.est, "protected_kind", "auto"))
            self.est.fit(X, y, fair_metric=fm)
        self.is_fitted_ = True
        return self

    def predict(self, X):
        return self.est.predict(X)

    def predict_proba(self, X):
        return self.est.predict_proba(X)


LEARNERS = {
    "decision_tree": _tree, "logistic_regression": _logreg, "random_forest": _rf, "xgboost": _xgb,
    "hist_gradient_boosting": _hgb, "exponentiated_gradient": _expgrad, "threshold_optimizer": _threshold,
    "fair_mip_forest": _fair_mip, "equality_constrained": _eqtree,
    "group_covariate": _group_covariate, "orthogonal": _orthogonal, "zafar": _zafar, "budro": _budro,
    "budro_project": _project, "reweigh": _reweigh,
}
_NEEDS_FEATURE_NAMES = {"budro", "budro_project", "reweigh"}


def make_learner(spec, seed: int, threads: int = 1, feature_names=None) -> Learner:
    try:
        factory = LEARNERS[spec.kind]
    except KeyError:
        raise ValueError(f"unknown learner '{spec.kind}'; known: {sorted(LEARNERS)}") from None
    if spec.kind in _NEEDS_FEATURE_NAMES:
        return factory(spec, seed, threads, feature_names)
    return factory(spec, seed, threads)
