"""Warm load + validation time of the Shades-of-Null tables (``cardio``: 70,000 rows; goal at most 5 s).

For each dataset: one warm-up build + validation (imports, the raw file copied from the mirror into a scratch raw
directory), then ``REPEATS`` timed rounds of ``variant.build`` (strict read, coding) and ``validate_table``
(the Great Expectations gate), each measured on its own with ``time.perf_counter``. Writes
``bench/results/son_load.{md,json}``.

    FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/bench_son_load.py
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fairmiss.datasets import get_variant
from fairmiss.datasets.validate import validate_table

DATASETS = ["cardio", "bank", "law_school", "diabetes", "german_son"]
REPEATS = 5
GOAL_S = 5.0
OUT = Path(__file__).resolve().parent / "results"
COMMAND = ("FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
           ".venv/bin/python bench/bench_son_load.py")


def measure(name: str, raw_dir: Path) -> dict:
    v = get_variant(name)
    df, _ = v.build(raw_dir)
    validate_table(df, v)  # warm-up
    build_s, val_s = [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        df, _ = v.build(raw_dir)
        t1 = time.perf_counter()
        rep = validate_table(df, v)
        t2 = time.perf_counter()
        build_s.append(t1 - t0)
        val_s.append(t2 - t1)
    total = [b + w for b, w in zip(build_s, val_s)]
    return {"dataset": name, "rows": len(df), "columns": df.shape[1], "expectations": rep.n_expectations,
            "build_s_median": statistics.median(build_s), "validate_s_median": statistics.median(val_s),
            "total_s_median": statistics.median(total), "total_s_max": max(total), "repeats": REPEATS}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(n, Path(tmp)) for n in DATASETS]
    cardio = next(r for r in rows if r["dataset"] == "cardio")
    record = {"command": COMMAND, "date": dt.datetime.now().strftime("%Y-%m-%d"), "python": platform.python_version(),
              "goal_s": GOAL_S, "cardio_meets_goal": cardio["total_s_max"] <= GOAL_S, "results": rows}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "son_load.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "# Shades-of-Null tables: warm load + validation time",
        "",
        f"Command: `{COMMAND}` ({record['date']}; 2 shared cores).",
        "",
        f"Warm: after one untimed build + validation in the same process. `build` = strict read of the raw file "
        f"and coding (`DatasetVariant.build`), `validate` = the Great Expectations gate (`validate_table`); "
        f"median and maximum of {REPEATS} rounds. Goal for `cardio` (70,000 rows): at most {GOAL_S:g} s "
        f"for build + validate — **{'met' if record['cardio_meets_goal'] else 'not met'}** "
        f"(max {cardio['total_s_max']:.2f} s).",
        "",
        "| dataset | rows | columns | expectations | build (s) | validate (s) | total median (s) | total max (s) |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {r['dataset']} | {r['rows']} | {r['columns']} | {r['expectations']} | {r['build_s_median']:.2f} | "
          f"{r['validate_s_median']:.2f} | {r['total_s_median']:.2f} | {r['total_s_max']:.2f} |" for r in rows),
        "",
    ]
    (OUT / "son_load.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
