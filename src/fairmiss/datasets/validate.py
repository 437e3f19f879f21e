"""The validation gate: a Great Expectations suite on every processed table.

The suite is derived from the dataset variant's declaration: the exact column set (so no PII
column can slip through), dtypes, value ranges of numeric features, allowed values of binary
features, group and label, no missing values in group and label, and the row count. A failing
suite raises :class:`DataValidationError` listing every failed expectation; nothing downstream
runs. Great Expectations' Data Docs (HTML) are written to ``docs_dir`` when given.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.datasets.registry import PII_COLUMNS, DatasetError, DatasetVariant

logger = logging.getLogger(__name__)

__all__ = ["DataValidationError", "ValidationReport", "validate_table", "build_expectations", "expectation_specs",
           "suite_fingerprint", "check_groups", "nonfinite_failures", "FINITE_MAX", "METRIC_NEEDS"]

#: bounds of the finiteness expectation on every numeric feature without a declared range
FINITE_MAX = float(np.finfo(np.float64).max)


def __getattr__(name):
    # METRIC_NEEDS: which label classes each fairness gap needs in *every* group (spec 000 §1.1), read from
    # the metric table when asked (fairmiss.metrics.kinds.metric_needs); imported lazily, so that importing
    # the datasets package does not import the metrics stack
    if name == "METRIC_NEEDS":
        from fairmiss.metrics.kinds import metric_needs

        return metric_needs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DataValidationError(ValueError):
    def __init__(self, dataset: str, failures: list[str]):
        self.dataset = dataset
        self.failures = failures
        lines = "\n  - ".join(failures)
        super().__init__(f"dataset '{dataset}' failed validation ({len(failures)} expectation(s)):\n  - {lines}")


@dataclass
class ValidationReport:
    success: bool
    n_expectations: int
    failures: list[str]
    docs_index: Path | None


def expectation_specs(variant: DatasetVariant, n_rows: int | None = None) -> list[tuple[str, dict]]:
    """The suite as plain data: (expectation class name, keyword arguments), without importing GE."""
    specs: list[tuple[str, dict]] = [("ExpectTableColumnsToMatchSet", {"column_set": list(variant.columns),
                                                                        "exact_match": True})]
    rows = variant.expected_rows if n_rows is None else n_rows
    if rows is not None:
        specs.append(("ExpectTableRowCountToEqual", {"value": int(rows)}))
    for col, ftype in variant.features.items():
        if ftype == "binary":
            specs.append(("ExpectColumnValuesToBeInSet", {"column": col, "value_set": [0, 1]}))
        if ftype in ("numeric", "binary"):
            specs.append(("ExpectColumnValuesToBeInTypeList",
                          {"column": col, "type_list": ["int64", "float64", "Int64", "Float64"]}))
        if col in variant.numeric_ranges:
            lo, hi = variant.numeric_ranges[col]
            specs.append(("ExpectColumnValuesToBeBetween", {"column": col, "min_value": lo, "max_value": hi}))
        elif ftype in ("numeric", "categorical"):  # finite (NaN = missing is allowed; ±inf is not)
            specs.append(("ExpectColumnValuesToBeBetween", {"column": col, "min_value": -FINITE_MAX,
                                                             "max_value": FINITE_MAX}))
    for col, enc in ((variant.group, variant.group_encoding), (variant.label, variant.label_encoding)):
        specs.append(("ExpectColumnValuesToNotBeNull", {"column": col}))
        specs.append(("ExpectColumnValuesToBeInSet", {"column": col, "value_set": sorted(enc)}))
    return specs


def build_expectations(variant: DatasetVariant, n_rows: int | None = None) -> list:
    import great_expectations as gx

    return [getattr(gx.expectations, name)(**kw) for name, kw in expectation_specs(variant, n_rows)]


def suite_fingerprint(variant: DatasetVariant, n_rows: int | None = None) -> str:
    """Identity of the gate a table passes: the suite's content, the PII list and the GE version.

    A table whose content hash passed a suite with this fingerprint passes it again (the suite is a
    pure function of the table), which is what lets :func:`fairmiss.pipeline.prepare` skip re-running
    Great Expectations on an unchanged table (a receipt kept beside the processed file).
    """
    from importlib.metadata import version

    from fairmiss.io import stable_hash

    return stable_hash({"suite": expectation_specs(variant, n_rows), "pii": sorted(PII_COLUMNS),
                        "great_expectations": version("great_expectations")})


def _describe(res) -> str:
    cfg = res.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id",)}
    observed = res.result.get("observed_value") if res.result else None
    unexpected = res.result.get("partial_unexpected_list") if res.result else None
    msg = f"{cfg.type} {kwargs}"
    if observed is not None:
        msg += f" — observed {observed}"
    if unexpected:
        msg += f" — unexpected values e.g. {unexpected[:5]}"
    if res.exception_info and res.exception_info.get("raised_exception"):
        msg += f" — error {res.exception_info.get('exception_message')}"
    return msg


def validate_table(
    df: pd.DataFrame,
    variant: DatasetVariant,
    *,
    docs_dir: Path | None = None,
    n_rows: int | None = None,
    raise_on_failure: bool = True,
) -> ValidationReport:
    """Run the variant's suite on ``df``; write Data Docs to ``docs_dir``; raise on failure."""
    leaked = sorted(PII_COLUMNS & set(df.columns))
    import great_expectations as gx

    with tempfile.TemporaryDirectory(prefix="fairmiss-gx-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = gx.get_context(mode="file", project_root_dir=tmp)
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        ds = ctx.data_sources.add_pandas(name="fairmiss")
        asset = ds.add_dataframe_asset(name=variant.name)
        batch_def = asset.add_batch_definition_whole_dataframe("processed")
        # one call with every expectation: add_expectation in a loop re-serialises the suite each
        # time (quadratic in the column count; minutes for the 2278-edge HCP table)
        suite = ctx.suites.add(gx.ExpectationSuite(name=f"{variant.name}_processed",
                                                   expectations=list(build_expectations(variant, n_rows))))
        vd = ctx.validation_definitions.add(gx.ValidationDefinition(data=batch_def, suite=suite, name=f"{variant.name}_vd"))
        actions = [gx.checkpoint.UpdateDataDocsAction(name="docs")] if docs_dir is not None else []
        cp = ctx.checkpoints.add(gx.Checkpoint(name=f"{variant.name}_cp", validation_definitions=[vd], actions=actions))
        result = cp.run(batch_parameters={"dataframe": df})
        vres = next(iter(result.run_results.values()))
        failures = [_describe(r) for r in vres.results if not r.success]
        if leaked:
            failures.insert(0, f"PII columns present: {leaked}")
        for msg in nonfinite_failures(df, variant):  # unless the expectation reported the column already
            col = msg.split("'")[1]
            if not any("between" in f.lower() and f"'column': '{col}'" in f for f in failures):
                failures.append(msg)
        index = None
        if docs_dir is not None:
            site = Path(tmp) / "gx" / "uncommitted" / "data_docs" / "local_site"
            docs_dir = Path(docs_dir)
            docs_dir.parent.mkdir(parents=True, exist_ok=True)
            # a unique staging folder per process: concurrent runs sharing a working directory must
            # not collide (a fixed '<name>.tmp' raised FileExistsError with 4 writers); the last
            # rename wins and every version is a complete site for the same table
            staging = Path(tempfile.mkdtemp(prefix=f".{docs_dir.name}.", dir=docs_dir.parent))
            shutil.copytree(site, staging, dirs_exist_ok=True)
            from fairmiss.io import public_mode

            public_mode(staging, directory=True)  # mkdtemp's 0700, renamed into place below
            old = Path(tempfile.mkdtemp(prefix=f".{docs_dir.name}.old.", dir=docs_dir.parent))
            try:
                docs_dir.rename(old / "site")
            except FileNotFoundError:  # first run, or another process moved it away first
                pass
            try:
                staging.rename(docs_dir)
            except OSError:  # another process put its (equivalent) site in place first
                shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
            index = docs_dir / "index.html"
    report = ValidationReport(not failures, len(vres.results), failures, index)
    logger.info("validation of %s: %d expectations, %d failed", variant.name, report.n_expectations, len(failures))
    if failures and raise_on_failure:
        raise DataValidationError(variant.name, failures)
    return report


def nonfinite_failures(df: pd.DataFrame, variant: DatasetVariant) -> list[str]:
    """One failure per feature column holding ±inf (NaN is a missing value, allowed), with the row count
    and the first row: a belt-and-braces check beside the expectation (a non-finite value reaching a
    learner fails every cell, and the run would end with an empty table)."""
    out = []
    for col in variant.features:
        if col not in df.columns or not pd.api.types.is_numeric_dtype(df[col]) or pd.api.types.is_bool_dtype(df[col]):
            continue
        v = df[col].to_numpy(dtype=float, na_value=np.nan)
        inf = np.isinf(v)
        if inf.any():
            out.append(f"column '{col}': {int(inf.sum())} non-finite value(s) (±inf), first in row "
                       f"{int(np.flatnonzero(inf)[0])}")
    return out


def check_groups(df: pd.DataFrame, group: str, label: str, *, where: str, fairness_metric: str | None = None,
                 binary_label: bool = True) -> None:
    """Refuse data on which between-group fairness is undefined, before any model is fitted.

    * fewer than two values in the ``group`` column (a one-group dataset or split would otherwise be
      reported as perfectly fair: a difference over one group is 0.0 in fairlearn);
    * fewer than two label classes (no classifier can be trained or evaluated);
    * with ``fairness_metric`` (and a binary label): a group lacking the label class the metric needs
      (:func:`fairmiss.metrics.kinds.metric_needs`; e.g. no positives for ``fnr_difference``).

    Raises :class:`~fairmiss.datasets.registry.DatasetError` (one line: ``where`` — the dataset and its raw
    files, or the split —, the column, the counts). A single *test* split lacking a class is not an
    error: its rates are NaN with a warning (:func:`fairmiss.metrics.evaluate`).
    """
    if group not in df.columns or label not in df.columns:
        return
    g = df[group]
    levels = [v.item() if hasattr(v, "item") else v for v in pd.unique(g.dropna())]
    if len(levels) < 2:
        shown = "no value" if not len(levels) else f"the single value {levels[0]!r}"
        raise DatasetError(f"{where}: group column '{group}' has {shown} in all {len(df)} rows; between-group "
                           "fairness metrics need at least two groups (a one-group dataset is not 'perfectly fair', "
                           "its gaps are undefined)")
    y = df[label]
    if y.nunique(dropna=True) < 2:
        raise DatasetError(f"{where}: label column '{label}' has a single class {sorted(y.dropna().unique().tolist())} "
                           f"in all {len(df)} rows")
    if fairness_metric is None or not binary_label:
        return
    from fairmiss.metrics.kinds import metric_needs

    need = metric_needs().get(fairness_metric, ())
    # the groups holding each needed class (a boolean take and a unique: ~0.2 ms on COMPAS where pandas'
    # crosstab took ~10 ms; it runs three times per split and missingness scenario)
    gv = g.to_numpy()
    for cls in need:
        rows = (y == cls).to_numpy(dtype=bool, na_value=False)
        have = {v.item() if hasattr(v, "item") else v for v in pd.unique(gv[rows])}
        for lv in sorted(levels, key=str):
            if lv not in have:
                what = "positives" if cls == 1 else "negatives"
                raise DatasetError(f"{where}: group {lv!r} of column '{group}' has no {what} ({label} = {cls}); "
                                   f"'{fairness_metric}' is undefined for it")
