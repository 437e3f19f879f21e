"""The base of every spec (a leaf module): the frozen, extra-forbidding pydantic :class:`_Strict`
and the constrained field types :data:`Rate`, :data:`SafeName`, :data:`SafeLabel`. Kind specs
(missingness, imputers, learners) and :mod:`fairmiss.config` build on it.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from fairmiss.io import SAFE_LABEL, SAFE_NAME, check_name

__all__ = ["Rate", "SafeLabel", "SafeName"]


Rate = Annotated[float, Field(ge=0.0, le=1.0)]


#: a name that becomes a file or directory name (experiment, MLflow experiment, deployment)
SafeName = Annotated[str, AfterValidator(lambda v: check_name(v, "name", SAFE_NAME))]


#: a missingness / imputer / learner name (part of cell keys and of file and artifact names)
SafeLabel = Annotated[str, AfterValidator(lambda v: check_name(v, "name", SAFE_LABEL))]


def _arms(tp) -> list:
    """The types a field annotation accepts: ``Annotated`` metadata dropped, unions flattened."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        return [a for arm in get_args(tp) for a in _arms(arm)]
    return [tp]


def _takes_bool(arms: list) -> bool:
    return any(a in (bool, Any, object) or (get_origin(a) is Literal and any(isinstance(x, bool) for x in get_args(a)))
               for a in arms)


def _bool_for_number(tp, value, path: str = "") -> tuple[str, str, bool] | None:
    """``(path inside the value, what is expected, the boolean)`` of the first boolean in ``value`` where the
    annotation ``tp`` expects an integer or a number and no boolean; ``None`` if there is none. Looks into
    mappings (their values) and lists; nested models check their own fields."""
    arms = _arms(tp)
    if isinstance(value, bool):
        if _takes_bool(arms):
            return None
        if int in arms and float not in arms:
            return path, "an integer", value
        if float in arms:
            return path, "a number", value
        return None
    if isinstance(value, dict):
        for arm in arms:
            origin, args = get_origin(arm), get_args(arm)
            if isinstance(origin, type) and issubclass(origin, Mapping) and len(args) == 2:
                for k, v in value.items():
                    found = _bool_for_number(args[1], v, f"{path}.{k}" if path else str(k))
                    if found:
                        return found
                return None
    elif isinstance(value, list):
        for arm in arms:
            origin, args = get_origin(arm), get_args(arm)
            if isinstance(origin, type) and issubclass(origin, Sequence) and not issubclass(origin, str) and args:
                item = args[0] if origin is not tuple or (len(args) == 2 and args[1] is Ellipsis) else None
                if item is None:
                    return None
                for i, v in enumerate(value):
                    found = _bool_for_number(item, v, f"{path}.{i}" if path else str(i))
                    if found:
                        return found
                return None
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, data):
        """``true`` / ``false`` where an integer or a number is expected is refused (pydantic's lax mode reads
        them as 1 and 0: ``seed: true`` would be seed 1, ``n_neighbors: true`` one neighbour), in a field
        itself and in its mappings and lists (``rates: {age: true}``). The error's context names the field
        (``key``) and the value, which :func:`fairmiss.config.loading._format_errors` reports as the key's own."""
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                key = field.alias or name
                if key not in data:
                    continue
                found = _bool_for_number(field.annotation, data[key])
                if found is not None:
                    where, expected, value = found
                    raise PydanticCustomError(
                        "bool_not_number", "{key}: Input should be {expected}, not true or false",
                        {"key": f"{key}.{where}" if where else key, "expected": expected, "value": value})
        return data
