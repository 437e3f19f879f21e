"""Golden test of the config surface (written before the package move, at a0858fa).

For every file in ``params/`` (full and ``--quick``), the hash of what determines results must not
move when code is reorganised: ``config_hash`` for experiment configs, the canonical dump for the
special studies, plus the ordered cell keys. Regenerate ONLY for an intended config change:
``python tests/config/test_golden_config.py --write`` (and say why in the commit).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "config_hashes.json"
#: every config in params/ (benchmark suites in params/suites/ are not configs: they expand into them)
FILES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "params").rglob("*.yaml")
               if p.name != "schedules.yaml" and p.relative_to(ROOT / "params").parts[0] != "suites")


def fingerprint(rel: str, quick: bool) -> dict:
    from fairmiss.config import ExperimentConfig, load_study_config
    from fairmiss.io import stable_hash

    cfg = load_study_config(ROOT / rel, quick=quick)
    if isinstance(cfg, ExperimentConfig):
        return {"config_hash": cfg.config_hash, "cells": stable_hash([c.key for c in cfg.cells()]),
                "n_cells": len(cfg.cells())}
    return {"dump": stable_hash(cfg.model_dump(mode="json", by_alias=True)), "type": type(cfg).__name__}


def schedules_fingerprint() -> str:
    from fairmiss.config.schedules import load_schedules
    from fairmiss.io import stable_hash

    return stable_hash(load_schedules(ROOT / "params" / "schedules.yaml").model_dump(mode="json", by_alias=True))


def current() -> dict:
    out = {f"{rel}{' --quick' if q else ''}": fingerprint(rel, q) for rel in FILES for q in (False, True)}
    out["params/schedules.yaml"] = schedules_fingerprint()
    return out


@pytest.mark.parametrize("rel", FILES)
@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_config_hash_unchanged(rel, quick):
    golden = json.loads(GOLDEN.read_text())
    assert fingerprint(rel, quick) == golden[f"{rel}{' --quick' if quick else ''}"]


def test_every_params_file_has_a_golden_entry():
    golden = json.loads(GOLDEN.read_text())
    assert set(golden) == set(current())


def test_schedules_unchanged():
    assert schedules_fingerprint() == json.loads(GOLDEN.read_text())["params/schedules.yaml"]


if __name__ == "__main__" and "--write" in sys.argv:
    GOLDEN.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
