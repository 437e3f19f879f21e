"""Imputers as scikit-learn transformers, one factory per config ``kind``.

All are fitted on the training split only (the pipeline guarantees it) and never see the
group or the label. ``add_indicator=True`` appends the missingness mask of columns that had
missing values in training ("imputation + mask", paper 001). ``none`` returns ``None``: the
learner receives NaN and must handle it itself (MIA trees, HistGradientBoosting, XGBoost).

``test_fit_on: test`` wraps the imputer in :class:`~fairmiss.impute.imputers.MismatchImputer`
(paper 000 §3.2): ``fit_transform`` imputes the training split with the train-fitted imputer,
``transform`` refits a clone on the data it is given (the test split). ``multiple`` also returns
``None`` from :func:`make_imputer`: the imputation lives inside the learner, which
:func:`wrap_multiple` turns into a :class:`~fairmiss.impute.imputers.MultipleImputationClassifier`.
"""

from __future__ import annotations

from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, SimpleImputer

__all__ = ["make_imputer", "wrap_multiple", "IMPUTERS"]


def _simple(spec, seed):
    return SimpleImputer(strategy=spec.kind, add_indicator=spec.add_indicator, keep_empty_features=True)


def _constant(spec, seed):
    return SimpleImputer(strategy="constant", fill_value=spec.fill_value, add_indicator=spec.add_indicator,
                         keep_empty_features=True)


def _knn(spec, seed):
    # the project's own k-NN imputer: scikit-learn's picks donors inside groups of equal distances with
    # np.argpartition, whose order depends on the CPU's SIMD kernel (issue 18); this one uses fixed-order
    # distances and a stated tie rule (``ties``: "average" = expectation over tie-breaks, or "lowest_index")
    from fairmiss.impute.knn import TieAwareKNNImputer

    return TieAwareKNNImputer(n_neighbors=spec.n_neighbors, ties=spec.ties, add_indicator=spec.add_indicator,
                              keep_empty_features=True)


def _iterative(spec, seed):
    return IterativeImputer(max_iter=spec.max_iter, sample_posterior=spec.sample_posterior,
                            add_indicator=spec.add_indicator, random_state=seed, keep_empty_features=True)


IMPUTERS = {
    "mean": _simple, "median": _simple, "most_frequent": _simple,
    "constant": _constant, "knn": _knn, "iterative": _iterative,
    "none": lambda spec, seed: None,
    "multiple": lambda spec, seed: None,  # see wrap_multiple
}


def make_imputer(spec, seed: int):
    """Return an unfitted transformer for ``spec`` (or ``None`` for the NaN pass-through path)."""
    try:
        factory = IMPUTERS[spec.kind]
    except KeyError:
        raise ValueError(f"unknown imputer '{spec.kind}'; known: {sorted(IMPUTERS)}") from None
    imp = factory(spec, seed)
    if imp is not None and getattr(spec, "per_group", False):
        from fairmiss.impute.imputers import GroupImputer

        # indicators are added by the per-group wrapper so that all groups share one column layout
        imp = GroupImputer(estimator=imp.set_params(add_indicator=False), add_indicator=spec.add_indicator)
    if imp is not None and getattr(spec, "test_fit_on", "train") == "test":
        from fairmiss.impute.imputers import MismatchImputer

        imp = MismatchImputer(estimator=imp, test_fit_on="test")
    return imp


def wrap_multiple(spec, estimator, seed: int):
    """The learner ``estimator`` inside multiple imputation with test-time averaging (paper 001 §2.4):
    ``spec.m`` draws of ``IterativeImputer(sample_posterior=True)``, seeds derived from ``seed``."""
    from fairmiss.impute.imputers import MultipleImputationClassifier

    imputer = IterativeImputer(max_iter=spec.max_iter, sample_posterior=True, add_indicator=spec.add_indicator,
                               keep_empty_features=True)
    return MultipleImputationClassifier(estimator=estimator, imputer=imputer, n_imputations=spec.m,
                                        random_state=seed)
