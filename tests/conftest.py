"""Shared fixtures.

Real-data tests read the raw files from ``FAIRMISS_DATA_MIRROR`` (CI: ``../shared/data/raw``).
When the mirror is absent they FAIL with a message, never skip: a green run must mean the
real files were checked.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the same OpenBLAS kernel as the flows use (fairmiss.cpu), set before any test imports numpy
from fairmiss.cpu import pin_blas_kernel  # noqa: E402

pin_blas_kernel()
os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")
os.environ["FAIRMISS_PREFECT_SERVER"] = "ephemeral"  # no test leaves a background Prefect server (flows.server)
# receipts of the up-to-date check (flows.fastcheck) go to a directory of this test session, not ~/.cache
os.environ["FAIRMISS_CACHE_DIR"] = tempfile.mkdtemp(prefix="fairmiss-test-cache-")
atexit.register(shutil.rmtree, os.environ["FAIRMISS_CACHE_DIR"], True)
if "FAIRMISS_DATA_MIRROR" not in os.environ and (ROOT.parent / "shared" / "data" / "raw").is_dir():
    os.environ["FAIRMISS_DATA_MIRROR"] = str(ROOT.parent / "shared" / "data" / "raw")


def cpu_variants(blas: bool = True) -> list[dict]:
    """Environments that make numpy / OpenBLAS take other code paths on this CPU: numpy's
    dispatch with its optional SIMD levels disabled (down to its baseline, as on an older CPU), with only
    the AVX-512 ones disabled when this CPU has them, and (``blas``) OpenBLAS kernels of older x86 cores,
    which run on any x86-64 CPU. The first entry is the unchanged environment."""
    from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__

    optional = [f for f in __cpu_dispatch__ if __cpu_features__.get(f) and f not in __cpu_baseline__]
    variants = [{}]
    if optional:
        variants.append({"NPY_DISABLE_CPU_FEATURES": " ".join(optional)})
    avx512 = [f for f in optional if f.startswith("AVX512") or f == "X86_V4"]
    if avx512 and len(avx512) < len(optional):
        variants.append({"NPY_DISABLE_CPU_FEATURES": " ".join(avx512)})
    if blas:
        variants += [{"OPENBLAS_CORETYPE": core} for core in ("Prescott", "Sandybridge", "Haswell")]
    return variants


@pytest.fixture(scope="session")
def mirror() -> Path:
    m = os.environ.get("FAIRMISS_DATA_MIRROR")
    if not m or not Path(m).is_dir():
        pytest.fail("real-data test: set FAIRMISS_DATA_MIRROR to a directory with the raw files (CI: ../shared/data/raw)")
    return Path(m)


@pytest.fixture
def raw_dir(tmp_path, mirror) -> Path:
    d = tmp_path / "raw"
    d.mkdir()
    return d


@pytest.fixture
def compas_csv(mirror, tmp_path) -> Path:
    p = tmp_path / "compas-scores-two-years.csv"
    shutil.copyfile(mirror / "compas-scores-two-years.csv", p)
    return p


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    import requests

    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server process exited with {proc.returncode} before {url} answered")
        try:
            if requests.get(url, timeout=2).status_code < 500:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def small_config(tmp_path: Path, **over) -> Path:
    """A 2-split COMPAS config with its own tracking store under tmp_path."""
    import yaml

    cfg = {
        "experiment": "compas_small",
        "seed": 7,
        "dataset": {"name": "compas_000"},
        "split": {"test_size": 0.3, "n_splits": 2},
        "missingness": [{"kind": "preset", "preset": "000_table3_compas", "name": "table3"}],
        "imputers": [{"kind": "mean"}, {"kind": "knn"}],
        "learners": [{"kind": "decision_tree", "name": "tree_d3", "max_depth": 3}],
        "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"},
        "execution": {"max_workers": 2},
    }
    cfg.update(over)
    tmp_path.mkdir(parents=True, exist_ok=True)
    p = tmp_path / "small.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def run_cli(*args, cwd=None, env=None, timeout=600):
    e = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=cwd or ROOT, env=e,
                          capture_output=True, text=True, timeout=timeout)
