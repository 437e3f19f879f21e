"""Make examples/own_data/credit.csv from the UCI German credit raw file (german.data, Statlog).

    python examples/own_data/make_credit.py [PATH/TO/german.data]   (default: $FAIRMISS_DATA_MIRROR/german.data)

Deterministic: the same german.data gives byte-identical credit.csv (see README.md here).
"""

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

PURPOSE = {"A40": "car_new", "A41": "car_used", "A42": "furniture", "A43": "radio_tv", "A44": "appliances",
           "A45": "repairs", "A46": "education", "A47": "vacation", "A48": "retraining", "A49": "business",
           "A410": "other"}
HOUSING = {"A151": "rent", "A152": "own", "A153": "free"}
SEX = {"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    src = Path(argv[0]) if argv else Path(os.environ.get("FAIRMISS_DATA_MIRROR", "data/raw")) / "german.data"
    raw = pd.read_csv(src, sep=" ", header=None, dtype=str)
    df = pd.DataFrame({
        "name": [f"Synthetic Person {i:04d}" for i in range(1, len(raw) + 1)],  # fake PII, clearly synthetic
        "age": raw[12].astype(int),
        "sex": raw[8].map(SEX),
        "duration_months": raw[1].astype(int),
        "credit_amount": raw[4].astype(int).astype("float64"),
        "installment_rate": raw[7].astype(int),
        "purpose": raw[3].map(PURPOSE),
        "housing": raw[14].map(HOUSING),
        "default": raw[20].map({"1": "no", "2": "yes"}),
    })
    rng = np.random.default_rng(20240601)
    n = len(df)
    df.loc[rng.random(n) < 0.08, "credit_amount"] = np.nan          # 8% MCAR in credit_amount
    df.loc[rng.random(n) < 0.05, "housing"] = np.nan                # 5% MCAR in housing (categorical)
    df["age"] = df["age"].astype("Int64")
    out = Path(__file__).with_name("credit.csv")
    df.to_csv(out, index=False, float_format="%.0f", lineterminator="\n")
    print(f"wrote {out}: {n} rows, {int(df['credit_amount'].isna().sum())} missing credit_amount, "
          f"{int(df['housing'].isna().sum())} missing housing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
