"""Bad-input corpus (issue 19): malformed configs, names, files and environments, generated from the
project's real configs and raw files; each must give one clear error line, exit 2, nothing written.
Harness: tests/badinput.py."""

from __future__ import annotations

import pytest
from badinput import BadInput, check, mutate

CASES = [
    BadInput("config-unknown-key", ["run", "params/x.yaml"], ["params/x.yaml", "split.ratio"],
             files={"params/x.yaml": mutate("compas_default.yaml", split__ratio=0.3)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case, tmp_path):
    check(case, tmp_path)
