"""The registry of missingness kinds (a leaf, so that :func:`fairmiss.missingness.mechanisms.inject` can
dispatch to added kinds without importing the specs).

Built-in kinds are registered in :mod:`fairmiss.missingness.specs` with ``inject`` as their build function.
An added kind registers ``build(X, kw, *, group, rng) -> (masked, mask)`` (``kw`` is the spec dumped
without its name) and, for the realised-rate gate, a ``check`` flag: ``check(mask, kw, group) -> list of
problems``. Its columns are read from ``kw["rates"]`` or ``kw["columns"]`` like the built-ins', or from
its ``columns`` flag (``columns(kw) -> list``, for a kind nesting other specs). A ``needs`` flag (a tuple of
``"label"``, ``"test_rows"``, ``"original"``, ``"masked"``) asks :func:`~fairmiss.missingness.mechanisms.inject`
(label, test rows) and the gate (all four) for that context as keyword arguments; without it they raise.
"""

from __future__ import annotations

from fairmiss._registry import Registry

__all__ = ["MISSINGNESS_KINDS"]

#: ``kind`` -> spec, build function and flags (``by_group``: rates per group; ``check``: the gate).
MISSINGNESS_KINDS = Registry("missingness")
