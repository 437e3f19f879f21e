"""Strict reading of user-supplied and raw CSV files: one clear :class:`DatasetError` naming the file,
the line and the column for every kind of damage, instead of pandas' silent repairs.

pandas alone (``read_csv`` with defaults) accepts, without a word:

* a row cut mid-line (fewer fields: the missing ones become NaN, or the row is dropped later);
* two columns with the same header (the second is renamed ``X.1`` and the first is used);
* ``inf`` / ``-inf`` / ``Infinity`` in a numeric column (parsed as float infinity) and the strings
  ``nan`` / ``NaN`` / ``NA`` / ``NULL`` … (parsed as missing values);
* Latin-1 bytes raise a ``UnicodeDecodeError`` with a byte offset, not a line.

:func:`read_csv_strict` checks, before and after pandas parses the text:

1. the bytes: empty file, not UTF-8 (line and column of the first bad byte; a UTF-8 BOM is accepted);
2. the header: empty or duplicated names (a duplicated *required* column is an error unless the
   copies hold the same values, as the two ``priors_count`` columns of ProPublica's COMPAS file do),
   required columns present (with a delimiter hint when the header is one field);
3. every data line has exactly as many fields as the header (line number, field count, first
   absent column) — a truncated or joined line; at least one data line;
4. numeric columns: every non-empty cell is a finite number; ``inf``/``nan``-like text or an
   unparseable value is reported with its line and column. Only an empty cell means "missing"
   (and only where ``allow_missing``).

The same helpers serve the fixed-format parsers (:mod:`~fairmiss.datasets.adult`,
:mod:`~fairmiss.datasets.german`) through :func:`read_text_strict` and :func:`check_finite_numbers`, and
any future own-CSV loader through :func:`read_csv_strict`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.datasets.registry import DatasetError

__all__ = ["CsvLayout", "NONFINITE_TEXT", "SEPARATORS", "check_finite_numbers", "read_csv_strict", "read_text_strict",
           "scan_csv"]

#: Cell texts (lower-cased, stripped) that parsers turn into non-finite floats or NaN.
NONFINITE_TEXT = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan", "+nan", "-nan",
                            "na", "n/a", "nan%", "null", "none", "#n/a", "1.#ind", "-1.#ind", "1.#qnan",
                            "-1.#qnan", "<na>"})


def read_text_strict(path: Path, *, expected: str = "", header: bool = False) -> str:
    """The file's text as UTF-8 (BOM allowed); :class:`DatasetError` for a missing, empty or non-UTF-8 file,
    naming the line of the first undecodable byte (and, for a comma-separated file with a ``header``, its
    column)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise DatasetError(f"{path}: is a directory, not a file") from exc
    except PermissionError as exc:
        raise DatasetError(f"{path}: cannot be read (permission denied)") from exc
    if not data.strip():
        raise DatasetError(f"{path}: empty file" + (f"; expected {expected}" if expected else ""))
    packed = {b"\x1f\x8b": "gzip-compressed (decompress it first: gunzip)", b"PK\x03\x04": "a ZIP archive (unpack it first)",
              b"\xff\xfe": "UTF-16 text (save it as UTF-8)", b"\xfe\xff": "UTF-16 text (save it as UTF-8)"}
    for magic, what in packed.items():  # said as such, not as a stray byte of a Latin-1 file
        if data.startswith(magic):
            raise DatasetError(f"{path}: the file is {what}; a data file must be comma-separated UTF-8 text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        field = data.count(b",", start, exc.start)
        names = data.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r").split(",")
        col = f", column '{names[field].strip()}'" if header and line > 1 and field < len(names) else ""
        raise DatasetError(
            f"{path}: line {line}{col}: byte 0x{data[exc.start]:02x} is not valid UTF-8 (a Latin-1 / "
            f"Windows-1252 file? save it as UTF-8)") from exc
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise DatasetError(f"{path}: line {line}: NUL byte (a binary or UTF-16 file? save it as UTF-8 text)")
    return text


@dataclass
class CsvLayout:
    header: list[str]
    #: physical line number (1-based) of every data row, in the order pandas returns them
    lines: np.ndarray
    #: header name -> positions, for names that occur more than once
    duplicates: dict[str, list[int]]


#: the delimiters :func:`scan_csv` / :func:`read_csv_strict` read, and their names in messages
SEPARATORS = {",": "comma", ";": "semicolon"}


def scan_csv(path: Path, text: str, *, normalize=str.strip, sep: str = ",") -> CsvLayout:
    """Header and per-line field counts of a ``sep``-separated text (comma by default; quotes honoured); raises
    on an empty header name, a line with the wrong number of fields and a file with no data line."""
    what = SEPARATORS[sep]
    if "\n" not in text and "\r" in text.rstrip("\r"):  # else read as one line: "header only"
        raise DatasetError(f"{path}: the lines end with CR only (classic Mac OS line endings), so the file reads as "
                           "one line; save it with LF (or CRLF) line endings")
    quoted = '"' in text
    if quoted:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
        try:
            rows = []
            prev = 0
            for row in reader:
                rows.append((prev + 1, row))
                prev = reader.line_num
        except csv.Error as exc:
            raise DatasetError(f"{path}: line {reader.line_num}: malformed CSV ({exc})") from exc
        rows = [(i, len(r), r) for i, r in rows if r and not (len(r) == 1 and not r[0].strip())]  # blank: skipped
    else:  # no quotes: field counts by counting delimiters (no per-field strings for wide files)
        rows = [(i, line.count(sep) + 1, line) for i, line in enumerate(text.split("\n"), start=1)
                if line.strip()]  # blank lines are skipped, as pandas does
        if rows:
            i0, _, h = rows[0]
            rows[0] = (i0, 0, h.rstrip("\r").split(sep))
    if not rows:
        raise DatasetError(f"{path}: empty file")
    hline, _, raw_header = rows[0]
    header = [normalize(h) for h in raw_header]
    empty = [k + 1 for k, h in enumerate(header) if not h]
    if empty:
        raise DatasetError(f"{path}: line {hline}: header field(s) {empty[:5]} are empty (a header must name every "
                           f"column)")
    seen: dict[str, list[int]] = {}
    for k, h in enumerate(header):
        seen.setdefault(h, []).append(k)
    dups = {h: p for h, p in seen.items() if len(p) > 1}
    w = len(header)
    for lineno, nf, _ in rows[1:]:
        if nf != w:
            if nf < w:
                problem = f"first absent column '{header[nf]}' (truncated line?)"
            else:
                problem = "extra field(s) after the last column (a stray delimiter or two lines joined?)"
            hint = f" (wrong delimiter? the file must be {what}-separated)" if w == 1 or nf == 1 else ""
            raise DatasetError(f"{path}: line {lineno}: expected {w} {what}-separated fields as in the header, got "
                               f"{nf}; {problem}{hint}")
    if len(rows) == 1:
        raise DatasetError(f"{path}: header only, no data rows")
    return CsvLayout(header, np.array([r[0] for r in rows[1:]], dtype=np.int64), dups)


def check_finite_numbers(path: Path, raw: pd.Series, column: str, lines, *, allow_missing: bool = True) -> pd.Series:
    """Parse the cells ``raw`` (strings) of ``column`` as float64; :class:`DatasetError` naming the line for a
    non-finite text (``inf``, ``nan``, ``NA`` …), an unparseable value, or (unless ``allow_missing``) an
    empty cell. Empty cells become NaN."""
    s = raw.astype("string").str.strip()
    empty = s.isna() | (s == "")
    low = s.str.lower()
    nonfinite = low.isin(NONFINITE_TEXT) & ~empty
    num = pd.to_numeric(s.mask(empty | nonfinite), errors="coerce")
    bad = num.isna() & ~empty & ~nonfinite
    inf = ~np.isfinite(num.to_numpy(dtype=float, na_value=np.nan)) & num.notna().to_numpy()
    lines = np.asarray(lines)

    def where(mask) -> tuple[int, str]:
        i = int(np.flatnonzero(np.asarray(mask))[0])
        return int(lines[i]) if i < len(lines) else i + 2, str(raw.iloc[i])

    if nonfinite.any() or inf.any():
        line, v = where(nonfinite.to_numpy() | inf)
        n = int(nonfinite.sum() + inf.sum())
        raise DatasetError(f"{path}: line {line}, column '{column}': non-finite value {v!r} ({n} such cell(s)); "
                           "numeric columns must hold finite numbers (leave a cell empty for a missing value)")
    if bad.any():
        line, v = where(bad)
        raise DatasetError(f"{path}: line {line}, column '{column}': non-numeric value {v!r} "
                           f"({int(bad.sum())} such cell(s))")
    if not allow_missing and empty.any():
        line, _ = where(empty)
        raise DatasetError(f"{path}: line {line}, column '{column}': empty cell ({int(empty.sum())} such cell(s)); "
                           "this column may not have missing values")
    return num.astype("float64")


def read_csv_strict(path: Path, required, *, numeric=(), allow_missing=True, normalize=str.strip,
                    columns: str = "all", return_lines: bool = False, sep: str = ",", **read_csv_kwargs):
    """Read a comma-separated (or ``sep``-separated, :data:`SEPARATORS`) file with a header, checked as the
    module docstring says.

    Parameters
    ----------
    required : list of str
        Columns that must be present (after ``normalize`` of the header names).
    numeric : iterable of str
        Columns (present ones only) that must hold finite numbers; returned as float64 (empty = NaN).
    allow_missing : bool or set of str
        Whether an empty numeric cell is allowed (``True``/``False`` for all, or the set of columns that may).
    normalize : callable
        Applied to header names before matching (e.g. ``lambda s: s.strip().upper()``); the returned
        frame carries the normalised names.
    columns : {"all", "required"}
        Return every column (first occurrence of a duplicated name) or only the required ones (a wide
        file — the HSLS student file has thousands — is then parsed for those columns only).
    return_lines : bool
        Also return the physical line number (1-based) of every row, for messages of later checks (never
        kept in ``DataFrame.attrs``: pandas would carry it into derived tables and their parquet files).
    read_csv_kwargs
        Passed to :func:`pandas.read_csv` for the non-numeric columns (``dtype`` …). Only an empty cell is
        read as missing (``keep_default_na=False``): the text ``NA`` or ``nan`` is a value, not a gap.
    """
    path = Path(path)
    required = list(required)
    text = read_text_strict(path, expected=f"columns {required[:6]}{'…' if len(required) > 6 else ''}", header=True)
    layout = scan_csv(path, text, normalize=normalize, sep=sep)
    missing = [c for c in required if c not in layout.header]
    if missing:
        hint = f" (wrong delimiter? the file must be {SEPARATORS[sep]}-separated)" if len(layout.header) == 1 else ""
        dups = "".join(f"; column '{h}' appears {len(p)} times (fields {[k + 1 for k in p]})"
                       for h, p in list(layout.duplicates.items())[:3])
        raise DatasetError(f"{path}: missing required column(s) {missing[:6]}{'…' if len(missing) > 6 else ''}"
                           f"{hint}{dups}")
    kw = {"keep_default_na": False, "na_values": [""], "sep": sep, **read_csv_kwargs}
    names = [f"\x00{k}" for k in range(len(layout.header))]
    if columns == "required":
        want = set(required) | {c for c in numeric if c in layout.header}
        kw["usecols"] = [k for k, h in enumerate(layout.header) if h in want]
    try:
        df = pd.read_csv(io.StringIO(text), header=0, names=names, skip_blank_lines=True, **kw)
    except (pd.errors.ParserError, ValueError) as exc:
        raise DatasetError(f"{path}: cannot parse CSV: {exc}") from exc
    if len(df) != len(layout.lines):  # the scan and pandas disagree on the rows: refuse to guess
        raise DatasetError(f"{path}: {len(layout.lines)} data lines but pandas read {len(df)} rows "
                           "(quoted line breaks or stray quotes?)")
    pos = {}
    for k, h in enumerate(layout.header):
        if f"\x00{k}" in df.columns:
            pos.setdefault(h, k)
    out = pd.DataFrame({h: df[f"\x00{p}"] for h, p in sorted(pos.items(), key=lambda kv: kv[1])})
    raw_numeric = [c for c in numeric if c in out.columns]
    if raw_numeric:
        # fast path: the C parser reads the numeric block as float64; only columns holding a non-finite
        # value (NaN from an empty cell, or inf/nan text) or failing to parse are checked cell by cell
        try:
            F = pd.read_csv(io.StringIO(text), header=0, names=names, usecols=[pos[c] for c in raw_numeric], sep=sep,
                            dtype="float64", keep_default_na=False, na_values=[""], skip_blank_lines=True)
            suspect = [c for c in raw_numeric if not np.isfinite(F[f"\x00{pos[c]}"].to_numpy()).all()]
        except (ValueError, pd.errors.ParserError):
            # some numeric column does not parse as float64: without the fast frame every numeric column is
            # checked cell by cell (the failing ones first, so the error names the first bad column)
            bad = _unparseable(text, names, [pos[c] for c in raw_numeric], raw_numeric, sep)
            suspect = bad + [c for c in raw_numeric if c not in bad]
        raw = pd.read_csv(io.StringIO(text), header=0, names=names, usecols=[pos[c] for c in suspect], sep=sep,
                          dtype=str, keep_default_na=False, na_filter=False, skip_blank_lines=True) if suspect else None
        for c in raw_numeric:
            if c not in suspect:
                if not pd.api.types.is_numeric_dtype(out[c]) or pd.api.types.is_bool_dtype(out[c]):
                    out[c] = F[f"\x00{pos[c]}"].to_numpy()
                continue
            am = allow_missing if isinstance(allow_missing, bool) else c in allow_missing
            checked = check_finite_numbers(path, raw[f"\x00{pos[c]}"], c, layout.lines, allow_missing=am)
            if not pd.api.types.is_numeric_dtype(out[c]) or pd.api.types.is_bool_dtype(out[c]):
                out[c] = checked.to_numpy()  # else pandas' own parse (int64 kept) holds the same numbers
    dup_req = {h: ps for h, ps in layout.duplicates.items() if h in required}
    if dup_req:  # a duplicated required column is ambiguous unless every copy holds the same text
        raw = pd.read_csv(io.StringIO(text), header=0, names=names, usecols=[p for ps in dup_req.values() for p in ps],
                          sep=sep, dtype=str, keep_default_na=False, na_filter=False, skip_blank_lines=True)
        for h, ps in dup_req.items():
            cols = [raw[f"\x00{p}"].str.strip().to_numpy() for p in ps]
            diff = np.flatnonzero(np.any([c != cols[0] for c in cols[1:]], axis=0))
            if len(diff):
                raise DatasetError(f"{path}: header: column '{h}' appears {len(ps)} times (fields {[p + 1 for p in ps]}) "
                                   f"with different values (first at line {int(layout.lines[diff[0]])}); which one is "
                                   "meant is ambiguous — remove or rename the others")
    return (out, layout.lines) if return_lines else out


def _unparseable(text: str, names, positions, columns, sep: str = ",") -> list[str]:
    """Columns (of ``columns``) with a cell that float() rejects or that is inf/nan-like text — found with
    numpy's C conversion per column, so that a wide file's failing column is located without per-cell Python."""
    A = pd.read_csv(io.StringIO(text), header=0, names=names, usecols=positions, dtype=str, keep_default_na=False,
                    na_filter=False, skip_blank_lines=True, sep=sep)
    out = []
    for c, p in zip(columns, positions):
        v = A[f"\x00{p}"].to_numpy(dtype=str)
        v = np.char.strip(v)
        v = v[v != ""]
        try:
            if not np.isfinite(v.astype(np.float64)).all():
                out.append(c)
        except ValueError:
            out.append(c)
    return out
