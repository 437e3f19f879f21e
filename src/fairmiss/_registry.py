"""A small registry of config kinds (a leaf module): ``kind`` -> spec class, build function and flags.

Each kind's spec is defined beside its builder (``fairmiss.learners.<method>``, ``fairmiss.impute.build``)
and registered there; each kind package's ``specs`` module (:mod:`fairmiss.missingness.specs`,
:mod:`fairmiss.impute.specs`, :mod:`fairmiss.learners.specs`) builds its discriminated union from the
registered specs in a fixed, explicit order (the union order is part of the config's JSON schema, so it
must not depend on import order).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Entry", "PluginError", "Registry", "discover", "load_plugins"]


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


class PluginError(ImportError):
    """An installed plugin (an entry point in a ``fairmiss.*`` group) whose module cannot be imported."""


def load_plugins(group: str) -> list[str]:
    """Import the module of every entry point in ``group`` (e.g. ``fairmiss.learners``) of the installed
    distributions, in entry-point-name order, so that each registers its kinds exactly like a built-in kind
    module. The entry point's value is a module (``my_pkg.learners``; an ``:attr`` part is ignored). Returns
    the imported module names. A plugin that fails to import raises :class:`PluginError` naming its
    distribution, entry point and the import error: never a silently missing kind."""
    from importlib.metadata import entry_points

    seen: dict[tuple[str, str], object] = {}
    for ep in entry_points(group=group):
        seen.setdefault((ep.name, ep.value), ep)  # the same distribution found twice on sys.path
    names = []
    for (name, value), ep in sorted(seen.items()):
        module = value.split(":", 1)[0].strip()
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - re-raised with the plugin named
            raise PluginError(f"fairmiss plugin {name!r} (entry point group {group!r}, distribution {dist!r}) "
                              f"failed to import {module!r}: {type(exc).__name__}: {exc}") from exc
        names.append(module)
    return names


def discover(package: str, *, skip: tuple[str, ...] = (), subpackage_module: str | None = None,
             entry_point_group: str | None = None) -> list[str]:
    """Import every kind module of ``package`` so that each registers itself: its top-level modules (but
    the names in ``skip``) and, with ``subpackage_module="spec"``, the ``spec`` module of each of its
    subpackages (a paper method's package keeps its spec and builder there); then, with
    ``entry_point_group``, the plugin modules of installed packages (:func:`load_plugins`). Returns the
    imported names: the built-in ones sorted, then the plugins'. An import error propagates: a broken kind
    module or plugin is an error, never a silently missing kind."""
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
    if entry_point_group is not None:
        names += load_plugins(entry_point_group)
    return names
