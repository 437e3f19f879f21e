"""Experiment configuration: pydantic models for the YAML files in ``params/``.

A config names the dataset, the split protocol, one or more missingness specs, imputers and
learners (each a discriminated union on ``kind``: the registries in
:mod:`fairmiss.missingness.mechanisms`, :mod:`fairmiss.impute.build` and :mod:`fairmiss.learners.build` give one
model per kind), the metrics, the root seed and the tracking store. The cross product
``splits × missingness × imputers × learners`` are the experiment's *cells*; every cell gets
seeds derived from the root seed (:mod:`fairmiss.seeds`), never global seeding.

Unknown keys are rejected: :func:`load_config` raises :class:`ConfigError` naming the file and
the dotted path of the offending key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer,
                      model_validator)

from fairmiss.io import SAFE_LABEL, SAFE_NAME, check_name, stable_hash

__all__ = [
    "ConfigError",
    "ExperimentConfig",
    "Cell",
    "load_config",
    "DEFAULT_CONFIG",
]

DEFAULT_CONFIG = Path("params/compas_default.yaml")
Rate = Annotated[float, Field(ge=0.0, le=1.0)]
#: a name that becomes a file or directory name (experiment, MLflow experiment, deployment)
SafeName = Annotated[str, AfterValidator(lambda v: check_name(v, "name", SAFE_NAME))]
#: a missingness / imputer / learner name (part of cell keys and of file and artifact names)
SafeLabel = Annotated[str, AfterValidator(lambda v: check_name(v, "name", SAFE_LABEL))]


from fairmiss._errors import ConfigError  # noqa: E402  (defined in the leaf so io can raise it)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- reading YAML files
class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a mapping that repeats a key is an error (PyYAML keeps the last one
    silently: ``learners:`` twice would drop the first list)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable key: let PyYAML report it
                    continue
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first at line {first.line + 1})", key_node.start_mark)
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        return f"{where}{what}"
    return " ".join(str(exc).split())


def read_yaml(path: str | Path, what: str = "config file"):
    """Parse a YAML file with one :class:`ConfigError` (one line naming the file) for every way it can be
    unusable: missing, a directory, unreadable, not UTF-8 (e.g. Latin-1 or UTF-16), not valid YAML, or a
    mapping that repeats a key (line and key named)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: {what} not found")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a {what}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw:
        raise ConfigError(f"{path}: the {what} is not UTF-8 text (it looks like UTF-16); save it as UTF-8")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: the {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}, "
                          "e.g. Latin-1); save it as UTF-8") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {_yaml_problem(exc)}") from None


# --------------------------------------------------------------------------- dataset / split
class DatasetSpec(_Strict):
    name: str
    options: dict[str, Any] = Field(default_factory=dict)
    group_as_feature: bool = False


class SplitSpec(_Strict):
    test_size: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.3
    n_splits: Annotated[int, Field(ge=1, le=1000)] = 10
    stratify: Literal["group_label", "label", "none"] = "group_label"


# --------------------------------------------------------------------------- missingness
class NoMissingness(_Strict):
    kind: Literal["none"] = "none"
    name: SafeLabel = "none"


class MCARGroup(_Strict):
    """Per-group MCAR: P(M_j = 1 | S = s) = rates[j][s] (spec 000 §1.2, Table 3)."""

    kind: Literal["mcar_group"] = "mcar_group"
    name: SafeLabel
    rates: dict[str, dict[int, Rate]]
    mode: Literal["bernoulli", "fixed_count", "fixed_count_nested"] = "bernoulli"


class MCAR(_Strict):
    kind: Literal["mcar"] = "mcar"
    name: SafeLabel
    rates: dict[str, Rate]


class MAR(_Strict):
    """Missingness of each target column driven by observed driver columns.

    ``link: logistic`` — P(M = 1) = σ(a + strength · mean standardised driver); ``link: rank`` —
    P(M = 1) = min(1, c · rank of the driver score / n) (only the order matters; ``strength`` < 0
    reverses the direction, 0 gives MCAR). In both, the expected rate is ``rate``."""

    kind: Literal["mar"] = "mar"
    name: SafeLabel
    columns: list[str] = Field(min_length=1)
    drivers: list[str] = Field(min_length=1)
    rate: Rate
    strength: float = 1.0
    link: Literal["logistic", "rank"] = "logistic"

    @model_validator(mode="after")
    def _drivers_observed(self):
        overlap = set(self.columns) & set(self.drivers)
        if overlap:
            raise ValueError(f"MAR drivers must stay observed; {sorted(overlap)} are also masked columns")
        return self


class AmputePattern(_Strict):
    """One missingness pattern of :class:`Ampute`: the columns it removes and its relative frequency."""

    columns: list[str] = Field(min_length=1)
    freq: Rate
    #: weights of the weighted sum score (default 1 for every score column)
    weights: dict[str, float] | None = None


class Ampute(_Strict):
    """Multivariate amputation in the spirit of ``mice::ampute``: ``prop`` of the rows become
    incomplete, pattern k accounts for ``freq_k`` of them, and the mechanism within a pattern is
    MCAR, MAR (score of the columns the pattern keeps) or MNAR (score of the columns it removes),
    shaped by ``type`` (right, left, mid, tail)."""

    kind: Literal["ampute"] = "ampute"
    name: SafeLabel
    prop: Rate
    patterns: list[AmputePattern] = Field(min_length=1)
    mechanism: Literal["MCAR", "MAR", "MNAR"] = "MCAR"
    type: Literal["right", "left", "mid", "tail"] = "right"
    strength: float = 1.0

    @model_validator(mode="after")
    def _patterns_consistent(self):
        total = sum(p.freq for p in self.patterns)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"pattern frequencies must sum to 1, got {total:g}")
        sets = [frozenset(p.columns) for p in self.patterns]
        if len(set(sets)) != len(sets):
            raise ValueError("patterns must remove distinct column sets")
        return self


class MNARCensor(_Strict):
    """Self-masking: values above the per-column (1 - rate) quantile are removed (001 §5)."""

    kind: Literal["mnar_censor"] = "mnar_censor"
    name: SafeLabel
    columns: list[str]
    rate: Rate


class Preset(_Strict):
    """A named missingness setting from a paper, e.g. ``000_table3_compas``."""

    kind: Literal["preset"] = "preset"
    preset: str
    name: SafeLabel | None = None
    mode: Literal["bernoulli", "fixed_count", "fixed_count_nested"] = "bernoulli"


MissingnessSpec = Annotated[NoMissingness | MCARGroup | MCAR | MAR | MNARCensor | Ampute | Preset,
                            Field(discriminator="kind")]


# --------------------------------------------------------------------------- imputers
class _ImputerBase(_Strict):
    add_indicator: bool = False
    #: fit one imputer per group (paper 000 Remark 1); the group is passed as data at fit and transform
    per_group: bool = False
    name: SafeLabel | None = None

    @property
    def label(self) -> str:
        return self.name or (("group_" if self.per_group else "") + self.kind + ("+mask" if self.add_indicator else ""))


class _FittedImputerBase(_ImputerBase):
    #: where the *test-time* imputer is estimated: ``train`` (the proper protocol, paper 001 §2.2) or
    #: ``test`` (paper 000 §3.2 mismatch: training data imputed by the train-fitted imputer, test data by
    #: one refitted on the test split; the Theorem 2 bound is then logged as ``mismatch_bound.*``)
    test_fit_on: Literal["train", "test"] = "train"

    @property
    def label(self) -> str:
        return super().label + ("@test" if self.name is None and self.test_fit_on == "test" else "")


class SimpleImputerSpec(_FittedImputerBase):
    kind: Literal["mean", "median", "most_frequent"]


class ConstantImputerSpec(_ImputerBase):
    kind: Literal["constant"] = "constant"
    fill_value: float = -1.0


class KNNImputerSpec(_FittedImputerBase):
    kind: Literal["knn"] = "knn"
    n_neighbors: Annotated[int, Field(ge=1)] = 5
    #: how donors at exactly the k-th distance share the remaining slots (fairmiss.impute.knn):
    #: "average" = every tied donor gets an equal share (the expectation over all tie-breaks, independent
    #: of row order and CPU), "lowest_index" = the tied donors earliest in the training split
    ties: Literal["average", "lowest_index"] = "average"


class IterativeImputerSpec(_FittedImputerBase):
    kind: Literal["iterative"] = "iterative"
    max_iter: Annotated[int, Field(ge=1)] = 10
    sample_posterior: bool = False


class MultipleImputerSpec(_ImputerBase):
    """Multiple imputation with test-time averaging (paper 001 §2.4, Theorem 2): ``m`` stochastic
    draws of ``IterativeImputer(sample_posterior=True)``, one learner fitted per completed training
    set, predicted probabilities averaged over ``m`` imputations of the test set. Wraps the learner,
    so only learners without group-aware fit/predict pair with it (``MI_LEARNERS``)."""

    kind: Literal["multiple"] = "multiple"
    m: Annotated[int, Field(ge=1, le=100)] = 5
    max_iter: Annotated[int, Field(ge=1)] = 10

    @field_validator("per_group")
    @classmethod
    def _no_per_group(cls, v):
        if v:
            raise ValueError("per_group is not supported by the multiple imputer")
        return v


class NoImputerSpec(_ImputerBase):
    """Hand NaN to the learner (MIA for trees with native missing support)."""

    kind: Literal["none"] = "none"


ImputerSpec = Annotated[
    SimpleImputerSpec | ConstantImputerSpec | KNNImputerSpec | IterativeImputerSpec | MultipleImputerSpec
    | NoImputerSpec,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- learners
class _LearnerBase(_Strict):
    name: SafeLabel | None = None
    #: restrict this learner to the named imputers (labels); None pairs it with every imputer
    imputers: list[str] | None = None

    @property
    def label(self) -> str:
        return self.name or self.kind


class DecisionTreeSpec(_LearnerBase):
    kind: Literal["decision_tree"] = "decision_tree"
    max_depth: Annotated[int, Field(ge=1)] | None = 3
    min_samples_leaf: Annotated[int, Field(ge=1)] = 1
    criterion: Literal["gini", "entropy", "log_loss"] = "gini"


class LogisticRegressionSpec(_LearnerBase):
    kind: Literal["logistic_regression"] = "logistic_regression"
    C: Annotated[float, Field(gt=0)] = 1.0
    penalty: Literal["l2", "l1", "none"] = "l2"
    max_iter: Annotated[int, Field(ge=1)] = 1000


class GroupCovariateSpec(_LearnerBase):
    """Paper 002's comparators: logistic regression with the group as covariate (``covariate``),
    Pope & Sydnor (``zero``: group coefficient zeroed at prediction; ``mean``: group replaced by its
    mean), or group ignored (``unaware``)."""

    kind: Literal["group_covariate"] = "group_covariate"
    strategy: Literal["zero", "mean", "covariate", "unaware"] = "zero"
    C: Annotated[float, Field(gt=0)] = 1.0


class OrthogonalSpec(_LearnerBase):
    """Paper 002: a group-orthogonal representation (OG as printed, the true optimum, or SOG), then a
    head model. ``output: scores`` gives k components; ``reconstruction`` the adjusted p features."""

    kind: Literal["orthogonal"] = "orthogonal"
    projection: Literal["og_paper", "og_optimal", "sog"] = "og_paper"
    n_components: Annotated[int, Field(ge=1)] = 10
    t: Annotated[float, Field(gt=0)] | None = None
    output: Literal["scores", "reconstruction"] = "scores"
    head: Literal["logistic", "lasso", "random_forest"] = "logistic"
    C: Annotated[float, Field(gt=0)] = 1.0
    n_estimators: Annotated[int, Field(ge=1)] = 500


class RandomForestSpec(_LearnerBase):
    kind: Literal["random_forest"] = "random_forest"
    n_estimators: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] | None = None
    n_jobs: Annotated[int, Field(ge=1)] = 1


class XGBoostSpec(_LearnerBase):
    kind: Literal["xgboost"] = "xgboost"
    n_estimators: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] = 3
    learning_rate: Annotated[float, Field(gt=0)] = 0.1
    reg_lambda: Annotated[float, Field(ge=0)] = 1.0
    min_child_weight: Annotated[float, Field(ge=0)] = 1.0
    base_score: Annotated[float, Field(gt=0, lt=1)] | None = None
    scale_pos_weight: Annotated[float, Field(gt=0)] = 1.0
    n_jobs: Annotated[int, Field(ge=1)] = 1


class HistGBSpec(_LearnerBase):
    kind: Literal["hist_gradient_boosting"] = "hist_gradient_boosting"
    max_iter: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] | None = None
    learning_rate: Annotated[float, Field(gt=0)] = 0.1


class ExponentiatedGradientSpec(_LearnerBase):
    """Agarwal et al. reduction (fairlearn) around a depth-``max_depth`` tree or LR."""

    kind: Literal["exponentiated_gradient"] = "exponentiated_gradient"
    constraint: Literal["fnr", "fpr", "equalized_odds", "demographic_parity", "tpr"] = "fnr"
    eps: Annotated[float, Field(gt=0)] = 0.01
    base: Literal["decision_tree", "logistic_regression"] = "decision_tree"
    max_depth: Annotated[int, Field(ge=1)] = 3
    max_iter: Annotated[int, Field(ge=1)] = 50


class ThresholdOptimizerSpec(_LearnerBase):
    """Hardt et al. post-processing (fairlearn), fitted on a validation split carved from train."""

    kind: Literal["threshold_optimizer"] = "threshold_optimizer"
    constraint: Literal["equalized_odds", "false_negative_rate_parity", "false_positive_rate_parity",
                        "true_positive_rate_parity", "demographic_parity"] = "equalized_odds"
    base: Literal["decision_tree", "logistic_regression"] = "decision_tree"
    max_depth: Annotated[int, Field(ge=1)] = 3
    validation_size: Annotated[float, Field(gt=0, lt=1)] = 0.5


class FairMIPForestSpec(_LearnerBase):
    """Paper 000's Fair MIP Forest (Pyomo + HiGHS); handles NaN natively (MIA)."""

    kind: Literal["fair_mip_forest"] = "fair_mip_forest"
    max_depth: Annotated[int, Field(ge=1, le=4)] = 3
    lambda_: Annotated[float, Field(ge=0, alias="lambda")] = 0.1
    fairness: Literal["none", "accuracy", "fpr", "fnr", "equalized_odds"] = "fnr"
    eo_weight: Annotated[float, Field(ge=0)] = 1.0
    n_trees: Annotated[int, Field(ge=1)] = 30
    batch_size: Annotated[int, Field(ge=4)] = 200
    #: seconds per tree for HiGHS; 0 = no MIP, each tree is its warm start (solver-free)
    time_limit: Annotated[float, Field(ge=0)] = 10.0
    #: HiGHS node budget per tree; set it (and a generous time_limit) for bit-reproducible fits
    node_limit: Annotated[int, Field(ge=1)] | None = None
    #: "search": seeded local search on the exact fair objective (fairmiss.learners.fair_mip_forest.search),
    #: never worse than "best" on the batch; "best": better of the previous tree and CART
    warm_start: Literal["previous", "cart", "best", "search", "none"] = "best"
    #: restarts of the "search" warm start
    search_restarts: Annotated[int, Field(ge=0)] = 50
    #: per feature, at most this many candidate thresholds in the search (None: every observed value);
    #: binding only for continuous features (HSLS), where the search's time grows about with its square
    search_max_thresholds: Annotated[int, Field(ge=1)] | None = 64
    stratify_batches: bool = True
    #: how each tree is found: "mip" = warm start + HiGHS (time_limit; 0 = the warm start is the tree),
    #: "dp" = the exact dynamic program (fairmiss.learners.fair_mip_forest.dp: proven optimum, no solver, no clock),
    #: "search" = the local search alone
    solver: Literal["mip", "dp", "search"] = "mip"
    #: solver "dp": stop after this many root splits with the best tree and a lower bound (None: optimal)
    dp_node_limit: Annotated[int, Field(ge=1)] | None = None
    #: solver "dp": per feature at most this many candidate thresholds (None: every observed value)
    dp_max_thresholds: Annotated[int, Field(ge=1)] | None = None
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_serializer(mode="wrap")
    def _omit_default_solver_fields(self, handler):
        """Leave the solver fields out of dumps while they have their defaults, so that configs written
        before they existed keep their config hash and cell cache keys (committed results unchanged)."""
        out = handler(self)
        for k, default in (("solver", "mip"), ("dp_node_limit", None), ("dp_max_thresholds", None)):
            if k in out and out[k] == default:
                del out[k]
        return out


class ZafarSpec(_LearnerBase):
    """Zafar et al. disparate-mistreatment logistic regression (penalty convex-concave procedure)."""

    kind: Literal["zafar"] = "zafar"
    constraint: Literal["fpr", "fnr", "eo", "none"] = "fnr"
    tau: Annotated[float, Field(gt=0)] = 0.005
    mu: Annotated[float, Field(gt=1)] = 1.2
    max_iter: Annotated[int, Field(ge=1)] = 50
    #: relative covariance bound (fraction of the unconstrained model's covariance; 1 = plain logistic
    #: regression, 0 = the zero bound of spec 000 §4). None: the zero bound. τ only picks DCCP's local
    #: solution under the zero bound; cov_factor is the knob that trades accuracy for the gap.
    cov_factor: Annotated[float, Field(ge=0, le=1)] | None = None
    #: penalty-CCP starts (the unconstrained optimum, then seeded perturbations); the lowest-loss end point
    #: meeting the constraint is kept (fairmiss.learners.zafar). 1 = Zafar et al.'s single start.
    n_starts: Annotated[int, Field(ge=1, le=50)] = 1


class BuDROSpec(_LearnerBase):
    """Paper 004's BuDRO: XGBoost with an optimal-transport adversary under a learned fair metric
    whose protected directions come from the ``protected`` feature columns."""

    kind: Literal["budro"] = "budro"
    protected: list[str] = Field(min_length=1)
    eps: Annotated[float, Field(ge=0)] = 1.0
    n_estimators: Annotated[int, Field(ge=1)] = 90
    learning_rate: Annotated[float, Field(gt=0)] = 0.005
    max_depth: Annotated[int, Field(ge=1)] = 4
    min_child_weight: Annotated[float, Field(ge=0)] = 1 / 80
    reg_lambda: Annotated[float, Field(ge=0)] = 1.0
    ot_method: Literal["lp", "greedy", "dual", "entropic", "dual_sgd"] = "dual"
    #: the fair metric's attribute model (logistic): inverse regularisation C, or SenSR's per-sample l2
    #: penalty (C = 1 / (metric_l2 · n_train); the paper's Adult metric came from SenSR with 0.2)
    metric_C: Annotated[float, Field(gt=0)] | None = None
    metric_l2: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _one_metric_knob(self):
        if self.metric_C is not None and self.metric_l2 is not None:
            raise ValueError("set at most one of metric_C and metric_l2")
        return self


class _XGBBaselineBase(_LearnerBase):
    """XGBoost parameters of paper 004's baselines (defaults: the German Table 4 values)."""

    n_estimators: Annotated[int, Field(ge=1)] = 90
    learning_rate: Annotated[float, Field(gt=0)] = 0.005
    max_depth: Annotated[int, Field(ge=1)] = 4
    min_child_weight: Annotated[float, Field(ge=0)] = 1 / 80
    reg_lambda: Annotated[float, Field(ge=0)] = 1.0
    scale_pos_weight: Annotated[float, Field(gt=0)] = 1.0


class ProjectSpec(_XGBBaselineBase):
    """Paper 004's "Project" baseline: XGBoost on XQ, the fair metric's protected subspace projected out;
    the metric is learned from the ``protected`` feature columns as for BuDRO."""

    kind: Literal["budro_project"] = "budro_project"
    protected: list[str] = Field(min_length=1)
    metric_C: Annotated[float, Field(gt=0)] | None = None
    metric_l2: Annotated[float, Field(gt=0)] | None = None


class ReweighSpec(_XGBBaselineBase):
    """Paper 004's "Reweigh" baseline: Kamiran–Calders weights over the ``protected`` feature columns
    (their intersection), then XGBoost."""

    kind: Literal["reweigh"] = "reweigh"
    protected: list[str] = Field(min_length=1)


class EqualityConstrainedSpec(_LearnerBase):
    """Paper 003's post-hoc leaf adjustment on a tree ensemble, reference set = training split."""

    kind: Literal["equality_constrained"] = "equality_constrained"
    base: Literal["random_forest", "decision_tree", "xgboost"] = "random_forest"
    n_estimators: Annotated[int, Field(ge=1)] = 100
    max_depth: Annotated[int, Field(ge=1)] | None = None
    mode: Literal["compressed", "explicit"] = "explicit"
    bounds: tuple[float, float] | None = None


LearnerSpec = Annotated[
    DecisionTreeSpec | LogisticRegressionSpec | RandomForestSpec | XGBoostSpec | HistGBSpec
    | GroupCovariateSpec | OrthogonalSpec | ZafarSpec | BuDROSpec | ProjectSpec | ReweighSpec
    | ExponentiatedGradientSpec | ThresholdOptimizerSpec | FairMIPForestSpec | EqualityConstrainedSpec,
    Field(discriminator="kind"),
]

#: Learners that accept NaN in X (the "none" imputer path, MIA).
NATIVE_MISSING = {"decision_tree", "random_forest", "xgboost", "hist_gradient_boosting", "fair_mip_forest"}
#: Learners the multiple imputer can wrap (plain classifiers with predict_proba, no group at fit/predict).
MI_LEARNERS = {"decision_tree", "logistic_regression", "random_forest", "xgboost", "hist_gradient_boosting"}

METRICS = Literal[
    "accuracy", "balanced_accuracy", "auc", "fpr", "fnr", "tpr", "tnr", "selection_rate", "error",
]


class TrackingSpec(_Strict):
    uri: str | None = None  # None: MLFLOW_TRACKING_URI, else sqlite:///mlruns/mlflow.db
    experiment_name: SafeName | None = None  # None: the config's experiment name
    log_models: bool = True


class ExecutionSpec(_Strict):
    max_workers: Annotated[int, Field(ge=1, le=64)] = 2
    #: reuse cells already FINISHED in the tracking store under the same fingerprint (config, raw
    #: data, code commit): a crashed or interrupted sweep resumes where it stopped
    resume: bool = True
    #: ``thread``: Prefect's thread pool (cheap; parallel only where the learner releases the GIL — numpy,
    #: BLAS, XGBoost, HiGHS); ``process``: Prefect's process pool (every cell in its own worker process —
    #: true parallelism for Python-heavy learners such as the Fair MIP local search or Zafar, at the cost
    #: of pickling each cell's inputs); ``dask``: a Dask cluster (local, or ``dask_address``).
    task_runner: Literal["thread", "process", "dask"] = "thread"
    dask_address: str | None = None


class ReferenceSpec(_Strict):
    """A paper's published numbers for some methods of a study, for the report's paper-vs-ours table.

    ``values`` maps a method (our ``imputer+learner`` label, or just the learner's name) to
    ``{metric: value}`` in *our* metric names and conventions (e.g. ``error_group_1``); ``sd`` holds the
    paper's standard deviations where it printed them. ``source`` says where the numbers come from and
    any convention translated on the way (it is printed in the report)."""

    source: str
    values: dict[str, dict[str, float]]
    sd: dict[str, dict[str, float]] = Field(default_factory=dict)
    loose: bool = False  # the spec calls these loose reference points (e.g. read off a figure)


class ExperimentConfig(_Strict):
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    dataset: DatasetSpec
    split: SplitSpec = SplitSpec()
    missingness: list[MissingnessSpec] = Field(default_factory=lambda: [NoMissingness()], min_length=1)
    imputers: list[ImputerSpec] = Field(min_length=1)
    learners: list[LearnerSpec] = Field(min_length=1)
    metrics: list[METRICS] = Field(
        default_factory=lambda: ["accuracy", "balanced_accuracy", "fpr", "fnr", "selection_rate", "auc"]
    )
    fairness_metric: Literal["fnr_difference", "fpr_difference", "equalized_odds_difference",
                             "demographic_parity_difference", "accuracy_difference"] = "fnr_difference"
    tracking: TrackingSpec = TrackingSpec()
    execution: ExecutionSpec = ExecutionSpec()

    @field_validator("imputers", "learners", "missingness")
    @classmethod
    def _unique_labels(cls, v):
        labels = [getattr(x, "label", None) or getattr(x, "name", None) or getattr(x, "preset", None) for x in v]
        dup = {x for x in labels if labels.count(x) > 1}
        if dup:
            raise ValueError(f"duplicate names {sorted(dup)}: give each entry a distinct 'name'")
        return v

    quick: dict[str, Any] | None = None  # overrides applied by `--quick` (e.g. fewer splits)
    #: the paper's published numbers, shown beside ours by `fairmiss report` (not used by any run)
    references: ReferenceSpec | None = None
    #: counterfactual consistency metrics (paper 004): name -> feature columns to flip; one column is
    #: a binary attribute (0 <-> 1), several are a one-hot block (every level tried)
    consistency: dict[str, list[str]] = Field(default_factory=dict)
    #: further protected attributes to report gaps for (columns of the processed data, e.g. ``sex`` where the
    #: group is race): per cell ``<gap>_by_<column>`` for the TPR/FPR/selection-rate/accuracy differences,
    #: equalized odds (paper 004's GAPMax) and ``gap_rms`` (GAPRMS). The dataset's group stays the one the
    #: learners are made fair for; these only measure.
    extra_groups: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _compatible(self):
        labels = {imp.label for imp in self.imputers}
        for ln in self.learners:
            unknown = set(ln.imputers or []) - labels
            if unknown:
                raise ValueError(f"learner '{ln.label}' names unknown imputer(s) {sorted(unknown)}; imputers: {sorted(labels)}")
        bad = [
            f"imputer 'none' with learner '{ln.label}'"
            for imp in self.imputers if imp.kind == "none"
            for ln in self.learners if ln.kind not in NATIVE_MISSING and _pairs(ln, imp)
        ]
        if bad:
            raise ValueError(
                "learners that cannot take NaN need an imputer: " + "; ".join(bad)
                + f" (learners with native missing support: {sorted(NATIVE_MISSING)})"
            )
        bad_mi = [
            f"imputer '{imp.label}' with learner '{ln.label}'"
            for imp in self.imputers if imp.kind == "multiple"
            for ln in self.learners if ln.kind not in MI_LEARNERS and _pairs(ln, imp)
        ]
        if bad_mi:
            raise ValueError(
                "the multiple imputer wraps the learner and needs a plain classifier: " + "; ".join(bad_mi)
                + f" (supported: {sorted(MI_LEARNERS)}; restrict with the learner's 'imputers' list)"
            )
        return self

    @property
    def config_hash(self) -> str:
        """Hash of what determines results: execution, tracking and prose are left out, so changing
        the number of workers or the tracking store does not change the hash."""
        return stable_hash(self.model_dump(mode="json", by_alias=True,
                                           exclude={"execution", "tracking", "description", "quick",
                                                    "references"}))

    def cells(self) -> list[Cell]:
        out = []
        for split_idx, miss, imp, ln in itertools.product(
            range(self.split.n_splits), self.missingness, self.imputers, self.learners
        ):
            if _pairs(ln, imp):
                out.append(Cell(split_idx, miss, imp, ln))
        return out


def _pairs(learner, imputer) -> bool:
    return learner.imputers is None or imputer.label in learner.imputers


def missingness_label(m) -> str:
    return m.name or getattr(m, "preset", None) or m.kind


@dataclass(frozen=True)
class Cell:
    split_index: int
    missingness: Any
    imputer: Any
    learner: Any

    @property
    def key(self) -> str:
        return f"split{self.split_index}/{missingness_label(self.missingness)}/{self.imputer.label}/{self.learner.label}"

    @property
    def method(self) -> str:
        """The method a user compares: imputer + learner (aggregated over splits)."""
        return f"{self.imputer.label}+{self.learner.label}"


class DecileStudyConfig(_Strict):
    """Paper 003's COMPAS decile study (a regression study with its own flow)."""

    study: Literal["003_decile"]
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    dataset: DatasetSpec
    n_trees: Annotated[int, Field(ge=1)] = 20
    test_size: Annotated[float, Field(gt=0, lt=1)] = 0.2
    mode: Literal["compressed", "explicit"] = "explicit"
    bounds: tuple[float, float] | None = None
    tracking: TrackingSpec = TrackingSpec()
    quick: dict[str, Any] | None = None


class Sim001StudyConfig(_Strict):
    """Paper 001's simulation table (median relative R², Model 1), a study with its own flow."""

    study: Literal["001_table"]
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    n_reps: Annotated[int, Field(ge=2)] = 20
    n_train: Annotated[int, Field(ge=50)] = 1000
    n_test: Annotated[int, Field(ge=50)] = 1000
    rho: Annotated[float, Field(ge=0, lt=1)] = 0.5
    rate: Annotated[float, Field(gt=0, lt=1)] = 0.2
    learners: list[Literal["tree", "rf", "xgb", "svm", "knn"]] = Field(default_factory=lambda: ["tree", "rf", "xgb"],
                                                                       min_length=1)
    rf_n_estimators: Annotated[int, Field(ge=1)] = 100
    xgb_n_estimators: Annotated[int, Field(ge=1)] = 500
    tolerance: Annotated[float, Field(gt=0)] = 0.03
    tracking: TrackingSpec = TrackingSpec()
    quick: dict[str, Any] | None = None


def load_study_config(path: str | Path, *, quick: bool = False):
    """An experiment config, or a special study config when the file has a ``study:`` key."""
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "study" in data:
        if quick and data.get("quick"):
            data = _deep_merge(data, data["quick"])
            data["experiment"] = f"{data['experiment']}-quick"
        try:
            if data.get("study") == "002_table1_hcp":
                cfg = HCPStudyConfig.model_validate(data)
            elif data.get("study") == "001_table":
                cfg = Sim001StudyConfig.model_validate(data)
            else:
                cfg = DecileStudyConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_format_errors(path, exc)) from None
        if getattr(cfg, "dataset", None) is not None:
            check_dataset_spec(cfg.dataset, path)
        return cfg
    return load_config(path, quick=quick)


class DeploymentSpec(_Strict):
    """A scheduled deployment of the experiment flow (``params/schedules.yaml``)."""

    name: SafeName
    config: str
    cron: str | None = None
    interval_seconds: Annotated[int, Field(ge=1)] | None = None
    quick: bool = False
    skip_if_unchanged: bool = True
    paused: bool = False

    @model_validator(mode="after")
    def _one_schedule(self):
        if (self.cron is None) == (self.interval_seconds is None):
            raise ValueError("give exactly one of 'cron' or 'interval_seconds'")
        return self


class SchedulesFile(_Strict):
    deployments: list[DeploymentSpec] = Field(min_length=1)


def load_schedules(path: str | Path) -> SchedulesFile:
    path = Path(path)
    data = read_yaml(path, "schedules file")
    try:
        sched = SchedulesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(path, exc)) from None
    for i, d in enumerate(sched.deployments):
        load_config(d.config, quick=d.quick)  # each named config must itself be valid
    return sched


def _format_errors(path: Path | str, exc: ValidationError) -> str:
    """One line: ``FILE: invalid config: KEY: problem; KEY: problem`` (the CLI prints exactly one line)."""
    items = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            items.append(f"unknown key '{loc}'")
        else:
            got = " ".join(repr(err.get("input")).split())
            items.append(f"{loc or '<root>'}: {err['msg']} (got {got[:120]})")
    return f"{path}: invalid config: " + "; ".join(items)


def parse_config(data: dict, source: str | Path = "<dict>") -> ExperimentConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    try:
        cfg = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from None
    from fairmiss.missingness.mechanisms import PRESETS

    for i, m in enumerate(cfg.missingness):
        if m.kind == "preset" and m.preset not in PRESETS:
            raise ConfigError(f"{source}: missingness.{i}.preset: unknown preset '{m.preset}'; known: {sorted(PRESETS)}")
    check_dataset_spec(cfg.dataset, source)
    check_columns(cfg, source)
    return cfg


def check_dataset_spec(spec: DatasetSpec, source: str | Path = "<dict>") -> None:
    """``dataset.name`` is a registered variant and ``dataset.options`` are its options with the types of
    their defaults (:meth:`fairmiss.datasets.registry.DatasetVariant.option_problems`)."""
    from fairmiss.datasets import dataset_names
    from fairmiss.datasets import get_variant
    if spec.name not in dataset_names():
        raise ConfigError(f"{source}: dataset.name: unknown dataset '{spec.name}'; known: {', '.join(dataset_names())}")
    problems = get_variant(spec.name).option_problems(spec.options)
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(f"dataset.options.{k}: {msg}" for k, msg in problems))


def check_columns(cfg: ExperimentConfig, source: str | Path = "<dict>") -> None:
    """Every column a config names exists in the dataset variant's declared columns, before any data are
    read: masked and driver columns of missingness specs (features only; never the group or the label),
    ``extra_groups`` (columns of the processed table other than the group), the ``protected`` columns of
    BuDRO / Project / Reweigh and the ``consistency`` columns (features)."""
    from fairmiss.datasets import get_variant
    from fairmiss.missingness.mechanisms import masked_columns

    v = get_variant(cfg.dataset.name)
    features = list(v.features) + ([v.group] if cfg.dataset.group_as_feature else [])
    role = {v.group: "the dataset's group", v.label: "the dataset's label"}

    def fail(key: str, msg: str):
        raise ConfigError(f"{source}: {key}: {msg}")

    def need_features(key: str, cols, what: str = "column"):
        for c in cols:
            if c not in features:
                extra = f" ({role[c]})" if c in role else ""
                fail(key, f"{what} '{c}' is not a feature of dataset {v.name}{extra}; features: {features}")

    for i, m in enumerate(cfg.missingness):
        key = f"missingness.{i} ('{missingness_label(m)}')"
        cols = masked_columns(m)
        for c in cols:
            if c in role:
                fail(key, f"it would mask '{c}', {role[c]}; the group and the label are never masked")
        need_features(key, cols)
        if m.kind == "mar":
            need_features(key + ".drivers", m.drivers, "driver column")
        if m.kind == "ampute":
            for j, pat in enumerate(m.patterns):
                need_features(f"{key}.patterns.{j}.weights", list(pat.weights or {}))
    for i, col in enumerate(cfg.extra_groups):
        if col == v.group:
            fail(f"extra_groups.{i}", f"'{col}' is the dataset's group already")
        if col not in v.columns:
            fail(f"extra_groups.{i}", f"'{col}' is not a column of dataset {v.name}; columns: {v.columns}")
    for i, ln in enumerate(cfg.learners):
        if getattr(ln, "protected", None):
            need_features(f"learners.{i}.{ln.kind}.protected", ln.protected, "protected column")
    for name, cols in cfg.consistency.items():
        need_features(f"consistency.{name}", cols)


def _deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(path: str | Path, *, quick: bool = False) -> ExperimentConfig:
    """Load and validate a config; ``quick=True`` applies its ``quick:`` overrides (a small version)."""
    path = Path(path)
    data = read_yaml(path)
    if quick and isinstance(data, dict):
        over = data.get("quick") or {}
        if not isinstance(over, dict):
            raise ConfigError(f"{path}: quick: must be a mapping of overrides")
        data = _deep_merge(data, over)
        data["experiment"] = f"{data.get('experiment', 'x')}-quick"
    return parse_config(data, path)


class HCPStudyConfig(_Strict):
    """Paper 002 Table 1 (HCP connectomes, scanner as the group): eight models over repeated random
    splits, per-scanner metrics in both conventions and Mann–Whitney tests (:mod:`fairmiss.studies.p002_hcp`).

    ``dataset`` defaults to ``hcp_synthetic`` (a labelled synthetic stand-in); set it to ``hcp`` when
    the restricted-access files are in the raw directory."""

    study: Literal["002_table1_hcp"]
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    dataset: DatasetSpec = DatasetSpec(name="hcp_synthetic")
    n_components: Annotated[int, Field(ge=1)] = 30
    n_splits: Annotated[int, Field(ge=1, le=1000)] = 300
    test_size: Annotated[float, Field(gt=0, lt=1)] = 0.3
    models: list[Literal["SVD", "SVD_Z", "LASSO_u", "RF_u", "OG", "SOG", "LASSO", "RF"]] = Field(
        default_factory=lambda: ["SVD", "SVD_Z", "LASSO_u", "RF_u", "OG", "SOG", "LASSO", "RF"], min_length=1)
    og_variant: Literal["paper", "optimal"] = "paper"
    sog_t: Annotated[float, Field(ge=1)] | None = None  # None: 0.6·sqrt(p) (SparseOrthogonalGroupSVD default)
    sog_tol: Annotated[float, Field(gt=0)] = 1e-5  # relative change of the rank-1 objective [GAP]
    sog_max_iter: Annotated[int, Field(ge=1)] = 100
    lasso_C: Annotated[float, Field(gt=0)] = 0.1
    rf_n_estimators: Annotated[int, Field(ge=1)] = 500
    threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05  # Mann–Whitney level (the paper gives none)
    ecdf_split: Annotated[int, Field(ge=0)] = 0
    tracking: TrackingSpec = TrackingSpec()
    quick: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check(self):
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"models: duplicated names in {self.models}")
        if self.ecdf_split >= self.n_splits:
            raise ValueError(f"ecdf_split={self.ecdf_split} must be < n_splits={self.n_splits}")
        return self
