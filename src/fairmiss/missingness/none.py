"""No injected missingness (``kind: none``): the table as it is (its own missing values, if any)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness._base import empty_mask
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["NoMissingness"]


class NoMissingness(_Strict):
    kind: Literal["none"] = "none"
    name: SafeLabel = "none"


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    return X.copy(), empty_mask(X)


def columns(kw) -> list[str]:
    return []


MISSINGNESS_KINDS.register("none", NoMissingness, build, columns=columns)
