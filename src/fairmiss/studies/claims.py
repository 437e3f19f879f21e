"""Claim hooks: a paper whose claims an ordinary experiment run can decide registers one hook here, and every
grid run asks each hook (:func:`decide_claims`). A hook gets the run's config, its cell results and the
processed dataset's name and returns a claims table (claim, statement, verdict, evidence) or ``None`` when the
run says nothing about that paper; the flow writes each table as ``<name>`` in the run's results, logs it to
the parent run and the report shows it. Adding a paper's claims is one module with one :func:`register_claims`
call in a module of :mod:`fairmiss.studies` (every module of the package is imported before the hooks are
asked, :func:`_load`), not an edit of the flow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["ClaimHook", "CLAIM_HOOKS", "register_claims", "decide_claims", "claim_sections"]


@dataclass(frozen=True)
class ClaimHook:
    name: str  # the file the claims table is written to, e.g. ``claims_000.csv``
    decide: Callable[[Any, list, str], Any]  # (cfg, results, dataset) -> DataFrame | None
    title: str  # the report section's heading (HTML)
    note: str = ""  # how the verdicts are decided (HTML, shown under the heading)


#: in registration order (the order the files are written and logged)
CLAIM_HOOKS: list[ClaimHook] = []


def register_claims(name: str, decide: Callable[[Any, list, str], Any], *, title: str, note: str = "") -> None:
    """Add a hook; ``name`` (a ``.csv`` file name) is refused twice. ``title`` and ``note`` head its section
    in the HTML report."""
    if not name.endswith(".csv") or "/" in name:
        raise ValueError(f"claims file {name!r}: a plain .csv file name")
    if any(h.name == name for h in CLAIM_HOOKS):
        raise ValueError(f"claims file {name!r} registered twice")
    CLAIM_HOOKS.append(ClaimHook(name, decide, title, note))


def decide_claims(cfg, results: list, dataset: str) -> dict:
    """``{file name: claims table}`` for every hook that has something to say about this run."""
    _load()

    out = {}
    for hook in CLAIM_HOOKS:
        table = hook.decide(cfg, results, dataset)
        if table is not None:
            out[hook.name] = table
    return out


def claim_sections() -> list[tuple[str, str, str]]:
    """``(file name, title, note)`` of every hook, for :func:`fairmiss.reporting.html.html_report`."""
    _load()

    return [(h.name, h.title, h.note) for h in CLAIM_HOOKS]


def _load() -> None:
    """Import every module of :mod:`fairmiss.studies`, so that each hook has registered itself."""
    from fairmiss._registry import discover

    discover("fairmiss.studies", skip=("claims",))
