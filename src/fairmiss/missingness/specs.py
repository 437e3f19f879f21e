"""Missingness specs (the ``missingness`` entries of a params file) and their discriminated union
:data:`MissingnessSpec` (the type of ``ExperimentConfig.missingness`` items, :mod:`fairmiss.config`).

Every kind is one module of this package that registers its spec, draw, gate and masked columns in
:data:`MISSINGNESS_KINDS` (:mod:`fairmiss.missingness.kinds`). The built-in kinds are imported first, in the
fixed order below (the registry's and the union's order, part of the config's JSON schema); then every other
kind module of the package and the plugins (entry point group ``fairmiss.missingness``) are discovered.
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated

from pydantic import Field

from fairmiss._registry import discover
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
# the built-in kinds, registered in this order by importing their modules
from fairmiss.missingness.none import NoMissingness
from fairmiss.missingness.mcar_group import MCARGroup
from fairmiss.missingness.mcar import MCAR
from fairmiss.missingness.mar import MAR
from fairmiss.missingness.mnar_censor import MNARCensor
from fairmiss.missingness.ampute import Ampute, AmputePattern
from fairmiss.missingness.preset import Preset

__all__ = ["Ampute", "AmputePattern", "MAR", "MCAR", "MCARGroup", "MissingnessSpec", "MISSINGNESS_KINDS", "MNARCensor", "NoMissingness",
           "Preset"]

#: Added mechanism kinds register themselves in their own module (adding one is one module + its test).
KIND_MODULES = discover("fairmiss.missingness", skip=("kinds", "mechanisms", "specs", "splits"),
                        entry_point_group="fairmiss.missingness")

#: The union's order: the built-in kinds as before the registry, then added kinds sorted by name.
MISSINGNESS_SPEC_ORDER = MISSINGNESS_KINDS.specs([NoMissingness, MCARGroup, MCAR, MAR, MNARCensor, Ampute, Preset])

MissingnessSpec = Annotated[functools.reduce(operator.or_, MISSINGNESS_SPEC_ORDER), Field(discriminator="kind")]
