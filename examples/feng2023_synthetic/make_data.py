"""The synthetic data of Feng, Calmon & Wang (NeurIPS 2023), App. D.1, Table 1: the data set of their Fig. 6, where
missing-pattern clustering should beat impute-then-classify and missing indicators.

2,400 rows; features ``x1`` (always present) and ``x2`` (missing in 800 rows); binary group ``s`` and label ``y``.
Each (y, s) cell is drawn from its own fixed distribution (Table 1):

====  ===  ==============================  ====  =====================  ===
 y     s   x2 present: N(mean, 2·I)         n    x2 missing: x1 ~         n
====  ===  ==============================  ====  =====================  ===
 1     1   (−3, −3)                          400  N(3, 3)                100
 1     0   (−3, +3)                          400  N(3, 3)                300
 0     1   (+3, −3)                          400  N(−3, 3)               100
 0     0   (+3, +3)                          400  N(−3, 3)               300
====  ===  ==============================  ====  =====================  ===

So x1 < 0 separates the labels where x2 is present and x1 > 0 where it is missing; the group with more missing
rows (s = 0) is the one a single linear rule on zero-imputed data serves worse. The paper writes the missing
block's law as N(3, 3) without saying whether 3 is the variance or the standard deviation; it is read here as the
variance, as its covariance matrices are written. The paper gives no seed: this file draws with seed 2023
(NumPy's PCG64), rows in the table's order and then shuffled, so the CSV beside it is reproducible byte for byte:

    python examples/feng2023_synthetic/make_data.py      # writes examples/feng2023_synthetic/synthetic.csv

SYNTHETIC data, labelled so in the study that reads it (params/studies/feng2023_paper_synthetic.yaml).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

#: (y, s) -> (mean of (x1, x2) with x2 present, rows; mean of x1 with x2 missing, rows) — Table 1
TABLE_1 = {(1, 1): ((-3.0, -3.0), 400, 3.0, 100), (1, 0): ((-3.0, 3.0), 400, 3.0, 300),
           (0, 1): ((3.0, -3.0), 400, -3.0, 100), (0, 0): ((3.0, 3.0), 400, -3.0, 300)}
PRESENT_VAR = 2.0  # covariance 2·I
MISSING_VAR = 3.0  # "N(3, 3)": read as the variance (see the module docstring)


def generate(seed: int = 2023) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for (y, s), (mean, n, mean_missing, n_missing) in TABLE_1.items():
        xy = rng.normal(mean, np.sqrt(PRESENT_VAR), size=(n, 2))
        parts.append(pd.DataFrame({"x1": xy[:, 0], "x2": xy[:, 1], "s": s, "y": y}))
        x1 = rng.normal(mean_missing, np.sqrt(MISSING_VAR), size=n_missing)
        parts.append(pd.DataFrame({"x1": x1, "x2": np.nan, "s": s, "y": y}))
    df = pd.concat(parts, ignore_index=True)
    return df.iloc[rng.permutation(len(df))].reset_index(drop=True)


def main(argv=None) -> int:
    out = Path(argv[0] if argv else Path(__file__).with_name("synthetic.csv"))
    text = generate().to_csv(index=False, float_format="%.6f")
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)  # never a half-written file
    print(f"{out}: {text.count(chr(10)) - 1} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
