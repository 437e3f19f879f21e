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
    #: further protected attributes of the builder's output, ``{column: {code: name}}`` (codes 0..m-1): with
    #: the group column, the columns a config may intersect (``dataset: {name: compas_000, group: [race, sex]}``,
    #: :func:`regrouped`)
    protected: dict[str, dict[int, str]] = field(default_factory=dict)
    #: the values an option may take, checked at config load with its type (``validate`` refuses the rest):
    #: ``{option: ("a", "b")}`` for a choice, ``{option: (low, high)}`` (inclusive, ``None`` = unbounded) for a
    #: number. Any option whose name ends in ``seed`` is a non-negative integer below 2**32 without saying so.
    option_domains: dict[str, tuple] = field(default_factory=dict)
    #: how the table codes the raw file's attributes, for missingness specs written in the raw column names (the
    #: Shades-of-Null scenarios, :mod:`fairmiss.datasets.son`): ``{raw attribute: {"onehot": {raw value: column}}}``
    #: (a one-hot block) or ``{raw attribute: {"column": c, "codes": {raw value: code}}}`` (``codes`` left out: the
    #: raw values as they are, under the name ``c``). A ``column`` that is not a feature, the group or the label is
    #: kept in the table beside them (:attr:`kept`): never a feature, never masked, read by missingness conditions
    raw_coding: dict[str, dict] = field(default_factory=dict)

    @property
    def kept(self) -> list[str]:
        """The columns :attr:`raw_coding` names that are not features, the group or the label."""
        own = {*self.features, self.group, self.label}
        cols = (how.get("column") for how in self.raw_coding.values())
        return list(dict.fromkeys(c for c in cols if c is not None and c not in own))

    @property
    def columns(self) -> list[str]:
        return [*self.features, self.group, *self.kept, self.label]

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
                continue
            dom = self.option_domains.get(k, (0, 2**32 - 1) if str(k).endswith("seed") else None)
            if dom is None:
                continue
            if all(isinstance(d, str) for d in dom):
                if val not in dom:
                    out.append((str(k), f"must be one of {', '.join(repr(d) for d in dom)}, got {val!r}"))
            elif (dom[0] is not None and val < dom[0]) or (dom[1] is not None and val > dom[1]):
                lo, hi = dom
                rng = f"between {lo} and {hi}" if lo is not None and hi is not None else \
                    f"at least {lo}" if lo is not None else f"at most {hi}"
                out.append((str(k), f"must be {rng}, got {val!r}"))
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
    """The registered variant ``name`` (KeyError naming the known ones), or a regrouped one
    (``<variant>.<col>`` or ``<variant>.<col>_x_<col>…``, :func:`regrouped`: built and registered on first
    use, in every process that meets the name). This module is a leaf: it never imports a dataset module;
    :mod:`fairmiss.datasets` imports the built-in ones (which register themselves) and offers
    :func:`fairmiss.datasets.get_variant` over the complete registry."""
    try:
        return _REGISTRY[name]
    except KeyError:
        base, dot, suffix = name.partition(".")
        if dot and base in _REGISTRY:
            return register(regrouped(_REGISTRY[base], suffix.split(GROUP_JOIN)))
        raise KeyError(f"unknown dataset '{name}'; known datasets: {', '.join(sorted(_REGISTRY))}") from None


#: names the intersection of several group columns (``race_x_sex``); its values' names join with ``INTERSECTION_SEP``
GROUP_JOIN = "_x_"
INTERSECTION_SEP = " · "


def regroup_problem(variant: DatasetVariant, cols: list[str]) -> str | None:
    """Why ``cols`` cannot be the groups of ``variant`` (``None`` when they can)."""
    allowed = {variant.group: variant.group_encoding, **variant.protected}
    if len(set(cols)) != len(cols):
        return f"group: {cols} names a column twice"
    bad = [c for c in cols if c not in allowed]
    if bad:
        return (f"group: '{bad[0]}' is not a protected attribute of dataset '{variant.name}'; "
                f"its protected attributes: {sorted(allowed)}")
    return None


def regrouped(variant: DatasetVariant, cols: list[str]) -> DatasetVariant:
    """``variant`` with the groups of column(s) ``cols`` — its group column and/or its declared ``protected``
    columns; several make intersectional groups. Named ``<variant>.<col>[_x_<col>…]``; the group column
    ``<col>[_x_<col>…]`` codes the combinations in mixed radix, first column most significant
    (race {0 Black, 1 White} x sex {0 Female, 1 Male}: 0 = "Black · Female", 1 = "Black · Male", 2 = "White ·
    Female", 3 = "White · Male"). The group columns are not features (as the base variant's group is not; the
    config's ``group_as_feature`` adds the intersection), and the base group column is dropped when it is not
    one of them. Every combination must have rows (an empty one is a :class:`DatasetError` naming it): a
    group is never silently merged or dropped."""
    problem = regroup_problem(variant, cols)
    if problem is not None:
        raise DatasetError(problem)
    names = {variant.group: variant.group_encoding, **variant.protected}
    encodings = [dict(sorted(names[c].items())) for c in cols]
    group = GROUP_JOIN.join(cols)
    combos = [()]
    for enc in encodings:
        combos = [(*c, k) for c in combos for k in enc]
    group_encoding = {i: INTERSECTION_SEP.join(enc[k] for enc, k in zip(encodings, combo))
                      for i, combo in enumerate(combos)}
    base_builder = variant.builder

    def builder(paths: dict, opts: dict):
        df, info = base_builder(paths, opts)
        code = pd.Series(0, index=df.index, dtype="int64")
        for c, enc in zip(cols, encodings):
            values = df[c]
            unknown = sorted(set(values.dropna().unique()) - set(enc))
            if values.isna().any() or unknown:
                raise DatasetError(f"dataset '{variant.name}': group column '{c}' has missing or unknown codes "
                                   f"{unknown[:5]} (known: {enc})")
            code = code * len(enc) + values.astype("int64")
        counts = code.value_counts()
        empty = [group_encoding[i] for i in group_encoding if int(counts.get(i, 0)) == 0]
        if empty:
            raise DatasetError(f"dataset '{variant.name}': group {cols}: no rows in the intersection(s) {empty}; "
                               "use fewer group columns")
        df = df.assign(**{group: code})
        info = {**info, "groups": {"columns": list(cols), "encoding": group_encoding,
                                   "counts": {group_encoding[int(i)]: int(n) for i, n in sorted(counts.items())}}}
        return df, info

    return DatasetVariant(
        name=f"{variant.name}.{group}", description=f"{variant.description}; groups: {' x '.join(cols)}",
        paper=variant.paper, raw_files=variant.raw_files, builder=builder,
        features={k: v for k, v in variant.features.items() if k not in cols},
        group=group, group_encoding=group_encoding, label=variant.label, label_encoding=variant.label_encoding,
        expected_rows=variant.expected_rows,
        numeric_ranges={k: v for k, v in variant.numeric_ranges.items() if k not in cols},
        synthetic=variant.synthetic, options=variant.options, option_domains=variant.option_domains,
        raw_coding=variant.raw_coding)


def registered() -> list[DatasetVariant]:
    """Every registered variant, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]
