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

from typing import Annotated, Literal

from pydantic import Field, field_validator
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, SimpleImputer

from fairmiss._registry import Registry
from fairmiss._spec import SafeLabel, _Strict

__all__ = ["make_imputer", "wrap_multiple", "IMPUTERS", "IMPUTER_KINDS", "SimpleImputerSpec", "ConstantImputerSpec",
           "KNNImputerSpec", "IterativeImputerSpec", "MultipleImputerSpec", "NoImputerSpec"]


# --------------------------------------------------------------------------- specs (the ``imputers`` entries)
class _ImputerBase(_Strict):
    add_indicator: bool = False
    #: fit one imputer per group (paper 000 Remark 1); the group is passed as data at fit and transform
    per_group: bool = False
    name: SafeLabel | None = None

    @property
    def label(self) -> str:
        return self.name or (("group_" if self.per_group else "") + self.kind + ("+mask" if self.add_indicator else ""))


class _FittedImputerBase(_ImputerBase):
    #: where the *test-time* imputer is estimated: ``train`` (the proper protocol, paper 001 §2.2) or
    #: ``test`` (paper 000 §3.2 mismatch: training data imputed by the train-fitted imputer, test data by
    #: one refitted on the test split; the Theorem 2 bound is then logged as ``mismatch_bound.*``)
    test_fit_on: Literal["train", "test"] = "train"

    @property
    def label(self) -> str:
        return super().label + ("@test" if self.name is None and self.test_fit_on == "test" else "")


class SimpleImputerSpec(_FittedImputerBase):
    kind: Literal["mean", "median", "most_frequent"]


class ConstantImputerSpec(_ImputerBase):
    kind: Literal["constant"] = "constant"
    fill_value: Annotated[float, Field(allow_inf_nan=False)] = -1.0  # NaN / inf would leave the cells missing


class KNNImputerSpec(_FittedImputerBase):
    kind: Literal["knn"] = "knn"
    n_neighbors: Annotated[int, Field(ge=1)] = 5
    #: how donors at exactly the k-th distance share the remaining slots (fairmiss.impute.knn):
    #: "average" = every tied donor gets an equal share (the expectation over all tie-breaks, independent
    #: of row order and CPU), "lowest_index" = the tied donors earliest in the training split
    ties: Literal["average", "lowest_index"] = "average"


class IterativeImputerSpec(_FittedImputerBase):
    kind: Literal["iterative"] = "iterative"
    max_iter: Annotated[int, Field(ge=1)] = 10
    sample_posterior: bool = False


class MultipleImputerSpec(_ImputerBase):
    """Multiple imputation with test-time averaging (paper 001 §2.4, Theorem 2): ``m`` stochastic
    draws of ``IterativeImputer(sample_posterior=True)``, one learner fitted per completed training
    set, predicted probabilities averaged over ``m`` imputations of the test set. Wraps the learner,
    so only learners without group-aware fit/predict pair with it (``MI_LEARNERS``)."""

    kind: Literal["multiple"] = "multiple"
    m: Annotated[int, Field(ge=1, le=100)] = 5
    max_iter: Annotated[int, Field(ge=1)] = 10

    @field_validator("per_group")
    @classmethod
    def _no_per_group(cls, v):
        if v:
            raise ValueError("per_group is not supported by the multiple imputer")
        return v


class NoImputerSpec(_ImputerBase):
    """Hand NaN to the learner (MIA for trees with native missing support)."""

    kind: Literal["none"] = "none"


# --------------------------------------------------------------------------- factories


def _simple(spec, seed):
    return SimpleImputer(strategy=spec.kind, add_indicator=spec.add_indicator, keep_empty_features=True)


def _constant(spec, seed):
    return SimpleImputer(strategy="constant", fill_value=spec.fill_value, add_indicator=spec.add_indicator,
                         keep_empty_features=True)


def _knn(spec, seed):
    # the project's own k-NN imputer: scikit-learn's picks donors inside groups of equal distances with
    # np.argpartition, whose order depends on the CPU's SIMD kernel; this one uses fixed-order
    # distances and a stated tie rule (``ties``: "average" = expectation over tie-breaks, or "lowest_index")
    from fairmiss.impute.knn import TieAwareKNNImputer

    return TieAwareKNNImputer(n_neighbors=spec.n_neighbors, ties=spec.ties, add_indicator=spec.add_indicator,
                              keep_empty_features=True)


def _iterative(spec, seed):
    return IterativeImputer(max_iter=spec.max_iter, sample_posterior=spec.sample_posterior,
                            add_indicator=spec.add_indicator, random_state=seed, keep_empty_features=True)


#: ``kind`` -> spec, factory ``(spec, seed) -> transformer | None`` and flags: ``passes_nan`` (the learner
#: receives NaN: ``none``, and ``multiple`` whose imputation lives inside the learner), ``wraps_learner``,
#: ``shareable`` (the fitted imputer is read-only after ``fit`` and its ``transform`` draws nothing, so one fit
#: per split is shared by the split's learners: :class:`fairmiss.pipeline.impute_cache.ImputationCache`; a kind
#: that does not declare it is fitted once per cell).
IMPUTER_KINDS = Registry("imputer")
for _kind in ("mean", "median", "most_frequent"):
    IMPUTER_KINDS.register(_kind, SimpleImputerSpec, _simple, shareable=True)
IMPUTER_KINDS.register("constant", ConstantImputerSpec, _constant, shareable=True)
IMPUTER_KINDS.register("knn", KNNImputerSpec, _knn, shareable=True)
IMPUTER_KINDS.register("iterative", IterativeImputerSpec, _iterative, shareable=True)
IMPUTER_KINDS.register("none", NoImputerSpec, lambda spec, seed: None, passes_nan=True)
IMPUTER_KINDS.register("multiple", MultipleImputerSpec, lambda spec, seed: None,  # see wrap_multiple
                       passes_nan=True, wraps_learner=True)

IMPUTERS = IMPUTER_KINDS.builders()


def make_imputer(spec, seed: int):
    """Return an unfitted transformer for ``spec`` (or ``None`` for the NaN pass-through path)."""
    if spec.kind not in IMPUTER_KINDS:  # looked up at call time, so kinds added by other modules count
        raise ValueError(f"unknown imputer '{spec.kind}'; known: {sorted(IMPUTER_KINDS.kinds())}")
    imp = IMPUTER_KINDS[spec.kind].build(spec, seed)
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
