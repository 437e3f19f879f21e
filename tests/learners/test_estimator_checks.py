"""scikit-learn's estimator checks for fairmiss's baseline estimators (sklearn 1.9 API).

Most fair learners take the group as keyword data in ``fit`` (``sensitive_features=`` /
``protected_columns=``), which the generic checks never pass. They run behind the thin test
adapter :class:`WithGroups`: it clones the estimator into ``estimator_`` and derives the group of a
row from the row itself, ``g(x) = [x_0 > 0]`` (so it is the same for a row in any batch, as the
subset/order-invariance checks need); when the training data give a single group it falls back
to alternating rows (fit only), because a group-fairness fit needs two groups. ``binary=True``
declares two-class-only for estimators that do not declare it, ``fit_kw="protected_columns"``
passes BuDRO's ``protected_columns=[0]``, and :class:`_GroupAsKeyword` turns the learners'
positional ``sensitive_features`` into the keyword (setting ``classes_``/``n_features_in_``, which
those wrappers do not; paper 004's ``_ProtectedFit`` adapter is tested directly in
tests/learners/test_learners004.py: it only forwards column indices to estimators checked here). Checks that cannot
pass through such an adapter, or that test a documented property of the wrapped estimator, are
listed in ``EXPECTED_FAILURES`` with the reason; they run as xfail (strict: a check that starts
passing is reported, so the list cannot go stale). Everything else must pass.

Not checked here, to keep this file near a minute: the Fair MIP tree/forest (one HiGHS solve per
fit; a depth-1 tree with ``node_limit=5`` took 27 s for the 55 checks on a loaded 2-core machine,
failing 6: 'fnr' undefined when a derived group has no positives in the check's data, and
label-error wording — its behaviour is covered by tests/learners/test_mip_forest.py), and fairlearn's own
ExponentiatedGradient / ThresholdOptimizer (third-party; fairmiss only routes their keyword data in
``fairmiss.learners.build.Learner``, which is not an estimator).
"""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator
from sklearn.utils.validation import check_is_fitted, validate_data

from fairmiss.impute.knn import TieAwareKNNImputer
from fairmiss.learners.equality_trees.spec import _FitThenEqualise
from fairmiss.learners.orthogonal.head import ProjectedHead
from fairmiss.learners.zafar import _SensitiveLast
from fairmiss.learners.budro.boosting import BuDROClassifier, ProjectClassifier, ReweighingClassifier
from fairmiss.learners.equality_trees.eqtree import EqualityConstrainedTrees
from fairmiss.learners.orthogonal.projection import OrthogonalGroupSVD, SparseOrthogonalGroupSVD
from fairmiss.learners.orthogonal.comparators import GroupCovariateModel
from fairmiss.learners.zafar import DisparateMistreatmentClassifier

# Warnings these checks cause on purpose (named, so that any other warning fails the suite: filterwarnings =
# error in pyproject.toml): scikit-learn's check_complex_data feeds complex input, which the test adapters cast
# to read the group; its tiny datasets leave one group in a constraint's subset, stop Zafar's penalty CCP before
# its stopping rule and push equalised leaf probabilities out of [0, 1]. Each is a documented warning of ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Casting complex values to real:numpy.exceptions.ComplexWarning"),
    pytest.mark.filterwarnings("ignore:f[np]r_cov_group_.*the constraint is vacuous:UserWarning"),
    pytest.mark.filterwarnings("ignore:penalty CCP did not meet the stopping rule:sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore:adjusted positive-class leaf probabilities span"
                               ":fairmiss.learners.equality_trees.eqtree.ProbabilityRangeWarning"),
]


def _groups(X, fit):
    try:
        x0 = sp.csr_array(X)[:, [0]].toarray() if sp.issparse(X) else np.asarray(X, dtype=float)[:, 0]
        g = (np.ravel(x0) > 0).astype(int)
    except (TypeError, ValueError, IndexError, NotImplementedError):  # malformed input: let the estimator report it
        g = np.zeros(X.shape[0] if hasattr(X, "shape") else len(X), dtype=int)
    if fit and len(np.unique(g)) < 2 and len(g) > 1:
        g = np.arange(len(g)) % 2
    return g


class _WithGroupsBase(BaseEstimator):
    """Pass ``g(x) = [x_0 > 0]`` as ``sensitive_features`` (test adapter, see the module docstring).

    ``fit_kw="protected_columns"`` passes ``protected_columns=[0]`` instead (BuDRO's fair metric);
    ``binary=True`` declares ``classifier_tags.multi_class = False`` for binary-only estimators
    that do not declare it themselves, so that the checks use two-class data.
    """

    def __init__(self, estimator, predict_groups=False, fit_kw="sensitive_features", binary=False):
        self.estimator = estimator
        self.predict_groups = predict_groups
        self.fit_kw = fit_kw
        self.binary = binary

    def _inner_tags(self, tags):
        inner = self.estimator.__sklearn_tags__()
        tags.input_tags = inner.input_tags
        tags.target_tags = inner.target_tags
        tags.classifier_tags = inner.classifier_tags
        tags.transformer_tags = inner.transformer_tags
        tags.non_deterministic = inner.non_deterministic
        if self.binary:
            tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y=None):
        Xv = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=True, skip_check_array=True)
        kw = {"protected_columns": [0]} if self.fit_kw == "protected_columns" else {
            "sensitive_features": _groups(Xv, fit=True)}
        self.estimator_ = clone(self.estimator).fit(Xv, y, **kw)
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        self.n_features_in_ = getattr(self.estimator_, "n_features_in_", None)
        return self

    def _call(self, method, X):
        check_is_fitted(self)
        kw = {"sensitive_features": _groups(X, fit=False)} if self.predict_groups else {}
        return getattr(self.estimator_, method)(X, **kw)


class WithGroups(ClassifierMixin, _WithGroupsBase):
    def __sklearn_tags__(self):
        return self._inner_tags(super().__sklearn_tags__())

    def predict(self, X):
        return self._call("predict", X)

    def predict_proba(self, X):
        return self._call("predict_proba", X)


class WithGroupsTransformer(TransformerMixin, _WithGroupsBase):
    def __sklearn_tags__(self):
        return self._inner_tags(super().__sklearn_tags__())

    def transform(self, X):
        return self._call("transform", X)


class _GroupAsKeyword(ClassifierMixin, BaseEstimator):
    """learners' wrappers take ``sensitive_features`` positionally; expose it as the keyword."""

    def __init__(self, wrapper):
        self.wrapper = wrapper

    def fit(self, X, y, *, sensitive_features):
        self.wrapper_ = clone(self.wrapper).fit(X, y, sensitive_features)
        self.classes_ = np.unique(np.asarray(y))
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X, **kw):
        return self.wrapper_.predict(X, *kw.values())

    def predict_proba(self, X, **kw):
        return self.wrapper_.predict_proba(X, *kw.values())


ZAFAR = DisparateMistreatmentClassifier(constraint="fnr", tau=1.0, max_iter=20, random_state=0)
ESTIMATORS = [
    TieAwareKNNImputer(n_neighbors=3),
    TieAwareKNNImputer(n_neighbors=3, ties="lowest_index", weights="distance", add_indicator=True),
    WithGroups(ZAFAR),
    WithGroups(DisparateMistreatmentClassifier(constraint="eo", cov_factor=0.5, max_iter=20, random_state=0)),
    WithGroups(GroupCovariateModel(strategy="zero")),
    WithGroups(GroupCovariateModel(strategy="covariate"), predict_groups=True),
    GroupCovariateModel(strategy="unaware"),
    WithGroupsTransformer(OrthogonalGroupSVD(n_components=2, random_state=0), predict_groups=True),
    WithGroupsTransformer(SparseOrthogonalGroupSVD(n_components=2, random_state=0), predict_groups=True),
    WithGroups(ReweighingClassifier(n_estimators=5, random_state=0), binary=True),
    WithGroups(BuDROClassifier(eps=0.1, n_estimators=3, learning_rate=0.1, random_state=0),
               fit_kw="protected_columns", binary=True),
    WithGroups(ProjectClassifier(n_estimators=5, random_state=0), fit_kw="protected_columns", binary=True),
    # fairmiss.learners.build' wrappers, as make_learner builds them
    WithGroups(_GroupAsKeyword(_SensitiveLast(make_pipeline(StandardScaler(), ZAFAR))), binary=True),
    WithGroups(_GroupAsKeyword(ProjectedHead(OrthogonalGroupSVD(n_components=2, random_state=0),
                                             LogisticRegression())), predict_groups=True),
    WithGroups(_GroupAsKeyword(_FitThenEqualise(DecisionTreeClassifier(max_depth=3, random_state=0),
                                                EqualityConstrainedTrees())), binary=True),
]

_LABELS01 = {
    # BuDRO / Project / Reweigh (fairmiss.learners.budro.boosting): binary 0/1 labels only, without declaring
    # classifier_tags.multi_class=False, and their label errors do not use scikit-learn's wording.
    "check_estimators_dtypes": "labels must be 0/1; the check's y has 3 classes",
    "check_classifier_data_not_an_array": "labels must be 0/1; the check's y has 3 classes",
    "check_fit2d_1feature": "labels must be 0/1; the check's y has 3 classes",
    "check_classifiers_classes": "labels must be 0/1 (string labels such as 'one'/'two' are rejected)",
    "check_complex_data": "complex y is rejected as 'labels must be in {0, 1}', not 'Complex data not supported'",
    "check_dtype_object": "object y is rejected without 'Unknown label type' in the message",
    "check_classifiers_regression_target": "continuous y is rejected without 'Unknown label type'/'continuous'",
    "check_supervised_y_2d": "a column-vector y is ravelled silently (no DataConversionWarning)",
    "check_classifier_not_supporting_multiclass": "3-class y is rejected without 'Only binary classification "
                                                  "is supported.'",
    "check_fit2d_1sample": "one-row fit says 'both classes 0 and 1 must be present', not '1 class'/'1 sample'",
    "check_requires_y_none": "y=None is rejected without 'requires y to be passed'",
}
_N_COMPONENTS = {
    "check_fit2d_1sample": "n_components=2 > min(n_samples, n_features)=1 is reported in those words",
    "check_fit2d_1feature": "n_components=2 > min(n_samples, n_features)=1 is reported in those words",
}
_REMOVES_X0 = ("projects the protected direction (here column 0 / g = [x_0 > 0]) out of X; on the check's "
               "blobs that is the informative direction, so training accuracy < 0.83 by design")
_NO_VALIDATION = {  # fairmiss.learners.build' internal wrappers delegate without validating input themselves
    "check_estimators_nan_inf": "the wrapper does not validate X and its tree base accepts NaN/inf",
    "check_estimator_sparse_tag": "the wrapper does not validate X; the tree base accepts sparse X",
    "check_estimator_sparse_array": "sparse X reaches EqualityConstrainedTrees, whose error does not say 'sparse'",
    "check_estimator_sparse_matrix": "sparse X reaches EqualityConstrainedTrees, whose error does not say 'sparse'",
    "check_supervised_y_2d": "the wrapper passes a column-vector y on without a DataConversionWarning",
    "check_classifier_not_supporting_multiclass": "3-class y fails in EqualityConstrainedTrees without 'Only "
                                                  "binary classification is supported.'",
    "check_fit2d_1sample": "one row is one group: 'sensitive_features has a single group'",
}
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "WithGroupsTransformer>OrthogonalGroupSVD": _N_COMPONENTS,
    "WithGroupsTransformer>SparseOrthogonalGroupSVD": _N_COMPONENTS,
    "WithGroups>ReweighingClassifier": _LABELS01,
    "WithGroups>BuDROClassifier": _LABELS01,
    "WithGroups>ProjectClassifier": {**_LABELS01, "check_classifiers_train": _REMOVES_X0},
    "WithGroups>_GroupAsKeyword>ProjectedHead": {**_N_COMPONENTS, "check_classifiers_train": _REMOVES_X0},
    "WithGroups>_GroupAsKeyword>_FitThenEqualise": _NO_VALIDATION,
}


def _name(est) -> str:
    """Class chain through the test adapters, e.g. ``WithGroups>ReweighingClassifier``."""
    names = [type(est).__name__]
    while isinstance(est, (_WithGroupsBase, _GroupAsKeyword)):
        est = est.estimator if isinstance(est, _WithGroupsBase) else est.wrapper
        names.append(type(est).__name__)
    return ">".join(names[:3])


def expected_failed_checks(est) -> dict[str, str]:
    return EXPECTED_FAILURES.get(_name(est), {})


#: checks not run, by design (so nothing is silently skipped): scikit-learn's array-API dispatch check
#: needs SCIPY_ARRAY_API set before SciPy is first imported, which would change SciPy's behaviour for the
#: whole test session; array-API inputs are not a fairmiss goal (NumPy in, NumPy out)
NOT_RUN = {"check_array_api_input": "array API dispatch needs SCIPY_ARRAY_API before SciPy's import; not a goal"}


def _check_name(check) -> str:
    return getattr(check, "func", check).__name__


def _cases():
    for est in ESTIMATORS:
        for item in estimator_checks_generator(est, legacy=True, mark="xfail", xfail_strict=True,
                                               expected_failed_checks=expected_failed_checks(est)):
            # an expected failure comes as pytest.param(est, check, marks=xfail); the rest as (est, check)
            param = item if hasattr(item, "marks") else pytest.param(*item)
            if _check_name(param.values[1]) not in NOT_RUN:
                yield param


def _id(obj):
    return _check_name(obj) if callable(obj) and not hasattr(obj, "get_params") else re.sub(r"\s+", "", str(obj))


@pytest.mark.parametrize("estimator, check", list(_cases()), ids=_id)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
