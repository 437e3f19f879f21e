"""`dvc repro` in a fresh clone: reproduces the committed dvc.lock, the same metrics as a direct
`fairmiss run`, and a second repro changes nothing (`dvc status` clean)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env, timeout=1800):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}: {r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_dvc_repro_fresh_clone(tmp_path, mirror):
    clone = tmp_path / "clone"
    _run(["git", "clone", "-q", str(ROOT), str(clone)], tmp_path, os.environ)
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"],
           "PYTHONPATH": f"{clone / 'src'}{os.pathsep}{clone}", "MLFLOW_TRACKING_URI": "",
           "FAIRMISS_DATA_MIRROR": str(mirror)}
    env.pop("MLFLOW_TRACKING_URI")
    dvc = [sys.executable, "-m", "dvc"]
    _run([sys.executable, "-m", "flows.cli", "ingest", "all"], clone, env)
    st = _run(dvc + ["status", "data.dvc"], clone, env)
    assert "changed" not in st, st  # raw files match data.dvc
    _run(dvc + ["repro"], clone, env)
    lock_diff = subprocess.run(["git", "diff", "--stat", "dvc.lock"], cwd=clone, capture_output=True, text=True).stdout
    assert lock_diff == "", f"dvc repro changed the committed dvc.lock:\n{lock_diff}"
    first = (clone / "results" / "compas_default" / "metrics.json").read_bytes()
    # a second repro is a no-op
    out = _run(dvc + ["repro"], clone, env)
    assert "didn't change" in out or "up to date" in out.lower()
    assert "up to date" in _run(dvc + ["status"], clone, env).lower()
    # direct run of the same config gives identical metrics
    _run([sys.executable, "-m", "flows.cli", "run", "params/compas_default.yaml", "--results-dir", "direct"], clone, env)
    assert (clone / "direct" / "compas_default" / "metrics.json").read_bytes() == first
