"""`dvc repro` in a fresh clone (with the data mirror):

* raw files fetched by `fairmiss ingest all` match `data.dvc`;
* every stage's inputs hash exactly as in the committed `dvc.lock`, and the processed tables are
  bit-identical to the committed ones;
* the metrics equal the committed metrics files (tracked by git, `cache: false`) — bit-identical on
  this machine kind; compared to 1e-9 so that another CPU's last-bit BLAS differences are not
  mistaken for a broken pipeline;
* a second `dvc repro` does nothing and `dvc status` is clean;
* a direct `fairmiss run` of the default config writes byte-identical metrics."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env, timeout=3600):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}: {r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _close(a, b, path=""):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys differ"
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, float) or isinstance(b, float):
        assert (a is None and b is None) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a} != {b}"


def test_dvc_repro_fresh_clone(tmp_path, mirror):
    clone = tmp_path / "clone"
    _run(["git", "clone", "-q", str(ROOT), str(clone)], tmp_path, os.environ)
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update({"PATH": bindir + os.pathsep + os.environ["PATH"], "PYTHONPATH": f"{clone / 'src'}{os.pathsep}{clone}",
                "FAIRMISS_DATA_MIRROR": str(mirror)})
    dvc = [sys.executable, "-m", "dvc"]
    committed_lock = yaml.safe_load((clone / "dvc.lock").read_text())["stages"]
    metric_files = sorted(str(p.relative_to(clone)) for p in (clone / "results").glob("*/metrics.json"))
    assert len(metric_files) >= 5, metric_files
    committed_metrics = {m: json.loads((clone / m).read_text()) for m in metric_files}

    _run([sys.executable, "-m", "flows.cli", "ingest", "all"], clone, env)
    # a fresh clone has no DVC cache: record the fetched raw files and check data.dvc did not change,
    # i.e. they are exactly the versioned ones
    _run(dvc + ["commit", "-f", "data.dvc"], clone, env)
    diff = subprocess.run(["git", "diff", "--stat", "data.dvc"], cwd=clone, capture_output=True, text=True).stdout
    assert diff == "", f"raw files differ from data.dvc:\n{diff}"
    # --force: the committed metrics files already match dvc.lock, so plain `repro` would rightly skip
    # the experiment stages; forcing recomputes everything from the raw files.
    _run(dvc + ["repro", "--force"], clone, env)

    new_lock = yaml.safe_load((clone / "dvc.lock").read_text())["stages"]
    assert set(new_lock) == set(committed_lock)
    for stage, entry in committed_lock.items():
        for key in ("deps", "params"):
            assert new_lock[stage].get(key) == entry.get(key), f"{stage}: {key} differ from the committed dvc.lock"
        if stage.startswith("prepare"):
            assert new_lock[stage]["outs"] == entry["outs"], f"{stage}: processed data differ"
    for m, old in committed_metrics.items():
        _close(json.loads((clone / m).read_text()), old, m)

    out = _run(dvc + ["repro"], clone, env)
    assert "didn't change" in out or "up to date" in out.lower(), out[-2000:]
    assert "up to date" in _run(dvc + ["status"], clone, env).lower()

    first = (clone / "results" / "compas_default" / "metrics.json").read_bytes()
    # a fresh tracking store, so that the direct run recomputes instead of resuming from the repro's runs
    direct_env = {**env, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'direct.db'}"}
    _run([sys.executable, "-m", "flows.cli", "run", "params/compas_default.yaml", "--results-dir", "direct"], clone,
         direct_env)
    assert (clone / "direct" / "compas_default" / "metrics.json").read_bytes() == first
