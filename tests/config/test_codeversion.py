"""Cache keys and fingerprints hash the code that computes, never outputs."""

from __future__ import annotations

import subprocess

from conftest import ROOT

from fairmiss.codeversion import code_version, hash_sources, source_roots


def test_this_process_hashes_library_flows_and_tasks():
    roots = source_roots()
    assert roots[:1] == [ROOT / "src" / "fairmiss"] and ROOT / "flows" in roots and ROOT / "tasks" in roots
    assert code_version() == hash_sources(roots) and code_version().startswith("src-")


def test_a_namespace_directory_named_like_a_package_is_not_hashed(tmp_path, monkeypatch):
    """pytest puts ``tests/`` on ``sys.path`` (its rootdir conftest), and ``tests/flows`` has no ``__init__.py``:
    where the repository root is not on ``sys.path`` (the ``pytest`` script, or ``python -m pytest`` from another
    directory) and the packages come from an editable install, the path finder returned that namespace directory
    as ``flows`` and the code version hashed the tests. Here: a namespace ``flows`` / ``tasks`` ahead of
    everything, the root off ``sys.path``, and the packages only reachable through a finder after the path
    finder, as an editable install's is."""
    import importlib.machinery
    import importlib.util
    import sys

    from pathlib import Path

    for pkg in ("flows", "tasks"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "decoy.py").write_text("x = 1\n")
        monkeypatch.delitem(sys.modules, pkg, raising=False)

    class Editable:  # like setuptools' editable finder: top-level names mapped to directories
        @staticmethod
        def find_spec(fullname, path=None, target=None):
            if fullname in ("flows", "tasks"):
                return importlib.machinery.PathFinder.find_spec(fullname, [str(ROOT)])
            return None

    monkeypatch.setattr(sys, "path", [str(tmp_path)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT])
    monkeypatch.setattr(sys, "meta_path", [importlib.machinery.PathFinder, Editable])
    importlib.invalidate_caches()
    assert importlib.util.find_spec("flows").origin is None  # the namespace directory comes first
    roots = source_roots()
    assert roots[1:] == [ROOT / "flows", ROOT / "tasks"], roots


def test_outputs_do_not_change_the_code_version_sources_do(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], check=True, timeout=300)
    roots = [clone / "src" / "fairmiss", clone / "flows", clone / "tasks"]
    v0 = hash_sources(roots)
    # what running a study does: rewrite tracked results, write processed data, reports, a store
    for m in (clone / "results").glob("*/metrics.json"):
        m.write_text(m.read_text() + "\n")
    (clone / "processed").mkdir(exist_ok=True)
    (clone / "processed" / "x.parquet").write_bytes(b"x")
    (clone / "mlruns").mkdir(exist_ok=True)
    (clone / "mlruns" / "mlflow.db").write_bytes(b"x")
    (clone / "README.md").write_text("edited\n")
    (clone / "params" / "compas_default.yaml").write_text("# a config enters keys through its own hash\n")
    assert hash_sources(roots) == v0
    # a change of the library, a flow or a task is a new code version
    for rel in ("src/fairmiss/metrics/__init__.py", "flows/experiment.py", "tasks/experiment.py"):
        f = clone / rel
        original = f.read_text()
        f.write_text(original + "\n# changed\n")
        assert hash_sources(roots) != v0, rel
        f.write_text(original)
    assert hash_sources(roots) == v0


def test_the_cell_code_version_leaves_out_the_cli_console_and_report(tmp_path):
    """Cells are cached under the code a cell runs: the library without tracking, reporting and the claim hooks, and tasks.
    Editing the command line, the flow's console or the report keeps every cached cell; editing a learner,
    a metric or a task does not."""
    from fairmiss.codeversion import NOT_CELL_CODE

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], check=True, timeout=300)
    lib = clone / "src" / "fairmiss"
    roots = [lib, clone / "tasks"]
    exclude = {lib: NOT_CELL_CODE}
    v0 = hash_sources(roots, exclude=exclude)
    for rel in ("flows/cli.py", "flows/experiment.py", "src/fairmiss/reporting/html.py",
                "src/fairmiss/tracking/tracker.py", "src/fairmiss/studies/feng2023_verdicts.py",
                "src/fairmiss/studies/claims.py"):
        f = clone / rel
        f.write_text(f.read_text() + "\n# changed\n")
    assert hash_sources(roots, exclude=exclude) == v0
    for rel in ("src/fairmiss/learners/baselines.py", "src/fairmiss/metrics/rates.py", "tasks/experiment.py",
                "src/fairmiss/reporting_extra.py", "src/fairmiss/studies/p001_sim.py"):  # a study's computing module counts  # a module *named* like an excluded package still counts
        f = clone / rel
        f.write_text((f.read_text() if f.exists() else "") + "\n# changed\n")
        assert hash_sources(roots, exclude=exclude) != v0, rel
        v0 = hash_sources(roots, exclude=exclude)


def test_this_process_caches_cells_under_the_cell_code_version():
    from fairmiss.codeversion import NOT_CELL_CODE, cell_code_version

    lib = ROOT / "src" / "fairmiss"
    assert cell_code_version() == hash_sources([lib, ROOT / "tasks"], exclude={lib: NOT_CELL_CODE})
    assert cell_code_version() != code_version()
