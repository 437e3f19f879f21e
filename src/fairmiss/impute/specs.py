"""Imputer specs (the ``imputers`` entries of a params file) and their discriminated union
:data:`ImputerSpec` (the type of ``ExperimentConfig.imputers`` items, :mod:`fairmiss.config`). The specs
live beside their factories in :mod:`fairmiss.impute.build` (registered in
:data:`~fairmiss.impute.build.IMPUTER_KINDS`); the union lists them in the fixed order below.
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated

from pydantic import Field

from fairmiss._registry import discover
from fairmiss.impute.build import (IMPUTER_KINDS, ConstantImputerSpec, IterativeImputerSpec, KNNImputerSpec,
                                   MultipleImputerSpec, NoImputerSpec, SimpleImputerSpec)

__all__ = ["ConstantImputerSpec", "ImputerSpec", "IterativeImputerSpec", "KNNImputerSpec", "MultipleImputerSpec",
           "NoImputerSpec", "SimpleImputerSpec", "IMPUTER_SPEC_ORDER"]

#: Every module of fairmiss.impute is imported so that added imputer kinds register themselves (adding an
#: imputer kind is one module + its test).
KIND_MODULES = discover("fairmiss.impute", skip=("build", "specs"), entry_point_group="fairmiss.imputers")

#: The union's order: the built-in kinds as before the registry, then added kinds sorted by name.
IMPUTER_SPEC_ORDER = IMPUTER_KINDS.specs([
    SimpleImputerSpec, ConstantImputerSpec, KNNImputerSpec, IterativeImputerSpec, MultipleImputerSpec, NoImputerSpec,
])

ImputerSpec = Annotated[functools.reduce(operator.or_, IMPUTER_SPEC_ORDER), Field(discriminator="kind")]
