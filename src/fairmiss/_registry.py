"""A small registry of config kinds (a leaf module): ``kind`` -> spec class, build function and flags.

Each kind's spec is defined beside its builder (``fairmiss.learners.<method>``, ``fairmiss.impute.build``)
and registered there; :mod:`fairmiss.config` builds its discriminated unions from the registered specs in
a fixed, explicit order (the union order is part of the config's JSON schema, so it must not depend on
import order).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Entry", "Registry", "discover"]


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
        """The registered spec classes: the built-in ones in the given explicit ``order`` (the union order
        before the registry, kept so the JSON schema does not move), then every other registered spec
        (added by a new kind module or a plugin) sorted by its kind name. Every registered spec appears
        exactly once; ``order`` must list registered specs only, each once."""
        registered = []
        for e in self._entries.values():
            if e.spec not in registered:
                registered.append(e.spec)
        unknown = [c.__name__ for c in order if c not in registered]
        if unknown or len(set(order)) != len(order):
            raise ValueError(f"{self.what} union order {[c.__name__ for c in order]} lists unregistered or "
                             f"repeated specs: {unknown}")
        extra = sorted((c for c in registered if c not in order),
                       key=lambda c: min(k for k, e in self._entries.items() if e.spec is c))
        return tuple(order) + tuple(extra)


def discover(package: str, *, skip: tuple[str, ...] = (), subpackage_module: str | None = None) -> list[str]:
    """Import every kind module of ``package`` so that each registers itself: its top-level modules (but
    the names in ``skip``) and, with ``subpackage_module="spec"``, the ``spec`` module of each of its
    subpackages (a paper method's package keeps its spec and builder there). Returns the imported names,
    sorted. An import error propagates: a broken kind module is an error, never a silently missing kind."""
    pkg = importlib.import_module(package)
    names = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in skip:
            continue
        if info.ispkg:
            if subpackage_module is None:
                continue
            sub = f"{package}.{info.name}"
            subpkg = importlib.import_module(sub)
            if not any(m.name == subpackage_module for m in pkgutil.iter_modules(subpkg.__path__)):
                continue
            name = f"{sub}.{subpackage_module}"
        else:
            name = f"{package}.{info.name}"
        importlib.import_module(name)
        names.append(name)
    return names
