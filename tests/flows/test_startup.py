"""Start-up imports: `fairmiss --help` imports neither scikit-learn, MLflow nor Prefect; loading a
config (what `validate` and the up-to-date check do) imports neither MLflow nor Prefect. Each check runs in a
fresh interpreter and reads ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

HEAVY = ("sklearn", "mlflow", "prefect")


def _loaded(code: str) -> list[str]:
    code += f"\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_help_imports_no_heavy_stack():
    code = ("import contextlib, io\nfrom flows.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n        main(['--help'])\n    except SystemExit as e:\n        assert e.code == 0\n"
            "assert 'server start|stop|status' in out.getvalue()")
    assert _loaded(code) == []


def test_bare_cli_import_imports_no_heavy_stack():
    assert _loaded("import flows.cli, flows.server, flows.fastcheck") == []


def test_validate_imports_neither_mlflow_nor_prefect():
    code = ("import contextlib, io\nfrom flows.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    assert main(['validate', 'params/compas_default.yaml']) == 0\n"
            "assert ': ok' in out.getvalue(), out.getvalue()\n"
            "from fairmiss.config import load_config\nload_config('params/compas_default.yaml')")
    loaded = _loaded(code)
    assert "mlflow" not in loaded and "prefect" not in loaded, loaded


def test_the_check_would_fail_on_a_heavy_import():
    """The oracle can fail: importing the flow module pulls Prefect and MLflow in."""
    loaded = _loaded("import flows.experiment")
    assert "prefect" in loaded and "mlflow" in loaded


def test_datasets_imports_neither_mlflow_nor_prefect():
    code = ("import contextlib, io\nfrom flows.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n    assert main(['datasets']) == 0\n"
            "assert 'compas' in out.getvalue()")
    loaded = _loaded(code)
    assert "mlflow" not in loaded and "prefect" not in loaded, loaded
