"""Prepare a dataset variant: load, validate (Great Expectations), write the processed table with its card,
hash and validation receipt (moved from fairmiss.pipeline in the package move; pipeline re-exports every name)."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fairmiss.datasets import get_variant  # noqa: F401  (re-exported by fairmiss.pipeline)
from fairmiss.datasets.own import variant_for
from fairmiss.datasets.validate import check_groups, suite_fingerprint, validate_table
from fairmiss.io import atomic_write_json, atomic_write_with

logger = logging.getLogger(__name__)


def dataset_card(variant, df: pd.DataFrame, info: dict) -> str:
    """Markdown card of a processed table: source, licence, preprocessing, counts by group × label,
    missing values by group (logged with every run; the long-form cards are in docs/datasets.md)."""
    g, y = variant.group, variant.label
    lines = [f"# {variant.name}", "", variant.description, "",
             f"* paper: {variant.paper}", f"* synthetic: {'yes — NOT real data' if variant.synthetic else 'no'}"]
    for rf in variant.raw_files:
        lines.append(f"* raw file `{rf.filename}`: {rf.url or rf.note} (sha256 {rf.sha256}) {rf.licence}")
    lines.append("* preprocessing counts: " + ", ".join(f"{k} = {v}" for k, v in info.items() if k.startswith("rows")))
    lines.append(f"* options: {info.get('options')}")
    lines += ["", f"## rows by group ({g}) × label ({y})", ""]
    ct = pd.crosstab(df[g].map(lambda v: f"{v} ({variant.group_encoding.get(v, v)})"), df[y])
    lines.append(ct.to_string())
    miss = df[list(variant.features)].isna().groupby(df[g]).mean()
    miss = miss.loc[:, miss.any()]
    lines += ["", "## share of missing values by group", ""]
    lines.append("none" if miss.empty else miss.round(4).to_string())
    return "\n".join(lines) + "\n"


def frame_hash(df: pd.DataFrame) -> str:
    """Content hash of a table (values, column names and dtypes), independent of file format."""
    h = hashlib.sha256()
    h.update(",".join(f"{c}:{t}" for c, t in df.dtypes.astype(str).items()).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


@dataclass
class Processed:
    dataset: str
    df: pd.DataFrame
    features: list[str]
    group: str
    label: str
    info: dict
    data_hash: str
    docs_index: str | None = None


def _read_meta(meta: Path) -> dict:
    import json

    try:
        return json.loads(meta.read_text()) if meta.exists() else {}
    except ValueError:
        return {}


def validation_receipt(processed_dir: Path, stem: str, *, data_hash: str, suite: str,
                       docs_dir: Path | None = None) -> dict | None:
    """The stored metadata if this exact table (content hash) already passed this exact suite.

    Written by :func:`persist_processed` beside ``<stem>.parquet``; ``None`` when the table, the suite,
    the processed file or the requested Data Docs are not there, so the gate must run again.
    """
    processed_dir = Path(processed_dir)
    old = _read_meta(processed_dir / f"{stem}.json")
    receipt = old.get("validation")  # older metadata held a prose string here: no receipt
    ok = (old.get("data_hash") == data_hash and isinstance(receipt, dict) and receipt.get("suite") == suite
          and (processed_dir / f"{stem}.parquet").exists()
          and (docs_dir is None or (Path(docs_dir) / "index.html").exists()))
    return old if ok else None


def persist_processed(df: pd.DataFrame, info: dict, processed_dir: Path, stem: str) -> None:
    """Write ``<stem>.parquet`` and ``<stem>.json`` atomically, only when their content changed."""
    processed_dir = Path(processed_dir)
    target, meta = processed_dir / f"{stem}.parquet", processed_dir / f"{stem}.json"
    old = _read_meta(meta)
    if old.get("data_hash") != info["data_hash"] or not target.exists():
        atomic_write_with(target, lambda p: df.to_parquet(p, index=False), suffix=".parquet")
    if old != info:
        atomic_write_json(meta, info)


def _data_where(variant, raw_dir=None) -> str:
    """How an error names a dataset: its variant and raw file(s) (or 'synthetic')."""
    if getattr(variant, "source", None):  # own data: the file as the config names it
        return f"dataset file {variant.source}"
    if variant.synthetic or not variant.raw_files:
        return f"dataset '{variant.name}' (synthetic)"
    from fairmiss.datasets.acquire import default_raw_dir

    base = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    return f"dataset '{variant.name}' ({', '.join(str(base / rf.filename) for rf in variant.raw_files)})"


def _binary_label(variant) -> bool:
    return set(variant.label_encoding) == {0, 1}


def prepare(dataset_spec, *, raw_dir=None, processed_dir: Path = Path("processed"),
            docs_dir: Path | None = None, allow_download: bool = True, revalidate: bool = False,
            fairness_metric: str | None = None, check=None) -> Processed:
    """Build the processed table from raw files, validate it (GE gate), persist it atomically. ``check``: called
    with the built table (a :class:`Processed` not yet persisted) before the gate and before anything is written,
    for the caller's own checks of it (a run's learners and group sizes: ``flows.checks.check_table``).

    The gate is skipped when the processed metadata holds a receipt saying that a table with the same
    content hash passed the same suite (:func:`fairmiss.datasets.validate.suite_fingerprint`; the suite is a
    pure function of the table, so the outcome cannot differ) — the expensive part of a re-run whose
    inputs did not change. ``revalidate=True`` (or ``FAIRMISS_REVALIDATE=1``) always runs it.
    """
    import os

    variant = variant_for(dataset_spec, raw_dir=raw_dir, allow_download=allow_download)
    df, info = build_cached(variant, dataset_spec.options, raw_dir=raw_dir, allow_download=allow_download,
                            processed_dir=processed_dir, keep=False)
    # fairness needs two groups (and both classes where the metric needs them): checked before the gate
    # and before anything is written (processed/ included); fairness_metric=None checks groups and classes
    check_groups(df, variant.group, variant.label, where=_data_where(variant, raw_dir),
                 fairness_metric=fairness_metric, binary_label=_binary_label(variant))
    n_rows, h, stem = table_identity(variant, df, info)
    features = list(variant.features)
    if dataset_spec.group_as_feature:
        features = [*features, variant.group]
    if check is not None:
        check(Processed(variant.name, df, features, variant.group, variant.label, dict(info), h))
    suite = suite_fingerprint(variant, n_rows)
    revalidate = revalidate or os.environ.get("FAIRMISS_REVALIDATE", "").lower() in ("1", "true", "yes")
    receipt = None if revalidate else validation_receipt(processed_dir, stem, data_hash=h, suite=suite,
                                                         docs_dir=docs_dir)
    if receipt is not None:
        n_expectations = int(receipt["n_expectations"])
        docs_index = Path(docs_dir) / "index.html" if docs_dir is not None else None
        logger.info("validation of %s: table %s already passed suite %s (%d expectations); not re-run",
                    variant.name, h, suite, n_expectations)
    else:
        report = validate_table(df, variant, docs_dir=docs_dir, n_rows=n_rows)
        n_expectations, docs_index = report.n_expectations, report.docs_index
    built = dict(info)  # as built, before finish_processed adds to it
    out = finish_processed(variant, df, info, processed_dir, stem, data_hash=h, n_expectations=n_expectations,
                           validation={"suite": suite, "data_hash": h}, features=features,
                           after_persist={"validation_reused": receipt is not None},
                           docs_index=str(docs_index) if docs_index else None)
    keep_built(variant, dataset_spec.options, df, built, processed_dir)  # only a table that passed everything
    return out


BUILD_CACHE_DIR = ".build"  # under the processed directory
BUILD_CACHE_KEEP = 4  # built tables kept per dataset variant (the newest)


def build_key(variant, options: dict) -> str | None:
    """The key of a built table: variant, build options, the raw files' pinned SHA-256s and the code that builds
    (:func:`fairmiss.codeversion.cell_code_version`: the library's computing sources and the numerical packages' versions). ``None`` when
    a raw file has no pinned checksum (a user's own local file): its content is then not part of any key, so
    its table is always built."""
    from fairmiss.codeversion import cell_code_version

    shas = [rf.sha256 for rf in variant.raw_files]
    if not shas or any(not h for h in shas):
        return None
    blob = json.dumps({"variant": variant.name, "options": {**variant.options, **options}, "raw_sha256": shas,
                       "code": cell_code_version()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _exact_signature(df: pd.DataFrame) -> str:
    """:func:`frame_hash` plus what it does not see (categories and their order, the index): equal signatures
    mean a kept table is the built one for every use downstream."""
    cats = {c: [str(x) for x in df[c].cat.categories] + [str(df[c].cat.ordered)]
            for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)}
    blob = json.dumps({"frame": frame_hash(df), "categories": cats, "index": [type(df.index).__name__, len(df)]},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def build_cached(variant, options: dict, *, raw_dir=None, allow_download: bool = True,
                 processed_dir: Path = Path("processed"), keep: bool = True) -> tuple[pd.DataFrame, dict]:
    """``variant.build(...)``, reused when the same table was built before (:func:`build_key`): building COMPAS
    from its raw CSV (the strict CSV checks, the ProPublica filter) takes ~0.5 s of every run, reading the kept
    table ~10 ms. The raw files are still fetched and their checksums verified, as a build does, so a missing or
    altered raw file is the same error either way. Kept in ``<processed_dir>/.build/`` as Parquet plus a JSON
    sidecar (the build's provenance and the table's exact signature, :func:`_exact_signature`), both written to
    a temp path and renamed; a kept table is used only when its signature is the built one's — a file that cannot
    be read, or a Parquet round trip that is not exact, is built again (never unpickled: the product code
    deserialises no files, ``tests/integration/test_contracts.py``). ``FAIRMISS_REBUILD=1``: always build. ``keep=False``:
    a new build is not kept here — :func:`prepare` keeps it with :func:`keep_built` only once the table has passed
    the group checks and the validation gate and the processed files are written (nothing half-done is left)."""
    import os

    from fairmiss.datasets.acquire import fetch

    key = None if os.environ.get("FAIRMISS_REBUILD", "").lower() in ("1", "true", "yes") else \
        build_key(variant, options)
    if key is None or set(options) - set(variant.options):  # unknown options: build() raises the clear error
        return variant.build(raw_dir, allow_download=allow_download, **options)
    cache = Path(processed_dir) / BUILD_CACHE_DIR
    table, meta = cache / f"{variant.name}-{key}.parquet", cache / f"{variant.name}-{key}.json"
    if table.is_file() and meta.is_file():
        for rf in variant.raw_files:  # as build() does: present and verified (ChecksumError otherwise)
            fetch(rf, Path(raw_dir) if raw_dir is not None else None, allow_download=allow_download)
        try:
            kept = json.loads(meta.read_text())
            df = pd.read_parquet(table)
            if _exact_signature(df) == kept["signature"]:
                logger.info("%s: built table reused (%s)", variant.name, table)
                return df, kept["info"]
            logger.warning("%s: kept table %s is not the built one (signature); building it again",
                           variant.name, table)
        except Exception as exc:  # noqa: BLE001 - a damaged kept table is rebuilt, never trusted
            logger.warning("%s: kept table %s unreadable (%s); building it again", variant.name, table, exc)
        for f in (meta, table):  # not the build's: removed, so that the new build is kept in its place
            try:
                f.unlink(missing_ok=True)
            except OSError:
                pass
    df, info = variant.build(raw_dir, allow_download=allow_download, **options)
    if keep:
        keep_built(variant, options, df, info, processed_dir)
    return df, info


def keep_built(variant, options: dict, df: pd.DataFrame, info: dict, processed_dir: Path = Path("processed")) -> None:
    """Keep a built table for :func:`build_cached` (nothing to do when the same table is kept already)."""
    import os

    key = None if os.environ.get("FAIRMISS_REBUILD", "").lower() in ("1", "true", "yes") else \
        build_key(variant, options)
    if key is None:
        return
    cache = Path(processed_dir) / BUILD_CACHE_DIR
    table, meta = cache / f"{variant.name}-{key}.parquet", cache / f"{variant.name}-{key}.json"
    try:
        sig = _exact_signature(df)
        if table.is_file() and meta.is_file() and json.loads(meta.read_text()).get("signature") == sig:
            return
    except (OSError, ValueError):
        pass
    try:
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write_with(table, lambda p: df.to_parquet(p, index=False), suffix=".parquet")
        atomic_write_json(meta, {"info": info, "signature": sig})
        kept = sorted(cache.glob(f"{variant.name}-*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[BUILD_CACHE_KEEP:]:
            old.with_suffix(".parquet").unlink(missing_ok=True)
            old.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError) as exc:  # e.g. a read-only processed directory: built again next time
        logger.warning("%s: built table not kept in %s (%s)", variant.name, cache, exc)


def table_identity(variant, df: pd.DataFrame, info: dict) -> tuple[int | None, str, str]:
    """``(n_rows, data_hash, stem)`` of a built table: the row count the suite pins (only with non-default
    build options), the content hash and the processed file stem (``<name>`` or ``<name>-<hash8>``)."""
    opts_nondefault = {k: v for k, v in info["options"].items() if variant.options.get(k) != v}
    n_rows = None if not opts_nondefault else len(df)
    h = frame_hash(df)
    stem = variant.name if not opts_nondefault else f"{variant.name}-{h[:8]}"
    return n_rows, h, stem


def finish_processed(variant, df: pd.DataFrame, info: dict, processed_dir: Path, stem: str, *, data_hash: str,
                     n_expectations: int, validation: dict, features: list, after_persist: dict | None = None,
                     docs_index: str | None = None) -> Processed:
    """The common tail of :func:`prepare` and paper 002's ``prepare_wide``: metadata (keys in this order —
    the ``<stem>.json`` bytes depend on it), atomic persist, the dataset card, the :class:`Processed`.
    ``after_persist`` keys go into the returned info only, not into the file."""
    info = {**info, "data_hash": data_hash, "n_expectations": n_expectations, "dataset": variant.name,
            "validation": validation}
    persist_processed(df, info, processed_dir, stem)
    info.update(after_persist or {})
    info["card"] = dataset_card(variant, df, {k: v for k, v in info.items() if k != "card"})
    return Processed(variant.name, df, features, variant.group, variant.label, info, data_hash, docs_index)
