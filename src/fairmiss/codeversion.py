"""The version of the code that computes, as a content hash.

Cell cache keys and run fingerprints used ``git rev-parse HEAD`` plus a hash of ``git diff``. That
made every *output* part of the key: running any study rewrites a tracked ``results/*/metrics.json``,
the tree became "dirty", and every other study's cached cells were recomputed (a quick German study
took 73 s instead of ~1 s after an unrelated 002 run); it also failed outside a git checkout.

:func:`code_version` hashes only what runs: the Python sources of the ``fairmiss`` library and of the
``flows`` and ``tasks`` packages (sorted relative paths and bytes), and the versions of the numerical
packages the results depend on. Outputs (``results/``, ``processed/``, ``mlruns/``), docs, tests and
configs are not part of it (a config enters every key through its own hash). The git commit is still
recorded as an informational tag (``git.commit``), never as a key.

:func:`cell_code_version` is the narrower hash of the code a *cell* runs, for the cell cache keys and the kept
built tables: the library without the modules that only record, show and judge results (:data:`NOT_CELL_CODE`:
``fairmiss.tracking``, ``fairmiss.reporting``, ``fairmiss.bench`` and the claim hooks of ``fairmiss.studies``)
plus the ``tasks`` package; not ``flows`` (the command line, servers, console, the flow's orchestration). Editing a command's help text, the console or the report no longer
recomputes every cached cell; a run's fingerprint (is the whole run up to date?) still uses :func:`code_version`,
because the flow writes the outputs.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["code_version", "cell_code_version", "hash_sources", "source_roots", "RESULT_PACKAGES", "NOT_CELL_CODE"]

#: installed packages whose version changes what a cell computes
RESULT_PACKAGES = ("numpy", "scipy", "pandas", "scikit-learn", "fairlearn", "xgboost-cpu", "xgboost", "pyomo",
                   "highspy", "pot")


#: subpackages (and modules, by relative path) of fairmiss that record or show results and never change what a
#: cell computes (``bench``: suites expand into configs, whose cells carry their own keys, and leaderboards are
#: built from finished cells; the claim hooks of ``studies`` and their settings ``config/claims.py`` decide a
#: paper's statements from a run's finished cells, so a study's cached cells survive an edit of a claim rule and
#: ``--force`` re-decides on them)
NOT_CELL_CODE = ("tracking", "reporting", "bench", "studies/claims.py", "studies/feng2023_claims.py",
                 "studies/feng2023_verdicts.py", "studies/p000_claims.py", "config/claims.py")


def _regular(spec) -> bool:
    """A regular package's spec (a directory with ``__init__.py``), not a namespace portion."""
    return spec is not None and spec.origin not in (None, "namespace") and bool(spec.submodule_search_locations)


def _package_spec(pkg: str):
    """The spec of the regular package ``pkg`` as this process imports it, or None. A directory of the same name
    without ``__init__.py`` on ``sys.path`` (e.g. ``tests/flows``, put there by pytest's rootdir conftest) is a
    namespace portion: the path finder returns it before the finders after it (an editable install's) are asked,
    although the package's modules load from the regular package. Such a spec is passed over: every meta-path
    finder is asked in turn, and the first regular package is taken."""
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    if spec is None or _regular(spec):
        return spec
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            got = find(pkg, None)
        except (ImportError, ValueError, TypeError):
            continue
        if _regular(got):
            return got
    return None


def source_roots() -> list[Path]:
    """Directories of the packages whose sources are hashed: fairmiss, and flows / tasks when importable as
    regular packages (a namespace directory of the same name is not the package; see :func:`_package_spec`)."""
    roots = [Path(__file__).resolve().parent]
    for pkg in ("flows", "tasks"):
        spec = _package_spec(pkg)
        if spec is not None:
            roots.extend(Path(p).resolve() for p in spec.submodule_search_locations)
    return roots


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``src-<16 hex>``: a hash of the sources that run and of the numerical packages' versions.
    Read once per process (the code a process runs is what it imported at start)."""
    return hash_sources(source_roots())


@functools.lru_cache(maxsize=1)
def cell_code_version() -> str:
    """``src-<16 hex>`` over the code a cell runs: ``fairmiss`` without :data:`NOT_CELL_CODE`, and ``tasks``."""
    roots = [r for r in source_roots() if r.name != "flows"]
    return hash_sources(roots, exclude={roots[0]: NOT_CELL_CODE})


def hash_sources(roots: list[Path], exclude: dict[Path, tuple[str, ...]] | None = None) -> str:
    """``src-<16 hex>`` over the ``*.py`` files under ``roots`` and :data:`RESULT_PACKAGES`' versions;
    ``exclude`` maps a root to what is left out under it: subdirectory names, or modules by relative path
    (``studies/claims.py``)."""
    h = hashlib.sha256()
    for root in roots:
        skip = (exclude or {}).get(root, ())
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).parts
            if "__pycache__" in path.parts or (len(rel) > 1 and (rel[0] in skip or "/".join(rel) in skip)):
                continue
            h.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    for pkg in RESULT_PACKAGES:
        try:
            h.update(f"{pkg}=={version(pkg)}\0".encode())
        except PackageNotFoundError:
            pass
    return "src-" + h.hexdigest()[:16]
