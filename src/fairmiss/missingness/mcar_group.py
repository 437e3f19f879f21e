"""Per-group MCAR (``kind: mcar_group``): P(M_j = 1 | S = s) = ``rates[j][s]`` (spec 000 §1.2, Table 3).

Drawn entry by entry (``bernoulli``) or as fixed counts per group (``fixed_count``, ``fixed_count_nested``);
the gate checks each column's realised rate per group within 4 binomial standard errors (+1/n), or the exact
count ⌊n_s p_s⌋ in the fixed-count modes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import (MissingnessError, apply_mask, as_kw, check_columns, check_rate, empty_mask,
                                        mask_summary, tolerance)
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["MCARGroup", "mcar_group"]


class MCARGroup(_Strict):
    """Per-group MCAR: P(M_j = 1 | S = s) = rates[j][s] (spec 000 §1.2, Table 3)."""

    kind: Literal["mcar_group"] = "mcar_group"
    name: SafeLabel
    #: column -> group -> rate; at least one column, each with at least one group (an empty mapping would mask
    #: nothing)
    rates: dict[str, Annotated[dict[int, Rate], Field(min_length=1)]] = Field(min_length=1)
    mode: Literal["bernoulli", "fixed_count", "fixed_count_nested"] = "bernoulli"


def mcar_group(
    X: pd.DataFrame,
    rates: Mapping[str, Mapping[int, float]],
    group: np.ndarray,
    rng: np.random.Generator,
    mode: str = "bernoulli",
):
    """Per-group MCAR, P(M_j = 1 | S = s) = ``rates[j][s]``.

    ``mode``:
    * ``bernoulli`` — independent draws per entry (matches paper 000's text; default);
    * ``fixed_count`` — exactly ⌊n_s p_s⌋ rows per group, drawn independently per column;
    * ``fixed_count_nested`` — as the authors' code: one permutation per group reused for every
      column, so masked row sets are nested across columns within a group.
    Row selection is positional (the authors' ``.loc`` on duplicated labels is not reproduced).
    """
    check_columns(X, rates)
    group = np.asarray(group)
    if len(group) != len(X):
        raise MissingnessError(f"group has {len(group)} entries, X has {len(X)} rows")
    mask = empty_mask(X)
    levels = np.unique(group)
    perms = {s: rng.permutation(np.flatnonzero(group == s)) for s in levels} if mode == "fixed_count_nested" else {}
    for c, by_group in rates.items():
        unknown = set(by_group) - set(levels.tolist())
        if unknown:
            raise MissingnessError(f"column '{c}': rates given for group value(s) {sorted(unknown)} absent from the data")
        col = np.zeros(len(X), dtype=bool)
        for s, p in by_group.items():
            p = check_rate(p, f"column '{c}', group {s}")
            idx = np.flatnonzero(group == s)
            if mode == "bernoulli":
                col[idx] = rng.random(len(idx)) < p
            elif mode == "fixed_count":
                col[rng.choice(idx, size=int(np.floor(len(idx) * p)), replace=False)] = True
            elif mode == "fixed_count_nested":
                col[perms[s][: int(np.floor(len(idx) * p))]] = True
            else:
                raise MissingnessError(f"unknown mcar_group mode '{mode}'")
        mask[c] = col
    return apply_mask(X, mask)


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    kw = as_kw(kw)
    return mcar_group(X, kw["rates"], group, rng, mode=kw.get("mode", "bernoulli"))


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    kw = as_kw(kw)
    problems = []
    listed = set(kw["rates"])
    summ = mask_summary(mask[list(listed)], group) if listed else pd.DataFrame()
    for _, r in summ.iterrows():
        p = kw["rates"][r["column"]].get(r["group"], 0.0)
        if kw.get("mode", "bernoulli") == "bernoulli":
            ok = abs(r["missing_rate_given_group"] - p) <= tolerance(p, r["n"])
        else:
            ok = r["n_missing"] == int(np.floor(r["n"] * p))
        if not ok:
            problems.append(
                f"column '{r['column']}', group {r['group']}: realised missing rate "
                f"{r['missing_rate_given_group']:.3f} vs configured {p}"
            )
    return problems


def columns(kw) -> list[str]:
    return list(as_kw(kw)["rates"])


MISSINGNESS_KINDS.register("mcar_group", MCARGroup, build, check=check, columns=columns, by_group=True)
