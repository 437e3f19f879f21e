"""Several mechanisms on the same data (``kind: compose``), e.g. the Shades-of-Null suite's
``MCAR1 & MAR1 & MNAR1``.

``parts`` is a list of missingness specs of any registered kind (each validated as a whole spec of its kind;
an invalid one is an error naming ``parts.<i>``). Each part is drawn in order from the experiment's seeded
generator **on the original data** (a ``conditional`` part reads its condition from the unmasked values, so
an earlier part never moves a row out of a later part's bucket); the realised mask is the union of the
parts' masks, so a cell blanked by two parts counts once.

The realised-rate gate checks each part on its own draw: the build records each part's mask beside the union
(keyed by the union's content, in this process), and the gate runs each part's own gate on its recorded mask
and checks that the union is exactly theirs. Nothing is re-drawn. A mask that compose's build did not return
(or that was altered since) fails the gate.

The raw coding of a coded table (:class:`~fairmiss.missingness._base.RawCoding`: one-hot blocks, codes, the
columns kept beside the features) reaches every part, as it reaches a spec drawn alone.

In the config the parts are stored by name (``parts: {mcar: {...}, mar: {...}}``; a list is accepted and a
part without a name is named ``part<i>``), so the parts reach the tracking params as readable keys
(``missingness.parts.mar.condition.column``).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import field_validator

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness._base import MissingnessError, apply_mask
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mechanisms import check_mask, inject, masked_columns, read_columns

__all__ = ["Compose", "part_spec"]

NEEDS = ("label", "test_rows", "original", "masked", "raw")


def part_spec(d, where: str):
    """Validate one part as the spec of its registered kind; errors name ``where`` (``parts.<i>``)."""
    if not isinstance(d, dict) or "kind" not in d:
        raise ValueError(f"{where}: a missingness spec with a 'kind'")
    kind = d["kind"]
    if kind not in MISSINGNESS_KINDS:
        raise ValueError(f"{where}: unknown missingness kind '{kind}'; known: {sorted(MISSINGNESS_KINDS.kinds())}")
    try:
        return MISSINGNESS_KINDS[kind].spec.model_validate(d)
    except Exception as exc:  # noqa: BLE001 - re-raised as one line naming the part
        errs = getattr(exc, "errors", None)
        if callable(errs):
            e = errs()[0]
            loc = ".".join(str(x) for x in e["loc"])
            raise ValueError(f"{where}{'.' + loc if loc else ''}: {e['msg']}") from None
        raise ValueError(f"{where}: {exc}") from None


class Compose(_Strict):
    """Several missingness specs drawn in order on the same (original) data; the mask is their union."""

    kind: Literal["compose"] = "compose"
    name: SafeLabel
    #: the parts by name, in drawing order (a list is accepted; a part without a name is named ``part<i>``)
    parts: dict[str, dict[str, Any]]

    @field_validator("parts", mode="before")
    @classmethod
    def _valid_parts(cls, v):
        return {label: spec.model_dump(mode="json", by_alias=True, exclude_none=True)
                for label, spec in named_parts(v).items()}


def named_parts(v) -> dict[str, Any]:
    """``parts`` (a list, or a mapping name -> spec) as validated specs by label (a part's name, a preset's
    name, else ``part<i>``); errors name ``parts.<i>``."""
    if isinstance(v, dict):
        v = [{**p, "name": p.get("name", k)} if isinstance(p, dict) and p.get("kind") != "preset" else p
             for k, p in v.items()]
    if not isinstance(v, list) or not v:
        raise ValueError("a non-empty list of missingness specs")
    out = {}
    for i, d in enumerate(v):
        where = f"parts.{i}"
        if isinstance(d, dict) and d.get("kind") in MISSINGNESS_KINDS and d.get("name") is None \
                and "name" in MISSINGNESS_KINDS[d["kind"]].spec.model_fields and d["kind"] != "preset":
            d = {**d, "name": f"part{i}"}
        spec = part_spec(d, where)
        label = getattr(spec, "name", None) or getattr(spec, "preset", None) or f"part{i}"
        if label in out:
            raise ValueError(f"{where}: a second part named '{label}'; part names must differ")
        out[label] = spec
    return out


def _parts(kw) -> list[tuple[str, Any]]:
    try:
        return list(named_parts(kw["parts"]).items())
    except ValueError as exc:
        raise MissingnessError(f"compose: {exc}") from None


def columns(kw) -> list[str]:
    out = []
    for _, spec in _parts(kw):
        out += [c for c in masked_columns(spec) if c not in out]
    return out


def reads(kw) -> list[str]:
    out = []
    for _, spec in _parts(kw):
        out += [c for c in read_columns(spec) if c not in out]
    return out


#: union-mask digest -> the parts' masks (the most recent draws of this process)
_RECORDED: OrderedDict[str, list[np.ndarray]] = OrderedDict()
_KEEP = 64


def _digest(mask: pd.DataFrame, kw) -> str:
    h = hashlib.sha256(json.dumps(kw["parts"], sort_keys=True, default=str).encode())
    h.update(json.dumps([str(c) for c in mask.columns]).encode())
    h.update(np.ascontiguousarray(mask.to_numpy(dtype=bool)).tobytes())
    h.update(str(mask.shape).encode())
    return h.hexdigest()


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator, label, test_rows, raw=None):
    masks = []
    for name, spec in _parts(kw):
        try:
            _, m = inject(X, spec, group=group, rng=rng, label=label, test_rows=test_rows, raw=raw)
        except MissingnessError as exc:  # the part named, e.g. parts.mnar.condition.buckets.1.values: ...
            raise MissingnessError(f"parts.{name}.{exc}") from None
        masks.append(m.to_numpy(dtype=bool))
    union = pd.DataFrame(np.logical_or.reduce(masks), index=X.index, columns=X.columns)
    _RECORDED[_digest(union, kw)] = masks
    while len(_RECORDED) > _KEEP:
        _RECORDED.popitem(last=False)
    return apply_mask(X, union)


def check(mask: pd.DataFrame, kw, group, *, label, test_rows, original, masked, raw=None) -> list[str]:
    masks = _RECORDED.get(_digest(mask, kw))
    if masks is None:
        return ["compose: no recorded part masks for this mask (it was not drawn by compose, or was altered)"]
    problems = []
    for (name, spec), m in zip(_parts(kw), masks):
        part = pd.DataFrame(m, index=mask.index, columns=mask.columns)
        part_masked = apply_mask(original, part)[0]
        problems += [f"part '{name}': {p}" for p in check_mask(part, spec, group, original=original,
                                                               masked=part_masked, label=label, test_rows=test_rows,
                                                               raw=raw)]
    return problems


MISSINGNESS_KINDS.register("compose", Compose, build, check=check, columns=columns, reads=reads, needs=NEEDS)
