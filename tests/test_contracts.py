"""Architecture contracts: the library imports without Prefect/DVC; MLflow only in fairmiss.tracking."""

import subprocess
import sys
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
        "import fairmiss, fairmiss.pipeline, fairmiss.config, fairmiss.data, fairmiss.metrics, fairmiss.learners\n"
        "import fairmiss.missingness, fairmiss.impute, fairmiss.tracking, fairmiss.solver\n"
        "import pkgutil, fairmiss.models\n"
        "for m in pkgutil.iter_modules(fairmiss.models.__path__):\n"
        "    importlib.import_module('fairmiss.models.' + m.name)\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('prefect', 'dvc')]\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
