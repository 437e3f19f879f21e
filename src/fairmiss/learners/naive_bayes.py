"""Gaussian naive Bayes: a plain probabilistic baseline (``kind: naive_bayes``).

Added as the demonstration that a learner kind is one module (+ its test): the spec, the factory and the
registration live here and nothing else lists the kind (:func:`fairmiss._registry.discover` imports every
module of :mod:`fairmiss.learners`). It needs complete data (an imputer before it) and can be wrapped by
the multiple imputer (it has ``predict_proba`` and takes no group).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sklearn.naive_bayes import GaussianNB

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ["NaiveBayesSpec"]


class NaiveBayesSpec(_LearnerBase):
    kind: Literal["naive_bayes"] = "naive_bayes"
    #: added to every variance, as a share of the largest feature variance (scikit-learn's default)
    var_smoothing: Annotated[float, Field(ge=0)] = 1e-9


def _naive_bayes(spec, seed, threads):
    return Learner(GaussianNB(var_smoothing=spec.var_smoothing))


LEARNER_KINDS.register("naive_bayes", NaiveBayesSpec, _naive_bayes, mi=True, family="baseline")
