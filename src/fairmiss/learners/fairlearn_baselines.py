"""fairlearn's reductions and post-processing as baselines: ExponentiatedGradient and ThresholdOptimizer
(specs and factories; fairlearn is imported only when one is built).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ['ExponentiatedGradientSpec', 'ThresholdOptimizerSpec']


class ExponentiatedGradientSpec(_LearnerBase):
    """Agarwal et al. reduction (fairlearn) around a depth-``max_depth`` tree or LR."""

    kind: Literal["exponentiated_gradient"] = "exponentiated_gradient"
    constraint: Literal["fnr", "fpr", "equalized_odds", "demographic_parity", "tpr"] = "fnr"
    eps: Annotated[float, Field(gt=0)] = 0.01
    base: Literal["decision_tree", "logistic_regression"] = "decision_tree"
    max_depth: Annotated[int, Field(ge=1)] = 3
    max_iter: Annotated[int, Field(ge=1)] = 50


class ThresholdOptimizerSpec(_LearnerBase):
    """Hardt et al. post-processing (fairlearn), fitted on a validation split carved from train."""

    kind: Literal["threshold_optimizer"] = "threshold_optimizer"
    constraint: Literal["equalized_odds", "false_negative_rate_parity", "false_positive_rate_parity",
                        "true_positive_rate_parity", "demographic_parity"] = "equalized_odds"
    base: Literal["decision_tree", "logistic_regression"] = "decision_tree"
    max_depth: Annotated[int, Field(ge=1)] = 3
    validation_size: Annotated[float, Field(gt=0, lt=1)] = 0.5


class WeightedPipeline(Pipeline):
    """A Pipeline whose ``fit`` takes ``sample_weight`` and hands it to the final estimator. fairlearn's
    reductions (ExponentiatedGradient) call ``fit(X, y, sample_weight=w)`` on their base, which scikit-learn's
    Pipeline refuses (it wants ``<step>__sample_weight``): the scaled logistic-regression base failed on every
    cell. Without weights it is the plain Pipeline (same fit, same numbers)."""

    def fit(self, X, y=None, sample_weight=None, **params):
        if sample_weight is not None:
            params[f"{self.steps[-1][0]}__sample_weight"] = sample_weight
        return super().fit(X, y, **params)


def _base(spec, seed):
    if spec.base == "decision_tree":
        return DecisionTreeClassifier(max_depth=spec.max_depth, random_state=seed)
    return WeightedPipeline([("standardscaler", StandardScaler()),
                             ("logisticregression", LogisticRegression(max_iter=1000))])


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


LEARNER_KINDS.register("exponentiated_gradient", ExponentiatedGradientSpec, _expgrad, needs_groups=True,
                       family="fairlearn")
LEARNER_KINDS.register("threshold_optimizer", ThresholdOptimizerSpec, _threshold, needs_groups=True,
                       family="fairlearn", carves_validation=True)
