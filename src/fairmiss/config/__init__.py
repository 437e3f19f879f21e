"""Experiment configuration: pydantic models for the YAML files in ``params/``.

A config names the dataset, the split protocol, one or more missingness specs, imputers and
learners (each a discriminated union on ``kind``, defined in
:mod:`fairmiss.missingness.specs`, :mod:`fairmiss.impute.specs` and :mod:`fairmiss.learners.specs`: one
model per kind), the metrics, the root seed and the tracking store. The cross product
``splits × missingness × imputers × learners`` are the experiment's *cells*; every cell gets
seeds derived from the root seed (:mod:`fairmiss.seeds`), never global seeding.

Unknown keys are rejected: :func:`load_config` raises :class:`ConfigError` naming the file and
the dotted path of the offending key.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "ExperimentConfig",
    "Cell",
    "load_config",
    "DEFAULT_CONFIG",
]

DEFAULT_CONFIG = Path("params/compas_default.yaml")

# The specs live beside their kinds (missingness/, impute/, learners/) and in this package's modules;
# every name that used to be defined here stays importable from ``fairmiss.config``.
from fairmiss._errors import ConfigError  # (defined in the leaf so io can raise it)
from fairmiss._spec import (  # noqa: F401  (re-exported)
    Rate,
    SafeName,
    SafeLabel,
    _Strict,
)
from fairmiss.missingness.specs import (  # noqa: F401  (re-exported)
    NoMissingness,
    MCARGroup,
    MCAR,
    MAR,
    AmputePattern,
    Ampute,
    MNARCensor,
    Preset,
    MissingnessSpec,
)
from fairmiss.impute.specs import (  # noqa: F401  (re-exported)
    SimpleImputerSpec,
    ConstantImputerSpec,
    KNNImputerSpec,
    IterativeImputerSpec,
    MultipleImputerSpec,
    NoImputerSpec,
    ImputerSpec,
)
from fairmiss.learners.specs import (  # noqa: F401  (re-exported)
    DecisionTreeSpec,
    LogisticRegressionSpec,
    GroupCovariateSpec,
    OrthogonalSpec,
    RandomForestSpec,
    XGBoostSpec,
    HistGBSpec,
    ExponentiatedGradientSpec,
    ThresholdOptimizerSpec,
    FairMIPForestSpec,
    ZafarSpec,
    BuDROSpec,
    ProjectSpec,
    ReweighSpec,
    EqualityConstrainedSpec,
    LearnerSpec,
    NATIVE_MISSING,
    MI_LEARNERS,
)
from fairmiss.config.experiment import (  # noqa: F401  (re-exported)
    DatasetSpec,
    SplitSpec,
    METRICS,
    TrackingSpec,
    ExecutionSpec,
    EvaluationSpec,
    ReferenceSpec,
    ExperimentConfig,
    missingness_label,
    Cell,
)
from fairmiss.config.studies import (  # noqa: F401  (re-exported)
    DecileStudyConfig,
    Sim001StudyConfig,
    HCPStudyConfig,
)
from fairmiss.config.loading import (  # noqa: F401  (re-exported)
    read_yaml,
    load_study_config,
    _format_errors,
    parse_config,
    check_dataset_spec,
    check_columns,
    load_config,
)
from fairmiss.config.schedules import (  # noqa: F401  (re-exported)
    DeploymentSpec,
    SchedulesFile,
    load_schedules,
)


