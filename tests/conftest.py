"""Shared fixtures.

Real-data tests read the raw files from ``FAIRMISS_DATA_MIRROR`` (CI: ``../shared/data/raw``).
When the mirror is absent they FAIL with a message, never skip: a green run must mean the
real files were checked.
"""

from __future__ import annotations

import atexit
import contextlib
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


@pytest.fixture
def variants_forgotten():
    """Forget the dataset variants a test registers in this process (an own-data config or a regrouped built-in
    registers its variant on first use), so later tests (e.g. the generated kinds page) see the registry as a
    fresh process does. Used by ``pytestmark = pytest.mark.usefixtures("variants_forgotten")``."""
    from fairmiss.datasets import registry

    before = dict(registry._REGISTRY)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(before)


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


def mlflow_server(backend_uri: str, port: int, cwd, *args: str, env: dict | None = None,
                  start_new_session: bool = False) -> subprocess.Popen:
    """A real ``mlflow server`` on 127.0.0.1:``port`` for one test: one worker and no background job runners
    (MLflow's GenAI job queue, unused by tracking), as ``fairmiss ui`` runs it — it answers in ~11-12 s instead
    of ~26-29 s with the job runners on (one worker each, side by side on a busy 2-core machine). ``args`` are
    more server options; the caller waits for ``/health`` and stops the process."""
    return subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend_uri, "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1", *args],
        cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=start_new_session,
        env={**(os.environ if env is None else env), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})


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


# --- one Prefect server for the test session ------------------------------------------------------------------
# A flow that a test starts in a subprocess would otherwise start a temporary Prefect server of its own: a
# one-cell `fairmiss run` took 46 s with it and 25 s against a running server (mean of two each, same run, on a
# loaded 2-core machine). The session starts the product's own local server (`fairmiss server start`, with a
# state directory and a port of its own) in the background as it begins; from the first test after it answers,
# PREFECT_API_URL points the flows that tests start at it. Until then, and for tests that drop PREFECT_API_URL
# from their environment (those about the temporary server or a server of their own), flows use the temporary
# server as before. The session stops it at its end. Sessions of fewer than 30 tests (a file or two while
# working) do without it; FAIRMISS_TEST_PREFECT_SERVER=0 turns it off.
_SESSION_SERVER: dict = {}


def pytest_collection_finish(session):
    if os.environ.get("FAIRMISS_TEST_PREFECT_SERVER", "1") == "0" or os.environ.get("PREFECT_API_URL") \
            or len(session.items) < 30:
        return
    state = tempfile.mkdtemp(prefix="fairmiss-test-server-")
    env = {**os.environ, "FAIRMISS_STATE_DIR": state, "PREFECT_SERVER_UI_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "server", "start", "--no-mlflow", "--port",
                             str(free_port())],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _SESSION_SERVER.update(proc=proc, env=env, state=state)
    import signal

    def _interrupt(signum, frame):  # a SIGTERMed session ends as after Ctrl-C: pytest_sessionfinish stops the server
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def pytest_runtest_setup(item):
    proc = _SESSION_SERVER.get("proc")
    if proc is None or "api_url" in _SESSION_SERVER or proc.poll() is None:
        return
    import json

    try:
        api_url = json.loads((Path(_SESSION_SERVER["state"]) / "server.json").read_text())["api_url"]
    except (OSError, ValueError, KeyError):
        api_url = None
    _SESSION_SERVER["api_url"] = api_url
    if proc.returncode == 0 and api_url:
        os.environ["PREFECT_API_URL"] = api_url
    else:  # not fatal: the flows keep using temporary servers (slower)
        sys.stderr.write(f"\nthe test session's Prefect server did not start (exit {proc.returncode}): "
                         f"{(proc.stdout.read() if proc.stdout else '')[-1500:]}\n")


def pytest_sessionfinish(session, exitstatus):
    proc = _SESSION_SERVER.pop("proc", None)
    if proc is None:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=180)
    if proc.stdout is not None:
        proc.stdout.close()
    subprocess.run([sys.executable, "-m", "flows.cli", "server", "stop", "--force"], cwd=ROOT, env=_SESSION_SERVER["env"],
                   capture_output=True, timeout=120)
    if os.environ.get("PREFECT_API_URL") == _SESSION_SERVER.get("api_url"):
        os.environ.pop("PREFECT_API_URL", None)
    shutil.rmtree(_SESSION_SERVER["state"], ignore_errors=True)
