"""The registry of missingness kinds (a leaf): every kind, built-in, added or from a plugin, is one module
that registers itself here, and :func:`~fairmiss.missingness.mechanisms.inject`,
:func:`~fairmiss.missingness.mechanisms.check_mask` and :func:`~fairmiss.missingness.mechanisms.masked_columns`
only look kinds up here.

``MISSINGNESS_KINDS.register(kind, Spec, build, **flags)``:

* ``Spec`` — a frozen pydantic model (:class:`fairmiss._spec._Strict`) with ``kind: Literal["<kind>"]``
  and, usually, ``name: SafeLabel``; it joins the config's ``missingness`` union
  (:data:`fairmiss.missingness.specs.MissingnessSpec`);
* ``build(X, kw, *, group, rng) -> (masked, mask)`` — the draw; ``kw`` is the spec dumped without its
  name and kind; every random draw comes from ``rng``, the experiment's seeded generator;
* ``check`` flag — the realised-rate gate, ``check(mask, kw, group) -> list of problems`` (``kw`` with its
  kind); the gate then checks, for every kind, that no other column was masked and that observed entries
  did not change;
* ``columns`` flag — ``columns(kw) -> list`` of the columns the kind may mask (never the group or the
  label); without it, the keys of ``kw["rates"]`` or ``kw["columns"]``;
* ``reads`` flag — ``reads(kw) -> list`` of the columns the kind reads to decide what to mask (not masked
  itself: the condition column of ``conditional``); the config loader checks they are features;
* ``needs`` flag — a tuple of ``"label"``, ``"test_rows"``, ``"original"``, ``"masked"``, ``"raw"``: ``inject``
  passes the label / test rows, the gate all four, as keyword arguments (without them they raise); ``raw``,
  the table's raw coding (:class:`~fairmiss.missingness._base.RawCoding`), reaches build and gate, ``None``
  when the table has none;
* ``resolve`` flag — ``resolve(kw) -> kw`` of another kind that draws and checks it (``preset`` resolves to
  ``mcar_group``);
* ``by_group`` flag — the kind configures rates per group.
"""

from __future__ import annotations

from fairmiss._registry import Registry

__all__ = ["MISSINGNESS_KINDS"]

#: ``kind`` -> spec, build function and flags (``check``, ``columns``, ``reads``, ``needs``, ``resolve``,
#: ``by_group``).
MISSINGNESS_KINDS = Registry("missingness")
