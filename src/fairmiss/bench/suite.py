"""A benchmark suite file (``params/suites/*.yaml``): its pydantic model, loading and validation, and its
expansion into one ordinary experiment config per dataset.

```yaml
suite: fairmiss_quick
seed: 2026
datasets: [{name: compas_000}, {name: german_sex}]     # any dataset entry a config accepts
scenarios:                                             # any missingness spec a config accepts
  - {kind: mcar, name: mcar20, rates: {priors_count: 0.2}}
per_dataset:                                           # a scenario's keys replaced for one dataset
  german_sex: {mcar20: {rates: {duration: 0.2}}}
candidates:
  imputers: [{kind: median}, {kind: knn}]              # imputers x learners: every pair a candidate
  learners: [{kind: logistic_regression, name: lr}]
  pipelines: [{imputer: {kind: mean}, learner: {kind: decision_tree}}]   # and/or single pairs
reference: median+lr                                   # default: the first candidate with a median imputer
splits: {n_splits: 10, test_size: 0.3}
rank_by: {accuracy: max, equalized_odds_difference: min}
quick: {splits: {n_splits: 3}}                         # overrides for `fairmiss bench --quick`
```

Each dataset becomes the config ``<suite>-<dataset>`` with every scenario in its ``missingness:`` list and the
candidates as its ``imputers:`` and ``learners:``, the suite's ``seed``, ``splits`` (as ``split:``), ``metrics``,
``fairness_metric``, ``evaluation`` and ``execution``. Its cells are stored in the MLflow experiment
``bench-<dataset>`` (``tracking.experiment_name`` overrides it), shared by every suite and by any ``fairmiss run``
config naming that experiment: a cell's cache key holds what its result depends on and neither the suite
nor the config's name, so the same cell is computed once, whoever asks for it first.

The candidates are the pairs listed; when they are not every imputer × every learner, each learner paired with
only some imputers gets the config's ``imputers:`` restriction (which is part of its cells' keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from fairmiss._errors import ConfigError, tracking_uri_problem
from fairmiss._spec import SafeLabel, SafeName, _Strict
from fairmiss.config.experiment import (DatasetSpec, EvaluationSpec, ExecutionSpec, ExperimentConfig, FairnessMetric,
                                        METRICS, SplitSpec, missingness_label)
from fairmiss.impute.specs import ImputerSpec
from fairmiss.learners.specs import LearnerSpec
from fairmiss.missingness.specs import MissingnessSpec

__all__ = ["BenchSuite", "Candidate", "Suite", "expand", "load_suite", "parse_suite", "REFERENCE_IMPUTER"]

#: the imputer kind of the default reference candidate (on a binary 0/1 column the median is the mode; on the
#: one-hot block of a categorical attribute only when one level holds more than half of the rows)
REFERENCE_IMPUTER = "median"

Direction = Literal["max", "min"]


class Pipeline(_Strict):
    """One candidate given as a pair."""

    imputer: ImputerSpec
    learner: LearnerSpec


class Candidates(_Strict):
    imputers: list[ImputerSpec] = Field(default_factory=list)
    learners: list[LearnerSpec] = Field(default_factory=list)
    pipelines: list[Pipeline] = Field(default_factory=list)

    @field_validator("learners", mode="before")
    @classmethod
    def _sweeps(cls, v):
        from fairmiss.config.sweep import expand_sweeps  # a swept learner: one candidate per point, one front

        return expand_sweeps(v)

    @model_validator(mode="after")
    def _some(self):
        if bool(self.imputers) != bool(self.learners):
            have, lack = ("imputers", "learners") if self.imputers else ("learners", "imputers")
            raise ValueError(f"'{have}' without '{lack}': the product of an empty list is empty; give both (or "
                             "list the pairs under 'pipelines')")
        if not self.imputers and not self.pipelines:
            raise ValueError("no candidates: give 'imputers' and 'learners' (their product) and/or 'pipelines'")
        where = [(f"learners.{i}", ln) for i, ln in enumerate(self.learners)] + \
            [(f"pipelines.{j}.learner", p.learner) for j, p in enumerate(self.pipelines)]
        for key, ln in where:
            if ln.imputers is not None:
                raise ValueError(f"{key}.imputers: 'imputers' is not used in a suite (the candidates decide which "
                                 "imputer goes with which learner: list pairs under 'pipelines')")
        return self


class BenchTracking(_Strict):
    """Where the cells are stored: as a config's ``tracking``, but models are not logged by default (a suite
    has thousands of cells) and the MLflow experiment defaults to ``bench-<dataset>``."""

    uri: str | None = None
    experiment_name: SafeName | None = None
    log_models: bool = False

    @field_validator("uri")
    @classmethod
    def _known_scheme(cls, v):
        problem = tracking_uri_problem(v) if v is not None else None
        if problem:
            raise ValueError(f"'{v[:200]}' {problem}")
        return v


class BenchSuite(_Strict):
    suite: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    datasets: list[DatasetSpec] = Field(min_length=1)
    scenarios: list[MissingnessSpec] = Field(min_length=1)
    #: dataset name -> scenario name -> that scenario's keys replaced for that dataset (e.g. its columns)
    per_dataset: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    candidates: Candidates
    reference: SafeLabel | None = None
    splits: SplitSpec = SplitSpec()
    #: metric -> ``max`` (higher is better) or ``min``; default accuracy (max) and the fairness metric (min)
    rank_by: Annotated[dict[str, Direction], Field(min_length=1)] | None = None
    metrics: list[METRICS] | None = None
    fairness_metric: FairnessMetric | None = None
    evaluation: EvaluationSpec | None = None
    execution: ExecutionSpec | None = None
    tracking: BenchTracking = BenchTracking()
    quick: dict[str, Any] | None = None

    @field_validator("scenarios")
    @classmethod
    def _unique_scenarios(cls, v):
        labels = [missingness_label(m) for m in v]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"duplicate scenario names {dup}: give each scenario a distinct 'name'")
        return v

    @field_validator("datasets")
    @classmethod
    def _unique_datasets(cls, v):
        names = [d.name for d in v]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ValueError(f"dataset {dup[0]!r} is listed twice: one entry per dataset (its options and groups "
                             "in that entry)")
        return v

    @model_validator(mode="after")
    def _known_metrics(self):
        for m in self.rank_by or {}:
            problem = rank_metric_problem(m, self)
            if problem:
                raise ValueError(f"rank_by: {problem}")
        return self

    @model_validator(mode="after")
    def _consistent(self):
        names = [d.name for d in self.datasets]
        scen = [missingness_label(m) for m in self.scenarios]
        for ds, over in self.per_dataset.items():
            if ds not in names:  # said after each dataset is checked (parse_suite): a misspelt one first
                continue
            for s, keys in over.items():
                if s not in scen:
                    raise ValueError(f"per_dataset.{ds}: '{s}' is not one of the suite's scenarios {scen}")
                if "kind" in keys or "name" in keys:
                    raise ValueError(f"per_dataset.{ds}.{s}: 'kind' and 'name' are the scenario's own; replace "
                                     "other keys only")
        labels = [c.label for c in candidates_of(self)]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"candidates: '{dup[0]}' is listed twice (a product pair and a pipeline, or two "
                             "pipelines); each candidate once")
        for what, specs in (("imputer", [c.imputer for c in candidates_of(self)]),
                            ("learner", [c.learner for c in candidates_of(self)])):
            seen: dict = {}
            for s in specs:
                if seen.setdefault(s.label, s) != s:
                    raise ValueError(f"candidates: two different {what}s are named '{s.label}'; give each its own "
                                     "'name'")
        if self.reference is not None and self.reference not in labels:
            raise ValueError(f"reference: '{self.reference}' is not a candidate; candidates: {', '.join(labels)}")
        return self


#: the imputation-quality metrics of one column (``evaluation.imputation_quality``), overall or their group gap
_IMPUTATION_METRIC = re.compile(r"imp_(acc|f1|kl|rmse)(_gap)?\.\S+")


def rank_metric_problem(metric: str, spec: BenchSuite) -> str | None:
    """Why the cells of ``spec`` do not record ``metric`` (``None``: they do). A suite ranks by

    * a headline metric every cell records (accuracy, the fairness gaps: :func:`fairmiss.metrics.kinds.
      summary_metrics`), or one of its ``metrics:`` (e.g. ``f1``) and its between-group difference;
    * with ``evaluation.stability``: ``label_stability``, ``jitter``, ``proba_std`` (and their differences), and
      any of the above as the bootstrap ensemble's, ``ens_<metric>`` (the Shades-of-Null suite scores its
      models that way);
    * with ``evaluation.imputation_quality``: one column's ``imp_acc`` / ``imp_f1`` / ``imp_kl`` / ``imp_rmse``
      (``imp_rmse.<column>`` for a numeric column) or its group gap ``imp_<x>_gap.<column>``; the column is
      checked against the dataset's cells when the leaderboard is built.
    """
    from fairmiss.metrics.kinds import summary_metrics
    from fairmiss.metrics.stability import STABILITY_METRICS

    plain = list(summary_metrics())
    for m in spec.metrics or []:
        plain += [m, f"{m}_difference"]
    known = list(dict.fromkeys(plain))
    ev = spec.evaluation
    if ev is not None and ev.stability is not None:
        known += [x for m in STABILITY_METRICS for x in (m, f"{m}_difference")] + [f"ens_{m}" for m in plain]
    if metric in known:
        return None
    if ev is not None and ev.imputation_quality and _IMPUTATION_METRIC.fullmatch(metric):
        return None
    hint = ["another metric once listed under metrics:, e.g. f1"]
    if ev is None or ev.stability is None:
        hint.append("ens_<metric> and the stability measures with evaluation.stability")
    if ev is None or not ev.imputation_quality:
        hint.append("imp_<acc|f1|kl|rmse>.<column> with evaluation.imputation_quality")
    return (f"'{metric}' is not a metric every cell records; rank by one of {', '.join(known)}"
            + (f" ({'; '.join(hint)})" if hint else ""))


@dataclass(frozen=True)
class Candidate:
    imputer: Any
    learner: Any

    @property
    def label(self) -> str:
        return f"{self.imputer.label}+{self.learner.label}"


def candidates_of(spec: BenchSuite) -> list[Candidate]:
    """The suite's candidates in order: the product (imputer-major), then the pipelines."""
    c = spec.candidates
    return [Candidate(i, ln) for i in c.imputers for ln in c.learners] + \
        [Candidate(p.imputer, p.learner) for p in c.pipelines]


@dataclass(frozen=True)
class Suite:
    """A validated suite: its model, where it was read from, and its expansion (one experiment config per
    dataset: ``(dataset name, config dict, ExperimentConfig)``)."""

    spec: BenchSuite
    source: str
    configs: tuple

    @property
    def name(self) -> str:
        return self.spec.suite

    @property
    def candidates(self) -> list[str]:
        return [c.label for c in candidates_of(self.spec)]

    @property
    def reference(self) -> str:
        return default_reference(self.spec)

    @property
    def rank_by(self) -> dict[str, str]:
        return dict(self.spec.rank_by or {"accuracy": "max", self.fairness_metric: "min"})

    @property
    def fairness_metric(self) -> str:
        return self.spec.fairness_metric or ExperimentConfig.model_fields["fairness_metric"].default

    @property
    def scenarios(self) -> list[str]:
        return [missingness_label(m) for m in self.spec.scenarios]

    @property
    def datasets(self) -> list[str]:
        return [d.name for d in self.spec.datasets]


def default_reference(spec: BenchSuite) -> str:
    """``reference:``, else the first candidate whose imputer is :data:`REFERENCE_IMPUTER`, else the first one."""
    cands = candidates_of(spec)
    if spec.reference is not None:
        return spec.reference
    return next((c.label for c in cands if c.imputer.kind == REFERENCE_IMPUTER), cands[0].label)


def _dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def expand(spec: BenchSuite, source: str = "<suite>") -> list[tuple[str, dict]]:
    """One experiment config (a dict, as its YAML) per dataset of the suite."""
    cands = candidates_of(spec)
    imputers = list({c.imputer.label: c.imputer for c in cands}.values())
    learners = list({c.learner.label: c.learner for c in cands}.values())
    pairs = {(c.imputer.label, c.learner.label) for c in cands}
    out = []
    for ds in spec.datasets:
        over = spec.per_dataset.get(ds.name, {})
        missingness = [{**_dump(m), **over.get(missingness_label(m), {})} for m in spec.scenarios]
        learner_dicts = []
        for ln in learners:
            d = _dump(ln)
            paired = [i.label for i in imputers if (i.label, ln.label) in pairs]
            if len(paired) < len(imputers):  # only where needed: the restriction is part of the cells' keys
                d["imputers"] = paired
            learner_dicts.append(d)
        cfg: dict[str, Any] = {
            "experiment": f"{spec.suite}-{ds.name}",
            "description": f"Suite {spec.suite} ({source}), dataset {ds.name}: one config of the suite, as "
                           "`fairmiss bench` runs it.",
            "seed": spec.seed, "dataset": _dump(ds), "split": _dump(spec.splits), "missingness": missingness,
            "imputers": [_dump(i) for i in imputers], "learners": learner_dicts,
        }
        for key in ("metrics", "fairness_metric"):
            if getattr(spec, key) is not None:
                cfg[key] = getattr(spec, key)
        for key in ("evaluation", "execution"):
            if getattr(spec, key) is not None:
                cfg[key] = _dump(getattr(spec, key))
        cfg["tracking"] = {**_dump(spec.tracking), "log_models": spec.tracking.log_models,
                           "experiment_name": spec.tracking.experiment_name or f"bench-{ds.name}"}
        out.append((ds.name, cfg))
    return out


def parse_suite(data, source: str | Path = "<suite>") -> Suite:
    """Validate a suite (the YAML as a dict) and every config it expands into; a :class:`ConfigError` naming
    ``source`` and the key otherwise. Reads no data and writes nothing."""
    from fairmiss.config.loading import _check_int_sizes, _format_errors, check_dataset_spec, parse_config

    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    _check_int_sizes(data, source)
    try:
        spec = BenchSuite.model_validate(data)
    except ValidationError as exc:
        msg = _format_errors(source, exc).replace(": invalid config", ": invalid suite", 1)
        raise ConfigError(msg.replace("invalid suite: <root>: ", "invalid suite: ", 1)) from None
    for i, ds in enumerate(spec.datasets):
        try:
            check_dataset_spec(ds, source)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(f"{source}: dataset.", f"{source}: datasets.{i}.", 1)) from None
    names = [d.name for d in spec.datasets]
    for ds in spec.per_dataset:
        if ds not in names:
            raise ConfigError(f"{source}: invalid suite: per_dataset: '{ds}' is not one of the suite's datasets "
                              f"{names}")
    configs = []
    for name, cfg in expand(spec, str(source)):
        where = f"{source} (dataset '{name}')"
        try:
            configs.append((name, cfg, parse_config(cfg, where)))
        except ConfigError as exc:  # the config's keys as the suite spells them
            msg = re.sub(r"\bmissingness\.(\d+)", r"scenarios.\1", str(exc))
            raise ConfigError(msg.replace(": invalid config", ": invalid suite", 1)) from None
    return Suite(spec, str(source), tuple(configs))


def load_suite(path: str | Path, *, quick: bool = False) -> Suite:
    """Read, validate and expand a suite file; ``quick=True`` applies its ``quick:`` overrides and names the
    suite ``<suite>-quick`` (so its leaderboard does not replace the full one)."""
    from fairmiss.config.loading import _deep_merge, read_yaml

    path = Path(path)
    data = read_yaml(path, "suite file")
    source: str | Path = path
    if quick and isinstance(data, dict):
        over = data.get("quick") or {}
        if not isinstance(over, dict):
            raise ConfigError(f"{path}: quick: must be a mapping of overrides, got {type(over).__name__}")
        data = {**_deep_merge(data, over), "suite": f"{data.get('suite', 'suite')}-quick"}
        source = f"{path} (with its quick: overrides)" if over else path
    return parse_suite(data, source)
