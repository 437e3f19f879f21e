"""Architecture contracts: the library imports without Prefect/DVC; MLflow only in fairmiss.tracking."""

import subprocess
import sys

import pytest
from pathlib import Path

from conftest import ROOT


def test_import_linter_contracts():
    lint = Path(sys.executable).parent / "lint-imports"
    r = subprocess.run([str(lint), "--config", "pyproject.toml"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "KEPT" in r.stdout and "BROKEN" not in r.stdout


def test_library_imports_without_prefect_or_dvc():
    code = (
        "import sys, importlib\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('prefect', 'dvc', 'prefect_dask'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import warnings, pkgutil, fairmiss\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "for m in pkgutil.walk_packages(fairmiss.__path__, 'fairmiss.'):\n"
        "    importlib.import_module(m.name)\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('prefect', 'dvc')]\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_no_deserialisation_of_arbitrary_paths():
    """Models are never unpickled from user-given paths: the product code (library, flows, tasks) has no
    pickle / joblib / cloudpickle / dill / torch loads and no MLflow model loading; a user reloads a model
    through MLflow's own flavour API from the project's store. (XGBoost's ``load_model`` of its own JSON
    bytes in memory, in the equality-constrained trees, is not deserialisation of a file.)"""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    # no leading \b: an aliased module (``self._pickle.load(``) is caught too
    pattern = re.compile(r"(pickle|cloudpickle|joblib|dill|torch)\.loads?\(|mlflow\.\w+\.load_model\(|"
                         r"\bload_model\(\s*['\"/]")
    hits = [f"{p.relative_to(root)}:{i}: {line.strip()}"
            for d in ("src", "flows", "tasks") for p in (root / d).rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    # the one exception (``kind: mlflow_model``): fairmiss.tracking.load_logged_model loads a model
    # through MLflow's own flavour API, and only from a pinned runs:/ or models:/NAME/VERSION URI resolved in a
    # tracking store, never from a path or URL (refused before MLflow is called: checked below)
    def lines(rel: str) -> list[str]:
        return (root / rel).read_text().splitlines()

    models = "src/fairmiss/tracking/models.py"
    text = lines(models)
    start = next(i for i, line in enumerate(text, 1) if line.startswith("def load_logged_model("))
    end = next(i for i, line in enumerate(text, 1) if i > start and line.startswith(("def ", "class ", "_")))
    allowed = {f"{models}:{i}: {text[i - 1].strip()}" for i in range(start, end)}
    assert hits and set(hits) <= allowed, sorted(set(hits) - allowed)
    from fairmiss.tracking import ModelURIError, load_logged_model

    for uri in ("/etc/passwd", "file:///tmp/model", "mlruns/1/abc/artifacts/model", "https://example.org/m.pkl",
                "s3://bucket/model", "models:/m/latest"):
        with pytest.raises(ModelURIError):
            load_logged_model(uri, "sqlite:////nonexistent/mlflow.db")
    # the scanner does catch such a call
    assert pattern.search("model = pickle.load(open(path, 'rb'))")
    assert pattern.search("model = self._pickle.load(fh)")


def test_tracking_modules_stay_small():
    """``fairmiss.tracking`` is a package of modules a reader can hold in mind: each under 400 lines."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "src" / "fairmiss" / "tracking"
    sizes = {p.name: len(p.read_text().splitlines()) for p in root.glob("*.py")}
    assert {"store.py", "tracker.py", "models.py"} <= set(sizes), sizes
    assert max(sizes.values()) < 400, sizes


def test_flow_functions_stay_readable():
    """The flows read top to bottom (docs/development.md): no function in ``flows/`` over 80 lines, no function
    nested in another over 20; an optimisation is a named function of its own."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "flows"
    long, nested = [], []

    def visit(node, inside: bool, path: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = child.end_lineno - child.lineno + 1
                if n > 80:
                    long.append((path, child.name, n))
                if inside and n > 20:
                    nested.append((path, child.name, n))
                visit(child, True, path)
            else:
                visit(child, inside, path)

    for p in sorted(root.glob("*.py")):
        visit(ast.parse(p.read_text()), False, p.name)
    assert not long and not nested, (long, nested)
