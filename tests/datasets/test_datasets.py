"""Dataset variants: exact counts on the real mirror files, real-format loaders
(HSLS, HCP) on generated files, synthetic stand-ins against their calibration targets, and a
bad-input corpus (every malformed raw file raises DatasetError naming file and column).

Real-data tests use ``FAIRMISS_DATA_MIRROR`` (default ``../shared/data/raw`` beside the checkout, override
with ``FAIRMISS_TEST_MIRROR``) and FAIL when the mirror is missing: they are not optional.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from fairmiss.datasets import get_variant
from fairmiss.datasets.registry import DatasetError
from fairmiss.datasets.validate import validate_table

MIRROR = Path(os.environ.get("FAIRMISS_TEST_MIRROR") or os.environ.get("FAIRMISS_DATA_MIRROR")
              or Path(__file__).resolve().parents[3] / "shared" / "data" / "raw")
REAL_FILES = ["adult.data", "adult.test", "german.data", "compas-scores-two-years.csv"]


@pytest.fixture(scope="module")
def raw_dir(tmp_path_factory):
    missing = [f for f in REAL_FILES if not (MIRROR / f).exists()]
    if missing:  # must fail, not skip: the real-data checks are the point of this module
        pytest.fail(f"data mirror {MIRROR} lacks {missing}; set FAIRMISS_TEST_MIRROR")
    mp = pytest.MonkeyPatch()
    mp.setenv("FAIRMISS_DATA_MIRROR", str(MIRROR))
    yield tmp_path_factory.mktemp("raw")
    mp.undo()


_CACHE: dict = {}


def build(name, raw_dir, **opts):
    key = (name, tuple(sorted(opts.items())))
    if key not in _CACHE:
        _CACHE[key] = get_variant(name).build(raw_dir, **opts)
    return _CACHE[key]


def counts(df, col):
    return df[col].value_counts().sort_index().to_dict()


# ---- exact counts from the specs ----------------------------------------------------------

def test_adult_000_legacy_reproduces_authors_counts(raw_dir):
    """Spec 000 §3.2: 7834 rows, income 4510/3324, gender 3927/3907, 15,113 after the label step."""
    df, info = build("adult_000", raw_dir)
    assert len(df) == 7834
    assert counts(df, "income") == {0: 4510, 1: 3324}
    assert counts(df, "gender") == {0: 3927, 1: 3907}
    assert info["rows_after_drop_missing"] == 45222
    assert info["rows_after_label_balance"] == 15113
    assert len(get_variant("adult_000").features) == 12 and "gender" not in get_variant("adult_000").features
    assert df[list(get_variant("adult_000").features)].min().min() >= 0
    assert df[list(get_variant("adult_000").features)].max().max() <= 1


def test_adult_000_clean_mode(raw_dir):
    df, info = build("adult_000", raw_dir, mode="clean")
    assert info["rows_after_missing"] == 30162
    assert info["rows_after_label_balance"] == 2 * 7508
    assert counts(df, "gender")[0] == counts(df, "gender")[1]
    assert 7800 <= len(df) <= 8200  # spec: "about 7,970" (random draw)
    keep, _ = build("adult_000", raw_dir, mode="clean", missing="keep")
    assert keep[["workclass", "occupation", "native-country"]].isna().any().all()
    with pytest.raises(DatasetError, match="legacy"):
        get_variant("adult_000").build(raw_dir, missing="keep")


def test_adult_004_counts(raw_dir):
    """Spec 004 §2.1: 45222 rows, 41 features = 40 declared + the gender group (kept as feature)."""
    df, info = build("adult_004", raw_dir)
    v = get_variant("adult_004")
    assert df.shape == (45222, 42)
    assert len(v.features) + 1 == 41 and "race" in v.features
    assert abs(df["income"].mean() - 0.248) < 0.005  # "about 25 %"
    assert np.allclose(df["age"].mean(), 0, atol=1e-9) and np.isclose(df["age"].std(ddof=0), 1)
    keep, _ = build("adult_004", raw_dir, missing="keep")
    assert len(keep) == 48842 and keep["occupation_Sales"].isna().sum() > 0


def test_german_004_counts_and_status_counterfactual(raw_dir):
    """Spec 004 §2.1: 1000 rows, 62 features, 30 % positive (1 = bad credit)."""
    from fairmiss.datasets.german import PERSONAL_STATUS, STATUS_COLUMNS, status_counterfactuals

    df, info = build("german_004", raw_dir)
    v = get_variant("german_004")
    assert len(df) == 1000 and len(v.features) == 62
    assert df["credit_risk"].mean() == pytest.approx(0.30)
    assert counts(df, "age_group") == {0: 149, 1: 851}
    assert (df["age_bin"] == 0).all()
    assert (df[STATUS_COLUMNS].sum(axis=1) == 1).all()
    cfs = status_counterfactuals(df[list(v.features)])
    assert set(cfs) == {"A91", "A92", "A93", "A94"} and set(PERSONAL_STATUS) >= set(cfs)
    assert (cfs["A92"]["personal_status_A92"] == 1).all()
    assert cfs["A92"].drop(columns=STATUS_COLUMNS).equals(df[list(v.features)].drop(columns=STATUS_COLUMNS))
    assert info["personal_status_decoding"]["A92"][0] == "female"


def test_german_sex(raw_dir):
    df, _ = build("german_sex", raw_dir)
    v = get_variant("german_sex")
    assert len(df) == 1000 and len(v.features) == 57
    assert counts(df, "sex") == {0: 310, 1: 690}
    assert not any(c.startswith("personal_status") for c in v.features)


def test_compas_002(raw_dir):
    df, _ = build("compas_002", raw_dir)
    v = get_variant("compas_002")
    assert len(df) == 6172 and len(v.features) == 64
    assert counts(df, "race") == {0: 4069, 1: 2103}
    assert (df["const"] == 1).all()


def test_compas_003(raw_dir):
    df, info = build("compas_003", raw_dir)
    v = get_variant("compas_003")
    assert len(df) == 7214 and len(v.features) == 14
    assert set(df["decile_score"].unique()) == set(range(1, 11))
    assert counts(df, "african_american") == {0: 3518, 1: 3696}
    means = info["label_mean_by_group"]
    assert means[1] > means[0]  # the bias 003 removes


def test_compas_004(raw_dir):
    """Spec 004 §2.1: 5278 × 7 (6 declared + the race group, kept as a feature)."""
    df, _ = build("compas_004", raw_dir)
    v = get_variant("compas_004")
    assert len(df) == 5278 and len(v.features) + 1 == 7
    assert counts(df, "race") == {0: 3175, 1: 2103}


@pytest.mark.parametrize("name", ["adult_000", "adult_004", "german_004", "german_sex",
                                  "compas_002", "compas_003", "compas_004"])
def test_real_variants_pass_validation_gate(raw_dir, name):
    df, _ = build(name, raw_dir)
    report = validate_table(df, get_variant(name))
    assert report.success


def test_raw_files_declared_with_checksums():
    for name in ["adult_000", "adult_004", "german_004", "german_sex", "compas_002", "compas_003", "compas_004"]:
        for rf in get_variant(name).raw_files:
            assert rf.url and rf.url.startswith("https://") and len(rf.sha256) == 64


# ---- HSLS real format ----------------------------------------------------------------------

HSLS_COLS = ["STU_ID", "X1SEX", "X1RACE", "X1MTHID", "X1MTHUTI", "X1MTHEFF", "X1PAR2EDU", "X1FAMINCOME",
             "X1P1RELATION", "X1PAR1EMP", "X1SCHOOLBEL", "X1STU30OCC2", "X1TXMSCR", "S1APCALC"]


def hsls_frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "STU_ID": np.arange(10001, 10001 + n), "X1SEX": rng.integers(1, 3, n),
        "X1RACE": rng.choice([1, 2, 3, 4, 5, 6, 7, 8], n),
        "X1MTHID": rng.normal(0, 1, n).round(2), "X1MTHUTI": rng.normal(0, 1, n).round(2),
        "X1MTHEFF": rng.normal(0, 1, n).round(2), "X1PAR2EDU": rng.integers(1, 8, n),
        "X1FAMINCOME": rng.integers(1, 14, n), "X1P1RELATION": rng.integers(1, 9, n),
        "X1PAR1EMP": rng.integers(1, 5, n), "X1SCHOOLBEL": rng.normal(0, 1, n).round(2),
        "X1STU30OCC2": rng.integers(1, 10, n), "X1TXMSCR": rng.normal(50, 10, n).round(4),
        "S1APCALC": rng.integers(0, 2, n),
    })
    df.loc[:9, "X1MTHID"] = -9            # reserve code in a scale
    df.loc[10:14, "X1MTHEFF"] = -1.0      # a legitimate negative scale value, not a reserve code
    df.loc[15:24, "X1PAR2EDU"] = -7        # legitimate skip
    df.loc[25:29, "X1RACE"] = -9          # race missing → dropped
    df.loc[30:31, "X1TXMSCR"] = -8        # score missing → dropped
    return df


def test_hsls_loader_on_real_format_file(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    src = hsls_frame()
    src.to_csv(raw / "hsls_student.csv", index=False)
    v = get_variant("hsls_000")
    df, info = v.build(raw, allow_download=False)
    assert info["rows_raw"] == 200 and info["rows_race_score_observed"] == 193
    kept = src[(src["X1RACE"] > 0) & (src["X1TXMSCR"] > 0)]
    n_multi = int((kept["X1RACE"] == 6).sum())
    assert len(df) == 193 - n_multi
    assert (df[v.group].isin([0, 1])).all() and df[v.label].sum() == len(df) // 2
    assert "STU_ID" not in df.columns and "X1SEX" not in df.columns
    assert len(info["raw_sha256_actual"]) == 64
    # reserve codes: scale −9 → NaN, −1.0 kept; categorical −7 → NaN
    df_all, _ = v.build(raw, allow_download=False, multiracial="urm")
    assert len(df_all) == 193
    full = src[(src["X1RACE"] > 0) & (src["X1TXMSCR"] > 0)].reset_index(drop=True)
    assert df_all["X1MTHID"].isna().sum() == int((full["X1MTHID"] == -9).sum())
    assert df_all["X1MTHEFF"].isna().sum() == 0 and (df_all["X1MTHEFF"] == -1.0).sum() == int((full["X1MTHEFF"] == -1.0).sum()) >= 5
    assert df_all["X1PAR2EDU"].isna().sum() == int((full["X1PAR2EDU"] == -7).sum())
    wa = full["X1RACE"].isin([2, 8]).astype(int).to_numpy()
    assert (df_all["race_wa"].to_numpy() == wa).all()
    assert validate_table(df_all, v, n_rows=len(df_all)).success


# ---- HCP real format -----------------------------------------------------------------------

def test_hcp_loader_on_real_format_files(tmp_path):
    from fairmiss.datasets.hcp import EDGES, vectorize_connectomes, write_connectome_table

    rng = np.random.default_rng(1)
    n = 12
    a = rng.random((n, 68, 68))
    mats = (a + a.transpose(0, 2, 1)) / 2
    raw = tmp_path / "raw"
    raw.mkdir()
    subjects = [100206 + i for i in range(n)]
    write_connectome_table(subjects, mats, raw / "hcp_connectome.csv")
    subj = pd.DataFrame({"Subject": subjects[::-1], "scanner": ["MR1", "MR2"] * (n // 2),
                         **{d: ["false"] * n for d in ["Cocaine", "Opiates", "Amphetamines", "MethAmphetamine", "Oxycontin"]}})
    subj.loc[0, "Opiates"] = "true"
    subj.loc[3, "Cocaine"] = "TRUE"
    subj.to_csv(raw / "hcp_subjects.csv", index=False)
    v = get_variant("hcp")
    df, info = v.build(raw, allow_download=False)
    assert df.shape == (n, 2278 + 2) and list(df.columns[:2278]) == EDGES
    assert df["hard_drug_positive"].sum() == 2
    assert info["scanner_coding"] == {0: "MR1", 1: "MR2"}
    assert vectorize_connectomes(mats).shape == (n, 2278)
    # the row of subject 100206 carries its own matrix
    row = df.iloc[0]
    assert np.isclose(row["c03_40"], mats[0, 3, 40])


# ---- synthetic stand-ins -------------------------------------------------------------------

def test_hsls_synthetic_matches_table2_within_sampling_error():
    from fairmiss.datasets.hsls import MISSING_TARGETS

    v = get_variant("hsls_synthetic")
    assert v.synthetic and "synthetic" in v.name and "SYNTHETIC" in v.description and v.raw_files == ()
    df, info = v.build()
    assert info["synthetic"] is True and len(df) == 21444
    assert counts(df, "race_wa") == {0: 9590, 1: 11854}
    for g, ti in ((1, 0), (0, 1)):  # (WA → target index 0, URM → 1)
        sub = df[df["race_wa"] == g]
        for col, t in MISSING_TARGETS.items():
            p = t[ti]
            se = np.sqrt(p * (1 - p) / len(sub))
            assert abs(sub[col].isna().mean() - p) < 3.5 * se, (col, g)
    rate = df.groupby("race_wa")["math_top_half"].mean()
    assert abs(rate[0] - 0.451) < 0.02 and abs(rate[1] - 0.540) < 0.02
    # URM always more missing than WA (000 Table 2 claim)
    miss = df.groupby("race_wa")[list(MISSING_TARGETS)].apply(lambda s: s.isna().mean())
    assert (miss.loc[0] > miss.loc[1]).all()
    assert validate_table(df, v).success
    # seed controls the draw
    assert not get_variant("hsls_synthetic").build(seed=1)[0].equals(df)


def test_hcp_synthetic_dimensions_scanner_effect_and_weak_signal():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    v = get_variant("hcp_synthetic")
    assert v.synthetic and "synthetic" in v.name and v.raw_files == ()
    df, _ = v.build()
    assert df.shape == (1056, 2280) and len(v.features) == 2278
    assert abs(df["hard_drug_positive"].mean() - 0.30) < 0.05
    X = df[list(v.features)].to_numpy()
    X = (X - X.mean(0)) / X.std(0)
    tr, te = np.arange(700), np.arange(700, 1056)
    z, y = df["scanner"].to_numpy(), df["hard_drug_positive"].to_numpy()
    auc_z = roc_auc_score(z[te], LogisticRegression(C=0.01, max_iter=500).fit(X[tr], z[tr]).decision_function(X[te]))
    assert auc_z > 0.95  # strong scanner effect
    from sklearn.decomposition import PCA

    S = PCA(10, random_state=0).fit(X[tr]).transform(X)
    auc_y = roc_auc_score(y[te], LogisticRegression(max_iter=500).fit(S[tr], y[tr]).decision_function(S[te]))
    assert 0.5 < auc_y < 0.8  # weak signal


# ---- bad-input corpus ----------------------------------------------------------------------

def _head(name, n):
    return "\n".join((MIRROR / name).read_text().splitlines()[:n]) + "\n"


def _adult_data(tmp):
    p = tmp / "adult.data"
    p.write_text(_head("adult.data", 30))
    return p


def _case(variant, files, column):
    return SimpleNamespace(variant=variant, files=files, column=column)


def _compas_mod(fn):
    def make():
        df = pd.read_csv(MIRROR / "compas-scores-two-years.csv", nrows=60)
        return fn(df).to_csv(index=False)
    return make


_HSLS = lambda fn: (lambda: fn(hsls_frame(40)).to_csv(index=False))  # noqa: E731
_SUBJ = ("Subject,scanner,Cocaine,Opiates,Amphetamines,MethAmphetamine,Oxycontin\n"
         "1,A,0,0,0,0,0\n2,B,0,1,0,0,0\n")


def _conn(drop=None):
    from fairmiss.datasets.hcp import EDGES

    cols = [e for e in EDGES if e != drop]
    rows = [[1, *np.ones(len(cols))], [2, *np.zeros(len(cols))]]
    return lambda: pd.DataFrame(rows, columns=["Subject", *cols]).to_csv(index=False)


BAD = {
    "adult_wrong_delimiter": _case("adult_000", {"adult.data": lambda: _head("adult.data", 20).replace(", ", ";")}, "workclass"),
    "adult_unknown_category": _case("adult_000", {"adult.data": lambda: _head("adult.data", 20).replace("State-gov", "Robot-gov")}, "workclass"),
    "adult_empty_file": _case("adult_004", {"adult.data": lambda: ""}, "income"),
    "adult_truncated_file": _case("adult_004", {"adult.data": lambda: _head("adult.data", 20)[:-60]}, "relationship"),
    "adult_test_unknown_label": _case("adult_004", {"adult.test": lambda: _head("adult.test", 20).replace("<=50K.", "<=60K.")}, "income"),
    "adult_gender_all_missing": _case("adult_000", {"adult.data": lambda: _head("adult.data", 20).replace(" Male,", " ?,").replace(" Female,", " ?,")}, "gender"),
    "german_unknown_code": _case("german_004", {"german.data": lambda: _head("german.data", 20).replace("A11 ", "A19 ")}, "checking_status"),
    "german_wrong_delimiter": _case("german_sex", {"german.data": lambda: _head("german.data", 20).replace(" ", ",")}, "duration"),
    "german_codebook_only_code": _case("german_004", {"german.data": lambda: _head("german.data", 20).replace(" A93 ", " A95 ")}, "personal_status"),
    "german_bad_label": _case("german_004", {"german.data": lambda: _head("german.data", 5).replace(" 1\n", " 3\n")}, "credit_risk"),
    "compas_missing_label_column": _case("compas_004", {"compas-scores-two-years.csv": _compas_mod(lambda d: d.drop(columns="two_year_recid"))}, "two_year_recid"),
    "compas_group_all_missing": _case("compas_002", {"compas-scores-two-years.csv": _compas_mod(lambda d: d.assign(race=np.nan))}, "race"),
    "compas_reserve_code_in_label": _case("compas_003", {"compas-scores-two-years.csv": _compas_mod(lambda d: d.assign(decile_score=d["decile_score"].where(d.index > 3, -1)))}, "decile_score"),
    "compas_unknown_charge_degree": _case("compas_003", {"compas-scores-two-years.csv": _compas_mod(lambda d: d.assign(r_charge_degree="(Z9)"))}, "r_charge_degree"),
    "hsls_reserve_codes_in_label": _case("hsls_000", {"hsls_student.csv": _HSLS(lambda d: d.assign(X1TXMSCR=-9))}, "X1TXMSCR"),
    "hsls_group_all_missing": _case("hsls_000", {"hsls_student.csv": _HSLS(lambda d: d.assign(X1RACE=-9))}, "X1RACE"),
    "hsls_wrong_delimiter": _case("hsls_000", {"hsls_student.csv": lambda: hsls_frame(10).to_csv(index=False, sep=";")}, "X1RACE"),
    "hsls_unknown_race_code": _case("hsls_000", {"hsls_student.csv": _HSLS(lambda d: d.assign(X1RACE=9))}, "X1RACE"),
    "hsls_empty_file": _case("hsls_000", {"hsls_student.csv": lambda: ""}, "X1RACE"),
    "hcp_missing_edge_column": _case("hcp", {"hcp_connectome.csv": _conn(drop="c00_05"), "hcp_subjects.csv": lambda: _SUBJ}, "c00_05"),
    "hcp_scanner_all_missing": _case("hcp", {"hcp_subjects.csv": lambda: _SUBJ.replace(",A,", ",,").replace(",B,", ",,"), "hcp_connectome.csv": _conn()}, "scanner"),
    "hcp_non_binary_drug_test": _case("hcp", {"hcp_subjects.csv": lambda: _SUBJ.replace("2,B,0,1", "2,B,0,7"), "hcp_connectome.csv": _conn()}, "Opiates"),
}


@pytest.mark.parametrize("case_id", sorted(BAD))
def test_bad_input_corpus(case_id, tmp_path):
    """Each malformed raw file → DatasetError naming the file and the column; nothing written."""
    case = BAD[case_id]
    v = get_variant(case.variant)
    paths = {}
    for rf in v.raw_files:
        p = tmp_path / rf.filename
        if rf.filename in case.files:
            p.write_text(case.files[rf.filename]())
        elif rf.filename == "adult.data":
            _adult_data(tmp_path)
        else:
            p.write_text(_head(rf.filename, 30))
        paths[rf.filename] = p
    bad_file = next(iter(case.files))  # the first listed file is the malformed one
    with pytest.raises(DatasetError) as exc:
        v.builder(paths, dict(v.options))  # checksummed files: the parser itself is under test
    msg = str(exc.value)
    assert bad_file in msg, msg
    assert case.column in msg, msg


def test_bad_input_writes_nothing_downstream(tmp_path):
    """Through the pipeline entry point: the failure happens before any processed file exists."""
    from fairmiss.pipeline import prepare

    raw = tmp_path / "raw"
    raw.mkdir()
    hsls_frame(30).assign(X1TXMSCR=-9).to_csv(raw / "hsls_student.csv", index=False)
    spec = SimpleNamespace(name="hsls_000", options={}, group_as_feature=False)
    out = tmp_path / "processed"
    with pytest.raises(DatasetError, match="X1TXMSCR"):
        prepare(spec, raw_dir=raw, processed_dir=out, allow_download=False)
    assert not out.exists() or not any(out.iterdir())


def test_user_supplied_files_are_never_downloaded(tmp_path, monkeypatch):
    from fairmiss.datasets.acquire import RawDataMissingError

    monkeypatch.delenv("FAIRMISS_DATA_MIRROR", raising=False)
    for name in ("hsls_000", "hcp"):
        v = get_variant(name)
        assert all(rf.url is None and rf.sha256 is None and rf.note for rf in v.raw_files)
        with pytest.raises(RawDataMissingError, match="not redistributable|restricted|HCP"):
            v.build(tmp_path)


# ---- HCP stand-in independent of the CPU's BLAS kernel / SIMD level) -------------------------

_HCP_CHILD = r"""
import hashlib, sys
from fairmiss.datasets.hcp import generate_hcp_synthetic
df = generate_hcp_synthetic()
h = hashlib.sha256(df.to_numpy(dtype="float64").tobytes())
h.update(df["hard_drug_positive"].to_numpy().tobytes())
print(h.hexdigest())
"""


def _hcp_hash_under(env_extra: dict) -> str:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", _HCP_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def _old_cpu_env() -> dict:
    """An older CPU simulated: OpenBLAS's Prescott kernel and numpy's AVX-512 levels disabled (every optional
    SIMD level when this CPU has no AVX-512)."""
    from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__

    optional = [f for f in __cpu_dispatch__ if __cpu_features__.get(f) and f not in __cpu_baseline__]
    avx512 = [f for f in optional if f.startswith("AVX512") or f == "X86_V4"]
    env = {"OPENBLAS_CORETYPE": "Prescott"}
    if avx512 or optional:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(avx512 or optional)
    return env


def test_hcp_synthetic_is_identical_on_an_older_cpu():
    """The stand-in's table (features and labels) is bit-identical under another BLAS kernel and SIMD level:
    its factor product is a fixed-order loop, not a BLAS ``S @ W`` (whose summation order is the kernel's)."""
    from fairmiss.datasets.hcp import generate_hcp_synthetic

    df = generate_hcp_synthetic()
    import hashlib

    h = hashlib.sha256(df.to_numpy(dtype="float64").tobytes())
    h.update(df["hard_drug_positive"].to_numpy().tobytes())
    assert _hcp_hash_under(_old_cpu_env()) == h.hexdigest()


@pytest.mark.slow
def test_hcp_synthetic_is_identical_under_every_cpu_variant():
    from conftest import cpu_variants

    hashes = {str(v): _hcp_hash_under(v) for v in cpu_variants()}
    assert len(set(hashes.values())) == 1, hashes


def test_hcp_synthetic_factor_product_equals_blas_up_to_rounding():
    """The fixed-order loop computes the same product as ``S @ W`` (to rounding), so the stand-in's
    calibration (rank-10 structure, scanner effect, prevalence) is unchanged."""
    from fairmiss.datasets.hcp import generate_hcp_synthetic

    df = generate_hcp_synthetic()
    assert df.shape == (1056, 2280)
    assert 0.25 < df["hard_drug_positive"].mean() < 0.35
    assert set(df["scanner"].unique()) == {0, 1}
