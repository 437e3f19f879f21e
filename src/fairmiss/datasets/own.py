"""A user's own data file (CSV or Parquet) named in a config: ``dataset: {file: ..., label: ..., group: ...}``.

No Python needed: :func:`own_variant` turns the dataset spec's own-data fields into a
:class:`~fairmiss.datasets.registry.DatasetVariant` (not a module; registered under the spec's derived name
by :func:`ensure_registered`) whose builder reads the file and produces the processed table exactly like a
built-in: features (in file order; ``categorical`` ones one-hot encoded with levels in sorted order), then
the group (its values mapped to 0..k-1 in sorted order), then the label (0/1, ``positive`` = 1).

Rules (documented in docs/own_data.md):

* a relative ``file`` is relative to the **current working directory** (where ``fairmiss run`` / DVC run,
  like ``processed/`` and ``results/``), not to the config file's directory;
* a URL is downloaded into the raw directory (``FAIRMISS_DATA_MIRROR`` honoured), verified against
  ``sha256`` when given;
* ``drop`` columns (PII) must exist in the file and are never read (CSV: not parsed; Parquet: not loaded);
  a column in :data:`~fairmiss.datasets.registry.PII_COLUMNS` that is not dropped nor excluded is refused;
* real missing values (an empty CSV cell, a Parquet null) stay NaN; label and group may not be missing;
* every error is a :class:`DatasetError` naming the file, the line (CSV) or row (Parquet) and the column.

This module never imports :mod:`fairmiss.config` (the spec is read by attribute).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.datasets import registry as _registry
from fairmiss.datasets.acquire import RawFile
from fairmiss.datasets.registry import PII_COLUMNS, DatasetError, DatasetVariant

__all__ = ["OWN_FIELDS", "OwnVariant", "derive_name", "ensure_registered", "own_variant", "read_own", "variant_for"]

#: the dataset-spec fields of own data (in this order in the derived name's hash)
OWN_FIELDS = ("file", "sha256", "label", "positive", "group", "group_names", "features", "drop", "categorical")

_TRUE = {"1", "1.0", "true", "yes"}


def _is_url(s: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", str(s)))


def _fields(spec) -> dict:
    return {k: getattr(spec, k, None) for k in OWN_FIELDS}


#: largest magnitude of a numeric feature value: its square (a variance, a distance) stays finite in float64
MAX_ABS_VALUE = 1e150

#: most distinct values a ``dataset.categorical`` column may have (each becomes a one-hot column); more is
#: almost always an identifier or free text. ``FAIRMISS_MAX_LEVELS`` raises it.
MAX_LEVELS = 100


def _file_sha(path: Path) -> str | None:
    """SHA-256 of a regular file; ``None`` for anything else (a device such as ``/dev/zero`` is never read)."""
    import stat

    try:
        if not stat.S_ISREG(Path(path).stat().st_mode):
            return None
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def derive_name(fields: dict) -> str:
    """``own_<file stem>_<hash8>``: the hash covers every own-data field and the file's content (local file:
    its SHA-256 now; URL: the declared ``sha256``), so two different specs — or one spec over an edited file —
    never share a processed table, a config hash or a resumed cell."""
    from fairmiss.io import stable_hash

    f = str(fields["file"])
    stem = re.sub(r"[^a-z0-9]+", "_", Path(f.split("?")[0]).stem.lower()).strip("_")[:40] or "data"
    content = fields.get("sha256") if _is_url(f) else _file_sha(Path(f))
    key = {k: fields.get(k) for k in OWN_FIELDS}
    key["group_names"] = {str(k): v for k, v in (key["group_names"] or {}).items()} or None
    return f"own_{stem}_{stable_hash({'spec': key, 'content': content}, 8)}"


@dataclass(frozen=True)
class OwnVariant(DatasetVariant):
    source: str = ""  # the file (path or URL) as the config names it, for messages and the card


def _where(path, line=None, column=None) -> str:
    out = str(path)
    if line is not None:
        out += f": {line}"
    if column is not None:
        out += f", column '{column}'"
    return out


def _header(path: Path) -> tuple[str, list[str]]:
    """(kind, column names) of the file, without reading its data (Parquet: the schema)."""
    suffix = path.suffix.lower()
    if not path.exists():
        raise DatasetError(f"{path}: no such file (dataset.file; a relative path is relative to the current "
                           f"directory {Path.cwd()})")
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory, not a data file (dataset.file)")
    if not path.is_file():
        raise DatasetError(f"{path}: is not a regular file (a device, FIFO or socket); dataset.file must be a "
                           ".csv or .parquet file")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return "parquet", list(pq.read_schema(path).names)
        except Exception as exc:  # noqa: BLE001 - any unreadable parquet is the user's file
            raise DatasetError(f"{path}: cannot read the Parquet file: {exc}") from None
    if suffix in (".csv", ".txt"):
        from fairmiss.datasets.csvcheck import read_text_strict

        text = read_text_strict(path, expected="a comma-separated header line", header=True)
        first = text.splitlines()[0] if text else ""
        import csv

        header = [h.strip() for h in next(csv.reader([first]))] if first else []
        empty = [k + 1 for k, h in enumerate(header) if not h]
        if empty:  # the same words as the strict reader's, before anything samples the columns by name
            raise DatasetError(f"{path}: line 1: header field(s) {empty[:5]} are empty (a header must name every "
                               f"column)")
        return "csv", header
    raise DatasetError(f"{path}: dataset.file must be a .csv or .parquet file, got '{path.suffix or path.name}'")


#: joins the values of several group columns into the name of their intersection ("female · African-American")
INTERSECTION_SEP = " · "


def group_columns(group) -> tuple[list[str], str]:
    """``(columns, name)``: the group column(s) a spec names and the processed table's group column — the one
    column itself, or for several (``group: [sex, race]``) their intersection, named ``sex_x_race``, whose
    values are the combinations present in the data (``female · African-American``), each one group: gaps are
    max - min over all of them, as for any k groups."""
    cols = [group] if isinstance(group, str) else list(group)
    return cols, cols[0] if len(cols) == 1 else "_x_".join(cols)


def read_own(path: Path, fields: dict) -> tuple[pd.DataFrame, dict]:
    """Read and encode the user's file: the processed table (features, group, label) and its provenance."""
    path = Path(path)
    kind, header = _header(path)
    label = fields["label"]
    group_cols, group = group_columns(fields["group"])
    drop = list(fields.get("drop") or [])
    categorical = list(fields.get("categorical") or [])
    dups = sorted({h for h in header if header.count(h) > 1})
    if dups:
        raise DatasetError(f"{path}: header: column(s) {dups} appear more than once")

    def need(key: str, cols):
        for c in cols:
            if c not in header:
                raise DatasetError(f"{path}: dataset.{key}: no column '{c}' in the file; its columns: {header}")

    need("label", [label])
    need("group", group_cols)
    need("drop", drop)
    need("categorical", categorical)
    if label in group_cols:
        raise DatasetError(f"{path}: dataset.group: column '{label}' is the label too")
    if len(group_cols) > 1 and group in header:
        raise DatasetError(f"{path}: dataset.group: the intersection of {group_cols} is named '{group}', which is "
                           "already a column of the file; rename that column")
    for key, cols in (("drop", drop), ("categorical", categorical)):
        bad = [c for c in cols if c in (label, *group_cols)]
        if bad:
            raise DatasetError(f"{path}: dataset.{key}: column '{bad[0]}' is the label or the group")
    if fields.get("features") is not None:
        features = list(fields["features"])
        need("features", features)
        clash = [c for c in features if c in drop or c in (label, *group_cols)]
        if clash:
            raise DatasetError(f"{path}: dataset.features: column '{clash[0]}' is dropped, the label or the group")
        not_feat = [c for c in categorical if c not in features]
        if not_feat:
            raise DatasetError(f"{path}: dataset.categorical: column '{not_feat[0]}' is not in dataset.features")
    else:
        features = [c for c in header if c not in drop and c not in (label, *group_cols)]
    if not features:
        raise DatasetError(f"{path}: no feature columns: every column is the label, the group or dropped "
                           f"(columns: {header}); a model needs at least one feature")
    pii = sorted(c for c in features if c.strip().lower() in PII_COLUMNS)  # 'ID', 'Name' as 'id', 'name'
    if pii:
        raise DatasetError(f"{path}: column(s) {pii} identify people (PII) and may not be features; list them under "
                           "dataset.drop (they are then never read)")
    numeric = [c for c in features if c not in categorical]
    keep = [*features, *group_cols, label]

    if kind == "csv":
        from fairmiss.datasets.csvcheck import read_csv_strict

        try:
            df, lines = read_csv_strict(path, keep, numeric=numeric, columns="required", return_lines=True)
        except DatasetError as exc:
            msg = str(exc)
            if "non-numeric value" in msg:
                msg += " (a text column: list it under dataset.categorical, or under dataset.drop)"
            raise DatasetError(msg) from None
        lines = np.asarray(lines)
        line_of = lambda i: f"line {int(lines[i])}"  # noqa: E731
        for c in (label, *group_cols, *categorical):  # text columns: strip, empty = missing
            df[c] = _as_text(df[c])
    else:
        try:
            df = pd.read_parquet(path, columns=keep)
        except Exception as exc:  # noqa: BLE001
            raise DatasetError(f"{path}: cannot read the Parquet file: {exc}") from None
        line_of = lambda i: f"row {int(i) + 1}"  # noqa: E731
        for c in numeric:
            s = df[c]
            if pd.api.types.is_bool_dtype(s):
                s = s.astype("float64")
            if not pd.api.types.is_numeric_dtype(s):
                bad = pd.to_numeric(s, errors="coerce").isna() & s.notna()
                if bad.any():
                    i = int(np.flatnonzero(bad.to_numpy())[0])
                    raise DatasetError(f"{path}: {line_of(i)}, column '{c}': non-numeric value {s.iloc[i]!r} "
                                       "(a text column: list it under dataset.categorical, or under dataset.drop)")
                s = pd.to_numeric(s, errors="coerce")
            arr = s.to_numpy(dtype="float64", na_value=np.nan)
            inf = np.isinf(arr)
            if inf.any():
                i = int(np.flatnonzero(inf)[0])
                raise DatasetError(f"{path}: {line_of(i)}, column '{c}': non-finite value {arr[i]!r}")
            df[c] = s
        for c in (label, *group_cols, *categorical):
            df[c] = _as_text(df[c])

    for c in numeric:  # finite, but so large that squares and sums overflow in a cell (a scaler, a distance)
        arr = np.abs(df[c].to_numpy(dtype="float64", na_value=np.nan))
        big = arr > MAX_ABS_VALUE
        if big.any():
            i = int(np.flatnonzero(big)[0])
            raise DatasetError(f"{path}: {line_of(i)}, column '{c}': value {df[c].iloc[i]:g} is too large to compute "
                               f"with (magnitude above {MAX_ABS_VALUE:g}: squares and sums overflow to infinity; "
                               f"{int(big.sum())} such cell(s)); rescale the column, or list it under dataset.drop")
    n = len(df)
    if n == 0:
        raise DatasetError(f"{path}: no data rows")
    for c, key in ((label, "label"), *((gc, "group") for gc in group_cols)):
        miss = df[c].isna().to_numpy()
        if miss.any():
            i = int(np.flatnonzero(miss)[0])
            raise DatasetError(f"{path}: {line_of(i)}, column '{c}': empty {key} value ({int(miss.sum())} such "
                               f"row(s)); the {key} may not be missing")

    # label: two values, the positive one -> 1
    yv = sorted(pd.unique(df[label]).tolist(), key=_sort_key)
    if len(yv) != 2:
        if len(yv) > 2:
            third = df[label].value_counts().sort_index(key=lambda ix: ix.map(_sort_key)).idxmin()  # the odd one
            i = int(np.flatnonzero((df[label] == third).to_numpy())[0])
            raise DatasetError(f"{path}: {line_of(i)}, column '{label}': the label must be binary but has "
                               f"{len(yv)} values {yv[:10]} (this row: {third!r})")
        raise DatasetError(f"{path}: column '{label}': the label has the single value {yv[0]!r} in all {n} rows; "
                           "it must have two classes")
    pos = fields.get("positive")
    if pos is not None:
        pos_t = _num_text(pos) if not isinstance(pos, str) else pos.strip()
        if pos_t not in yv:
            raise DatasetError(f"{path}: dataset.positive: {pos!r} is not a value of column '{label}' "
                               f"(values: {yv})")
    else:
        hits = [v for v in yv if v.lower() in _TRUE]
        if len(hits) != 1:
            raise DatasetError(f"{path}: column '{label}' has values {yv}: name the positive one with "
                               f"dataset.positive (needed unless the values are 0/1 or false/true)")
        pos_t = hits[0]
    neg_t = next(v for v in yv if v != pos_t)
    y = (df[label] == pos_t).astype("int64").to_numpy()

    if len(group_cols) > 1:  # the intersection: one group per combination of values present
        df[group] = df[group_cols[0]].str.cat([df[c] for c in group_cols[1:]], sep=INTERSECTION_SEP)
    # group: values in sorted order -> 0..k-1
    gv = sorted(pd.unique(df[group]).tolist(), key=_sort_key)
    if len(gv) < 2:
        raise DatasetError(f"{path}: column '{group}': the group has the single value {gv[0]!r} in all {n} rows; "
                           "between-group fairness needs at least two groups")
    code = {v: k for k, v in enumerate(gv)}
    names = {_num_text(k) if not isinstance(k, str) else str(k): str(v)
             for k, v in (fields.get("group_names") or {}).items()}
    unknown = [k for k in names if k not in code]
    if unknown:
        raise DatasetError(f"{path}: dataset.group_names: {unknown[0]!r} is not a value of column '{group}' "
                           f"(values: {gv})")
    g = df[group].map(code).astype("int64").to_numpy()

    # enough rows per group x label for a stratified split
    counts = pd.crosstab(pd.Series(g, name=group), pd.Series(y, name=label))
    for k, v in enumerate(gv):
        for cls in (0, 1):
            c = int(counts.loc[k, cls]) if k in counts.index and cls in counts.columns else 0
            if c < 2:
                raise DatasetError(f"{path}: column '{group}' = {v!r} with {label} = "
                                   f"{pos_t if cls else neg_t!r} has {c} row(s); every group x label cell needs "
                                   "at least 2 rows to be split into train and test")

    out, ftypes, levels = {}, {}, {}
    max_levels = _max_levels()
    for c in features:
        if c in categorical:
            s = df[c]
            lv = sorted(pd.unique(s.dropna()).tolist(), key=_sort_key)
            if not lv:
                raise DatasetError(f"{path}: column '{c}' (dataset.categorical) is empty in all {n} rows; list it "
                                   "under dataset.drop")
            if len(lv) > max_levels:
                raise DatasetError(f"{path}: column '{c}' (dataset.categorical) has {len(lv)} distinct values in "
                                   f"{n} rows, more than {max_levels}: one-hot encoding would add a column per "
                                   "value. An identifier or free text? list it under dataset.drop (or raise the "
                                   "limit with FAIRMISS_MAX_LEVELS)")
            levels[c] = lv
            na = s.isna().to_numpy()
            for v in lv:
                col = f"{c}_{v}"
                if col in header or col in out:
                    raise DatasetError(f"{path}: dataset.categorical: one-hot column '{col}' of '{c}' clashes "
                                       "with another column")
                x = (s == v).fillna(False).to_numpy().astype("float64")
                x[na] = np.nan
                out[col] = x
                ftypes[col] = "numeric" if na.any() else "binary"
        else:
            s = df[c]
            if not s.notna().any():  # nothing for an imputer or a learner to use (imputers fail on it, cell by cell)
                raise DatasetError(f"{path}: column '{c}' is empty in all {n} rows; list it under dataset.drop")
            out[c] = s.to_numpy() if pd.api.types.is_numeric_dtype(s) else s.astype("float64").to_numpy()
            ftypes[c] = "binary" if (pd.Series(out[c]).dropna().isin([0, 1]).all() and not pd.Series(out[c]).isna().any()
                                     and pd.api.types.is_integer_dtype(pd.Series(out[c]))) else "numeric"
    out[group] = g
    out[label] = y
    table = pd.DataFrame(out)
    info = {"rows_file": n, "source": str(fields["file"]), "file_sha256": _file_sha(path),
            "label_values": {"0": neg_t, "1": pos_t}, "group_values": {str(k): v for k, v in enumerate(gv)},
            "categorical_levels": levels, "dropped_columns": len(drop),
            "_ftypes": ftypes, "_group_encoding": {k: names.get(v, v) for k, v in enumerate(gv)},
            "_label_encoding": {0: neg_t, 1: pos_t}}
    return table, info


def _max_levels() -> int:
    raw = os.environ.get("FAIRMISS_MAX_LEVELS", "")
    if not raw:
        return MAX_LEVELS
    if not raw.isdigit() or int(raw) < 1:
        raise DatasetError(f"FAIRMISS_MAX_LEVELS={raw[:40]!r}: must be a positive whole number")
    return int(raw)


def _as_text(s: pd.Series) -> pd.Series:
    """Values as stripped text (numbers without a trailing '.0'); empty / null = missing."""
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return s.map(lambda v: None if pd.isna(v) else _num_text(v.item() if hasattr(v, "item") else v)).astype("string")
    t = s.astype("string").str.strip()
    return t.mask(t == "")


def _num_text(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _sort_key(v):
    """Sorted order of values held as text: numbers numerically (before text), then text."""
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def _local_path(fields: dict, raw_dir=None, allow_download: bool = True) -> Path:
    f = str(fields["file"])
    if not _is_url(f):
        return Path(f)
    from fairmiss.datasets.acquire import fetch

    return fetch(_raw_file(fields), raw_dir, allow_download=allow_download)


def _raw_file(fields: dict) -> RawFile:
    f = str(fields["file"])
    name = Path(f.split("?")[0]).name or "data.csv"
    return RawFile(filename=name, url=f, sha256=fields.get("sha256"), note="the user's own data (dataset.file)")


def own_variant(spec, *, raw_dir=None, allow_download: bool = True) -> OwnVariant:
    """Read the file (checking it: every error names the file, line and column) and describe it as a variant."""
    fields = _fields(spec)
    name = getattr(spec, "name", None) or derive_name(fields)
    path = _local_path(fields, raw_dir, allow_download)
    if fields.get("sha256") and not _is_url(str(fields["file"])):  # a URL is verified when it is fetched
        _header(path)  # a missing or non-regular file: its own message first
        actual = _file_sha(path)
        if actual != fields["sha256"]:
            raise DatasetError(f"{path}: SHA-256 is {actual}, but dataset.sha256 says {fields['sha256']}: the file "
                               "is not the one the config pins (update dataset.sha256 if the change is intended)")
    table, info = read_own(path, fields)
    cache = {"key": _stat(path), "table": table, "info": info}

    def builder(paths: dict, opts: dict):
        p = paths.get(_raw_file(fields).filename) if _is_url(str(fields["file"])) else Path(fields["file"])
        p = Path(p) if p is not None else path
        if _stat(p) != cache["key"]:
            cache.update(key=_stat(p), **dict(zip(("table", "info"), read_own(p, fields))))
        inf = {k: v for k, v in cache["info"].items() if not k.startswith("_")}
        return cache["table"].copy(), inf

    ranges = {}
    return OwnVariant(
        name=name,
        description=f"the user's own data from {fields['file']} (label '{fields['label']}', group '{fields['group']}')",
        paper="none (own data)",
        raw_files=(_raw_file(fields),) if _is_url(str(fields["file"])) else (),
        builder=builder,
        features=info["_ftypes"],
        group=group_columns(fields["group"])[1],
        group_encoding=info["_group_encoding"],
        label=fields["label"],
        label_encoding=info["_label_encoding"],
        expected_rows=len(table),
        numeric_ranges=ranges,
        source=str(fields["file"]),
    )


def _stat(path: Path):
    try:
        st = Path(path).stat()
        return (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def ensure_registered(spec, *, raw_dir=None, allow_download: bool = True) -> OwnVariant:
    """The own-data variant of ``spec``, (re)built from its file and registered under ``spec.name`` so that
    every ``get_variant(cfg.dataset.name)`` of the flows finds it."""
    v = _registry._REGISTRY.get(spec.name)
    if isinstance(v, OwnVariant) and v.builder is not None and getattr(v, "_spec_fields", None) == _fields(spec):
        return v
    v = own_variant(spec, raw_dir=raw_dir, allow_download=allow_download)
    object.__setattr__(v, "_spec_fields", _fields(spec))
    _registry._REGISTRY[v.name] = v  # an own variant may be re-registered (same name = same spec and content)
    return v


def variant_for(spec, *, raw_dir=None, allow_download: bool = True) -> DatasetVariant:
    """The variant a dataset spec names: a registered one (``name``) or the user's file (``file``)."""
    if getattr(spec, "file", None):
        return ensure_registered(spec, raw_dir=raw_dir, allow_download=allow_download)
    return _registry.lookup(spec.name)
