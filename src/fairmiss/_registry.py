"""A small registry of config kinds (a leaf module): ``kind`` -> spec class, build function and flags.

Each kind's spec is defined beside its builder (``fairmiss.learners.<method>``, ``fairmiss.impute.build``)
and registered there; :mod:`fairmiss.config` builds its discriminated unions from the registered specs in
a fixed, explicit order (the union order is part of the config's JSON schema, so it must not depend on
import order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Entry", "Registry"]


@dataclass(frozen=True)
class Entry:
    kind: str
    spec: type
    build: Callable[..., Any]
    flags: dict = field(default_factory=dict)


class Registry:
    """``kind`` -> :class:`Entry`. ``register`` refuses a kind twice."""

    def __init__(self, what: str):
        self.what = what
        self._entries: dict[str, Entry] = {}

    def register(self, kind: str, spec: type, build: Callable[..., Any], **flags) -> None:
        if kind in self._entries:
            raise ValueError(f"{self.what} kind {kind!r} registered twice")
        self._entries[kind] = Entry(kind, spec, build, dict(flags))

    def __getitem__(self, kind: str) -> Entry:
        return self._entries[kind]

    def __contains__(self, kind: object) -> bool:
        return kind in self._entries

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def kinds(self) -> list[str]:
        return list(self._entries)

    def builders(self) -> dict[str, Callable[..., Any]]:
        return {k: e.build for k, e in self._entries.items()}

    def with_flag(self, flag: str) -> set[str]:
        return {k for k, e in self._entries.items() if e.flags.get(flag)}

    def specs(self, order: list[type]) -> tuple[type, ...]:
        """The registered spec classes in the given explicit ``order`` (every registered spec exactly once)."""
        registered = {e.spec for e in self._entries.values()}
        if set(order) != registered or len(order) != len(registered):
            raise ValueError(f"{self.what} union order {[c.__name__ for c in order]} does not list every "
                             f"registered spec exactly once: {sorted(c.__name__ for c in registered)}")
        return tuple(order)
