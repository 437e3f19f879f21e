"""The README's "Your own data" block runs as written, line by line, in a directory of its own (the checkout's
``.venv`` and ``examples/`` linked in): a change that breaks what a newcomer types first fails here. The
``$EDITOR`` line is the reader's own step and is skipped; every other line must exit 0."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def _bash_blocks() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    return [[ln for ln in b.splitlines() if ln.strip()] for b in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_readme_opens_with_the_two_commands():
    first = _bash_blocks()[0]
    assert first[0].startswith("./scripts/bootstrap && ") and ".venv/bin/fairmiss run" in first[0]
    assert first[1] == './scripts/bootstrap && .venv/bin/python -m pytest -m "not slow" -p no:cacheprovider'
    ci = (ROOT / ".ci" / "run").read_text()
    assert '.venv/bin/python -m pytest -m "not slow" -p no:cacheprovider ' in ci  # CI runs the README's command


def test_own_data_block_runs_as_written(tmp_path):
    block = next(b for b in _bash_blocks() if any("fairmiss ingest examples/" in ln for ln in b))
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"}
    ran = []
    for line in block:
        cmd = line.split("  #")[0].strip()
        if cmd.startswith("$EDITOR"):
            continue
        r = subprocess.run(shlex.split(cmd), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"README line failed: {cmd}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        ran.append((cmd, r.stdout))
    assert [c.split()[1] for c, _ in ran] == ["ingest", "validate", "run", "compare"]
    assert "ok" in ran[1][1] and "cells" in ran[1][1]
    assert (tmp_path / "results").is_dir() and any((tmp_path / "results").glob("*/metrics.json"))
