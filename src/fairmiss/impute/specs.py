"""Imputer specs (the ``imputers`` entries of a params file) and their discriminated union
:data:`ImputerSpec`; re-exported by :mod:`fairmiss.config`. The specs live beside their factories in
:mod:`fairmiss.impute.build` (registered in :data:`~fairmiss.impute.build.IMPUTER_KINDS`); the union lists
them in the fixed order below.
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated

from pydantic import Field

from fairmiss.impute.build import (IMPUTER_KINDS, ConstantImputerSpec, IterativeImputerSpec, KNNImputerSpec,
                                   MultipleImputerSpec, NoImputerSpec, SimpleImputerSpec)

__all__ = ["ConstantImputerSpec", "ImputerSpec", "IterativeImputerSpec", "KNNImputerSpec", "MultipleImputerSpec",
           "NoImputerSpec", "SimpleImputerSpec", "IMPUTER_SPEC_ORDER"]

#: The union's order (unchanged since before the registry).
IMPUTER_SPEC_ORDER = IMPUTER_KINDS.specs([
    SimpleImputerSpec, ConstantImputerSpec, KNNImputerSpec, IterativeImputerSpec, MultipleImputerSpec, NoImputerSpec,
])

ImputerSpec = Annotated[functools.reduce(operator.or_, IMPUTER_SPEC_ORDER), Field(discriminator="kind")]
