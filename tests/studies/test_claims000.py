"""Paper 000's Figure-2 claims (B1–B5) decided on synthetic cell tables whose answer is known."""

import numpy as np
import pandas as pd
import pytest

from fairmiss.studies.p000_claims import claims_for_dataset, compare_fronts, figure2_claims, hypervolume


def _cells(points, n_splits=10, noise=0.002, seed=0):
    """points: {(imputer, learner): (accuracy, fnr gap, fpr gap)} → a cells table with split noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for (imp, learner), (acc, fnr, fpr) in points.items():
        for k in range(n_splits):
            rows.append({"split": k, "imputer": imp, "learner": learner, "status": "ok",
                         "accuracy": acc + noise * rng.standard_normal(),
                         "fnr_difference": fnr + noise * rng.standard_normal(),
                         "fpr_difference": fpr + noise * rng.standard_normal()})
    return pd.DataFrame(rows)


BASE = {("mean", "baseline_tree_d3"): (0.63, 0.22, 0.05), ("knn", "baseline_tree_d3"): (0.63, 0.21, 0.05)}
COMPETITORS = {
    ("mean", "agarwal_eps0.01"): (0.60, 0.08, 0.05), ("mean", "agarwal_eps0.1"): (0.61, 0.15, 0.05),
    ("knn", "agarwal_eps0.01"): (0.59, 0.07, 0.05), ("mean", "hardt_eo"): (0.58, 0.06, 0.05),
    ("knn", "hardt_eo"): (0.58, 0.07, 0.05), ("mean", "zafar_tau1"): (0.57, 0.09, 0.05),
    ("knn", "zafar_tau1"): (0.55, 0.10, 0.05),
}


def verdicts(cells, dataset):
    return dict(zip(*figure2_claims(cells, dataset)[["claim", "verdict"]].to_numpy().T))


def test_b1_holds_when_mip_dominates_and_fails_when_a_competitor_is_better():
    mip = {("none", "fairmip_lam0.1"): (0.63, 0.12, 0.05), ("none", "fairmip_lam1.0"): (0.62, 0.05, 0.05)}
    v = verdicts(_cells({**BASE, **COMPETITORS, **mip}), "compas")
    assert v["B1"] == "holds"
    assert v["B4c"] == "holds"  # Zafar + mean 0.57 vs + knn 0.55 at a fairer gap
    assert v["B5"] == "holds"  # baseline FPR gap 0.05 < FNR gap 0.2
    worse = {**COMPETITORS, ("mean", "agarwal_eps0.01"): (0.65, 0.04, 0.05)}
    assert verdicts(_cells({**BASE, **worse, **mip}), "compas")["B1"] == "does not hold"


def test_b1_not_testable_without_mip_cells():
    assert verdicts(_cells({**BASE, **COMPETITORS}), "compas")["B1"] == "not testable"


def test_compare_fronts_counts_better_worse_tied_and_unmatched():
    a = pd.DataFrame({"gap_mean": [0.05, 0.10], "acc_mean": [0.60, 0.65], "acc_se": [0.001, 0.001]})
    b = pd.DataFrame({"gap_mean": [0.02, 0.06, 0.12, 0.2], "acc_mean": [0.7, 0.55, 0.6495, 0.70],
                      "acc_se": [0.001, 0.001, 0.001, 0.001]})
    c = compare_fronts(a, b)
    assert (c.unmatched, c.better, c.tied, c.worse) == (1, 1, 1, 1)
    assert not c.beats
    assert c.max_diff == pytest.approx(0.05) and c.min_diff == pytest.approx(-0.05)


def test_hypervolume_of_a_staircase():
    f = pd.DataFrame({"gap_mean": [0.1, 0.3], "acc_mean": [0.6, 0.8]})
    # [0.1, 0.3) at 0.6 above 0.5, then [0.3, 0.5) at 0.8: 0.2*0.1 + 0.2*0.3
    assert hypervolume(f, gap_ref=0.5, acc_ref=0.5) == pytest.approx(0.2 * 0.1 + 0.2 * 0.3)


def test_adult_and_hsls_claims():
    adult = {("mean", "baseline_tree_d3"): (0.80, 0.01, 0.20),
             ("none", "fairmip_lam0.1"): (0.80, 0.02, 0.10), ("none", "fairmip_lam2"): (0.76, 0.02, 0.01),
             ("mean", "agarwal_eps0.1"): (0.79, 0.02, 0.05), ("knn", "agarwal_eps0.1"): (0.76, 0.02, 0.06),
             ("mean", "zafar_tau1"): (0.74, 0.02, 0.05), ("knn", "zafar_tau1"): (0.75, 0.02, 0.04),
             ("mean", "hardt_eo"): (0.68, 0.02, 0.04)}
    v = verdicts(_cells(adult), "adult")
    assert v["B2"] == "holds" and v["B4a"] == "holds" and v["B4b"] == "holds" and v["B5"] == "holds"
    hsls = {("mean", "baseline_tree_d3"): (0.66, 0.05, 0.01),
            ("none", "fairmip_lam0.1"): (0.687, 0.046, 0.01), ("none", "fairmip_lam1"): (0.682, 0.026, 0.01),
            ("none", "fairmip_lam3"): (0.662, 0.019, 0.01),
            ("mean", "agarwal_eps0.01"): (0.66, 0.011, 0.01), ("mean", "agarwal_eps0.1"): (0.66, 0.028, 0.01)}
    v = verdicts(_cells(hsls), "hsls")
    assert v["B3b"] == "holds" and v["B3a"] == "holds"


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="dataset must be one of"):
        figure2_claims(_cells(BASE), "german")
    with pytest.raises(KeyError, match="lacks column"):
        figure2_claims(_cells(BASE).drop(columns="fnr_difference"), "compas")


def test_claims_on_the_synthetic_hsls_stand_in_are_labelled():
    mip = {("none", "fairmip_lam0.1"): (0.66, 0.05, 0.05), ("none", "fairmip_lam3.0"): (0.64, 0.02, 0.05)}
    cells = _cells({**BASE, **COMPETITORS, **mip})
    real = claims_for_dataset(cells, "hsls_000")
    synth = claims_for_dataset(cells, "hsls_synthetic")
    assert {"B3a", "B3b"} <= set(real["claim"])
    assert not real["statement"].str.contains("SYNTHETIC").any()
    assert synth["statement"].str.startswith("[SYNTHETIC stand-in").all()
    assert list(synth["verdict"]) == list(real["verdict"])
