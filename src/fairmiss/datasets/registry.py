"""Dataset registry: one module per dataset family registers its variants here.

A :class:`DatasetVariant` declares everything the platform needs to build, validate and
describe a processed table: raw files (URL + SHA-256), feature types, the group attribute
and its encoding, the label, the expected row count and a builder turning raw files into
the processed :class:`pandas.DataFrame`. Adding a dataset is one module calling
:func:`register` plus one params file.

Processed tables always hold the feature columns, the group column and the label column,
with group and label encoded as integers (documented in ``group_encoding`` /
``label_encoding``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from fairmiss.datasets.acquire import RawFile, default_raw_dir, fetch

logger = logging.getLogger(__name__)

FeatureType = Literal["numeric", "binary", "categorical"]

# Columns that identify people: never allowed in processed data, params, logs or artifacts.
PII_COLUMNS = frozenset({"name", "first", "last", "dob", "id"})


class DatasetError(ValueError):
    """A raw file could not be turned into the processed table (names file and column)."""


@dataclass(frozen=True)
class DatasetVariant:
    name: str
    description: str
    paper: str
    raw_files: tuple[RawFile, ...]
    builder: Callable[[dict[str, Path], dict], tuple[pd.DataFrame, dict]]
    features: dict[str, FeatureType]
    group: str
    group_encoding: dict[int, str]
    label: str
    label_encoding: dict[int, str]
    expected_rows: int | None = None
    numeric_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    synthetic: bool = False
    options: dict = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return [*self.features, self.group, self.label]

    def option_problems(self, options) -> list[tuple[str, str]]:
        """``(option, problem)`` for every option that is unknown or not of its default's type (an option
        whose default is ``bool`` takes a bool, ``int`` an integer, ``float`` a number, ``str`` a string).
        Checked at config load, before any file is read."""
        if not isinstance(options, dict):
            return [("<root>", f"must be a mapping, got {type(options).__name__}")]
        out = []
        for k, val in options.items():
            if k not in self.options:
                out.append((str(k), f"unknown option of dataset '{self.name}'; allowed: {sorted(self.options)}"))
                continue
            default = self.options[k]
            if isinstance(default, bool):
                ok, want = isinstance(val, bool), "true or false"
            elif isinstance(default, int):
                ok, want = isinstance(val, int) and not isinstance(val, bool), "an integer"
            elif isinstance(default, float):
                ok, want = isinstance(val, (int, float)) and not isinstance(val, bool), "a number"
            elif isinstance(default, str):
                ok, want = isinstance(val, str), "a string"
            else:
                ok, want = True, ""
            if not ok:
                out.append((str(k), f"must be {want} (default {default!r}), got {val!r}"))
        return out

    def build(self, raw_dir: Path | None = None, *, allow_download: bool = True, **options) -> tuple[pd.DataFrame, dict]:
        """Fetch/verify raw files and build the processed table.

        Returns the table and a provenance dict (row counts after each step, raw hashes).
        """
        unknown = set(options) - set(self.options)
        if unknown:
            raise DatasetError(
                f"dataset '{self.name}': unknown option(s) {sorted(unknown)}; "
                f"allowed: {sorted(self.options)}"
            )
        opts = {**self.options, **options}
        raw_dir = Path(raw_dir) if raw_dir is not None else default_raw_dir()
        paths = {rf.filename: fetch(rf, raw_dir, allow_download=allow_download) for rf in self.raw_files}
        df, info = self.builder(paths, opts)
        missing = [c for c in self.columns if c not in df.columns]
        if missing:  # builder bug, not user error
            raise DatasetError(f"dataset '{self.name}': builder did not produce columns {missing}")
        df = df[self.columns].reset_index(drop=True)
        leaked = PII_COLUMNS & set(df.columns)
        if leaked:
            raise DatasetError(f"dataset '{self.name}': PII columns {sorted(leaked)} reached processed data")
        info = {**info, "raw_sha256": {rf.filename: rf.sha256 for rf in self.raw_files}, "options": opts}
        return df, info


_REGISTRY: dict[str, DatasetVariant] = {}


def register(variant: DatasetVariant) -> DatasetVariant:
    if variant.name in _REGISTRY:
        raise ValueError(f"dataset variant '{variant.name}' registered twice")
    _REGISTRY[variant.name] = variant
    return variant


def lookup(name: str) -> DatasetVariant:
    """The registered variant ``name`` (KeyError naming the known ones). This module is a leaf: it never
    imports a dataset module; :mod:`fairmiss.datasets` imports the built-in ones (which register
    themselves) and offers :func:`fairmiss.datasets.get_variant` over the complete registry."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown dataset '{name}'; known datasets: {', '.join(sorted(_REGISTRY))}") from None


def registered() -> list[DatasetVariant]:
    """Every registered variant, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def read_csv_checked(path: Path, required: list[str], **kwargs) -> pd.DataFrame:
    """Read a CSV and fail with the file and column names if required columns are absent."""
    try:
        df = pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot parse CSV: {exc}") from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DatasetError(f"{path}: missing required column(s) {missing}")
    return df
