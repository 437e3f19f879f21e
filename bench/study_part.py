"""Write a part of a study: the same config with only some learners, so a long study can be computed arm by arm.

A cell's cache key holds neither the experiment's name nor the split count (``fairmiss.pipeline.cell.cell_cache_key``),
so the cells a part computes are reused when the whole study runs later on the same tracking store, and the
reverse. The part is named ``<experiment>__<part>``; its ``claims:`` are dropped (a statement needs every arm it
pairs) and so is its ``quick:`` block.

    python bench/study_part.py params/studies/feng2023_paper_adult.yaml --part dm \
        --learners logreg dm ind_dm aff_dm --out scratch/feng2023_paper_adult__dm.yaml
    fairmiss run scratch/feng2023_paper_adult__dm.yaml

``--learners`` names learner families: a learner is kept when its name, up to the first comma (``ind_dm,tau=1`` →
``ind_dm``), is listed. Every listed family must match at least one learner.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml


def part(cfg: dict, families: list[str], name: str) -> dict:
    learners = [ln for ln in cfg.get("learners", []) if str(ln.get("name", ln.get("kind"))).split(",", 1)[0] in families]
    found = {str(ln.get("name", ln.get("kind"))).split(",", 1)[0] for ln in learners}
    missing = [f for f in families if f not in found]
    if missing:
        raise ValueError(f"learners: no learner named {', '.join(missing)}")
    out = {k: v for k, v in cfg.items() if k not in ("claims", "quick")}
    out["experiment"] = f"{cfg['experiment']}__{name}"
    out["learners"] = learners
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--part", required=True, help="the part's name (suffix of the experiment's name)")
    ap.add_argument("--learners", nargs="+", required=True, help="learner families to keep")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    src = Path(args.config)
    try:
        cfg = yaml.safe_load(src.read_text())
        text = yaml.safe_dump(part(cfg, args.learners, args.part), sort_keys=False, width=120)
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        print(f"fairmiss: error: {src}: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(f"# written by bench/study_part.py from {src.as_posix()} (learners: {' '.join(args.learners)})\n" + text)
    os.replace(tmp, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
