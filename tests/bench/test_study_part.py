"""bench/study_part.py: a part of a study keeps the listed learner families and nothing else, and its cells are the
whole study's cells with the same cache keys (so the whole study reuses them); an unknown family is one error
line, exit 2, and nothing is written."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import yaml
from conftest import ROOT

from fairmiss.config import load_config
from fairmiss.pipeline import cell_cache_key

spec = importlib.util.spec_from_file_location("study_part", ROOT / "bench" / "study_part.py")
sp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sp)

STUDY = ROOT / "params" / "studies" / "feng2023_paper_adult.yaml"


def test_a_part_is_the_whole_studys_cells_for_its_families(tmp_path):
    out = tmp_path / "part.yaml"
    assert sp.main([str(STUDY), "--part", "dm", "--learners", "logreg", "dm", "ind_dm", "--out", str(out)]) == 0
    part, whole = load_config(out), load_config(STUDY)
    assert part.experiment == "feng2023_paper_adult__dm"
    labels = [ln.label for ln in part.learners]
    assert labels[0] == "logreg" and len(labels) == 1 + 6 + 6
    assert {lb.split(",")[0] for lb in labels} == {"logreg", "dm", "ind_dm"}
    keys = {cell_cache_key(whole, c, data_hash="d", code_version="c") for c in whole.cells()}
    mine = [cell_cache_key(part, c, data_hash="d", code_version="c") for c in part.cells()]
    assert len(mine) == 13 * 3 * 10 and set(mine) <= keys


def test_an_unknown_family_is_one_error_line_and_nothing_is_written(tmp_path):
    out = tmp_path / "part.yaml"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "study_part.py"), str(STUDY), "--part", "x",
                        "--learners", "dm", "no_such_arm", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("fairmiss: error:") and "no_such_arm" in r.stderr and str(STUDY) in r.stderr
    assert not out.exists() and not list(tmp_path.iterdir())
    assert "claims" in yaml.safe_load(STUDY.read_text())  # the source is untouched
