"""A learner's hyperparameter sweep: ``sweep: {param: [v1, v2, ...]}`` in a ``learners`` entry (of a config or of
a suite's candidates) stands for one learner per value — per combination when several parameters are swept,
in the order written — each its own cells, so that the learner's points trace a trade-off front.

```yaml
learners:
  - kind: exponentiated_gradient
    name: eg
    sweep: {eps: [0.01, 0.02, 0.05, 0.1]}
```

is the four learners ``eg,eps=0.01`` … ``eg,eps=0.1``, each with that ``eps``. A point's name is the entry's
name (or its kind) followed by ``,param=value`` for each swept parameter: the part before the first comma is
the *family* (:func:`family`), which the leaderboard and ``fairmiss compare`` draw and compare as one front
(:func:`fairmiss.bench.stats.fronts_at_gaps`). A swept entry's name therefore holds no comma. Each point is
validated as a whole learner spec; an error names the entry's ``sweep`` and the point.
"""

from __future__ import annotations

import itertools

__all__ = ["expand_sweeps", "family"]

#: keys a sweep cannot vary
_FIXED = ("kind", "name", "imputers", "sweep")


def family(label: str) -> str:
    """The sweep family of a learner (or ``imputer+learner`` candidate) label: the label up to its first
    comma (the label itself when it is not a sweep point)."""
    return label.split(",", 1)[0]


def _value_text(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return repr(v)  # 1.0, not 1: the point's name says the value as written in YAML
    return str(v)


def expand_sweeps(entries):
    """``entries`` (a ``learners:`` list as parsed from YAML) with every entry that has a ``sweep`` replaced by
    its points, in order; other entries (and anything that is not a list of mappings) unchanged."""
    if not isinstance(entries, list):
        return entries
    out = []
    for i, d in enumerate(entries):
        if not isinstance(d, dict) or "sweep" not in d:
            out.append(d)
            continue
        out += _points(d, f"learners.{i}.sweep")
    return out


def _points(d: dict, where: str) -> list[dict]:
    sweep = d["sweep"]
    if not isinstance(sweep, dict) or not sweep:
        raise ValueError(f"{where}: a mapping parameter -> list of values, e.g. {{tau: [0.1, 1, 10]}}")
    base = d.get("name") or d.get("kind")
    if not isinstance(base, str):
        raise ValueError(f"{where}: the entry needs a 'kind'")
    if "," in base:
        raise ValueError(f"{where}: the name of a swept learner cannot hold ',' (got {base!r}): its points are "
                         f"named '<name>,<param>=<value>'")
    params = list(sweep)
    from fairmiss.learners.adapter import LEARNER_KINDS

    kind = d.get("kind")
    fields = LEARNER_KINDS[kind].spec.model_fields if kind in LEARNER_KINDS else None
    for p in params:
        if fields is not None and p not in fields and p not in _FIXED:
            raise ValueError(f"{where}.{p}: '{kind}' has no parameter '{p}' (its parameters: "
                             f"{', '.join(sorted(k for k in fields if k not in _FIXED))})")
        if not isinstance(p, str) or p in _FIXED:
            raise ValueError(f"{where}.{p}: cannot be swept (a sweep varies the learner's own parameters, not "
                             f"{', '.join(_FIXED)})")
        if p in d:
            raise ValueError(f"{where}.{p}: also given outside the sweep; give it in one place")
        vals = sweep[p]
        if not isinstance(vals, list) or not vals:
            raise ValueError(f"{where}.{p}: a non-empty list of values")
        if any(isinstance(v, (dict, list)) or v is None for v in vals):
            raise ValueError(f"{where}.{p}: values must be numbers, text or booleans")
        if len({_value_text(v) for v in vals}) != len(vals):
            raise ValueError(f"{where}.{p}: a value is listed twice")
    rest = {k: v for k, v in d.items() if k != "sweep"}
    out = []
    for combo in itertools.product(*(sweep[p] for p in params)):
        name = base + "".join(f",{p}={_value_text(v)}" for p, v in zip(params, combo))
        out.append({**rest, **dict(zip(params, combo)), "name": name})
    return out
