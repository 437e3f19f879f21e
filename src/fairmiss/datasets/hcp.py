"""Human Connectome Project structural connectomes, spec 002 §2.2.

``hcp`` — loader for user-supplied data (restricted access, never bundled or downloaded)
-----------------------------------------------------------------------------------------
Two CSV files in the raw directory:

* ``hcp_connectome.csv``: column ``Subject`` plus the 2278 strictly-upper-triangle edges of the
  68-region Desikan connectome, named ``c{i:02d}_{j:02d}`` (0 ≤ i < j < 68, row-major order).
  Users holding per-subject 68×68 matrices write this file with :func:`write_connectome_table`
  (:func:`vectorize_connectomes` does the vectorisation);
* ``hcp_subjects.csv``: ``Subject``, ``scanner`` (exactly two distinct ids; coded 0/1 in sorted
  order, mapping recorded in the provenance [GAP: the paper does not say which is which]) and
  the drug-test columns ``Cocaine``, ``Opiates``, ``Amphetamines``, ``MethAmphetamine``,
  ``Oxycontin`` (0/1 or true/false). Label ``hard_drug_positive`` = positive on any of them.

Subjects are joined on ``Subject``, which is dropped at once (an identifier never reaches the
processed table). Option ``log1p`` (default False; the paper does not say [GAP]) log-transforms
edge strengths.

``hcp_synthetic`` — a synthetic stand-in, labelled as such everywhere
---------------------------------------------------------------------
n = 1056, p = 2278, rank-10 latent structure, a scanner effect (scanner 1 shifts and rescales a
block of 25 % of the edges) and a weak outcome signal: y = 1 with probability
sigmoid(b0 + s·(first latent factor)), ``signal`` 0.5 by default (oracle AUC ≈ 0.6), prevalence
≈ 0.30 (Table 1's cells imply CE ≈ the positive share ≈ 0.3 [inference]).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.datasets.acquire import RawFile
from fairmiss.datasets.csvcheck import read_csv_strict
from fairmiss.datasets.registry import DatasetError, DatasetVariant, register
from fairmiss.io import sha256_file

logger = logging.getLogger(__name__)

N_REGIONS = 68
IU = np.triu_indices(N_REGIONS, k=1)
EDGES = [f"c{i:02d}_{j:02d}" for i, j in zip(*IU)]
assert len(EDGES) == 2278
DRUGS = ["Cocaine", "Opiates", "Amphetamines", "MethAmphetamine", "Oxycontin"]
GROUP, LABEL = "scanner", "hard_drug_positive"
_NOTE = ("HCP restricted-access data (connectomes + drug tests + scanner id): obtain from "
         "https://www.humanconnectome.org (ConnectomeDB, data use terms) and build the two files as "
         "docs/datasets.md (section hcp) describes")
HCP_CONNECTOME = RawFile("hcp_connectome.csv", None, None, note=_NOTE, licence="HCP data use terms (restricted)")
HCP_SUBJECTS = RawFile("hcp_subjects.csv", None, None, note=_NOTE, licence="HCP data use terms (restricted)")


def vectorize_connectomes(matrices: np.ndarray) -> np.ndarray:
    """(n, 68, 68) symmetric matrices → (n, 2278) strictly-upper-triangle vectors (row-major)."""
    m = np.asarray(matrices, dtype=float)
    if m.ndim != 3 or m.shape[1:] != (N_REGIONS, N_REGIONS):
        raise DatasetError(f"vectorize_connectomes: expected shape (n, {N_REGIONS}, {N_REGIONS}), got {m.shape}")
    return m[:, IU[0], IU[1]]


def write_connectome_table(subjects, matrices: np.ndarray, path: Path) -> Path:
    """Write ``hcp_connectome.csv`` from subject ids and per-subject 68×68 matrices."""
    df = pd.DataFrame(vectorize_connectomes(matrices), columns=EDGES)
    df.insert(0, "Subject", list(subjects))
    df.to_csv(path, index=False)
    return Path(path)


def _read(path: Path, required: list[str], numeric=()) -> pd.DataFrame:
    """Strict read (:func:`fairmiss.datasets.csvcheck.read_csv_strict`): a truncated line, a duplicated
    column, a non-finite or non-numeric edge strength, non-UTF-8 bytes -> file, line and column."""
    df, lines = read_csv_strict(path, required, numeric=numeric, columns="required", return_lines=True)
    df["__line__"] = lines  # for the messages of the checks below; dropped before the table is returned
    return df


def _build_hcp(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    cpath, spath = paths[HCP_CONNECTOME.filename], paths[HCP_SUBJECTS.filename]
    conn = _read(cpath, ["Subject", *EDGES], numeric=EDGES)
    subj = _read(spath, ["Subject", GROUP, *DRUGS])
    info: dict = {"rows_connectome": len(conn), "rows_subjects": len(subj),
                  "raw_sha256_actual": {p.name: sha256_file(p) for p in (cpath, spath)}}
    for name, df in ((cpath, conn), (spath, subj)):
        dup = df["Subject"].duplicated()
        if dup.any():
            i = int(np.flatnonzero(dup.to_numpy())[0])
            line = int(df["__line__"].iloc[i])
            raise DatasetError(f"{name}: line {line}, column 'Subject': duplicated id {df['Subject'].iloc[i]!r} "
                               f"({int(dup.sum())} duplicate row(s))")
    X = conn[EDGES].apply(pd.to_numeric, errors="coerce")
    bad = X.isna() & conn[EDGES].notna()
    if bad.to_numpy().any():
        c = bad.any().idxmax()
        raise DatasetError(f"{cpath}: column '{c}' has non-numeric value(s)")
    if opts["log1p"]:
        if (X < 0).to_numpy().any():
            raise DatasetError(f"{cpath}: log1p requested but edge strengths are negative")
        X = np.log1p(X)
    if subj[GROUP].isna().all():
        raise DatasetError(f"{spath}: group column '{GROUP}' is all missing")
    if subj[GROUP].isna().any():
        line = int(subj["__line__"][subj[GROUP].isna()].iloc[0])
        raise DatasetError(f"{spath}: line {line}, group column '{GROUP}' has {int(subj[GROUP].isna().sum())} "
                           "missing value(s)")
    scanners = sorted(subj[GROUP].astype(str).unique())
    if len(scanners) != 2:
        raise DatasetError(f"{spath}: column '{GROUP}' must hold exactly two scanner ids, got {scanners[:5]}")
    drugs = pd.DataFrame(index=subj.index)
    for d in DRUGS:
        v = subj[d].map(lambda x: {"true": 1, "false": 0, "1": 1, "0": 0, "1.0": 1, "0.0": 0}.get(str(x).strip().lower()))
        if v.isna().any():
            line = int(subj["__line__"][v.isna()].iloc[0])
            raise DatasetError(f"{spath}: line {line}, label column '{d}' has missing or non-binary value(s) "
                               f"{subj.loc[v.isna(), d].astype(str).head(3).tolist()}")
        drugs[d] = v.astype("int64")
    s = pd.DataFrame({"Subject": subj["Subject"], GROUP: subj[GROUP].astype(str).map({k: i for i, k in enumerate(scanners)}),
                      LABEL: drugs.max(axis=1)})
    X.insert(0, "Subject", conn["Subject"])
    df = X.merge(s, on="Subject", how="inner", validate="one_to_one").drop(columns="Subject")
    info["rows_processed"] = len(df)
    info["scanner_coding"] = {i: k for i, k in enumerate(scanners)}
    if df.empty:
        raise DatasetError(f"{cpath}, {spath}: no subject in common (column 'Subject')")
    info["counts_group_label"] = {f"g{g}_y{y}": int(n) for (g, y), n in df.groupby([GROUP, LABEL]).size().items()}
    logger.info("hcp: %d subjects", len(df))
    return df, info


HCP = register(
    DatasetVariant(
        name="hcp",
        description="HCP structural connectomes (user-supplied, restricted): 2278 edges, scanner group, hard-drug test outcome",
        paper="002 (orthogonal representations), spec 002 §2.2",
        raw_files=(HCP_CONNECTOME, HCP_SUBJECTS),
        builder=_build_hcp,
        features={e: "numeric" for e in EDGES},
        group=GROUP,
        group_encoding={0: "scanner A (first id, sorted)", 1: "scanner B (second id, sorted)"},
        label=LABEL,
        label_encoding={0: "negative drug test", 1: "positive for a hard drug"},
        expected_rows=None,
        options={"log1p": False},
    )
)


def generate_hcp_synthetic(n: int = 1056, *, seed: int = 0, rank: int = 10, scanner_share: float = 0.5,
                           scanner_shift: float = 0.8, signal: float = 0.5, prevalence: float = 0.30) -> pd.DataFrame:
    """Draw the synthetic connectome table (see module docstring).

    Bit-identical on every CPU: no BLAS product and no SIMD-dispatched transcendental
    function touches the table. The rank-``rank`` factor product ``S @ W`` is accumulated over the inner
    dimension in a fixed order (``X = S[:, 0] W[0] + S[:, 1] W[1] + ...``, each step an elementwise,
    correctly rounded float64 multiply and add); the intercept's bisection and the label probabilities use
    ``math.exp`` (libm, scalar) and ``math.fsum`` (exact sum) instead of numpy's vectorised ``exp`` / ``mean``.
    (A BLAS ``S @ W`` sums in a kernel-dependent order: the table's hash depended on the CPU.)
    """
    import math

    rng = np.random.default_rng(seed)
    p = len(EDGES)
    z = (rng.random(n) < scanner_share).astype(np.int64)
    S = rng.standard_normal((n, rank))
    W = rng.standard_normal((rank, p)) / np.sqrt(rank)
    X = S[:, 0:1] * W[0:1, :]
    for r in range(1, rank):  # fixed-order accumulation, no BLAS
        X += S[:, r:r + 1] * W[r:r + 1, :]
    X += 0.7 * rng.standard_normal((n, p))
    block = rng.random(p) < 0.25
    X[:, block] = X[:, block] * np.where(z[:, None] == 1, 1.2, 1.0) + scanner_shift * z[:, None]
    X = X + 3.0  # strengths are positive-ish around 3
    eta = [signal * float(v) for v in S[:, 0]]

    def prob(b0: float) -> list[float]:
        return [1.0 / (1.0 + math.exp(-(b0 + e))) for e in eta]

    # intercept solving mean(sigmoid(b0 + eta)) = prevalence (bisection)
    lo, hi = -10.0, 10.0
    for _ in range(60):
        b0 = (lo + hi) / 2
        if math.fsum(prob(b0)) / n < prevalence:
            lo = b0
        else:
            hi = b0
    y = (rng.random(n) < np.array(prob(b0))).astype(np.int64)
    df = pd.DataFrame(X, columns=EDGES)
    df[GROUP] = z
    df[LABEL] = y
    return df


def _build_synthetic(paths: dict[str, Path], opts: dict) -> tuple[pd.DataFrame, dict]:
    df = generate_hcp_synthetic(opts["n"], seed=opts["seed"], signal=opts["signal"],
                                scanner_shift=opts["scanner_shift"], prevalence=opts["prevalence"])
    info = {"synthetic": True, "seed": opts["seed"], "rows_processed": len(df), "n_features": len(EDGES),
            "counts_group_label": {f"g{g}_y{y}": int(k) for (g, y), k in df.groupby([GROUP, LABEL]).size().items()}}
    logger.info("hcp_synthetic (SYNTHETIC): %d x %d, seed %d", len(df), len(EDGES), opts["seed"])
    return df, info


HCP_SYNTHETIC = register(
    DatasetVariant(
        name="hcp_synthetic",
        description="SYNTHETIC HCP-like connectomes (n=1056, p=2278) with a scanner effect and a weak outcome signal (not real HCP data)",
        paper="002 (orthogonal representations), spec 002 §2.2 — synthetic stand-in",
        raw_files=(),
        builder=_build_synthetic,
        features={e: "numeric" for e in EDGES},
        group=GROUP,
        group_encoding={0: "scanner 0", 1: "scanner 1"},
        label=LABEL,
        label_encoding={0: "negative (synthetic)", 1: "positive (synthetic)"},
        expected_rows=1056,
        synthetic=True,
        options={"n": 1056, "seed": 0, "signal": 0.5, "scanner_shift": 0.8, "prevalence": 0.30},
        option_domains={"n": (50, 10_000_000), "prevalence": (0.01, 0.99)},
    )
)
