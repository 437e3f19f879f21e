"""fairmiss.studies.feng2023_claims: the Feng et al. / Zhang & Long claims decided on constructed cells whose
answer is known by construction, with the real study config's learners (pairing from the config)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from fairmiss.config import load_config
from fairmiss.studies.feng2023_claims import counterparts, feng2023_claims

GAP = "equalized_odds_difference"


@pytest.fixture(scope="module")
def cfg():
    return load_config(ROOT / "params" / "studies" / "feng2023_compas.yaml", quick=True)


def test_counterparts_come_from_the_config(cfg):
    assert counterparts(cfg.learners) == {
        "indicators_agarwal_eo_eps0.01": "agarwal_eo_eps0.01", "adaptive_agarwal_eo_eps0.01": "agarwal_eo_eps0.01",
        "clusters_agarwal_eo_eps0.01": "agarwal_eo_eps0.01", "bag_agarwal_eo_eps0.01": "agarwal_eo_eps0.01",
        "bag_hardt_eo": "hardt_eo"}


def test_no_adapted_learner_no_claims():
    c = load_config(ROOT / "params" / "compas_default.yaml")
    cells = pd.DataFrame({"split": [0], "missingness": ["x"], "imputer": ["mean"], "learner": ["tree_d3"],
                          "accuracy": [0.6], GAP: [0.1]})
    assert feng2023_claims(cells, c.learners, c.missingness, GAP) is None


def _cells(cfg, *, mnar_gain=None, mip_acc=-0.03, mip_gap=0.0, cc_bias=None, n=6):
    """Every (split, missingness, learner) of the quick config. Accuracy = 0.70 + a split effect shared by all
    learners + tiny learner noise; ``mnar_gain``: learner -> accuracy added under label_mnar only; Fair MIP
    gets ``mip_acc`` / ``mip_gap`` relative to the adapted learners everywhere."""
    rng = np.random.default_rng(0)
    rows = []
    for split in range(n):
        shift = rng.normal(0, 0.02)
        for m in cfg.missingness:
            for spec in cfg.learners:
                acc, gap = 0.70 + shift + rng.normal(0, 0.001), 0.10 + shift / 2 + rng.normal(0, 0.001)
                if spec.kind == "fair_mip_forest":
                    acc, gap = acc + mip_acc, gap + mip_gap
                if m.name == "label_mnar" and mnar_gain:
                    acc += mnar_gain.get(spec.name, 0.0)
                imp = spec.imputers[0]
                row = {"split": split, "missingness": m.name, "imputer": imp, "learner": spec.name,
                       "accuracy": acc, GAP: gap}
                if cc_bias is not None:
                    row[f"cc_bias.{GAP}"] = cc_bias.get(spec.name, 0.0) + rng.normal(0, 0.002)
                rows.append(row)
    return pd.DataFrame(rows)


def _verdicts(table):
    return {r.claim: r.verdict for r in table.itertuples()}


def test_f1_is_retired(cfg):
    """F1 is no longer decided: its row stays, with an empty verdict and the reason (the statements that replace
    it are fairmiss.studies.feng2023_verdicts'), whatever the cells say."""
    cells = _cells(cfg)
    cells.loc[cells["learner"] == "bag_hardt_eo", "accuracy"] += 0.05  # what made the old F1 False
    row = feng2023_claims(cells, cfg.learners, cfg.missingness, GAP).set_index("claim").loc["F1 (retired)"]
    assert row["verdict"] is None and "scope was too broad" in row["evidence"] and "S-a" in row["evidence"]


def test_equal_methods_nothing_beats(cfg):
    t = feng2023_claims(_cells(cfg, cc_bias={}), cfg.learners, cfg.missingness, GAP)
    v = _verdicts(t)
    assert not v["F2 · agarwal_eo_eps0.01"] and not v["F2 · hardt_eo"]
    assert not v["F3"]  # Fair MIP is 0.03 less accurate at the same gap
    assert not v["ZL"]  # cc_bias is noise around 0


def test_label_driven_gain_of_one_adapted_method(cfg):
    t = feng2023_claims(_cells(cfg, mnar_gain={"bag_hardt_eo": 0.05}), cfg.learners, cfg.missingness, GAP)
    v = _verdicts(t)
    assert v["F2 · hardt_eo"] and not v["F2 · agarwal_eo_eps0.01"]
    ev = t.set_index("claim").loc["F2 · hardt_eo", "evidence"]
    assert "label_mnar: bag_hardt_eo Δacc +0.050" in ev and "beats" in ev


def test_gain_everywhere_is_not_a_label_driven_gain(cfg):
    """An adapted method 0.05 better in every setting: F2 fails (no larger gain under MNAR)."""
    cells = _cells(cfg)
    cells.loc[cells["learner"] == "bag_hardt_eo", "accuracy"] += 0.05
    v = _verdicts(feng2023_claims(cells, cfg.learners, cfg.missingness, GAP))
    assert not v["F2 · hardt_eo"]


def test_fair_mip_beating_every_adapted_method(cfg):
    v = _verdicts(feng2023_claims(_cells(cfg, mip_acc=+0.04, mip_gap=-0.02), cfg.learners, cfg.missingness, GAP))
    assert v["F3"]
    v = _verdicts(feng2023_claims(_cells(cfg, mip_acc=+0.04, mip_gap=+0.05), cfg.learners, cfg.missingness, GAP))
    assert not v["F3"]  # more accurate but much less fair: not a win


def test_complete_case_bias(cfg):
    t = feng2023_claims(_cells(cfg, cc_bias={"hardt_eo": 0.04}), cfg.learners, cfg.missingness, GAP)
    row = t.set_index("claim").loc["ZL"]
    assert row["verdict"] and "3 beyond noise" in row["evidence"]  # hardt_eo in each of the 3 settings
    n_means = len(cfg.missingness) * len(cfg.learners)
    assert row["evidence"].startswith(f"{n_means} (missingness, method) means")


def test_paired_difference_by_hand(cfg):
    """The evidence's Δ and SE equal a hand computation of the paired differences."""
    cells = _cells(cfg, mnar_gain={"bag_hardt_eo": 0.05})
    t = feng2023_claims(cells, cfg.learners, cfg.missingness, GAP).set_index("claim")
    sub = cells[cells["missingness"] == "label_mnar"]
    a = sub[sub["learner"] == "bag_hardt_eo"].set_index("split")["accuracy"]
    b = sub[sub["learner"] == "hardt_eo"].set_index("split")["accuracy"]
    d = (a - b).to_numpy()
    mean, se = d.mean(), d.std(ddof=1) / math.sqrt(len(d))
    assert f"label_mnar: bag_hardt_eo Δacc {mean:+.3f} (SE {se:.3f}" in t.loc["F2 · hardt_eo", "evidence"]


def test_two_splits_decide_nothing(cfg):
    """A --quick run (2 splits): every verdict empty, the differences still listed."""
    t = feng2023_claims(_cells(cfg, mnar_gain={"bag_hardt_eo": 0.05}, cc_bias={"hardt_eo": 0.04}, n=2),
                        cfg.learners, cfg.missingness, GAP)
    assert t["verdict"].isna().all()
    decided = t[t["claim"] != "F1 (retired)"]
    assert decided["evidence"].str.startswith("too few splits to decide (2 < 3)").all()


def test_critical_value():
    from scipy.stats import t

    from fairmiss.studies.feng2023_claims import critical

    assert critical(2, 5) == math.inf
    assert critical(10, 1) == pytest.approx(2.262, abs=1e-3)  # t_{0.975, 9}
    assert critical(10, 8) == pytest.approx(t.ppf(1 - 0.025 / 8, 9))
