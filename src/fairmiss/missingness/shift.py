"""Missingness shift (``kind: shift``): one mechanism on the training rows, another at test time.

``train`` and ``test`` are two missingness specs of any registered kind (not ``shift`` itself), e.g. MCAR at
training and label-driven missingness at deployment, or the same mechanism at another rate. The split's
train rows get ``train``'s draw and its test rows ``test``'s, both from the experiment's seeded generator
(train first, then test), so ``inject`` needs the split's ``test_rows``
(:func:`fairmiss.pipeline.make_split` passes them). The realised-rate gate is each mechanism's own gate on
its rows (the label reaches label-driven sub-specs); the group and the label are never masked.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import field_validator

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness._base import MissingnessError
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mechanisms import check_mask, inject, masked_columns

__all__ = ["Shift", "sub_spec"]


def sub_spec(d: dict, part: str):
    """Validate one side of a shift as the spec of its registered kind (a name is filled in if left out)."""
    if not isinstance(d, dict) or "kind" not in d:
        raise ValueError(f"{part}: a missingness spec with a 'kind'")
    kind = d["kind"]
    if kind == "shift":
        raise ValueError(f"{part}: a shift cannot nest another shift")
    if kind not in MISSINGNESS_KINDS:
        raise ValueError(f"{part}: unknown missingness kind '{kind}'; known: {sorted(MISSINGNESS_KINDS.kinds())}")
    spec = MISSINGNESS_KINDS[kind].spec
    d = dict(d)
    if "name" in spec.model_fields and d.get("name") is None and kind != "preset":
        d["name"] = part
    return spec.model_validate(d)


class Shift(_Strict):
    kind: Literal["shift"] = "shift"
    name: SafeLabel
    #: the mechanism on the training rows (any registered kind but ``shift``)
    train: dict[str, Any]
    #: the mechanism on the test rows
    test: dict[str, Any]

    @field_validator("train", "test")
    @classmethod
    def _valid_sub(cls, v, info):
        return sub_spec(v, info.field_name).model_dump(mode="json", by_alias=True)


def columns(kw: dict) -> list[str]:
    out = []
    for part in ("train", "test"):
        out += [c for c in masked_columns(sub_spec(kw[part], part)) if c not in out]
    return out


def _rows(test_rows, n: int) -> np.ndarray:
    t = np.asarray(test_rows, dtype=bool)
    if t.shape != (n,):
        raise MissingnessError(f"shift: test_rows has shape {t.shape}, the data {n} rows")
    return t


def build(X: pd.DataFrame, kw: dict, *, group, rng: np.random.Generator, label, test_rows):
    t = _rows(test_rows, len(X))
    group, label = np.asarray(group), np.asarray(label)
    M = np.zeros(X.shape, dtype=bool)
    for part, sel in (("train", ~t), ("test", t)):
        if not sel.any():
            continue
        _, m = inject(X.iloc[sel], sub_spec(kw[part], part), group=group[sel], rng=rng, label=label[sel],
                      test_rows=np.zeros(int(sel.sum()), dtype=bool))
        M[np.flatnonzero(sel)] = m.to_numpy(dtype=bool)  # positional: the index may repeat labels
    mask = pd.DataFrame(M, index=X.index, columns=X.columns)
    masked = X.copy()
    for j, c in enumerate(X.columns):
        if M[:, j].any():
            masked[c] = masked[c].astype("float64").mask(M[:, j])
    return masked, mask


def check(mask: pd.DataFrame, kw: dict, group, *, label, test_rows, original, masked) -> list[str]:
    t = _rows(test_rows, len(mask))
    group, label = np.asarray(group), np.asarray(label)
    problems = []
    for part, sel in (("train", ~t), ("test", t)):
        if sel.any():
            problems += [f"{part} rows: {p}" for p in check_mask(
                mask.iloc[sel], sub_spec(kw[part], part), group[sel], original=original.iloc[sel],
                masked=masked.iloc[sel], label=label[sel], test_rows=np.zeros(int(sel.sum()), dtype=bool))]
    return problems


MISSINGNESS_KINDS.register("shift", Shift, build, check=check, columns=columns,
                           needs=("label", "test_rows", "original", "masked"))
