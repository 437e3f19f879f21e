"""One experiment's config: :class:`ExperimentConfig` (dataset, split, the missingness x imputer x
learner grid, tracking, execution, reference) and its grid :class:`Cell`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from pydantic import BeforeValidator, Field, field_validator, model_serializer, model_validator
from pydantic_core import PydanticCustomError

from fairmiss._errors import TRACKING_SCHEMES, tracking_uri_problem  # noqa: F401 (re-exported)
from fairmiss.io import stable_hash
from fairmiss.seeds import derive_seed
from fairmiss._spec import SafeName, _Strict
from fairmiss.missingness.specs import NoMissingness, MissingnessSpec
from fairmiss.config.claims import ClaimsSpec
from fairmiss.impute.specs import ImputerSpec
from fairmiss.learners.specs import LearnerSpec, NATIVE_MISSING, MI_LEARNERS
import fairmiss.metrics  # noqa: F401,E402  (imports every metric module: added metrics register themselves)
from fairmiss.metrics.kinds import COUNT_METRICS, fairness_choices

__all__ = ["Cell", "DatasetSpec", "EvaluationSpec", "ExecutionSpec", "ExperimentConfig", "METRICS", "missingness_label",
           "ReferenceSpec", "SplitSpec", "StabilitySpec", "TrackingSpec"]


# --------------------------------------------------------------------------- dataset / split
class DatasetSpec(_Strict):
    """A built-in / registered dataset (``name``, ``options``) or the user's own file (``file`` + ``label`` +
    ``group`` …, see :mod:`fairmiss.datasets.own`); for own data ``name`` is derived (``own_<stem>_<hash8>``
    over the own-data fields and the file's content). The own-data fields are left out of dumps while unset,
    so configs written before they existed keep their config hash."""

    name: str
    options: dict[str, Any] = Field(default_factory=dict)
    group_as_feature: bool = False
    #: own data: a local path (relative to the current directory) or a URL, .csv or .parquet
    file: Annotated[str, Field(min_length=1)] | None = None
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    label: Annotated[str, Field(min_length=1)] | None = None
    positive: str | int | bool | None = None
    #: own data: the group column, or several (``[sex, race]``): their intersections are the groups
    group: Annotated[str, Field(min_length=1)] | list[Annotated[str, Field(min_length=1)]] | None = None
    group_names: dict[str | int, str] | None = None
    #: the privileged (reference) group, by code or name: ``<metric>_signed_difference`` = the other group's
    #: value − this group's (:func:`fairmiss.metrics.stability.signed_differences`); unset: none reported
    privileged: str | int | None = None
    features: list[Annotated[str, Field(min_length=1)]] | None = None
    drop: list[Annotated[str, Field(min_length=1)]] | None = None
    categorical: list[Annotated[str, Field(min_length=1)]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _own_name(cls, data):
        if not isinstance(data, dict):
            return data
        own = [k for k in _OWN_ONLY if data.get(k) is not None]
        if data.get("file") is None:
            own = [k for k in own if k != "group"]  # a registered dataset's groups: _regroup
            if own:
                raise ValueError(f"{own[0]} is for your own data: give 'file' too (or remove it)")
            if data.get("name") is None:
                raise ValueError("give 'name' (a registered dataset) or 'file' (your own CSV / Parquet data)")
            return _regroup(data)
        for k in ("label", "group"):
            if not data.get(k):
                raise ValueError(f"'{k}' is required with 'file' (the column holding the {k})")
        group = data.get("group")
        if isinstance(group, list):
            if len(set(map(str, group))) != len(group):
                raise ValueError(f"group: {group} names a column twice")
            if len(group) > MAX_GROUP_COLUMNS:
                raise ValueError(f"group: {len(group)} columns; at most {MAX_GROUP_COLUMNS} (their intersections "
                                 "are the groups, and they get small fast)")
            if len(group) == 1:
                data = {**data, "group": group[0]}
        if data.get("options"):
            raise ValueError("'options' are for registered datasets, not with 'file'")
        names = data.get("group_names")
        if names is not None:
            if not isinstance(names, dict):
                raise ValueError(f"group_names must map a value of the group column to its name (e.g. {{female: "
                                 f"women, male: men}}), got a {type(names).__name__}")
            seen: dict = {}
            for k, v in names.items():
                if str(v) in seen:
                    raise ValueError(f"group_names: groups {seen[str(v)]!r} and {k!r} are both named {str(v)!r}; "
                                     "each group needs its own name")
                seen[str(v)] = k
        if data.get("features") is not None and len(data["features"]) == 0:
            raise ValueError("features is empty: list the feature columns, or leave 'features' out to use every "
                             "column that is not the label, the group or dropped")
        from fairmiss.datasets.own import OWN_FIELDS, derive_name

        name = derive_name({k: data.get(k) for k in OWN_FIELDS})
        if data.get("name") not in (None, name):
            raise ValueError(f"'name' is derived with 'file' ({name}); leave it out")
        return {**data, "name": name}

    @model_serializer(mode="wrap")
    def _omit_unset_own_fields(self, handler):
        out = handler(self)
        for k in (*_OWN_FIELDS_ALL, "privileged"):
            if k in out and out[k] is None:
                del out[k]
        return out


#: the most group columns whose intersections are the groups
MAX_GROUP_COLUMNS = 4


def _regroup(data: dict) -> dict:
    """A registered dataset with other groups: ``{name: compas_000, group: [race, sex]}`` is the variant
    ``compas_000.race_x_sex`` (:func:`fairmiss.datasets.registry.regrouped`). The name is normalised to
    carry the groups, and ``group`` to the columns the name carries, so that both spellings (and a dumped
    config read again) are the same config with the same hash. Which columns may be groups is checked with
    the dataset (``fairmiss.config.loading.check_dataset_spec``)."""
    name, group = data["name"], data.get("group")
    if not isinstance(name, str) or (group is None and "." not in name):
        return data
    from fairmiss.datasets.registry import GROUP_JOIN

    base, dot, suffix = name.partition(".")
    named = suffix.split(GROUP_JOIN) if dot else None
    if group is not None:
        cols = [group] if isinstance(group, str) else list(group) if isinstance(group, list) else None
        if not cols or not all(isinstance(c, str) and c for c in cols):
            raise ValueError(f"group: {group!r}: give a column name or a list of column names")
        if len(set(cols)) != len(cols):
            raise ValueError(f"group: {cols} names a column twice")
        if len(cols) > MAX_GROUP_COLUMNS:
            raise ValueError(f"group: {len(cols)} columns; at most {MAX_GROUP_COLUMNS} (their intersections "
                             "are the groups, and they get small fast)")
        if named is not None and named != cols:
            raise ValueError(f"name '{name}' names the groups {named}, but group: {cols}; give one of them")
    else:
        cols = named
    if not base or not all(cols):
        raise ValueError(f"name '{name}': give '<dataset>.<column>' or '<dataset>.<column>_x_<column>' "
                         "(or 'name' and 'group')")
    return {**data, "name": f"{base}.{GROUP_JOIN.join(cols)}", "group": cols[0] if len(cols) == 1 else cols}

_OWN_ONLY = ("sha256", "label", "positive", "group", "group_names", "features", "drop", "categorical")
_OWN_FIELDS_ALL = ("file", *_OWN_ONLY)


class SplitSpec(_Strict):
    """How the rows are split into training and test rows, ``n_splits`` times.

    By default split ``i`` is drawn with a seed derived from the experiment's root seed and ``i``. ``seeds``
    gives each split's seed itself instead (``random_state`` of scikit-learn's ``train_test_split``, with the
    same stratification): the protocol of a study that names its seeds, e.g. the Shades-of-Null suite's
    100, 200, ..., 600. Then ``n_splits`` is the number of seeds. Only the rows follow these seeds; missingness
    masks and learners keep their seeds derived from the root seed and the split index.
    """

    test_size: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.3
    n_splits: Annotated[int, Field(ge=1, le=1000)] = 10
    stratify: Literal["group_label", "label", "none"] = "group_label"
    seeds: Annotated[list[Annotated[int, Field(ge=0, lt=2**31)]], Field(min_length=1, max_length=1000)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _n_from_seeds(cls, data):
        if isinstance(data, dict) and isinstance(data.get("seeds"), list) and data["seeds"]:
            n = data.get("n_splits")
            if n is not None and n != len(data["seeds"]):
                raise ValueError(f"n_splits {n} but {len(data['seeds'])} seeds: give one seed per split "
                                 "(or leave n_splits out)")
            data = {**data, "n_splits": len(data["seeds"])}
        return data

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, v):
        if v is not None and len(set(v)) != len(v):
            dup = sorted({x for x in v if v.count(x) > 1})
            raise ValueError(f"repeated seeds {dup}: two splits with one seed are the same split")
        return v

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler):
        # without seeds a split spec dumps (and hashes) as before
        out = handler(self)
        if isinstance(out, dict) and out.get("seeds") is None:
            out.pop("seeds", None)
        return out

    def seed_of(self, root_seed: int, split_index: int) -> int:
        """The ``random_state`` of split ``split_index``'s row draw."""
        if self.seeds is not None:
            return self.seeds[split_index]
        return derive_seed(root_seed, "split", split_index) % (2**31)


#: the metrics a config may list: the built-in ones, then the added ones (fairmiss.metrics.kinds) by name
METRICS = Literal[(
    "accuracy", "balanced_accuracy", "auc", "fpr", "fnr", "tpr", "tnr", "selection_rate", "error",
    *sorted(COUNT_METRICS),
)]


def _one_of(choices) -> str:
    """``'a', 'b' or 'c'``: the choices as pydantic lists a Literal's."""
    shown = [repr(c) for c in choices]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _known_fairness_metric(v):
    choices = fairness_choices()
    if v not in choices:  # the error a Literal of the choices gives
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": _one_of(choices)})
    return v


def _fairness_metric_schema(schema: dict) -> None:
    schema["enum"] = list(fairness_choices())


#: a config's fairness gap: one of the gaps of the metric table with ``choice=True``
#: (fairmiss.metrics.kinds.fairness_choices), checked when a config is validated so that an added gap is accepted
FairnessMetric = Annotated[str, BeforeValidator(_known_fairness_metric),
                           Field(json_schema_extra=_fairness_metric_schema)]


#: tracking URI schemes MLflow 3 can use as a tracking store (the plain file store is refused by MLflow 3)


class TrackingSpec(_Strict):
    uri: str | None = None  # None: MLFLOW_TRACKING_URI, else sqlite:///mlruns/mlflow.db

    @field_validator("uri")
    @classmethod
    def _known_scheme(cls, v):
        if v is None:
            return v
        problem = tracking_uri_problem(v)
        if problem:
            raise ValueError(f"'{v[:200]}' {problem}")
        return v
    experiment_name: SafeName | None = None  # None: the config's experiment name
    log_models: bool = True


#: ``[tcp|tls|ws|wss|ucx]://HOST[:PORT]``, the addresses a Dask client connects to (HOST a name, IPv4 or [IPv6])
_DASK_ADDRESS = re.compile(r"((tcp|tls|ws|wss|ucx)://)?([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])"
                           r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?/?")


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
    #: a running Dask scheduler, ``[tcp|tls|ws|wss|ucx]://HOST[:PORT]`` (``dask scheduler`` prints it)
    dask_address: str | None = None

    @field_validator("dask_address")
    @classmethod
    def _dask_address(cls, v):
        if v is not None and not _DASK_ADDRESS.fullmatch(v):
            raise ValueError("not a Dask scheduler address: give [tcp://]HOST[:PORT] (port 1-65535), as `dask "
                             "scheduler` prints it, e.g. tcp://10.0.0.5:8786")
        return v

    @model_validator(mode="after")
    def _address_needs_dask(self):
        # an address only the Dask runner reads: refused with another runner rather than silently ignored
        if self.dask_address is not None and self.task_runner != "dask":
            raise ValueError(f"dask_address is read by the Dask runner only, but task_runner is "
                             f"{self.task_runner!r}; add task_runner: dask to run the cells on {self.dask_address} "
                             "(or remove dask_address)")
        return self
    #: cells computed by one Prefect task, one after the other. Prefect costs ~8 ms per task run on
    #: a local server, a third of a 27-ms logistic-regression cell. ``auto``: with the thread runner, guided
    #: batches (each ``ceil(cells left / (4 × max_workers))`` cells, at most 32, shrinking to single cells at
    #: the end so the workers finish together), every cell handed to the flow, and logged to MLflow,
    #: as soon as it finishes — a SIGKILL still loses only the cells computing at the time; with the process
    #: and Dask runners, batches of about 2 s of measured cell time, submitted as the run goes
    #: (``flows.experiment.CellTasks``; a batch there returns when its last cell ends). An integer: batches
    #: of that size with any runner. Results do not depend on it (every cell draws its own seeds); the
    #: MLflow child run stays one per cell, only Prefect's UI shows fewer, larger task runs.
    cells_per_task: Annotated[int, Field(ge=1, le=10_000)] | Literal["auto"] = "auto"


class StabilitySpec(_Strict):
    """``evaluation.stability``: ``estimators`` copies of a cell's learner, each fitted on ``fraction`` × n
    training rows drawn with replacement (:mod:`fairmiss.pipeline.stability`)."""

    #: the number of bootstrap copies B (label stability and jitter need at least two)
    estimators: Annotated[int, Field(ge=2, le=10_000)] = 50
    #: each copy's resample size as a share of the training rows (drawn with replacement)
    fraction: Annotated[float, Field(gt=0.0, le=1.0)] = 0.8


class EvaluationSpec(_Strict):
    """How each cell's test-set metrics are given their uncertainty: percentile bootstrap intervals of accuracy
    and the fairness metric (:mod:`fairmiss.metrics.bootstrap`), logged as ``<metric>_ci_low`` /
    ``<metric>_ci_high``, shown for one-split runs on the console and as error bars in the report. Left out of
    dumps at the defaults (config hashes unchanged)."""

    #: resamples of the test rows per cell; 0: no intervals
    bootstrap: Annotated[int, Field(ge=0, le=100_000)] = 1000
    #: coverage of the intervals (0.95: the 2.5 % and 97.5 % quantiles of the resamples)
    ci: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.95
    #: what every resample keeps the size of: each group (``group``), or each group × label (``group_label``:
    #: the test set read as sampled per label; TPR/FNR/FPR keep their denominators, only the predictions vary)
    strata: Literal["group", "group_label"] = "group"
    #: which metrics get an interval: ``headline`` (accuracy and the fairness metric) or ``all`` (every metric
    #: the confusion counts give: overall, per group, each difference, ratio and gap; about three times the
    #: metrics logged per cell)
    intervals: Literal["headline", "all"] = "headline"
    #: imputation quality on the masked test cells (:func:`fairmiss.impute.diagnostics.imputation_quality`):
    #: accuracy and macro F1 of categorical imputations, KL divergence of every column, per group and as gaps
    imputation_quality: bool = False
    #: model stability from bootstrap copies of each cell's learner (:class:`StabilitySpec`); unset: none
    stability: StabilitySpec | None = None

    @model_serializer(mode="wrap")
    def _omit_unset_additions(self, handler):
        # keys added later are left out of dumps while unset: a config setting only the older keys keeps its
        # hash and its cells their cache keys
        out = handler(self)
        if isinstance(out, dict):
            for k, default in (("imputation_quality", False), ("stability", None)):
                if k in out and out[k] == default:
                    del out[k]
        return out

    def is_default(self) -> bool:
        return self == EvaluationSpec()


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
    fairness_metric: FairnessMetric = "fnr_difference"
    tracking: TrackingSpec = TrackingSpec()
    execution: ExecutionSpec = ExecutionSpec()

    @field_validator("learners", mode="before")
    @classmethod
    def _sweeps(cls, v):
        from fairmiss.config.sweep import expand_sweeps  # a learner's ``sweep:``: one learner per point

        return expand_sweeps(v)

    @field_validator("imputers", "learners", "missingness")
    @classmethod
    def _unique_labels(cls, v):
        labels = [getattr(x, "label", None) or getattr(x, "name", None) or getattr(x, "preset", None) for x in v]
        # the cells' missingness labels too (a shift with ``tests``: ``<name>.<test name>``)
        labels += [m.name for x in v if getattr(x, "tests", None) for m in x.scenarios()]
        dup = {x for x in labels if labels.count(x) > 1}
        if dup:
            raise ValueError(f"duplicate names {sorted(dup)}: give each entry a distinct 'name'")
        return v

    @model_validator(mode="after")
    def _distinct_methods(self):
        """Every imputer x learner pair reads as its own method (``imputer+learner``): names holding ``+`` could
        make two pairs one label, and their cells would be averaged together as one method."""
        seen: dict[str, tuple[str, str]] = {}
        for imp in self.imputers:
            for ln in self.learners:
                if not _pairs(ln, imp):
                    continue
                label = f"{imp.label}+{ln.label}"
                if label in seen and seen[label] != (imp.label, ln.label):
                    a, b = seen[label]
                    raise ValueError(f"imputer '{a}' with learner '{b}' and imputer '{imp.label}' with learner "
                                     f"'{ln.label}' are both the method '{label}': rename one so that no two "
                                     "methods share a label ('+' joins the imputer's and the learner's names)")
                seen[label] = (imp.label, ln.label)
        return self

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
    #: complete-case analysis (Zhang & Long 2021): drop the rows with any missing value from the training
    #: rows, the test rows or both (``fairmiss.pipeline.cell``); whenever the test rows hold missing values
    #: the metrics on the complete test cases (``cc.<metric>``) and their difference to the full test set
    #: (``cc_bias.<metric>``) are reported too. Left out of dumps at ``none`` (config hashes unchanged).
    complete_case: Literal["none", "train", "test", "both"] = "none"
    #: a group with fewer test rows than this in a cell is still reported (its per-group metrics, and
    #: ``left_out_group_<g>`` = 1 with ``n_groups_left_out``) but left out of every gap and ratio of that cell
    #: and of the gap's bootstrap interval, so that a handful of rows (a small intersection) does not decide the
    #: gap; groups are never merged. Overall metrics keep every row. 0 (the default): every group counts. Left
    #: out of dumps at 0 (config hashes unchanged).
    min_group_size: Annotated[int, Field(ge=0)] = 0
    #: bootstrap intervals of every cell's metrics (:class:`EvaluationSpec`)
    evaluation: EvaluationSpec = EvaluationSpec()
    #: a paper's claim settings (tolerances, which setting is which), fixed before running and read by its claim
    #: hook (:mod:`fairmiss.config.claims`); no cell depends on it: left out of the config hash, and out of dumps
    #: while unset
    claims: ClaimsSpec | None = None

    @model_serializer(mode="wrap")
    def _omit_default_complete_case(self, handler):
        out = handler(self)
        if isinstance(out, dict) and out.get("complete_case") == "none":
            del out["complete_case"]
        if isinstance(out, dict) and out.get("min_group_size") == 0:
            del out["min_group_size"]
        if isinstance(out, dict) and "evaluation" in out and self.evaluation.is_default():
            del out["evaluation"]
        if isinstance(out, dict) and "claims" in out and self.claims is None:
            del out["claims"]
        return out

    @model_validator(mode="after")
    def _claims_settings(self):
        """``claims.feng2023`` names settings this config has and a gap that is a fairness gap."""
        feng = self.claims.feng2023 if self.claims is not None else None
        if feng is None:
            return self
        names = {missingness_label(m) for m in self.missingness}
        names |= {m.name for x in self.missingness if getattr(x, "tests", None) for m in x.scenarios()}
        for key in ("mcar_mar", "mnar"):
            unknown = sorted(set(getattr(feng, key)) - names)
            if unknown:
                raise ValueError(f"claims.feng2023.{key}: {unknown} are not missingness settings of this config "
                                 f"(its settings: {sorted(names)})")
        if feng.gap is not None and feng.gap not in fairness_choices():
            raise ValueError(f"claims.feng2023.gap: {feng.gap!r} is not a fairness gap; one of "
                             f"{_one_of(fairness_choices())}")
        families = {ln.name.split(",", 1)[0] for ln in self.learners}
        unknown = sorted(set(feng.outside) - families)
        if unknown:
            raise ValueError(f"claims.feng2023.outside: {unknown} are not learner families of this config "
                             f"(its families: {sorted(families)})")
        return self

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
            for ln in self.learners if not _takes_nan(ln) and _pairs(ln, imp)
        ]
        if bad:
            others = [imp.label for imp in self.imputers if imp.kind != "none"]
            first = next(i for i, ln in enumerate(self.learners)
                         if not _takes_nan(ln) and any(imp.kind == "none" and _pairs(ln, imp) for imp in self.imputers))
            fix = (f"give learners.{first} imputers: [{', '.join(others)}] to pair it with the other imputers only"
                   if others else "add an imputer, e.g. {kind: mean}, and give those learners imputers: [mean]")
            raise ValueError(
                "learners that cannot take NaN need an imputer: " + "; ".join(bad) + f"; fix: {fix}"
                + f" (learners with native missing support: {sorted(NATIVE_MISSING)})"
            )
        bad_mi = [
            f"imputer '{imp.label}' with learner '{ln.label}'"
            for imp in self.imputers if imp.kind == "multiple"
            for ln in self.learners if not _wrappable_by_mi(ln) and _pairs(ln, imp)
        ]
        if bad_mi:
            raise ValueError(
                "the multiple imputer wraps the learner and needs a plain classifier: " + "; ".join(bad_mi)
                + f" (supported: {sorted(MI_LEARNERS)}; restrict with the learner's 'imputers' list)"
            )
        return self

    @property
    def config_hash(self) -> str:
        """Hash of what determines results: execution, tracking, prose and claim settings are left out, so changing
        the number of workers or the tracking store does not change the hash."""
        return stable_hash(self.model_dump(mode="json", by_alias=True,
                                           exclude={"execution", "tracking", "description", "quick",
                                                    "references", "claims"}))

    def cells(self) -> list[Cell]:
        """The grid: split × missingness × imputer × learner (the pairs the learners accept). A ``shift`` with
        ``tests`` gives one cell per test scenario (:meth:`~fairmiss.missingness.shift.Shift.scenarios`), the
        scenarios of one split, imputer and learner next to each other: a fit group
        (:attr:`Cell.fit_group`)."""
        out = []
        scenarios = [m.scenarios() if getattr(m, "tests", None) else [m] for m in self.missingness]
        for split_idx, miss, imp, ln in itertools.product(
            range(self.split.n_splits), scenarios, self.imputers, self.learners
        ):
            if _pairs(ln, imp):
                out += [Cell(split_idx, m, imp, ln) for m in miss]
        return out


def _pairs(learner, imputer) -> bool:
    return learner.imputers is None or imputer.label in learner.imputers


def _takes_nan(learner) -> bool:
    """The learner accepts NaN in X: the spec instance says so where it decides per instance (``takes_nan``,
    e.g. ``kind: estimator`` from ``accepts_nan`` or scikit-learn's tags), else its kind's flag."""
    own = getattr(learner, "takes_nan", None)
    return learner.kind in NATIVE_MISSING if own is None else bool(own)


def _wrappable_by_mi(learner) -> bool:
    """The multiple imputer can wrap the learner: per instance (``wrappable_by_mi``) or by its kind's flag."""
    own = getattr(learner, "wrappable_by_mi", None)
    return learner.kind in MI_LEARNERS if own is None else bool(own)


def missingness_label(m) -> str:
    return m.name or getattr(m, "preset", None) or m.kind


@dataclass(frozen=True)
class Cell:
    split_index: int
    missingness: Any
    imputer: Any
    learner: Any
    #: does the method label name the imputer? ``None`` (unset): yes. The experiment flow sets it once the
    #: data are known (:func:`fairmiss.pipeline.summary.label_cells`): True where the data have missing
    #: values, else False. Not part of :attr:`key` nor of the cell cache key, and not compared.
    with_imputer: bool | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"split{self.split_index}/{missingness_label(self.missingness)}/{self.imputer.label}/{self.learner.label}"

    @property
    def fit_group(self) -> str | None:
        """The test scenarios of a ``shift`` with ``tests`` share one imputer and learner fit per split, imputer
        and learner: their fit group, ``split<i>/<shift name>/<imputer>/<learner>`` (the key the cell of a
        one-test shift of that name would have). None: the cell is fitted on its own."""
        g = getattr(self.missingness, "fit_group", None)
        return None if g is None else f"split{self.split_index}/{g}/{self.imputer.label}/{self.learner.label}"

    @property
    def seed_key(self) -> str:
        """What the cell's own seeds (bootstrap, stability) derive from: its fit group, else its key — so a test
        scenario's cell gets exactly the seeds of the equivalent one-test ``shift`` cell."""
        return self.fit_group or self.key

    @property
    def method(self) -> str:
        """The method a user compares (aggregated over splits), one label everywhere (console, MLflow run
        names and tags, legends, reports, metrics keys): the learner's name, prefixed by the imputer's
        (``knn+tree_d3``) unless :attr:`with_imputer` is False (data without missing values: ``tree_d3``)."""
        if self.with_imputer is False:
            return self.learner.label
        return f"{self.imputer.label}+{self.learner.label}"
