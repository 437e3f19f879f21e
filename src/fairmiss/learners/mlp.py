"""A multilayer perceptron on standardised inputs (``kind: mlp``): scikit-learn's ``MLPClassifier`` after a
``StandardScaler`` fitted on the training rows, as the Shades-of-Null suite runs its MLP (its
``mlp_clf``: two hidden layers of 100 units, ``max_iter=1000``, numerical columns standardised).

Without the scaler an MLP on raw columns (a credit amount in the thousands beside 0/1 one-hot columns) trains
badly; the ``estimator`` kind passes the columns as they are, hence this kind. It needs complete data (an
imputer before it) and can be wrapped by the multiple imputer.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ["MLPSpec"]


class MLPSpec(_LearnerBase):
    kind: Literal["mlp"] = "mlp"
    #: units per hidden layer
    hidden_layer_sizes: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] = [100, 100]
    activation: Literal["identity", "logistic", "tanh", "relu"] = "relu"
    solver: Literal["lbfgs", "sgd", "adam"] = "adam"
    #: the step-size schedule (``sgd`` only, as in scikit-learn)
    learning_rate: Literal["constant", "invscaling", "adaptive"] = "constant"
    #: L2 penalty
    alpha: Annotated[float, Field(ge=0)] = 1e-4
    max_iter: Annotated[int, Field(ge=1)] = 1000


def _mlp(spec, seed, threads):
    return Learner(make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=tuple(spec.hidden_layer_sizes), activation=spec.activation, solver=spec.solver,
        learning_rate=spec.learning_rate, alpha=spec.alpha, max_iter=spec.max_iter, random_state=seed)))


LEARNER_KINDS.register("mlp", MLPSpec, _mlp, mi=True, family="baseline")
