"""Specs and factories of the Feng et al. (2023) learner kinds: ``adaptive`` (affinely adaptive features, then
any registered learner) and ``fairmissbag`` (FairMissBag over any registered fair learner).

``pattern_clusters`` (missing-pattern clusters, a fair learner per cluster) completes intervention (iii) in a
simple form (:mod:`.clusters`). All take a ``base`` learner entry (``{kind: ..., ...}``, any registered kind; validated as that kind's spec)
and handle missing values themselves, so they pair with ``imputer: none`` (they take NaN; an imputer before
them would remove the missingness pattern they adapt to). ``adaptive`` cannot wrap a post-processor that
carves a validation split (``threshold_optimizer``); ``fairmissbag`` can (per member, on its resample).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase
from fairmiss.learners.feng2023.adaptive import AdaptThen
from fairmiss.learners.feng2023.bag import FairMissBagClassifier
from fairmiss.learners.feng2023.clusters import PatternClusterClassifier

__all__ = ["AdaptiveSpec", "FairMissBagSpec", "PatternClustersSpec"]

_NESTING = ("adaptive", "fairmissbag", "pattern_clusters")


def base_spec(d: dict, where: str = "base", *, no_validation_split: str | None = None):
    """Validate a ``base`` learner entry as the spec of its registered kind. With ``no_validation_split`` (the
    outer kind's name), a base registered with ``carves_validation`` (a post-processor fitted on a split carved
    from train, ``threshold_optimizer``) is refused here, when the config loads, instead of in every cell."""
    if not isinstance(d, dict) or "kind" not in d:
        raise ValueError(f"{where}: a learner entry with a 'kind'")
    if d["kind"] in _NESTING:
        raise ValueError(f"{where}: '{d['kind']}' cannot be the base of another adapted learner")
    if d["kind"] not in LEARNER_KINDS:
        raise ValueError(f"{where}: unknown learner kind '{d['kind']}'; known: {sorted(LEARNER_KINDS.kinds())}")
    if d.get("imputers") is not None:
        raise ValueError(f"{where}: 'imputers' belongs to the outer learner")
    if no_validation_split and LEARNER_KINDS[d["kind"]].flags.get("carves_validation"):
        raise ValueError(f"{where}: '{d['kind']}' carves a validation split from the training rows, which "
                         f"{no_validation_split} does not support; use fairmissbag (a split per member), a "
                         "reduction such as exponentiated_gradient, or an imputer with add_indicator: true in "
                         "front of the post-processor")
    return LEARNER_KINDS[d["kind"]].spec.model_validate(d)


def _build_base(d: dict, seed: int, threads: int, feature_names) -> Learner:
    spec = base_spec(d)
    entry = LEARNER_KINDS[spec.kind]
    if entry.flags.get("needs_feature_names"):
        return entry.build(spec, seed, threads, feature_names)
    return entry.build(spec, seed, threads)


class _Adapted(_LearnerBase):
    #: whether this kind can hold a base that carves a validation split (fairmissbag: per member)
    _base_may_carve: ClassVar[bool] = False

    @field_validator("base", check_fields=False)
    @classmethod
    def _valid_base(cls, v):
        outer = None if cls._base_may_carve else cls.model_fields["kind"].default
        return base_spec(v, no_validation_split=outer).model_dump(mode="json", by_alias=True, exclude_none=True)

    @property
    def takes_nan(self) -> bool:  # missing values are handled inside (indicators + zero / per-resample imputation)
        return True

    @property
    def wrappable_by_mi(self) -> bool:
        return False


class AdaptiveSpec(_Adapted):
    """Affinely adaptive features (zero imputation, indicators m_k, interactions m_k(1 − m_j)x_j), then ``base``."""

    kind: Literal["adaptive"] = "adaptive"
    base: dict[str, Any] = Field(default_factory=lambda: {"kind": "logistic_regression"}, validate_default=True)
    indicators: bool = True
    interactions: bool = True


class FairMissBagSpec(_Adapted):
    """FairMissBag: ``n_estimators`` (group, label)-stratified bootstraps, indicators + ``strategy``
    imputation per resample, a ``base`` fair learner per resample. ``ensemble: random`` (default, the paper's
    rule): each row gets the own prediction of one member drawn uniformly, seeded by the cell's seed — the rule
    under which fair members give a fair ensemble (Lemma 1). ``ensemble: average``: the members' averaged
    P(y = 1) > 0.5, deterministic; the paper's alternative averages scores, and thresholding the average is
    outside Lemma 1: it need not keep the members' equalized odds."""

    kind: Literal["fairmissbag"] = "fairmissbag"
    _base_may_carve: ClassVar[bool] = True
    base: dict[str, Any] = Field(default_factory=lambda: {"kind": "exponentiated_gradient"}, validate_default=True)
    n_estimators: Annotated[int, Field(ge=1, le=500)] = 10
    strategy: Literal["mean", "median", "most_frequent"] = "mean"
    add_indicator: bool = True
    ensemble: Literal["random", "average"] = "random"


class PatternClustersSpec(_Adapted):
    """Missing-pattern clusters (greedy splits on missingness indicators: ``split: entropy``, the largest
    label-entropy gain with every (group, label) cell >= ``min_cell`` rows in each cluster; ``split: loss``, the
    paper's Algorithm 1), a ``base`` fair learner per cluster.
    ``prediction: model`` (default): a row gets its cluster model's own prediction (a randomized model such as
    fairlearn's ExponentiatedGradient draws it, seeded by the cell's seed, as the fairlearn baselines are
    scored); ``prediction: threshold``: the cluster model's P(y = 1) > 0.5 (deterministic)."""

    kind: Literal["pattern_clusters"] = "pattern_clusters"
    base: dict[str, Any] = Field(default_factory=lambda: {"kind": "exponentiated_gradient"}, validate_default=True)
    min_cell: Annotated[int, Field(ge=1)] = 20
    max_clusters: Annotated[int, Field(ge=1, le=64)] = 4
    prediction: Literal["model", "threshold"] = "model"
    #: ``entropy``: fairmiss's rule (label-entropy gain, ``min_cell``); ``loss``: the paper's Algorithm 1 (the
    #: children's summed logistic loss on a held-out ``validation`` part, bounded representation [``beta``,
    #: ``alpha``], at least ``min_size`` rows a child) — :mod:`fairmiss.learners.feng2023.clusters`
    split: Literal["entropy", "loss"] = "entropy"
    alpha: Annotated[float, Field(gt=0, le=1)] = 1.0
    beta: Annotated[float, Field(ge=0, lt=1)] = 0.0
    min_size: Annotated[int, Field(ge=1)] = 50
    validation: Annotated[float, Field(gt=0, lt=1)] = 0.3

    @model_validator(mode="after")
    def _bounds(self):
        if self.beta > self.alpha:
            raise ValueError(f"beta {self.beta} > alpha {self.alpha}: no group share can lie in [beta, alpha]")
        return self


def _adaptive(spec, seed, threads, feature_names=None):
    inner = _build_base(spec.base, seed, threads, feature_names)
    if inner.carve_validation:
        raise ValueError(f"adaptive: base '{spec.base['kind']}' carves a validation split; not supported here "
                         "(use fairmissbag, or a reduction such as exponentiated_gradient)")
    return Learner(AdaptThen(inner.estimator, spec.indicators, spec.interactions),
                   needs_sensitive_fit=inner.needs_sensitive_fit, needs_sensitive_predict=inner.needs_sensitive_predict,
                   randomized_predict=inner.randomized_predict, seed=inner.seed)


def _fairmissbag(spec, seed, threads, feature_names=None):
    inner = _build_base(spec.base, seed, threads, feature_names)
    est = FairMissBagClassifier(inner.estimator, n_estimators=spec.n_estimators, strategy=spec.strategy,
                                add_indicator=spec.add_indicator, ensemble=spec.ensemble,
                                fit_groups=inner.needs_sensitive_fit, predict_groups=inner.needs_sensitive_predict,
                                carve_validation=inner.carve_validation, random_state=seed)
    return Learner(est, needs_sensitive_fit=True, needs_sensitive_predict=inner.needs_sensitive_predict,
                   randomized_predict=spec.ensemble == "random", seed=seed)


def _pattern_clusters(spec, seed, threads, feature_names=None):
    inner = _build_base(spec.base, seed, threads, feature_names)
    if inner.carve_validation:
        raise ValueError(f"pattern_clusters: base '{spec.base['kind']}' carves a validation split; not supported")
    est = PatternClusterClassifier(inner.estimator, min_cell=spec.min_cell, max_clusters=spec.max_clusters,
                                   fit_groups=inner.needs_sensitive_fit, predict_groups=inner.needs_sensitive_predict,
                                   prediction=spec.prediction, random_state=seed, split=spec.split,
                                   alpha=spec.alpha, beta=spec.beta, min_size=spec.min_size,
                                   validation=spec.validation)
    return Learner(est, needs_sensitive_fit=True, needs_sensitive_predict=inner.needs_sensitive_predict,
                   randomized_predict=spec.prediction == "model" and inner.randomized_predict, seed=seed)


LEARNER_KINDS.register("adaptive", AdaptiveSpec, _adaptive, family="feng2023", needs_feature_names=True)
LEARNER_KINDS.register("fairmissbag", FairMissBagSpec, _fairmissbag, needs_groups=True, family="feng2023",
                       needs_feature_names=True)
LEARNER_KINDS.register("pattern_clusters", PatternClustersSpec, _pattern_clusters, needs_groups=True,
                       family="feng2023", needs_feature_names=True)
