"""Learner specs (the ``learners`` entries of a params file), their discriminated union
:data:`LearnerSpec` (the type of ``ExperimentConfig.learners`` items, :mod:`fairmiss.config`) and the kind
flags :data:`NATIVE_MISSING` / :data:`MI_LEARNERS`.

Each spec lives beside its factory and estimator and is registered in
:data:`fairmiss.learners.adapter.LEARNER_KINDS`; the union lists them in the fixed order below (the
order of the union is part of the config schema, so it is written out, not taken from import order).
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated

from pydantic import Field

from fairmiss._registry import discover
from fairmiss.learners.adapter import LEARNER_KINDS
from fairmiss.learners.baselines import (DecisionTreeSpec, GroupCovariateSpec, HistGBSpec, LogisticRegressionSpec,
                                         RandomForestSpec, XGBoostSpec)
from fairmiss.learners.budro.spec import BuDROSpec, ProjectSpec, ReweighSpec
from fairmiss.learners.equality_trees.spec import EqualityConstrainedSpec
from fairmiss.learners.fair_mip_forest.spec import FairMIPForestSpec
from fairmiss.learners.fairlearn_baselines import ExponentiatedGradientSpec, ThresholdOptimizerSpec
from fairmiss.learners.orthogonal.spec import OrthogonalSpec
from fairmiss.learners.zafar import ZafarSpec

__all__ = ["BuDROSpec", "DecisionTreeSpec", "EqualityConstrainedSpec", "ExponentiatedGradientSpec",
           "FairMIPForestSpec", "GroupCovariateSpec", "HistGBSpec", "LearnerSpec", "LogisticRegressionSpec",
           "MI_LEARNERS", "NATIVE_MISSING", "OrthogonalSpec", "ProjectSpec", "RandomForestSpec", "ReweighSpec",
           "ThresholdOptimizerSpec", "XGBoostSpec", "ZafarSpec", "LEARNER_SPEC_ORDER"]

#: Every kind module registers itself: the top-level modules of fairmiss.learners and each method package's
#: ``spec`` module. Adding a learner kind is one module (+ its test); nothing else lists it.
KIND_MODULES = discover("fairmiss.learners", skip=("adapter", "build", "specs"), subpackage_module="spec",
                        entry_point_group="fairmiss.learners")

#: The union's order: the built-in kinds as before the registry, then added kinds sorted by name.
LEARNER_SPEC_ORDER = LEARNER_KINDS.specs([
    DecisionTreeSpec, LogisticRegressionSpec, RandomForestSpec, XGBoostSpec, HistGBSpec,
    GroupCovariateSpec, OrthogonalSpec, ZafarSpec, BuDROSpec, ProjectSpec, ReweighSpec,
    ExponentiatedGradientSpec, ThresholdOptimizerSpec, FairMIPForestSpec, EqualityConstrainedSpec,
])

LearnerSpec = Annotated[functools.reduce(operator.or_, LEARNER_SPEC_ORDER), Field(discriminator="kind")]

#: Learners that accept NaN in X (the "none" imputer path, MIA).
NATIVE_MISSING = LEARNER_KINDS.with_flag("accepts_nan")

#: Learners the multiple imputer can wrap (plain classifiers with predict_proba, no group at fit/predict).
MI_LEARNERS = LEARNER_KINDS.with_flag("mi")
