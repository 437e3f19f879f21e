"""Files fairmiss writes get the mode a plain ``open()`` gives under the user's umask: results, reports and the
configs ``ingest`` writes are written to a temporary file and renamed into place, and :mod:`tempfile` makes that
file private (0600) — a ``report.html`` nobody else in the group (or a web server) could read."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_writes_follow_the_umask(tmp_path, umask):
    code = ("import os, sys; os.umask(int(sys.argv[1], 8)); from fairmiss.io import atomic_write_text, atomic_write_json;"
            "atomic_write_text(sys.argv[2] + '/deep/a.txt', 'x'); atomic_write_json(sys.argv[2] + '/b.json', {'k': 1});"
            "open(sys.argv[2] + '/plain.txt', 'w').close()")
    subprocess.run([sys.executable, "-c", code, oct(umask)[2:], str(tmp_path)], check=True, cwd=ROOT)
    plain = _mode(tmp_path / "plain.txt")
    assert plain == 0o666 & ~umask
    assert _mode(tmp_path / "deep" / "a.txt") == plain
    assert _mode(tmp_path / "b.json") == plain


def test_the_config_ingest_writes_is_readable_by_the_group(tmp_path):
    """The starter config of ``fairmiss ingest FILE`` (a user-facing file) under umask 022: 0644, not 0600."""
    csv = tmp_path / "loans.csv"
    csv.write_text("age,income,sex,approved\n" + "".join(
        f"{20 + i % 40},{1000 + 37 * i},{'F' if i % 3 else 'M'},{'yes' if i % 4 else 'no'}\n" for i in range(120)))
    env = {**os.environ}
    r = subprocess.run(["sh", "-c", f"umask 022 && exec {sys.executable} -m flows.cli ingest {csv} "
                        "--label approved --positive yes --group sex"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    made = [p for p in tmp_path.glob("*.yaml")]
    assert made, r.stdout
    assert all(_mode(p) == 0o644 for p in made), {p.name: oct(_mode(p)) for p in made}
