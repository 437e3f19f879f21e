"""Any scikit-learn-compatible imputer (transformer) by import path (``kind: estimator``)::

    imputers:
      - {kind: estimator, estimator: sklearn.impute.KNNImputer, params: {n_neighbors: 10}}

Checked when the config is validated: ``estimator`` is a dotted import path of a class (only that path is
imported, see :mod:`fairmiss._importpath`) with ``get_params``, ``fit`` and ``transform``; every key of
``params`` is a parameter of its constructor. The cell's seed is passed as ``random_state`` where the
constructor takes one and ``params`` does not set it; ``add_indicator`` is passed when true (the constructor
must take it, as ``per_group`` needs too) and ``keep_empty_features=True`` where taken and not set (a column
with no observed training value keeps its place, as with the built-in imputers). Fitted on the training
split only, like every imputer; it never sees the group or the label.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from fairmiss._importpath import (check_estimator_class, check_params, check_values, constructor_params,
                                  make_instance, resolve_class)
from fairmiss.impute.build import IMPUTER_KINDS, _FittedImputerBase

__all__ = ["EstimatorImputerSpec"]


class EstimatorImputerSpec(_FittedImputerBase):
    kind: Literal["estimator"] = "estimator"
    #: dotted import path of the transformer class, e.g. ``sklearn.impute.KNNImputer``
    estimator: str
    #: keyword arguments of its constructor
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("estimator")
    @classmethod
    def _importable(cls, v: str) -> str:
        check_estimator_class(resolve_class(v), v, methods=("transform",))
        return v

    @field_validator("params")
    @classmethod
    def _accepted(cls, v: dict, info: ValidationInfo) -> dict:
        path = info.data.get("estimator")
        if path is not None:  # else the estimator itself is invalid (reported on its own key)
            check_params(resolve_class(path), v)
            if "add_indicator" in v:
                raise ValueError("params.add_indicator: set the imputer's own add_indicator key instead")
        return v

    @model_validator(mode="after")
    def _constructible(self):
        klass = resolve_class(self.estimator)
        names, var_kw = constructor_params(klass)
        if (self.add_indicator or self.per_group) and "add_indicator" not in names and not var_kw:
            raise ValueError(f"estimator: {klass.__name__} takes no add_indicator parameter, which "
                             f"{'add_indicator' if self.add_indicator else 'per_group'} needs")
        check_values(self.instance(0))
        return self

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        base = self.estimator.rsplit(".", 1)[1]
        return (("group_" if self.per_group else "") + base + ("+mask" if self.add_indicator else "")
                + ("@test" if self.test_fit_on == "test" else ""))

    def instance(self, seed: int):
        klass = resolve_class(self.estimator)
        extra = {"add_indicator": True} if self.add_indicator else {}
        try:
            return make_instance(klass, {**self.params, **extra}, random_state=seed, keep_empty_features=True)
        except Exception as exc:  # noqa: BLE001 - a constructor refusing its params is a config error
            raise ValueError(f"params: {klass.__name__}(**params) failed: {type(exc).__name__}: {exc}") from None


def _estimator(spec, seed):
    return spec.instance(seed)


IMPUTER_KINDS.register("estimator", EstimatorImputerSpec, _estimator)
