"""``kind: plugin_ridge``: scikit-learn's RidgeClassifier as a fairmiss learner.

A learner kind is a spec (a frozen pydantic model whose ``kind`` is a Literal), a factory
``(spec, seed, threads) -> Learner`` and one ``LEARNER_KINDS.register`` call, exactly like a built-in kind
module (e.g. ``fairmiss.learners.naive_bayes``). fairmiss imports this module through the
``fairmiss.learners`` entry point before it builds the config's learner union, so configs can name it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sklearn.linear_model import RidgeClassifier

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ["PluginRidgeSpec"]


class PluginRidgeSpec(_LearnerBase):
    kind: Literal["plugin_ridge"] = "plugin_ridge"
    #: regularisation strength (scikit-learn's ``alpha``)
    alpha: Annotated[float, Field(gt=0)] = 1.0


def _plugin_ridge(spec, seed, threads):
    # no predict_proba: fairmiss scores AUC with the hard prediction
    return Learner(RidgeClassifier(alpha=spec.alpha))


LEARNER_KINDS.register("plugin_ridge", PluginRidgeSpec, _plugin_ridge, family="plugin")
