"""The data's own group names in MLflow metric names: a cell's ``fnr_group_0`` is logged as ``fnr_Black`` (COMPAS),
``accuracy_group_1`` as ``accuracy_male``, so that the MLflow UI's columns and charts say whom a number is about.

The codes stay for machines: every child run carries the tag :data:`GROUP_TAG`, ``{code: name in metric keys}``
as JSON, and reading a run back (resume, ``fairmiss compare``) turns the names into ``<metric>_group_<code>``
again (:func:`coded_metrics`), the keys the library computes with. A run without the tag (logged before names
were used) is read as it is.

A group's name in a metric key is its name with comparison signs said in words and every run of characters other
than letters and digits made one ``_`` (``Black · Female`` -> ``Black_Female``, ``age >= 25`` -> ``age_ge_25``). The code form ``group_<code>`` is kept for a group whose name
gives nothing usable (empty, only digits, a word a metric name ends with such as ``difference``, or the same
as another group's), and for every group of a cell when the names would make two metrics one key or could not
be read back to the same codes: :func:`named_metrics` checks the round trip before anything is logged.
"""

from __future__ import annotations

import json
import re

__all__ = ["GROUP_TAG", "coded_metrics", "group_slugs", "named_metrics"]

#: the child-run tag holding ``{code: name used in metric keys}``
GROUP_TAG = "groups.metric_names"

_GROUP_KEY = re.compile(r"^(?P<base>.+)_group_(?P<code>[^_.]+)$")
#: comparison signs said in words (``age < 25`` -> ``age_lt_25``, ``age >= 25`` -> ``age_ge_25``), longest first
_SYMBOLS = (("<=", "le"), (">=", "ge"), ("!=", "ne"), ("<", "lt"), (">", "gt"), ("=", "eq"), ("+", "plus"))
#: words a metric name ends with: never a group's name in a key (``fnr_difference`` stays the gap)
_RESERVED = frozenset({"difference", "ratio", "low", "high", "mean", "se", "sum", "rms", "max", "min", "test",
                       "train", "share", "rate", "score", "pair", "group", "all", "overall", "s"})


def group_slugs(group_names: dict | None) -> dict[str, str]:
    """``{code: name in metric keys}`` for the groups ``{code: name}`` (see the module's rules)."""
    out: dict[str, str] = {}
    for code, name in sorted((group_names or {}).items(), key=lambda kv: str(kv[0])):
        text = str(name)
        for sym, word in _SYMBOLS:
            text = text.replace(sym, f" {word} ")
        slug = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")
        if not slug or slug.isdigit() or slug.lower() in _RESERVED or slug in out.values() \
                or slug.lower().startswith("group_"):
            slug = f"group_{code}"
        out[str(code)] = slug
    if len(set(out.values())) != len(out):  # a fallback equal to another group's name: codes for all
        out = {c: f"group_{c}" for c in out}
    return out


def _rename(metrics: dict, slugs: dict[str, str]) -> dict:
    out = {}
    for k, v in metrics.items():
        m = _GROUP_KEY.match(k)
        out[f"{m['base']}_{slugs[m['code']]}" if m and m["code"] in slugs else k] = v
    return out


def coded_metrics(metrics: dict, slugs: dict[str, str] | str | None) -> dict:
    """The inverse of :func:`named_metrics`: ``<metric>_<name>`` back to ``<metric>_group_<code>`` for the
    groups of ``slugs`` (the dict, or the run's :data:`GROUP_TAG` value; ``None``: keys unchanged)."""
    if isinstance(slugs, str):
        slugs = json.loads(slugs)
    if not slugs:
        return dict(metrics)
    by_slug = sorted(((s, c) for c, s in slugs.items() if s != f"group_{c}"), key=lambda sc: -len(sc[0]))
    out = {}
    for k, v in metrics.items():
        for slug, code in by_slug:
            if k.endswith("_" + slug) and len(k) > len(slug) + 1:
                k = f"{k[:-len(slug) - 1]}_group_{code}"
                break
        out[k] = v
    return out


def named_metrics(metrics: dict, group_names: dict | None) -> tuple[dict, dict[str, str]]:
    """``(metrics with the groups' names, {code: name in keys})``; the codes (``group_<code>``) for every group
    when the names would not read back to exactly ``metrics`` (:func:`coded_metrics`)."""
    slugs = group_slugs(group_names)
    named = _rename(metrics, slugs)
    if len(named) != len(metrics) or coded_metrics(named, slugs) != metrics:
        slugs = {c: f"group_{c}" for c in slugs}
        named = dict(metrics)
    return named, slugs


def labelled_confusion(confusion: dict, group_names: dict | None = None) -> dict:
    """Per-group confusion matrices (``{code: [[TN, FP], [FN, TP]]}``, rows true 0/1, columns predicted 0/1)
    labelled for a reader: one entry per group with its code, its name (from the dataset registry or the own
    data's ``group_names``; the code where none is known) and TN / FP / FN / TP / n."""
    names = {str(k): str(v) for k, v in (group_names or {}).items()}
    groups = []
    for code in sorted(confusion, key=lambda c: (len(str(c)), str(c))):  # codes 0, 1, … 10 in numeric order
        (tn, fp), (fn, tp) = confusion[code]
        groups.append({"group": str(code), "name": names.get(str(code), str(code)), "TN": int(tn), "FP": int(fp),
                       "FN": int(fn), "TP": int(tp), "n": int(tn + fp + fn + tp)})
    return {"positive": "label 1 (the dataset's positive class)", "groups": groups}


def _csv_field(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"\n') else v
