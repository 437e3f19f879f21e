"""Equality-constrained decision trees: post-hoc group fairness in expectation (paper 003).

Fitzsimons et al. (arXiv:1810.05041 v1) enforce *group fairness in expectation* (GFE) on a
trained tree by moving its leaf values the least amount needed for the groups' mean
predictions on a reference set to be equal. Spec 003 reconstructs the lost equations; the
symbols below follow it.

For one tree with leaves ``l = 1..L``, leaf values ``ybar_l`` and reference counts ``n_l``:

* ``z_l = n_{A,l}/n_A - n_{B,l}/n_B`` (spec §1). The tree's group-mean gap on the reference
  set is ``z @ f`` for leaf values ``f``, so GFE is the single linear constraint ``z @ f = 0``.
  With ``K > 2`` groups there are ``K - 1`` rows ``Z`` (group ``k`` against the first group).
* ``compressed`` (spec §5.1): ``f = ybar - z (z @ ybar)/(z @ z)``, the unweighted projection.
* ``explicit`` with ``sigma2 -> 0`` (spec §5.2): ``f = ybar - (z/n)(z @ ybar)/sum(z**2/n)``,
  the projection weighted by leaf size; it preserves the overall reference-set mean.
* ``explicit`` with ``sigma2 > 0`` (spec §5.2): the GP MAP
  ``f = (n ybar - z lam)/(n + sigma2)``; with ``center=True`` this is applied to
  ``ybar - c`` (``c`` the tree's reference-set mean) and ``c`` added back, which makes the
  map shift-invariant instead of shrinking leaves toward 0.

All three are a weighted projection ``argmin sum_l w_l (f_l - m_l)^2 s.t. Z f = 0`` with
``(m, w) = (ybar, 1)``, ``(ybar, n)`` or ``(c + n(ybar-c)/(n+sigma2), n + sigma2)``; the
closed form is ``f = m - W^-1 Z^T (Z W^-1 Z^T)^+ Z m`` (spec §10). The optimisation view
(:func:`solve_leaf_program`, Pyomo, solved by :func:`fairmiss.solver.solve`) adds what the
closed form cannot: leaf-value bounds, a tolerance ``|gap| <= eps`` and an l1 (LP) objective.

Each tree of an ensemble is adjusted independently against the same reference set; because
an ensemble output is ``const + sum_t eta_t tree_t(x)``, every tree having zero gap makes the
ensemble gap zero (spec §7).

Which quantity is equalised
---------------------------
* scikit-learn regressors (trees, random forests, extra trees): ``predict``.
* scikit-learn binary classifiers (trees, random forests, extra trees): the score of the
  positive class ``classes_[1]``, ``predict_proba(X)[:, 1]`` (leaf class fractions are
  rewritten as ``(1-f, f)``).
  The closed form may leave ``[0, 1]``; a :class:`ProbabilityRangeWarning` is emitted, and
  ``bounds=(0, 1)`` keeps exact equality inside the range (spec §4, §8).
* scikit-learn gradient boosting (regressor; binary classifier) and XGBoost (``Booster``,
  ``XGBRegressor``, binary ``XGBClassifier``): the **margin** (raw sum of leaf values,
  ``decision_function`` / ``output_margin=True``). For an identity link (squared error) this
  is the prediction; for logistic objectives the probabilities are *not* exactly equalised.

The wrapped model is never mutated: :meth:`EqualityConstrainedTrees.fit` deep-copies it
and rewrites the copy's leaf values (scikit-learn ``tree_.value``; XGBoost JSON
``split_conditions``/``base_weights``). The copy, ``estimator_``, is an ordinary fitted
model of the original type, so it can be pickled and logged like the original.
"""

from __future__ import annotations

import copy
import json
import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin
from fairmiss.learners.equality_trees.leaf_program import (  # noqa: F401  (re-exported)
    LeafProblem,
    leaf_problem,
    equalise_leaf_values,
    build_leaf_program,
    solve_leaf_program,
)

logger = logging.getLogger(__name__)

__all__ = [
    "SUPPORTED_MODELS",
    "EqualityConstrainedTrees",
    "LeafProblem",
    "ProbabilityRangeWarning",
    "equalise_leaf_values",
    "leaf_problem",
    "solve_leaf_program",
]

SUPPORTED_MODELS = (
    "sklearn.tree.DecisionTreeRegressor",
    "sklearn.tree.DecisionTreeClassifier (binary)",
    "sklearn.tree.ExtraTreeRegressor",
    "sklearn.tree.ExtraTreeClassifier (binary)",
    "sklearn.ensemble.RandomForestRegressor",
    "sklearn.ensemble.RandomForestClassifier (binary)",
    "sklearn.ensemble.ExtraTreesRegressor",
    "sklearn.ensemble.ExtraTreesClassifier (binary)",
    "sklearn.ensemble.GradientBoostingRegressor",
    "sklearn.ensemble.GradientBoostingClassifier (binary)",
    "xgboost.Booster (gbtree, single output)",
    "xgboost.XGBRegressor (gbtree, single output)",
    "xgboost.XGBClassifier (gbtree, binary)",
)
_MODES = ("compressed", "explicit")
_METHODS = ("auto", "closed_form", "optimization")
_PENALTIES = ("l2", "l1")


class ProbabilityRangeWarning(UserWarning):
    """Adjusted class-probability leaves left ``[0, 1]``; pass ``bounds=(0, 1)`` to prevent it."""


# --------------------------------------------------------------------------------------
# Per-tree problem data and the closed form
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Optimisation view (spec §10)
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Model adapters
# --------------------------------------------------------------------------------------


def _unsupported(model, reason=""):
    listing = "\n  - ".join(SUPPORTED_MODELS)
    return TypeError(
        f"Unsupported model type {type(model).__module__}.{type(model).__name__}"
        f"{': ' + reason if reason else ''}. Supported models:\n  - {listing}"
    )


class _SklearnAdapter:
    """Leaf access for scikit-learn trees, forests and gradient boosting (on a copy)."""

    def __init__(self, model):
        from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor,
                                      GradientBoostingClassifier, GradientBoostingRegressor,
                                      RandomForestClassifier, RandomForestRegressor)
        from sklearn.tree import BaseDecisionTree, DecisionTreeClassifier
        from sklearn.utils.validation import check_is_fitted

        averaging = (RandomForestRegressor, RandomForestClassifier, ExtraTreesRegressor,
                     ExtraTreesClassifier)
        boosting = (GradientBoostingRegressor, GradientBoostingClassifier)
        if not isinstance(model, (BaseDecisionTree, *averaging, *boosting)):
            raise _unsupported(model)
        check_is_fitted(model)
        self.model = model
        self.classifier = hasattr(model, "classes_")
        if self.classifier and len(model.classes_) != 2:
            raise ValueError(
                f"{type(model).__name__} has {len(model.classes_)} classes; only binary "
                "classifiers are supported (the positive-class score is equalised)"
            )
        if getattr(model, "n_outputs_", 1) != 1:
            raise ValueError("multi-output tree models are not supported")
        if isinstance(model, BaseDecisionTree):
            self.trees, self.additive = [model], False
        elif isinstance(model, averaging):
            self.trees, self.additive = list(model.estimators_), False
        else:
            self.trees, self.additive = list(model.estimators_[:, 0]), True
        # class-probability leaves only for tree classifiers (GBM stages are regressors)
        self.proba_leaves = isinstance(self.trees[0], DecisionTreeClassifier)
        self.n_features = model.n_features_in_
        if self.additive:
            self.weights = np.full(len(self.trees), float(model.learning_rate))
            self.quantity = "decision_function" if self.classifier else "predict"
        else:
            self.weights = np.full(len(self.trees), 1.0 / len(self.trees))
            self.quantity = "predict_proba[:, 1]" if self.classifier else "predict"

    def prepare(self, X):
        from sklearn.utils.validation import check_array

        if hasattr(X, "columns") and hasattr(self.model, "feature_names_in_"):
            if list(map(str, X.columns)) != list(self.model.feature_names_in_):
                raise ValueError("X_ref columns do not match the model's feature names")
        allow_nan = self.model.__sklearn_tags__().input_tags.allow_nan
        return check_array(X, dtype=np.float32, accept_sparse="csr",
                           ensure_all_finite="allow-nan" if allow_nan else True)

    def iter_trees(self, Xp):
        """Yield ``(leaves, leaf_nodes, leaf_values)`` per tree."""
        for tree in self.trees:
            tr = tree.tree_
            nodes = np.flatnonzero(tr.children_left == -1)
            col = 1 if self.proba_leaves else 0
            yield tree.apply(Xp, check_input=False), nodes, tr.value[nodes, 0, col]

    def output(self, X):
        if self.quantity == "predict_proba[:, 1]":
            return self.model.predict_proba(X)[:, 1]
        if self.quantity == "decision_function":
            return np.ravel(self.model.decision_function(X))
        return np.ravel(self.model.predict(X))

    def write(self, new_values):
        """Write ``{tree index: (nodes, values)}`` into this adapter's model (a copy)."""
        for t, (nodes, vals) in new_values.items():
            value = self.trees[t].tree_.value  # a view on the tree's buffer
            if self.proba_leaves:
                value[nodes, 0, 1] = vals
                value[nodes, 0, 0] = 1.0 - vals
            else:
                value[nodes, 0, 0] = vals


class _XGBoostAdapter:
    """Leaf access for XGBoost gbtree models through the JSON model (margin is equalised)."""

    def __init__(self, model):
        import xgboost as xgb

        self.model = model
        self.is_booster = isinstance(model, xgb.Booster)
        booster = model if self.is_booster else model.get_booster()
        self.booster = booster
        config = json.loads(booster.save_config())["learner"]
        if config["gradient_booster"]["name"] != "gbtree":
            raise _unsupported(model, f"booster {config['gradient_booster']['name']!r} "
                                      "(only 'gbtree')")
        self.raw = json.loads(bytes(booster.save_raw("json")))
        params = self.raw["learner"]["learner_model_param"]
        if int(params.get("num_class", "0")) > 1 or int(params.get("num_target", "1")) != 1:
            raise _unsupported(model, "multi-class or multi-target XGBoost model")
        self.tree_json = self.raw["learner"]["gradient_booster"]["model"]["trees"]
        self.classifier = not self.is_booster and hasattr(model, "classes_")
        self.n_features = booster.num_features()
        self.weights = np.ones(len(self.tree_json))
        self.additive = True
        self.quantity = "margin"

    def prepare(self, X):
        return X

    def _dmatrix(self, X):
        import xgboost as xgb

        if self.is_booster:
            return xgb.DMatrix(X)
        m = self.model  # the same DMatrix settings as XGBModel.apply / predict
        return xgb.DMatrix(X, missing=m.missing, feature_types=m.feature_types,
                           enable_categorical=m.enable_categorical, nthread=m.n_jobs)

    def leaf_matrices(self, X, rounds_per_chunk=50):
        """Yield ``(first tree, leaf ids of shape (trees in chunk, n))`` chunk by chunk.

        ``pred_leaf`` is requested for a range of boosting rounds at a time, which bounds
        memory at ``rounds_per_chunk x n`` and gives contiguous per-tree rows.
        """
        n_rounds = self.booster.num_boosted_rounds()
        dmat = self._dmatrix(X)
        first = 0
        for start in range(0, n_rounds, rounds_per_chunk):
            # pred_leaf only accepts ranges starting at 0: slice the model instead
            part = self.booster[start:min(start + rounds_per_chunk, n_rounds)]
            out = np.asarray(part.predict(dmat, pred_leaf=True))
            out = out.reshape(out.shape[0], -1)
            yield first, np.ascontiguousarray(out.T, dtype=np.int32)
            first += out.shape[1]
        if first != len(self.tree_json):
            raise _unsupported(self.model, "pred_leaf columns do not match the tree list")

    def iter_trees(self, Xp):
        for first, block in self.leaf_matrices(Xp):
            for j, leaves in enumerate(block):
                tree = self.tree_json[first + j]
                nodes = np.flatnonzero(np.asarray(tree["left_children"]) == -1)
                vals = np.asarray(tree["split_conditions"], dtype=np.float64)[nodes]
                yield leaves, nodes, vals

    def output(self, X):
        if self.is_booster:
            return self.booster.predict(self._dmatrix(X), output_margin=True).astype(np.float64)
        return np.asarray(self.model.predict(X, output_margin=True), dtype=np.float64)

    def write(self, new_values):
        for t, (nodes, vals) in new_values.items():
            tree = self.tree_json[t]
            for key in ("split_conditions", "base_weights"):
                arr = np.asarray(tree[key], dtype=np.float64)
                arr[nodes] = vals
                tree[key] = arr.astype(np.float32).astype(np.float64).tolist()
        buf = bytearray(json.dumps(self.raw).encode())
        # self.model / self.booster are deep copies made by the estimator
        self.booster.load_model(buf)


def _make_adapter(model):
    try:
        import xgboost as xgb
    except ImportError:  # pragma: no cover - xgboost is a dependency
        xgb = None
    if xgb is not None and isinstance(model, (xgb.Booster, xgb.XGBModel)):
        if isinstance(model, xgb.XGBClassifier) and getattr(model, "n_classes_", 2) != 2:
            raise ValueError("only binary XGBClassifier models are supported")
        if isinstance(model, xgb.XGBModel) and not isinstance(
                model, (xgb.XGBRegressor, xgb.XGBClassifier)):
            raise _unsupported(model)
        return _XGBoostAdapter(model)
    return _SklearnAdapter(model)


# --------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------


def _unfreeze(model):
    """Unwrap :class:`sklearn.frozen.FrozenEstimator` (which survives ``clone``)."""
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        return model
    return model.estimator if isinstance(model, FrozenEstimator) else model


def _group_means(values, codes, n_groups):
    return np.bincount(codes, weights=values, minlength=n_groups) / np.bincount(
        codes, minlength=n_groups)


class EqualityConstrainedTrees(MetaEstimatorMixin, BaseEstimator):
    """Post-processor enforcing group fairness in expectation on a trained tree model.

    ``fit`` deep-copies ``estimator`` and moves the copy's leaf values minimally so that the
    groups' mean outputs on the reference set ``X`` are equal (spec 003 §5, §8). The
    original model is never modified; the adjusted model is ``estimator_`` (same type as the
    input, picklable) and this object delegates ``predict``/``predict_proba``/
    ``decision_function`` to it. See the module docstring for which output is equalised.

    Parameters
    ----------
    estimator : object
        A fitted model from :data:`SUPPORTED_MODELS`, optionally wrapped in
        :class:`sklearn.frozen.FrozenEstimator` so that :func:`sklearn.base.clone` keeps it
        fitted (``clone`` of a bare fitted model returns an unfitted copy).
    mode : {"explicit", "compressed"}, default="explicit"
        ``explicit``: minimal per-observation (leaf-size weighted) perturbation.
        ``compressed``: minimal per-leaf (unweighted) perturbation, the paper's closed form.
    sigma2 : float, default=0.0
        Noise of the explicit form; ``0.0`` is the ``sigma2 -> 0`` limit, which preserves the
        overall reference-set mean. ``> 0`` shrinks leaves by ``n_l/(n_l + sigma2)``.
    center : bool, default=True
        Explicit form with ``sigma2 > 0``: shrink toward each tree's reference mean rather
        than toward 0 (keeps shift invariance).
    method : {"auto", "closed_form", "optimization"}, default="auto"
        ``auto`` uses the closed form unless ``bounds``, ``tol > 0`` or ``penalty="l1"``
        require the Pyomo program (solved with :func:`fairmiss.solver.solve`).
    bounds : tuple of float, optional
        ``(lo, hi)`` bounds on adjusted leaf values, e.g. ``(1, 10)`` for decile scores or
        ``(0, 1)`` for class probabilities. Averaging models only (trees, forests): for
        them leaf bounds bound the output.
    tol : float, default=0.0
        Allowed absolute gap ``|mean_j - mean_k|`` (every pair of groups) of the equalised
        output on ``X``; each tree gets ``tol / sum_t eta_t`` (``eta_t`` its weight in the
        ensemble), so the ensemble gap is at most ``tol``.
    penalty : {"l2", "l1"}, default="l2"
        Perturbation norm; ``l1`` is a linear program (not the paper's criterion) whose
        solution moves few leaves a lot; combine it with ``bounds``.
    time_limit : float, optional
        Solver time limit in seconds (optimisation method only).
    threads : int, default=1
        Solver threads (optimisation method only).

    Attributes
    ----------
    estimator_ : object
        The adjusted deep copy of ``estimator``.
    equalised_quantity_ : str
        ``"predict"``, ``"predict_proba[:, 1]"``, ``"decision_function"`` or ``"margin"``.
    groups_ : ndarray
        Sorted group labels; constraint rows compare each group with ``groups_[0]``.
    n_features_in_ : int
    n_trees_ : int
    n_leaves_adjusted_ : int
        Reached leaves over all trees (the size of the adjustment problem).
    group_means_before_, group_means_after_ : ndarray, shape (K,)
        Mean equalised output per group on the reference set.
    gap_before_, gap_after_ : float
        ``max - min`` of those group means.
    rms_perturbation_ : float
        RMS change of the equalised output over the reference rows.
    max_leaf_change_ : float
        Largest ``|delta_l|`` over all leaves and trees.
    solve_results_ : list of (fairmiss.solver.SolveResult or None) or None
        Per-tree solver diagnostics when the optimisation method was used (``None`` for
        trees that needed no solve).
    solver_status_ : str or None
        ``"optimal"`` when every solved tree was optimal, else the first other status.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); g = (X[:, 0] > 0).astype(int); y = X[:, 0]
    >>> rf = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> fair = EqualityConstrainedTrees(estimator=rf).fit(X, sensitive_features=g)
    >>> p = fair.predict(X)
    >>> bool(abs(p[g == 1].mean() - p[g == 0].mean()) < 1e-9)
    True
    """

    def __init__(self, *, estimator=None, mode="explicit", sigma2=0.0, center=True,
                 method="auto", bounds=None, tol=0.0, penalty="l2", time_limit=None, threads=1):
        self.estimator = estimator
        self.mode = mode
        self.sigma2 = sigma2
        self.center = center
        self.method = method
        self.bounds = bounds
        self.tol = tol
        self.penalty = penalty
        self.time_limit = time_limit
        self.threads = threads

    def _resolve_method(self):
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {self.mode!r}")
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        if self.penalty not in _PENALTIES:
            raise ValueError(f"penalty must be one of {_PENALTIES}, got {self.penalty!r}")
        if not (np.isfinite(self.sigma2) and self.sigma2 >= 0):
            raise ValueError(f"sigma2 must be a finite number >= 0, got {self.sigma2!r}")
        if not (np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol!r}")
        if self.bounds is not None:
            lo, hi = self.bounds
            if not lo < hi:
                raise ValueError(f"bounds must satisfy lo < hi, got {self.bounds!r}")
        needs_program = self.bounds is not None or self.tol > 0 or self.penalty == "l1"
        if self.method == "closed_form" and needs_program:
            raise ValueError("bounds, tol > 0 and penalty='l1' need method='optimization'")
        return "optimization" if (self.method == "optimization" or needs_program) else "closed_form"

    def fit(self, X, y=None, *, sensitive_features):
        """Adjust a copy of ``estimator`` so group means on the reference set ``X`` are equal.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Reference set (default in the paper: the training set). NaN is allowed where the
            model routes missing values.
        y : None
            Ignored (the targets are not needed: leaf values come from the model).
        sensitive_features : array-like of shape (n,)
            Group label of each reference row. The groups are the distinct labels present
            in the reference set, so a group with no reference row (an empty group) does
            not exist; fewer than two present groups raise ``ValueError``. More than two
            groups give ``K - 1`` constraints (every group mean equal to the first's).

        Returns
        -------
        self
        """
        method = self._resolve_method()
        if not hasattr(X, "shape"):
            X = np.asarray(X)
        if self.estimator is None:
            raise ValueError("estimator is required")
        groups, codes = np.unique(np.asarray(sensitive_features), return_inverse=True)
        codes = codes.ravel()
        if codes.shape[0] != X.shape[0]:
            raise ValueError(f"sensitive_features has {codes.shape[0]} rows, X has {X.shape[0]}")
        if groups.size < 2:
            raise ValueError(
                f"sensitive_features has a single group ({groups[0]!r}); group fairness needs "
                "at least two non-empty groups in the reference set")
        adapter = _make_adapter(copy.deepcopy(_unfreeze(self.estimator)))
        if X.shape[1] != adapter.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model expects "
                             f"{adapter.n_features}")
        if self.bounds is not None and adapter.additive:
            raise ValueError("bounds apply to averaging models (trees, forests) only: leaf "
                             "bounds do not bound a boosted sum")
        k = groups.size
        tree_tol = self.tol / float(adapter.weights.sum())
        Xp = adapter.prepare(X)

        base = np.zeros(codes.size)  # sum_t eta_t ybar_t[leaf] (output minus a constant)
        shift = np.zeros(codes.size)  # sum_t eta_t delta_t[leaf]
        const = float(np.ravel(adapter.output(X[:1]))[0])  # the copy is still unadjusted
        problems, leaf_store, new_values = [], [], {}
        max_change = 0.0
        for t, (leaves, nodes, vals) in enumerate(adapter.iter_trees(Xp)):
            prob = leaf_problem(leaves, codes, k, nodes, vals)
            if method == "closed_form":
                f = equalise_leaf_values(prob, mode=self.mode, sigma2=float(self.sigma2),
                                         center=self.center)
                max_change = max(max_change, self._record(t, prob, f, leaves, base, shift,
                                                          adapter, new_values))
            else:
                problems.append(prob)
                leaf_store.append(leaves)
        self.solve_results_ = None
        if method == "optimization":
            values, self.solve_results_ = solve_leaf_program(
                problems, mode=self.mode, sigma2=float(self.sigma2), center=self.center,
                bounds=self.bounds, tol=tree_tol, penalty=self.penalty,
                time_limit=self.time_limit, threads=self.threads)
            for t, (prob, f, leaves) in enumerate(zip(problems, values, leaf_store)):
                max_change = max(max_change, self._record(t, prob, f, leaves, base, shift,
                                                          adapter, new_values))
        adapter.write(new_values)

        before = base + (const - base[0])
        after = before + shift
        if getattr(adapter, "proba_leaves", False) and self.bounds is None:
            lo = min((v.min() for _, v in new_values.values()), default=0.0)
            hi = max((v.max() for _, v in new_values.values()), default=1.0)
            if lo < 0.0 or hi > 1.0:
                warnings.warn(f"adjusted positive-class leaf probabilities span [{lo:.4g}, "
                              f"{hi:.4g}], outside [0, 1]; use bounds=(0, 1)",
                              ProbabilityRangeWarning, stacklevel=2)
        self.estimator_ = adapter.model
        self.equalised_quantity_ = adapter.quantity
        self.groups_ = groups
        self.n_features_in_ = X.shape[1]
        self.n_trees_ = len(adapter.weights)
        self.n_leaves_adjusted_ = int(sum(v.size for _, v in new_values.values()))
        self.group_means_before_ = _group_means(before, codes, k)
        self.group_means_after_ = _group_means(after, codes, k)
        self.gap_before_ = float(np.ptp(self.group_means_before_))
        self.gap_after_ = float(np.ptp(self.group_means_after_))
        self.rms_perturbation_ = float(np.sqrt(np.mean(shift**2)))
        self.max_leaf_change_ = float(max_change)
        self.solver_status_ = None
        if self.solve_results_ is not None:
            statuses = [r.status for r in self.solve_results_ if r is not None]
            self.solver_status_ = next((st for st in statuses if st != "optimal"), "optimal")
        logger.info("GFE adjustment of %d trees (%s, %s): gap %.4g -> %.3g, RMS change %.4g",
                    self.n_trees_, self.mode, method, self.gap_before_, self.gap_after_,
                    self.rms_perturbation_)
        return self

    @staticmethod
    def _record(t, prob, f, leaves, base, shift, adapter, new_values):
        """Store tree ``t``'s new leaf values and accumulate its effect on the reference rows."""
        delta = f - prob.ybar
        new_values[t] = (prob.nodes, f)
        if prob.nodes.size:
            lookup = np.zeros((2, int(prob.nodes.max()) + 1))  # leaves only hit reached nodes
            lookup[0, prob.nodes] = prob.ybar
            lookup[1, prob.nodes] = delta
            rows = lookup[:, leaves]
            base += adapter.weights[t] * rows[0]
            shift += adapter.weights[t] * rows[1]
        return float(np.abs(delta).max(initial=0.0))

    # ---- delegation -------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "estimator_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("EqualityConstrainedTrees is not fitted; call fit first")

    def predict(self, X, **kwargs):
        """Predictions of the adjusted model (``estimator_.predict``)."""
        self._check_fitted()
        if _is_booster(self.estimator_):
            import xgboost as xgb

            return self.estimator_.predict(xgb.DMatrix(X), **kwargs)
        return self.estimator_.predict(X, **kwargs)

    def predict_proba(self, X):
        """Class probabilities of the adjusted classifier."""
        self._check_fitted()
        if not hasattr(self.estimator_, "predict_proba"):
            raise AttributeError(f"{type(self.estimator_).__name__} has no predict_proba")
        return self.estimator_.predict_proba(X)

    def decision_function(self, X):
        """Margin of the adjusted model (boosted models)."""
        self._check_fitted()
        if _is_booster(self.estimator_):
            import xgboost as xgb

            return self.estimator_.predict(xgb.DMatrix(X), output_margin=True)
        if hasattr(self.estimator_, "decision_function"):
            return self.estimator_.decision_function(X)
        if hasattr(self.estimator_, "get_booster"):
            return self.estimator_.predict(X, output_margin=True)
        raise AttributeError(f"{type(self.estimator_).__name__} has no decision_function")

    def equalised_output(self, X):
        """The output that the adjustment equalises (see ``equalised_quantity_``)."""
        self._check_fitted()
        return np.asarray(_make_adapter(self.estimator_).output(X), dtype=float)


def _is_booster(model):
    return type(model).__module__.startswith("xgboost") and type(model).__name__ == "Booster"

