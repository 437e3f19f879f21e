"""Any scikit-learn-compatible classifier by import path (``kind: estimator``)::

    learners:
      - kind: estimator
        name: gbm
        estimator: sklearn.ensemble.GradientBoostingClassifier
        params: {n_estimators: 200, max_depth: 3}
        accepts_nan: false          # optional; default: scikit-learn's tag input_tags.allow_nan
        sensitive_features: false   # true: fit(X, y, sensitive_features=s) and predict(X, sensitive_features=s)

Checked when the config is validated: ``estimator`` is a dotted import path of a class (only that path is
imported, see :mod:`fairmiss._importpath`) with ``get_params``, ``fit`` and ``predict`` that is not a
regressor, clusterer or outlier detector; every key of ``params`` is a parameter of its constructor. The
cell's seed is passed as ``random_state`` where the constructor takes one and ``params`` does not set it
(``n_jobs`` is left to ``params``). The multiple imputer can wrap it when it has ``predict_proba``
and takes no group (``sensitive_features: false``); the ``none`` imputer pairs with it when it accepts NaN.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from fairmiss._importpath import (check_estimator_class, check_params, check_values, make_instance, resolve_class,
                                  tags)
from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ["EstimatorSpec"]

_NOT_CLASSIFIER = ("regressor", "clusterer", "outlier_detector", "density_estimator")


class EstimatorSpec(_LearnerBase):
    kind: Literal["estimator"] = "estimator"
    #: dotted import path of the estimator class, e.g. ``sklearn.ensemble.GradientBoostingClassifier``
    estimator: str
    #: keyword arguments of its constructor
    params: dict[str, Any] = Field(default_factory=dict)
    #: whether it takes NaN in X (pairs with the ``none`` imputer); None: scikit-learn's ``allow_nan`` tag
    accepts_nan: bool | None = None
    #: pass the group as ``sensitive_features=`` to ``fit`` and ``predict`` (the fairlearn convention)
    sensitive_features: bool = False

    @field_validator("estimator")
    @classmethod
    def _importable(cls, v: str) -> str:
        from sklearn.base import ClusterMixin, OutlierMixin, RegressorMixin

        klass = resolve_class(v)
        check_estimator_class(klass, v, methods=("predict",))
        for mixin, what in ((RegressorMixin, "regressor"), (ClusterMixin, "clusterer"), (OutlierMixin, "outlier detector")):
            if issubclass(klass, mixin):
                raise ValueError(f"{v!r} is a {what}, not a classifier (a learner must predict a binary label)")
        return v

    @field_validator("params")
    @classmethod
    def _accepted(cls, v: dict, info: ValidationInfo) -> dict:
        path = info.data.get("estimator")
        if path is not None:  # else the estimator itself is invalid (reported on its own key)
            check_params(resolve_class(path), v)
        return v

    @model_validator(mode="after")
    def _constructible(self):
        est = self.instance()
        check_values(est)
        t = tags(est)
        kind = getattr(t, "estimator_type", None) if t is not None else None
        if kind in _NOT_CLASSIFIER:
            raise ValueError(f"estimator: {self.estimator!r} is a {kind}, not a classifier")
        if self.sensitive_features:
            for method in ("fit", "predict"):
                if not _takes_keyword(getattr(est, method), "sensitive_features"):
                    raise ValueError(f"sensitive_features: true, but {type(est).__name__}.{method}() takes no "
                                     "'sensitive_features' argument (the fairlearn convention); set it to false, "
                                     "or use an estimator whose fit and predict take the group")
        return self

    @property
    def label(self) -> str:
        return self.name or self.estimator.rsplit(".", 1)[1]

    def instance(self, **defaults):
        """An unfitted instance: ``params`` plus ``defaults`` the constructor takes and ``params`` leaves."""
        klass = resolve_class(self.estimator)
        try:
            return make_instance(klass, self.params, **defaults)
        except Exception as exc:  # noqa: BLE001 - a constructor refusing its params is a config error
            raise ValueError(f"params: {klass.__name__}(**params) failed: {type(exc).__name__}: {exc}") from None

    @property
    def takes_nan(self) -> bool:
        """``accepts_nan`` as given, else scikit-learn's ``input_tags.allow_nan`` (False without tags)."""
        if self.accepts_nan is not None:
            return self.accepts_nan
        t = tags(self.instance())
        return bool(t is not None and getattr(t.input_tags, "allow_nan", False))

    @property
    def wrappable_by_mi(self) -> bool:
        """The multiple imputer can wrap it: ``predict_proba`` and no group at fit / predict."""
        return not self.sensitive_features and hasattr(self.instance(), "predict_proba")


def _takes_keyword(fn, name: str) -> bool:
    """Whether ``fn`` accepts the keyword ``name`` (named, or through ``**kwargs``); unknown signatures: yes."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _estimator(spec, seed, threads):
    est = spec.instance(random_state=seed)
    return Learner(est, needs_sensitive_fit=spec.sensitive_features, needs_sensitive_predict=spec.sensitive_features,
                   seed=seed, info={"estimator": spec.estimator})


# accepts_nan and mi are per instance (EstimatorSpec.takes_nan / wrappable_by_mi), asked by ExperimentConfig
LEARNER_KINDS.register("estimator", EstimatorSpec, _estimator, family="baseline")
