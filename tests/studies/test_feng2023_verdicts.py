"""fairmiss.studies.feng2023_verdicts: Feng et al.'s statements S-a … S-e decided on fronts, on constructed cells
whose answer is known by construction, and the interpolation checked by brute force on tiny fronts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from fairmiss.config import ConfigError, load_config, parse_config
from fairmiss.config.sweep import family
from fairmiss.studies.feng2023_verdicts import feng2023_verdicts, front_pairs

GAP = "equalized_odds_difference"
TOLS = {"equal_acc": 0.01, "above_acc": 0.01, "above_gap": 0.01, "extend_acc": 0.01, "extend_gap": 0.01}
TOLS_RF = [0, 0.001, 0.01, 0.1]


def _fp(name, tol, **kw):
    return {"kind": "adaptive", "name": f"{name},tol={tol}", "imputers": ["none"],
            "base": {"kind": "fair_projection", "constraint": "meo", "tol": tol}, **kw}


def _config(**claims) -> dict:
    rf = {"kind": "random_forest", "n_estimators": 20, "max_depth": 3}
    learners = [{"kind": "fair_projection", "name": "fp", "constraint": "meo", "imputers": ["mean"],
                 "sweep": {"tol": TOLS_RF}}]
    learners += [_fp("ind_fp", t, interactions=False) for t in TOLS_RF] + [_fp("aff_fp", t) for t in TOLS_RF]
    learners += [{"kind": "fair_projection", "name": "fp_rf", "constraint": "meo", "base": rf, "imputers": ["mean"],
                  "sweep": {"tol": TOLS_RF}}]
    learners += [{"kind": "fairmissbag", "n_estimators": 5, "name": f"bag_fp_rf,tol={t}", "imputers": ["none"],
                  "base": {"kind": "fair_projection", "constraint": "meo", "tol": t, "base": rf}} for t in TOLS_RF]
    eq = {"kind": "threshold_optimizer", "constraint": "equalized_odds", "base": "decision_tree", "max_depth": 3}
    learners += [{**eq, "name": "eqodds_tree", "imputers": ["mean"]},
                 {"kind": "fairmissbag", "name": "bag_eqodds_tree", "n_estimators": 5, "imputers": ["none"],
                  "base": eq}]
    return {"experiment": "verdicts_test", "dataset": {"name": "compas_000"}, "split": {"n_splits": 6},
            "missingness": [{"kind": "mcar", "name": "mcar", "rates": {"priors_count": 0.2}},
                            {"kind": "label_driven", "name": "mnar", "columns": ["priors_count"],
                             "rates_by_label": {0: 0.1, 1: 0.4}}],
            "imputers": [{"kind": "mean"}, {"kind": "none"}], "learners": learners, "fairness_metric": GAP,
            "claims": {"feng2023": {"mcar_mar": ["mcar"], "mnar": ["mnar"], **TOLS, **claims}}}


@pytest.fixture(scope="module")
def cfg():
    return parse_config(_config())


#: one front of four points (gap, accuracy), the sweep's order; and a one-point "front"
BASE = [(0.02, 0.62), (0.06, 0.66), (0.12, 0.69), (0.20, 0.70)]
POINT = [(0.05, 0.65)]


def _cells(cfg, shape=None, *, n=6, noise=0.0, seed=0) -> pd.DataFrame:
    """Every (split, setting, learner) cell. A learner's point is ``shape(family, setting)[its index in the
    family]`` (default: :data:`BASE`, or :data:`POINT` for an unswept learner); accuracy gets a split effect
    shared by every learner (sd 0.01) and, with ``noise``, independent noise per cell on both axes."""
    rng = np.random.default_rng(seed)
    index, rows = {}, []
    for s in cfg.learners:
        index[s.name] = sum(family(x.name) == family(s.name) for x in cfg.learners[:cfg.learners.index(s)])
    for split in range(n):
        effect = rng.normal(0, 0.01)
        for m in cfg.missingness:
            for s in cfg.learners:
                fam = family(s.name)
                pts = (shape(fam, m.name) if shape else None) or (POINT if fam == s.name else BASE)
                gap, acc = pts[index[s.name]]
                rows.append({"split": split, "missingness": m.name, "imputer": s.imputers[0], "learner": s.name,
                             "accuracy": acc + effect + rng.normal(0, noise) if noise else acc + effect,
                             GAP: max(gap + (rng.normal(0, noise) if noise else 0.0), 0.0)})
    return pd.DataFrame(rows)


def _decide(cfg, cells):
    verdicts, evidence = feng2023_verdicts(cells, cfg.learners, cfg.claims.feng2023, GAP)
    return {r.claim: r.verdict for r in verdicts.itertuples()}, verdicts.set_index("claim"), evidence


def _shifted(points, dacc=0.0, dgap=0.0):
    return [(g + dgap, a + dacc) for g, a in points]


def test_pairs_of_fronts_from_the_config(cfg):
    pairs = {(p.role, p.adapted, p.baseline, len(p.adapted_points)) for p in front_pairs(cfg.learners, _cells(cfg))}
    assert pairs == {("indicators", "none+ind_fp", "mean+fp", 4), ("affine", "none+aff_fp", "mean+fp", 4),
                     ("bag", "none+bag_fp_rf", "mean+fp_rf", 4), ("bag", "none+bag_eqodds_tree", "mean+eqodds_tree", 1)}


def test_paper_config_pairs_every_arm():
    """DispMistreatment's spec has an unset (None) field its adapted base leaves out: still paired."""
    c = load_config(ROOT / "params" / "studies" / "feng2023_paper_compas.yaml")
    cells = pd.DataFrame([{"split": 0, "missingness": "mcar", "imputer": s.imputers[0], "learner": s.name,
                           "accuracy": 0.6, GAP: 0.1} for s in c.learners])
    got = {(p.adapted, p.baseline) for p in front_pairs(c.learners, cells)}
    assert {("none+ind_dm", "mean+dm"), ("none+aff_dm", "mean+dm")} <= got and len(got) == 9


def test_identical_fronts(cfg):
    """Every adapted front is its baseline's: (a) holds, nothing is above or extends, (e) False."""
    v, table, ev = _decide(cfg, _cells(cfg))
    assert v == {"S-a": True, "S-b": False, "S-c": False, "S-d": False, "S-e": False}
    a = ev[(ev["statement"] == "S-a") & (ev["comparison"] == "acc_at_gap")]
    assert len(a) == 2 * 5 and (a["mean"].abs() < 1e-12).all() and (a["n"] == 6).all()  # 2 pairs × 5 levels
    assert "moves along" in table.loc["S-d", "evidence"]


def test_mnar_shift_up_is_above(cfg):
    """Indicators / affine +0.05 accuracy at every gap under MNAR only: (a) and (b) hold."""
    up = {("ind_fp", "mnar"), ("aff_fp", "mnar")}
    v, _, ev = _decide(cfg, _cells(cfg, lambda f, m: _shifted(BASE, 0.05) if (f, m) in up else None))
    assert v["S-a"] is True and v["S-b"] is True and v["S-c"] is False and v["S-e"] is False
    b = ev[(ev["statement"] == "S-b") & (ev["comparison"] == "acc_at_gap")]
    assert b["mean"].to_numpy() == pytest.approx(0.05, abs=1e-9) and b["holds"].all()


@pytest.mark.parametrize("dacc", [0.02, -0.02, 0.011])
def test_a_fails_on_a_difference_beyond_the_tolerance(cfg, dacc):
    """Indicators 0.02 more or less accurate under MCAR (or 0.011, just beyond the tolerance): not ≈."""
    v, table, _ = _decide(cfg, _cells(cfg, lambda f, m: _shifted(BASE, dacc) if (f, m) == ("ind_fp", "mcar") else None))
    assert v["S-a"] is False and v["S-e"] is False
    ev = table.loc["S-a", "evidence"]
    assert "mcar: none+ind_fp − mean+fp" in ev and " — fails" in ev


def test_noise_only_is_not_above(cfg):
    """Independent noise (sd 0.01) on every cell, no shift: nothing is above, fairer or beyond."""
    for seed in range(3):
        v, _, ev = _decide(cfg, _cells(cfg, noise=0.01, seed=seed))
        assert v["S-b"] is False and v["S-c"] is False and v["S-d"] is False
        assert ev["c"].dropna().min() > 3  # Bonferroni over the statement's comparisons, 5 degrees of freedom


def test_a_gain_within_noise_is_not_above(cfg):
    """Indicators under MNAR gain 0.03 on average, but the gain varies over the splits (SE 0.0075, t = 4): above the
    tolerance, yet not beyond c·SE with c Bonferroni-corrected over the 10 comparisons (c = 5.6 at 5 degrees of
    freedom; uncorrected it would be 2.57) — (b) is False, although affine gains a clean 0.05."""
    from scipy.stats import t

    cells = _cells(cfg, lambda f, m: _shifted(BASE, 0.05) if (f, m) == ("aff_fp", "mnar") else None)
    z = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    offset = 0.03 + 0.0075 * math.sqrt(6) * z / z.std(ddof=1)
    rows = cells["learner"].str.startswith("ind_fp") & (cells["missingness"] == "mnar")
    cells.loc[rows, "accuracy"] += offset[cells.loc[rows, "split"].to_numpy()]
    v, _, ev = _decide(cfg, cells)
    b = ev[(ev["statement"] == "S-b") & (ev["adapted"] == "none+ind_fp")]
    assert b["mean"].to_numpy() == pytest.approx(0.03) and b["se"].to_numpy() == pytest.approx(0.0075)
    assert b["c"].to_numpy() == pytest.approx(t.ppf(1 - 0.025 / 10, 5))
    assert not b["holds"].any() and v["S-b"] is False
    aff = ev[(ev["statement"] == "S-b") & (ev["adapted"] == "none+aff_fp")]
    assert aff["holds"].all()


def test_mnar_bag_above_in_accuracy_and_fairness(cfg):
    """Bags +0.05 accuracy and −0.03 gap under MNAR, indicators / affine +0.05: (b), (c) hold; with (a), (e)."""
    def shape(f, m):
        if m != "mnar":
            return None
        pts = POINT if f == "bag_eqodds_tree" else BASE
        if not f.startswith(("bag", "ind", "aff")):
            return None
        return _shifted(pts, 0.05, -0.03 if f.startswith("bag") else 0.0)

    v, table, ev = _decide(cfg, _cells(cfg, shape))
    assert v == {"S-a": True, "S-b": True, "S-c": True, "S-d": False, "S-e": True}
    c = ev[ev["statement"] == "S-c"]
    assert set(c["comparison"]) == {"acc_at_gap", "gap_at_acc", "acc_at_point", "gap_at_point"}
    assert c[c["comparison"] == "gap_at_point"]["mean"].iloc[0] == pytest.approx(-0.03)


def test_steep_front_above_in_accuracy_is_not_fairer(cfg):
    """A steep front raised by 0.05: at fixed accuracy its gap is only ~0.005 lower — (c) fails on fairness."""
    steep = [(0.02, 0.55), (0.025, 0.60), (0.03, 0.65), (0.04, 0.72)]

    def shape(f, m):
        if f in ("fp_rf", "bag_fp_rf"):
            return _shifted(steep, 0.05) if (f, m) == ("bag_fp_rf", "mnar") else steep
        return _shifted(POINT, 0.05, -0.03) if (f, m) == ("bag_eqodds_tree", "mnar") else None

    v, table, ev = _decide(cfg, _cells(cfg, shape))
    assert v["S-c"] is False
    rf = ev[(ev["statement"] == "S-c") & (ev["adapted"] == "none+bag_fp_rf")]
    assert rf[rf["comparison"] == "acc_at_gap"]["holds"].all()
    gap = rf[rf["comparison"] == "gap_at_acc"]
    assert not gap["holds"].any() and (gap["mean"] < 0).all() and (gap["mean"] > -0.01).all()


def test_bag_extending_the_curve(cfg):
    """Under MCAR the bag's front reaches a fairer point (gap 0.002) than the baseline's (0.02) and equals it
    elsewhere; the one-point bag is 0.03 more accurate at a larger gap: (d) holds. Without the extra reach: not."""
    ext = [(0.002, 0.60)] + BASE[1:]

    def shape(f, m):
        if m == "mcar" and f == "bag_fp_rf":
            return ext
        return _shifted(POINT, 0.03, 0.05) if (m, f) == ("mcar", "bag_eqodds_tree") else None

    v, table, ev = _decide(cfg, _cells(cfg, shape))
    assert v["S-d"] is True and "extends the curve" in table.loc["S-d", "evidence"]
    reach = ev[(ev["statement"] == "S-d") & (ev["comparison"] == "reach_gap")]
    assert reach["mean"].iloc[0] == pytest.approx(-0.018) and reach["holds"].iloc[0]
    v, _, _ = _decide(cfg, _cells(cfg, lambda f, m: ext if (m, f) == ("mcar", "bag_fp_rf") else None))
    assert v["S-d"] is False  # the one-point bag does not extend its baseline


def test_extending_but_below_is_not_extending(cfg):
    """A bag that reaches a fairer point but is 0.04 below the baseline over the common range does not extend it."""
    low = [(0.002, 0.56)] + _shifted(BASE[1:], -0.04)

    def shape(f, m):
        if m == "mcar" and f == "bag_fp_rf":
            return low
        return _shifted(POINT, 0.03, 0.05) if (m, f) == ("mcar", "bag_eqodds_tree") else None

    v, _, ev = _decide(cfg, _cells(cfg, shape))
    assert v["S-d"] is False
    rows = ev[(ev["statement"] == "S-d") & (ev["adapted"] == "none+bag_fp_rf")]
    assert rows[rows["comparison"] == "reach_gap"]["holds"].all()
    assert not rows[rows["comparison"] == "acc_at_gap"]["holds"].all()


def test_two_splits_decide_nothing(cfg):
    v, table, ev = _decide(cfg, _cells(cfg, n=2))
    assert all(x is None for x in v.values())
    assert table.loc["S-a", "evidence"].startswith("too few splits to decide (2 < 3)")
    assert ev["holds"].isna().all() and len(ev) > 0


def test_no_pair_of_a_role(cfg):
    """Without bags in the cells, (c) and (d) are empty with the reason; (a) and (b) hold, so (e) is empty."""
    up = {("ind_fp", "mnar"), ("aff_fp", "mnar")}
    cells = _cells(cfg, lambda f, m: _shifted(BASE, 0.05) if (f, m) in up else None)
    cells = cells[~cells["learner"].str.startswith("bag")]
    v, table, _ = _decide(cfg, cells)
    assert v["S-a"] is True and v["S-b"] is True
    assert v["S-c"] is None and v["S-d"] is None and v["S-e"] is None
    assert table.loc["S-c", "evidence"] == "no pair of role bag in setting(s) mnar"


def test_a_pair_not_compared_leaves_the_statement_empty(cfg):
    """Affine's MCAR cells on two splits only: that pair × setting cannot be decided, so "every pair ≈" is not
    shown — (a) is empty with the reason, though every decided pair holds; a failing pair still makes it False."""
    cells = _cells(cfg)
    gone = cells["learner"].str.startswith("aff_fp") & (cells["missingness"] == "mcar") & (cells["split"] > 1)
    cells = cells[~gone]
    v, table, _ = _decide(cfg, cells)
    assert v["S-a"] is None
    assert table.loc["S-a", "evidence"].startswith("1 pair × setting without a comparison reached by ≥ 3 splits")
    cells.loc[cells["learner"].str.startswith("ind_fp") & (cells["missingness"] == "mcar"), "accuracy"] += 0.02
    assert _decide(cfg, cells)[0]["S-a"] is False


def test_compose_with_a_label_driven_part_is_label_driven():
    """The paper studies' MNAR is a compose of a label-driven and a self-masking part: F2 sees it."""
    from fairmiss.studies.feng2023_claims import _label_driven

    c = load_config(ROOT / "params" / "studies" / "feng2023_paper_compas.yaml")
    assert [_label_driven(m) for m in c.missingness] == [False, False, True]


def test_no_claims_section_no_verdicts(cfg):
    assert feng2023_verdicts(_cells(cfg), cfg.learners, None, GAP) is None


def _brute_front(points):
    """The non-dominated points (lower gap, higher accuracy), by definition, sorted by gap."""
    front = [p for p in points if not any(q != p and q[0] <= p[0] and q[1] >= p[1] for q in points)]
    return sorted(front)


def _brute_at(points, g):
    f = _brute_front(points)
    if g < f[0][0]:
        return math.nan
    if g >= f[-1][0]:
        return f[-1][1]
    for (g0, a0), (g1, a1) in zip(f, f[1:]):
        if g0 <= g <= g1:
            return a0 + (a1 - a0) * (g - g0) / (g1 - g0)
    raise AssertionError


def test_interpolation_by_brute_force(cfg):
    """Random tiny fronts (four points per family and split, some dominated): every acc_at_gap level's mean
    equals the brute-force interpolation on each split's non-dominated points, paired over splits."""
    rng = np.random.default_rng(7)
    pts = {(f, m, s): [(float(rng.uniform(0, 0.3)), float(rng.uniform(0.55, 0.75))) for _ in TOLS_RF]
           for f in ("fp", "ind_fp", "aff_fp", "fp_rf", "bag_fp_rf") for m in ("mcar", "mnar") for s in range(6)}
    cells = _cells(cfg)
    for i, r in cells.iterrows():
        f = family(r["learner"])
        if (f, r["missingness"], r["split"]) in pts:
            k = TOLS_RF.index(float(r["learner"].split("=")[1]))
            cells.loc[i, [GAP, "accuracy"]] = pts[f, r["missingness"], r["split"]][k]
    _, _, ev = _decide(cfg, cells)
    rows = ev[(ev["statement"].isin(["S-a", "S-b"])) & (ev["comparison"] == "acc_at_gap")]
    assert len(rows) == 2 * 2 * 5
    for r in rows.itertuples():
        fa, fb = r.adapted.split("+")[1], r.baseline.split("+")[1]
        d = [_brute_at(pts[fa, r.setting, s], r.level) - _brute_at(pts[fb, r.setting, s], r.level) for s in range(6)]
        d = [x for x in d if not math.isnan(x)]
        assert r.n == len(d) and r.mean == pytest.approx(np.mean(d), abs=1e-12)


def test_claims_section_validated_and_left_out_of_the_hash():
    base = _config()
    with pytest.raises(ConfigError, match="claims.feng2023.mnar"):
        parse_config({**base, "claims": {"feng2023": {**base["claims"]["feng2023"], "mnar": ["mnarr"]}}})
    with pytest.raises(ConfigError, match="under both"):
        parse_config({**base, "claims": {"feng2023": {**base["claims"]["feng2023"], "mnar": ["mcar"]}}})
    with pytest.raises(ConfigError, match="equal_acc"):
        parse_config({**base, "claims": {"feng2023": {k: v for k, v in base["claims"]["feng2023"].items()
                                                      if k != "equal_acc"}}})
    with pytest.raises(ConfigError, match="not a fairness gap"):
        parse_config({**base, "claims": {"feng2023": {**base["claims"]["feng2023"], "gap": "accuracy"}}})
    without = {k: v for k, v in base.items() if k != "claims"}
    assert parse_config(base).config_hash == parse_config(without).config_hash
    assert "claims" not in parse_config(without).model_dump(mode="json")
    assert parse_config(base).model_dump(mode="json")["claims"]["feng2023"]["equal_acc"] == 0.01


def test_claims_gaps_and_outside_validated():
    base = _config()
    feng = base["claims"]["feng2023"]
    with pytest.raises(ConfigError, match="gaps.*fair_projektion.*not learner kinds"):
        parse_config({**base, "claims": {"feng2023": {**feng, "gaps": {"fair_projektion": "fnr_difference"}}}})
    with pytest.raises(ConfigError, match="gaps.*meo.*no gap fairmiss logs"):
        parse_config({**base, "claims": {"feng2023": {**feng, "gaps": {"fair_projection": "meo"}}}})
    with pytest.raises(ConfigError, match=r"claims.feng2023.outside: \['ind_eqodds'\]"):
        parse_config({**base, "claims": {"feng2023": {**feng, "outside": ["ind_eqodds"]}}})
    ok = parse_config({**base, "claims": {"feng2023": {**feng, "gaps": {"fair_projection": "mean_equalized_odds"},
                                                       "outside": ["bag_eqodds_tree"]}}})
    assert ok.config_hash == parse_config(base).config_hash


def _with_claims(**extra):
    base = _config()
    return parse_config({**base, "claims": {"feng2023": {**base["claims"]["feng2023"], **extra}}})


def test_each_arm_judged_on_its_own_gap():
    """Fronts identical on the default gap, but the indicators front lies 0.05 to the right on the FNR gap under
    MCAR: with ``gaps: {fair_projection: fnr_difference}`` the FairProjection pairs are drawn on the FNR gap and
    (a) fails; the EqOdds bag pair keeps the default gap."""
    cfg0 = parse_config(_config())
    cells = _cells(cfg0)
    shift = (cells["learner"].map(family) == "ind_fp") & (cells["missingness"] == "mcar")
    cells["fnr_difference"] = cells[GAP] + np.where(shift, 0.05, 0.0)
    assert _decide(cfg0, cells)[0]["S-a"] is True
    v, table, ev = _decide(_with_claims(gaps={"fair_projection": "fnr_difference"}), cells)
    assert v["S-a"] is False
    assert set(ev.loc[ev["baseline"].isin(["mean+fp", "mean+fp_rf"]), "gap"]) == {"fnr_difference"}
    assert set(ev.loc[ev["baseline"] == "mean+eqodds_tree", "gap"]) == {GAP}
    a = ev[(ev["statement"] == "S-a") & (ev["adapted"] == "none+ind_fp") & (ev["setting"] == "mcar")]
    assert (a["mean"] < -0.01).any() and not a["holds"].all()
    assert "arm's gap" in table.loc["S-a", "statement"]


def test_mean_equalized_odds_is_derived_from_the_logged_sum():
    """``mean_equalized_odds`` = equalized_odds_sum / 2: the same verdicts as on a gap equal to it, and the
    evidence's levels on its scale."""
    cfg = _with_claims(gaps={"fair_projection": "mean_equalized_odds"})
    up = {("ind_fp", "mnar"), ("aff_fp", "mnar")}
    cells = _cells(cfg, lambda f, m: _shifted(BASE, 0.05) if (f, m) in up else None)
    v_ref, _, ev_ref = _decide(parse_config(_config()), cells)  # on the default gap, equal to MEO here
    v, _, ev = _decide(cfg, cells.assign(equalized_odds_sum=2.0 * cells[GAP]))
    assert v == v_ref and v["S-b"] is True
    fp = ev["baseline"] == "mean+fp"
    assert set(ev.loc[fp, "gap"]) == {"mean_equalized_odds"}
    pd.testing.assert_series_equal(ev.loc[fp, "mean"], ev_ref.loc[ev_ref["baseline"] == "mean+fp", "mean"])
    assert ev.loc[fp & (ev["comparison"] == "acc_at_gap"), "level"].max() == pytest.approx(0.20)


def test_outside_arms_are_in_no_statement():
    cfg = _with_claims(outside=["bag_eqodds_tree"])
    v, _, ev = _decide(cfg, _cells(cfg))
    assert "none+bag_eqodds_tree" not in set(ev["adapted"]) and "none+bag_fp_rf" in set(ev["adapted"])
    assert v["S-a"] is True


def _bad_claims(**change):
    from badinput import mutate_keys

    return mutate_keys("studies/feng2023_paper_compas.yaml", {f"claims.feng2023.{k}": v for k, v in change.items()})


@pytest.mark.parametrize("case", [
    ("gaps-unknown-kind", {"gaps": {"fair_projektion": "fnr_difference"}}, ["claims", "fair_projektion"]),
    ("gaps-unknown-gap", {"gaps": {"zafar": "fnr_gap"}}, ["claims", "fnr_gap"]),
    ("outside-unknown-family", {"outside": ["ind_nope"]}, ["claims.feng2023.outside", "ind_nope"]),
], ids=lambda c: c[0])
def test_bad_claims_keys_are_one_line_before_anything_runs(case, tmp_path):
    """The command line: one `fairmiss: error:` line naming the file and key, exit 2, nothing written."""
    from badinput import BadInput, check

    id_, change, expect = case
    check(BadInput(id_, ["run", "params/x.yaml"], ["params/x.yaml", *expect],
                   files={"params/x.yaml": _bad_claims(**change)}), tmp_path)


def test_adaptive_around_a_validation_split_is_refused_before_anything_runs(tmp_path):
    """`adaptive` around EqOdds (which carves its own validation split) failed in every cell at run time; the
    command line now refuses it when the config loads, naming the learner and the base."""
    from badinput import BadInput, check, load_params, dump

    d = load_params("studies/feng2023_paper_compas.yaml")
    d.pop("quick", None)
    d["learners"].append({"kind": "adaptive", "name": "ind_eqodds", "imputers": ["none"],
                          "base": {"kind": "threshold_optimizer", "constraint": "equalized_odds"}})
    check(BadInput("adaptive-threshold-optimizer", ["run", "params/x.yaml"],
                   ["params/x.yaml", "learners", "threshold_optimizer", "carves a validation split"],
                   files={"params/x.yaml": dump(d)}), tmp_path)
