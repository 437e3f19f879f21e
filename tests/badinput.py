"""Harness for bad-input tests: run the ``fairmiss`` command line on one malformed input in a scratch
project and check the promise of docs/reliability.md ("Bad input"):

* exit status 2 (or the status the case names);
* exactly one line on stderr starting ``fairmiss: error:``, and it contains every expected substring
  (the file, key or column the case is about);
* no ``Traceback`` anywhere in stdout/stderr (the command runs without ``-v``);
* no new file anywhere outside the allowed output roots (``mlruns/`` always; ``reports/`` for cases that
  reach the validation gate; ``data/raw/`` for cases that fetch raw files) — the whole scratch tree is
  snapshotted before and after, including its parents inside ``tmp_path`` so that path traversal
  (``../../x``) is seen;
* no MLflow run left RUNNING in the scratch store.

The scratch project lives four directories below ``tmp_path`` (``tmp_path/a/b/c/proj``): it holds a copy
of ``params/`` and ``data/raw/`` with symbolic links to the mirror's raw files, and is the working
directory of the command, so default paths (``results/``, ``processed/``, ``mlruns/``, ``reports/``,
``params/studies``) all resolve inside it. ``MLFLOW_TRACKING_URI`` and ``FAIRMISS_RAW_DIR`` are removed
from the environment; ``FAIRMISS_DATA_MIRROR`` is kept.

Cases are built from the project's real configs (:func:`load_params`) and real raw files
(:func:`raw_bytes`) by mutation. Use::

    from badinput import BadInput, check

    CASES = [BadInput("experiment-dotdot", ["run", "params/x.yaml"], "experiment",
                      files={"params/x.yaml": mutate("compas_default.yaml", experiment="..")})]

    @pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
    def test_bad_input(case, tmp_path):
        check(case, tmp_path)
"""

from __future__ import annotations

import copy
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params"
ERROR_PREFIX = "fairmiss: error:"

__all__ = ["BadInput", "Outcome", "check", "run_case", "assert_rejected", "make_project", "load_params",
           "mutate", "dump", "raw_bytes", "mirror_dir", "ROOT", "ERROR_PREFIX"]


def mirror_dir() -> Path:
    m = os.environ.get("FAIRMISS_DATA_MIRROR") or str(ROOT.parent / "shared" / "data" / "raw")
    if not Path(m).is_dir():
        raise AssertionError("bad-input tests need FAIRMISS_DATA_MIRROR (CI: ../shared/data/raw)")
    return Path(m)


def load_params(rel: str) -> dict:
    """A real config of the project as a dict (``"compas_default.yaml"``, ``"studies/004_table9_compas.yaml"``)."""
    return yaml.safe_load((PARAMS / rel).read_text(encoding="utf-8"))


def dump(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _set(d: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    for k in keys[:-1]:
        k = int(k) if isinstance(d, list) else k
        d = d[k]
    last = int(keys[-1]) if isinstance(d, list) else keys[-1]
    if value is _DELETE:
        del d[last]
    else:
        d[last] = value


_DELETE = object()


def mutate(rel: str, _small: bool = False, **changes) -> str:
    """YAML text of the real config ``params/<rel>`` with dotted keys changed (``split__n_splits=2`` or
    ``{"split.n_splits": 2}`` via :func:`mutate_keys`). ``_small``: 1 split, first imputer/learner only, and
    no model logging, so that a case that does run the flow is short."""
    return mutate_keys(rel, {k.replace("__", "."): v for k, v in changes.items()}, small=_small)


def mutate_keys(rel: str, changes: dict, *, small: bool = False) -> str:
    d = copy.deepcopy(load_params(rel))
    d.pop("quick", None)
    if small:
        d.setdefault("split", {})["n_splits"] = 1
        d["imputers"] = d["imputers"][:1]
        d["learners"] = [{k: v for k, v in d["learners"][0].items() if k != "imputers"}]
        d.setdefault("tracking", {})["log_models"] = False
        d.setdefault("execution", {})["max_workers"] = 1
    for k, v in changes.items():
        _set(d, k, v)
    return dump(d)


DELETE = _DELETE


def raw_bytes(filename: str) -> bytes:
    return (mirror_dir() / filename).read_bytes()


@dataclass
class BadInput:
    """One malformed input. ``argv`` runs in the scratch project (relative paths resolve there);
    ``files`` maps paths relative to the project to text, bytes, or ``None`` for a directory; ``setup``
    can do anything else to the project (gets its path). ``expect``: substrings the error line must
    contain. ``allow``: top-level names (relative to the project) where new files are allowed besides
    ``mlruns``."""

    id: str
    argv: list[str]
    expect: str | list[str]
    files: dict[str, str | bytes | None] = field(default_factory=dict)
    env: dict[str, str | None] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None
    allow: tuple[str, ...] = ()
    returncode: int = 2
    timeout: float = 300


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    project: Path
    new_files: list[str]
    running_runs: int

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith(ERROR_PREFIX)]


def make_project(tmp_path: Path) -> Path:
    proj = tmp_path / "a" / "b" / "c" / "proj"
    proj.mkdir(parents=True)
    shutil.copytree(PARAMS, proj / "params")
    raw = proj / "data" / "raw"
    raw.mkdir(parents=True)
    for f in mirror_dir().iterdir():
        if f.is_file() and f.name != "SHA256SUMS":
            (raw / f.name).symlink_to(f)
    return proj


def _snapshot(root: Path) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def _running(proj: Path) -> int:
    n = 0
    for db in proj.rglob("mlflow.db"):
        with sqlite3.connect(db) as c:
            try:
                n += c.execute("select count(*) from runs where status='RUNNING'").fetchone()[0]
            except sqlite3.OperationalError:
                pass
    return n


def run_case(case: BadInput, tmp_path: Path, *, verbose: bool = False) -> Outcome:
    proj = make_project(tmp_path)
    for rel, content in case.files.items():
        p = proj / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            p.mkdir(exist_ok=True)
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    if case.setup is not None:
        case.setup(proj)
    before = _snapshot(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FAIRMISS_RAW_DIR",
                                                             "PREFECT_API_URL")}
    env["FAIRMISS_DATA_MIRROR"] = str(mirror_dir())
    for k, v in case.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v.replace("{project}", str(proj))
    argv = [sys.executable, "-m", "flows.cli", *(["-v"] if verbose else []), *case.argv]
    try:
        r = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True, timeout=case.timeout)
    finally:
        for p in proj.rglob("*"):  # undo chmods of the case so that pytest can clean up
            if not p.is_symlink():
                try:
                    p.chmod(p.stat().st_mode | 0o700)
                except OSError:
                    pass
    after = _snapshot(tmp_path)
    prefix = os.path.relpath(proj, tmp_path)
    allowed = ("mlruns", *case.allow)
    new = sorted(f for f in after - before
                 if not any(f == os.path.join(prefix, a) or f.startswith(os.path.join(prefix, a) + os.sep)
                            for a in allowed))
    return Outcome(r.returncode, r.stdout, r.stderr, proj, new, _running(proj))


def assert_rejected(case: BadInput, out: Outcome) -> None:
    ctx = f"\n--- stdout ---\n{out.stdout[-3000:]}\n--- stderr ---\n{out.stderr[-5000:]}"
    assert out.returncode == case.returncode, f"exit {out.returncode}, expected {case.returncode}{ctx}"
    lines = out.error_lines
    assert len(lines) == 1, f"{len(lines)} '{ERROR_PREFIX}' lines on stderr, expected exactly 1{ctx}"
    line = lines[0]
    for s in [case.expect] if isinstance(case.expect, str) else case.expect:
        assert s in line, f"error line does not name {s!r}: {line}{ctx}"
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, f"traceback without -v{ctx}"
    noisy = [ln for ln in out.stderr.splitlines() if "| ERROR" in ln or "| CRITICAL" in ln]
    assert not noisy, f"Prefect error logging on the console: {noisy[:3]}{ctx}"
    assert not out.new_files, f"files written outside the allowed roots: {out.new_files[:20]}{ctx}"
    assert out.running_runs == 0, f"{out.running_runs} MLflow run(s) left RUNNING{ctx}"


def check(case: BadInput, tmp_path: Path) -> Outcome:
    out = run_case(case, tmp_path)
    assert_rejected(case, out)
    return out
