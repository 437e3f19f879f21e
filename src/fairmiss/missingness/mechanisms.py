"""Missingness injection: pure functions returning ``(X_masked, mask)``; inputs never mutated.

Every missingness kind is one module that registers its spec, its draw (``build``), its realised-rate gate
(``check``) and its masked columns (``columns``) in :data:`~fairmiss.missingness.kinds.MISSINGNESS_KINDS`;
:func:`inject`, :func:`check_mask` and :func:`masked_columns` look the kind up there, the same way for the
built-in kinds (``none``, ``mcar_group``, ``mcar``, ``mar``, ``mnar_censor``, ``ampute``, ``preset``), the
added ones and the plugins'. The built-in draws are re-exported here (:func:`mcar_group`, :func:`mcar`,
:func:`mar_logistic`, :func:`mar_rank`, :func:`ampute`, :func:`mnar_censor`, :data:`PRESETS`).

Two probabilities are easy to confuse (spec 000 §2.6 item 6), so they are named apart:

* ``missing_rate_given_group`` — P(M_j = 1 | S = s), what Table 3 of paper 000 configures;
* ``group_share_among_missing`` — P(S = s | M_j = 1), what a missingness audit often reports.

:func:`mask_summary` reports both. :func:`check_mask` is the validation run after every
injection: realised per-group rates within a binomial tolerance of the configured ones, the
group and label never masked, unlisted columns untouched. It is implemented in NumPy rather
than Great Expectations because it runs once per split × missingness spec; building a GE
context costs ~5 s per call, which would dominate small experiments (GE guards the processed
table, see :mod:`fairmiss.datasets.validate`).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from fairmiss.missingness._base import MissingnessError, RawCoding, as_kw, attribute_columns, mask_summary
from fairmiss.missingness.ampute import ampute, pattern_table  # noqa: F401  (re-exported)
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mar import mar_logistic, mar_rank, rank_probabilities  # noqa: F401  (re-exported)
from fairmiss.missingness.mcar import mcar
from fairmiss.missingness.mcar_group import mcar_group
from fairmiss.missingness.mnar_censor import mnar_censor
from fairmiss.missingness.preset import PRESETS

logger = logging.getLogger(__name__)

__all__ = [
    "PRESETS",
    "MissingnessError",
    "RawCoding",
    "mcar",
    "mcar_group",
    "mar_logistic",
    "mar_rank",
    "mnar_censor",
    "ampute",
    "masked_columns",
    "read_columns",
    "table_columns",
    "inject",
    "mask_summary",
    "check_mask",
]

def resolve(spec) -> dict:
    """Turn a missingness spec (config model or dict) into keyword arguments for :func:`inject`: a model
    dumped without its name, and a kind with a ``resolve`` flag (``preset``) resolved to the kind it
    stands for."""
    kw = as_kw(spec)
    seen = set()
    while kw.get("kind") in MISSINGNESS_KINDS and MISSINGNESS_KINDS[kw["kind"]].flags.get("resolve"):
        if kw["kind"] in seen:
            raise MissingnessError(f"missingness kind '{kw['kind']}' resolves to itself")
        seen.add(kw["kind"])
        kw = MISSINGNESS_KINDS[kw["kind"]].flags["resolve"](kw)
    return kw


def _entry(kind):
    return MISSINGNESS_KINDS[kind] if kind in MISSINGNESS_KINDS else None


def masked_columns(spec) -> list[str]:
    """Columns a missingness spec (config model or dict) may mask: its kind's ``columns`` flag, else the
    keys of its ``rates`` or its ``columns``."""
    kw = resolve(spec)
    entry = _entry(kw["kind"])
    if entry is not None and entry.flags.get("columns"):
        return list(entry.flags["columns"](kw))
    if "rates" in kw:
        return list(kw["rates"])
    return list(kw.get("columns", []))


def read_columns(spec) -> list[str]:
    """Columns a missingness spec reads to decide what to mask, besides the masked ones (its kind's ``reads``
    flag: the condition column of ``conditional``; ``group`` stands for the group and is not listed)."""
    kw = resolve(spec)
    entry = _entry(kw["kind"])
    return list(entry.flags["reads"](kw)) if entry is not None and entry.flags.get("reads") else []


#: context a kind may declare that the caller may leave out (``None``): the raw coding of a coded table
OPTIONAL = ("raw",)


def _context(kind: str, needs, ctx: dict) -> dict:
    """The context a kind declared it needs (``needs`` flag): ``label`` (the label of every row),
    ``test_rows`` (boolean, the split's test rows), for the gate also ``original`` / ``masked``; ``raw`` (a
    :class:`~fairmiss.missingness._base.RawCoding`, or ``None`` for a table that is not coded)."""
    out = {}
    for k in needs:
        if ctx.get(k) is None and k not in OPTIONAL:
            raise MissingnessError(f"missingness kind '{kind}' needs the {k.replace('_', ' ')} "
                                   "(run it through fairmiss.pipeline.make_split)")
        out[k] = ctx.get(k)
    return out


def table_columns(spec, columns, raw: RawCoding | None = None) -> list[str]:
    """The columns of a table (``columns``) that a spec may mask: its :func:`masked_columns`, a raw attribute of
    ``raw`` (module :mod:`~fairmiss.missingness.conditional`) as the columns that stand for it."""
    out = []
    for c in masked_columns(spec):
        out += [t for t in attribute_columns(c, columns, raw) if t not in out]
    return out


def inject(X: pd.DataFrame, spec, *, group: np.ndarray, rng: np.random.Generator, protected=(), label=None,
           test_rows=None, raw: RawCoding | None = None):
    """Apply a missingness spec (config model or dict from :func:`resolve`) with its kind's build function.

    ``protected`` names columns that must never be masked (the group and the label): a spec that
    lists one raises :class:`MissingnessError` before anything is drawn. ``label`` (the label of every
    row) and ``test_rows`` (boolean, the split's test rows) are passed to kinds that declare them
    in their ``needs`` flag (label-driven missingness, train/test shift); the label is never masked.
    ``raw``: how a coded table stands for the raw attributes a spec may name (its one-hot blocks and codes, and
    the columns kept beside the features), passed to the kinds that declare ``raw`` (``conditional``)."""
    kw = resolve(spec)
    bad = sorted((set(masked_columns(kw)) | set(table_columns(kw, X.columns, raw))) & set(protected))
    if bad:
        raise MissingnessError(f"missingness would mask protected column(s) {bad} "
                               "(the group and the label are never masked)")
    kind = kw.pop("kind")
    entry = _entry(kind)
    if entry is None:
        raise MissingnessError(f"unknown missingness kind '{kind}'")
    if raw is not None and "raw" not in entry.flags.get("needs", ()):
        coded = [c for c in masked_columns({**kw, "kind": kind}) if attribute_columns(c, X.columns, raw) != [c]]
        if coded:
            raise MissingnessError(f"missingness kind '{kind}' masks columns of the table; '{coded[0]}' is a raw "
                                   f"attribute coded as {attribute_columns(coded[0], X.columns, raw)} (kind "
                                   "conditional masks raw attributes)")
    ctx = _context(kind, [n for n in entry.flags.get("needs", ()) if n in ("label", "test_rows", "raw")],
                   {"label": label, "test_rows": test_rows, "raw": raw})
    return entry.build(X, kw, group=group, rng=rng, **ctx)


def check_mask(mask: pd.DataFrame, spec, group: np.ndarray, *, original: pd.DataFrame, masked: pd.DataFrame,
               label=None, test_rows=None, raw: RawCoding | None = None) -> list[str]:
    """Return a list of problems (empty when the injection is valid).

    The kind's gate (its ``check`` flag) first: the built-in ones check realised P(M|S=s) against configured
    rates within 4 binomial standard errors (+1/n), or exactly ⌊n_s p_s⌋ in fixed-count modes. Then, for
    every kind: columns other than its :func:`masked_columns` untouched, observed entries unchanged.
    ``label`` / ``test_rows`` / ``raw`` reach the gates that declare them (``needs``); with ``raw`` a masked raw
    attribute lists the columns that stand for it (its one-hot block).
    """
    problems = []
    kw = resolve(spec)
    listed = set(table_columns(kw, mask.columns, raw))
    entry = _entry(kw["kind"])
    if entry is not None and entry.flags.get("check"):
        ctx = _context(kw["kind"], entry.flags.get("needs", ()),
                       {"label": label, "test_rows": test_rows, "original": original, "masked": masked,
                        "raw": raw})
        problems += entry.flags["check"](mask, kw, group, **ctx)
    untouched = [c for c in mask.columns if c not in listed and mask[c].any()]
    if untouched:
        problems.append(f"unlisted columns were masked: {untouched}")
    if not _observed_unchanged(mask, original, masked):
        problems.append("observed entries changed during injection")
    return problems


def _observed_unchanged(mask: pd.DataFrame, original: pd.DataFrame, masked: pd.DataFrame) -> bool:
    """The entries left observed are equal in ``original`` and ``masked`` (as numbers; a table with text
    columns, e.g. a raw table's categories, column by column as objects)."""
    obs = ~mask.to_numpy()
    try:
        return np.array_equal(original.to_numpy(dtype=float)[obs], masked.to_numpy(dtype=float)[obs], equal_nan=True)
    except (TypeError, ValueError):
        keep = ~mask
        return all(original[c][keep[c]].astype(object).equals(masked[c][keep[c]].astype(object)) for c in mask.columns)
