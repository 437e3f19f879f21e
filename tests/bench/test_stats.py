"""The leaderboard's statistics (fairmiss.bench.stats) against hand computations and on simulated suites with
planted effects: identical candidates are declared tied at the tests' level, a gain of one paired SD at 10
splits is detected, Holm's correction matches a hand computation, ranks and intervals follow planted orders."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fairmiss.bench import stats
from fairmiss.bench.leaderboard import COLUMNS, build_rows, write_leaderboard


def long_of(values: dict[str, np.ndarray], *, dataset="d", scenario="s", metric="accuracy") -> pd.DataFrame:
    """A long table from candidate -> per-split values."""
    return pd.DataFrame([{"dataset": dataset, "scenario": scenario, "candidate": c, "split": i, "metric": metric,
                          "value": float(v)} for c, vals in values.items() for i, v in enumerate(vals)])


def simulated(rng, gain_sd: float, n: int = 10) -> pd.DataFrame:
    """Two candidates on ``n`` splits: a shared split effect (both see the same rows and mask) plus each its own
    noise, the paired differences' SD being 0.01; ``a`` is better by ``gain_sd`` paired SDs."""
    shared = rng.normal(0.0, 0.02, n)
    own = rng.normal(0.0, 0.01 / np.sqrt(2), (2, n))
    return long_of({"a": 0.7 + shared + own[0] + gain_sd * 0.01, "b": 0.7 + shared + own[1]})


def test_t_interval_by_hand():
    x = np.array([0.61, 0.64, 0.60, 0.66, 0.63, 0.62, 0.65, 0.59, 0.64, 0.61])
    mean = x.sum() / 10
    sd = np.sqrt(((x - mean) ** 2).sum() / 9)
    t975_df9 = 2.2621571627  # tables: the 97.5 % quantile of Student's t with 9 degrees of freedom
    got = stats.t_interval(x)
    assert got["n"] == 10 and got["mean"] == pytest.approx(mean) and got["se"] == pytest.approx(sd / np.sqrt(10))
    assert got["ci_low"] == pytest.approx(mean - t975_df9 * sd / np.sqrt(10), rel=1e-9)
    assert got["ci_high"] == pytest.approx(mean + t975_df9 * sd / np.sqrt(10), rel=1e-9)
    one = stats.t_interval([0.5])
    assert one["n"] == 1 and one["mean"] == 0.5 and np.isnan(one["ci_low"])


def test_holm_by_hand():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> kept monotone: 0.06)
    got = stats.holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02])
    # capped at 1; NaN neither adjusted nor counted (m = 2 here)
    got = stats.holm([0.6, np.nan, 0.02])
    np.testing.assert_allclose(got[[0, 2]], [0.6, 0.04])
    assert np.isnan(got[1])
    assert stats.holm([0.7, 0.8]).tolist() == [1.0, 1.0]


def test_paired_test_agrees_with_scipy_and_edges():
    rng = np.random.default_rng(1)
    x, y = rng.normal(0, 1, 12), rng.normal(0.3, 1, 12)
    assert stats.paired_test(x - y) == pytest.approx(sps.ttest_rel(x, y).pvalue, rel=1e-10)
    assert stats.paired_test(np.zeros(5)) == 1.0  # the same results split by split: no difference
    # the same nonzero difference on every split: the exact sign-flip test, 2 / 2**n (not the t-test's limit, 0)
    assert stats.paired_test(np.full(5, 0.01)) == pytest.approx(2 / 32)
    assert stats.paired_test(np.full(3, -8e-5)) == pytest.approx(0.25)  # 3 splits cannot show a difference
    assert stats.paired_test(np.full(10, 0.01)) == pytest.approx(2 / 1024)
    # brute force: every sign assignment of the constant differences, the share whose |mean| reaches the observed
    import itertools

    for n in (2, 3, 4, 6):
        d = np.full(n, 0.3)
        flips = [abs(np.mean(d * np.array(s))) >= abs(d.mean()) - 1e-15 for s in itertools.product((1, -1), repeat=n)]
        assert stats.paired_test(d) == pytest.approx(np.mean(flips))
    assert np.isnan(stats.paired_test([0.1]))


def test_identical_candidates_are_tied_in_95_percent_of_200_suites():
    """The tie test is a level-5 % paired t-test: two candidates with the same true performance are declared tied
    in 95 % of suites in expectation. 200 suites (seed fixed) through the whole table path; a procedure that is
    not at its level (a z-test instead of t: ~8 % at 10 splits) falls short here."""
    rng = np.random.default_rng(2026)
    tied = sum(bool(stats.ties_with_best(simulated(rng, 0.0), {"accuracy": "max"})["tied_with_best"].all())
               for _ in range(200))
    assert tied >= 190, f"identical candidates tied in {tied} of 200 suites"


def test_tie_level_over_many_suites():
    """The rejection rate of the tie test for identical candidates, over 4000 simulated suites, lies in the
    binomial band of exactly 5 % (±3.3 SE): the test is neither anti-conservative nor needlessly cautious."""
    rng = np.random.default_rng(7)
    d = rng.normal(0.0, 1.0, (4000, 10))
    rate = np.mean([stats.paired_test(row) < stats.ALPHA for row in d])
    assert abs(rate - 0.05) < 3.3 * np.sqrt(0.05 * 0.95 / 4000), rate


def test_gain_of_one_paired_sd_at_10_splits_is_detected_in_75_percent():
    rng = np.random.default_rng(2027)
    found = 0
    for _ in range(200):
        t = stats.ties_with_best(simulated(rng, 1.0), {"accuracy": "max"}).set_index("candidate")
        found += bool(t.loc["a", "best"] == "a" and not t.loc["b", "tied_with_best"])
    assert found >= 150, f"a one-SD gain detected in {found} of 200 suites"


def test_ties_direction_and_holm_within_a_block():
    # lower is better; c is clearly worst, b is a the same on every split (identical results)
    base = np.array([0.10, 0.12, 0.11, 0.13, 0.10, 0.12])
    long = long_of({"a": base, "b": base.copy(), "c": base + np.array([0.05, 0.06, 0.05, 0.07, 0.06, 0.05])},
                   metric="equalized_odds_difference")
    t = stats.ties_with_best(long, {"equalized_odds_difference": "min"}).set_index("candidate")
    assert t.loc["a", "best"] == "a"  # equal means: the first listed
    assert t.loc["b", "tied_with_best"] and t.loc["b", "p_vs_best"] == 1.0
    assert not t.loc["c", "tied_with_best"]
    raw = t.loc[["b", "c"], "p_vs_best"].to_numpy()
    np.testing.assert_allclose(t.loc[["b", "c"], "p_holm"], stats.holm(raw))


def test_paired_differences_against_the_reference():
    rng = np.random.default_rng(3)
    ref = rng.normal(0.7, 0.02, 8)
    long = long_of({"ref": ref, "same": ref.copy(), "up": ref + 0.03 + rng.normal(0, 0.002, 8)})
    d = stats.paired_differences(long, "ref").set_index("candidate")
    assert set(d.index) == {"same", "up"}
    assert d.loc["same", "mean"] == 0 and not d.loc["same", "differs"]
    assert d.loc["up", "ci_low"] > 0 and d.loc["up", "differs"]
    by_hand = stats.t_interval((long[long.candidate == "up"].value.to_numpy() - ref))
    assert d.loc["up", "ci_high"] == pytest.approx(by_hand["ci_high"])


def test_ranks_follow_a_planted_order_with_bootstrap_intervals():
    rng = np.random.default_rng(4)
    shared = rng.normal(0, 0.02, 10)
    parts = []
    for scenario in ("s1", "s2"):
        parts.append(long_of({"good": 0.8 + shared, "mid": 0.7 + shared, "bad": 0.6 + shared,
                              "twin": 0.6 + shared}, scenario=scenario))
    r = stats.rank_table(pd.concat(parts), {"accuracy": "max"}, n_boot=500, seed=1)
    s1 = r[r.scenario == "s1"].set_index("candidate")
    assert s1.loc["good", "rank"] == 1 and s1.loc["mid", "rank"] == 2
    assert s1.loc["bad", "rank"] == s1.loc["twin", "rank"] == 3.5  # equal means share their average rank
    assert (s1.loc["good", ["rank_low", "rank_high"]] == 1).all()  # no resample changes a planted 0.1 gap
    ov = r[r.dataset == "overall"].set_index("candidate")
    assert ov.loc["good", "rank"] == 1 and ov.loc["mid", "rank"] == 2
    # noisy near-equal candidates: the interval spans both ranks
    noisy = long_of({"x": 0.7 + rng.normal(0, 0.02, 10), "y": 0.7 + rng.normal(0, 0.02, 10)})
    nr = stats.rank_table(noisy, {"accuracy": "max"}, n_boot=500).query("dataset == 'd'").set_index("candidate")
    assert (nr["rank_low"] == 1).all() and (nr["rank_high"] == 2).all()


def test_leaderboard_files_agree(tmp_path):
    rng = np.random.default_rng(5)
    parts = []
    for ds in ("d1", "d2"):
        shared = rng.normal(0, 0.02, 5)
        for m, base in (("accuracy", 0.7), ("equalized_odds_difference", 0.1)):
            parts.append(long_of({"ref": base + shared + rng.normal(0, 0.005, 5),
                                  "alt": base + shared + rng.normal(0.02, 0.005, 5)}, dataset=ds, metric=m))
    long = pd.concat(parts, ignore_index=True)
    rank_by = {"accuracy": "max", "equalized_odds_difference": "min"}
    rows = build_rows(long, "ref", rank_by, n_boot=200)
    meta = {"suite": "sim", "description": "", "source": "sim.yaml", "command": "fairmiss bench sim.yaml",
            "date": "2026-11-28", "reference": "ref", "rank_by": rank_by, "alpha": 0.05, "candidates": ["ref", "alt"],
            "n_cells": 20, "n_failed": 0}
    paths = write_leaderboard(rows, tmp_path, meta)
    csv = pd.read_csv(paths["csv"], keep_default_na=False)
    doc = json.loads(paths["json"].read_text())
    assert list(csv.columns) == COLUMNS == doc["columns"]
    assert len(csv) == len(doc["rows"]) == 2 * 2 * 2 + 2 * 2  # blocks x candidates + overall ranks
    for (_, c), j in zip(csv.iterrows(), doc["rows"]):
        for k in COLUMNS:
            v = j[k]
            if v is None:
                assert c[k] == "", k
            elif isinstance(v, bool):
                assert str(c[k]) == str(v), k
            elif isinstance(v, float):
                assert float(c[k]) == pytest.approx(v, rel=1e-9, abs=1e-12), k
            else:
                assert str(c[k]) == str(v), k
    for t in doc["ties"]:  # ties said in the JSON as in the rows
        tied = [r["candidate"] for r in doc["rows"] if (r["dataset"], r["scenario"], r["metric"])
                == (t["dataset"], t["scenario"], t["metric"]) and r["tied_with_best"]]
        assert t["tied_with_best"] == tied and t["best"] in tied
    page = paths["html"].read_text()
    assert "<script" not in page and "http" not in page.split("</style>")[1]  # self-contained
    assert page.count("class='block'") == 4 and "Paired difference to ref" in page


def _brute_front(means: dict[str, tuple]) -> set[str]:
    """Non-dominated candidates, by exhaustive pairwise comparison (every tuple oriented larger-is-better)."""
    out = set()
    for c, a in means.items():
        if not any(all(x >= y for x, y in zip(b, a)) and any(x > y for x, y in zip(b, a))
                   for d, b in means.items() if d != c):
            out.add(c)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_pareto_front_equals_brute_force_on_random_blocks(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 7)), 5
    cands = [f"c{i}" for i in range(k)]
    acc = {c: rng.uniform(0.6, 0.8) + rng.normal(0, 0.01, n) for c in cands}
    gap = {c: rng.uniform(0.0, 0.2) + rng.normal(0, 0.01, n) for c in cands}
    stab = {c: rng.uniform(0.8, 1.0) + rng.normal(0, 0.01, n) for c in cands}
    long = pd.concat([long_of(acc), long_of(gap, metric="equalized_odds_difference"),
                      long_of(stab, metric="label_stability")], ignore_index=True)
    two = stats.pareto_fronts(long, {"accuracy": "max", "equalized_odds_difference": "min"}).set_index("candidate")
    assert set(two.index[two["on_front"]]) == _brute_front({c: (acc[c].mean(), -gap[c].mean()) for c in cands})
    three = stats.pareto_fronts(long, {"accuracy": "max", "equalized_odds_difference": "min",
                                       "label_stability": "max"}).set_index("candidate")
    assert set(three.index[three["on_front"]]) == _brute_front(
        {c: (acc[c].mean(), -gap[c].mean(), stab[c].mean()) for c in cands})
    assert set(two.index[two["on_front"]]) <= set(three.index[three["on_front"]])  # a third metric only adds
    for c in cands:  # dominators named, and only the dominated can be clearly so
        assert (two.loc[c, "dominated_by"] == "") == bool(two.loc[c, "on_front"])
        assert not (two.loc[c, "on_front"] and two.loc[c, "clearly_dominated"])


def test_clearly_dominated_only_when_the_splits_show_it():
    rng = np.random.default_rng(3)
    shared = rng.normal(0, 0.02, 10)
    noise = rng.normal(0, 0.01, 10)
    good = 0.75 + shared + rng.normal(0, 0.002, 10)
    acc = {"good": good,
           "bad": good - 0.05 + rng.normal(0, 0.002, 10),          # 0.05 worse, clearly
           "close": good - 0.0005 + noise - noise.mean()}          # 0.0005 worse, paired SD 0.01: the noise
    same = 0.10 + rng.normal(0, 0.01, 10)
    gap = {c: same for c in acc}                                   # the same gap: accuracy decides
    long = pd.concat([long_of(acc), long_of(gap, metric="equalized_odds_difference")], ignore_index=True)
    f = stats.pareto_fronts(long, {"accuracy": "max", "equalized_odds_difference": "min"}).set_index("candidate")
    assert bool(f.loc["good", "on_front"]) and not f.loc["bad", "on_front"] and not f.loc["close", "on_front"]
    assert bool(f.loc["bad", "clearly_dominated"]) and not f.loc["close", "clearly_dominated"]


def test_leaderboard_page_draws_fronts_and_ranks(tmp_path):
    import xml.etree.ElementTree as ET

    rng = np.random.default_rng(7)
    long = pd.concat([long_of({"ref": 0.7 + rng.normal(0, 0.01, 5), "alt": 0.72 + rng.normal(0, 0.01, 5)}),
                      long_of({"ref": 0.1 + rng.normal(0, 0.01, 5), "alt": 0.2 + rng.normal(0, 0.01, 5)},
                              metric="equalized_odds_difference")], ignore_index=True)
    rank_by = {"accuracy": "max", "equalized_odds_difference": "min"}
    rows = build_rows(long, "ref", rank_by, n_boot=200)
    meta = {"suite": "sim", "description": "", "source": "sim.yaml", "command": "fairmiss bench sim.yaml",
            "date": "2026-11-28", "reference": "ref", "rank_by": rank_by, "alpha": 0.05, "candidates": ["ref", "alt"],
            "n_cells": 10, "n_failed": 0}
    paths = write_leaderboard(rows, tmp_path, meta)
    page = paths["html"].read_text()
    svgs = [page[i:page.index("</svg>", i) + 6] for i in range(len(page)) if page.startswith("<svg", i)]
    assert len(svgs) == 3  # a rank plot per metric, one front
    for s in svgs:
        ET.fromstring(s)  # well-formed
    front = ET.fromstring(next(s for s in svgs if "class='front'" in s))
    assert front.get("data-dataset") == "d" and front.findtext("title") == "d · s: accuracy against equalized_odds_difference"
    states = {c.get("data-candidate"): c.get("data-state") for c in front.iter("circle")}
    assert states == {"ref": "front", "alt": "front"}  # a trade-off: both on the front
    doc = json.loads(paths["json"].read_text())
    assert doc["fronts"] == [{"dataset": "d", "scenario": "s", "metrics": rank_by, "front": ["ref", "alt"],
                              "clearly_dominated": []}]


def test_score_at_gap_by_hand():
    xs, ys = stats._front_curve(np.array([0.3, 0.1, 0.2, 0.25, 0.1]), np.array([0.8, 0.6, 0.7, 0.65, 0.55]))
    assert xs.tolist() == [0.1, 0.2, 0.3] and ys.tolist() == [0.6, 0.7, 0.8]  # (0.25, 0.65) and (0.1, 0.55) dominated
    got = stats.score_at_gap(xs, ys, np.array([0.05, 0.1, 0.15, 0.3, 0.5]))
    assert np.isnan(got[0]) and got[1:].tolist() == pytest.approx([0.6, 0.65, 0.8, 0.8])


def _swept(rng, fam, points, shift=0.0, n=8, noise=0.002):
    """A family's points on ``n`` splits: (gap, accuracy) each with a shared split effect plus small noise."""
    parts = []
    for k, (g, a) in enumerate(points):
        cand = f"mean+{fam},tau={k}"
        parts.append(long_of({cand: a + shift + rng.normal(0, noise, n)}))
        parts.append(long_of({cand: g + rng.normal(0, noise, n)}, metric="eod"))
    return parts


def test_fronts_at_gaps_planted_shift_and_moves_along():
    from flows.bench import candidate_family

    rng = np.random.default_rng(11)
    pts = [(0.02, 0.62), (0.08, 0.68), (0.15, 0.72), (0.25, 0.74)]
    long = pd.concat(_swept(rng, "a", pts) + _swept(rng, "b", pts, shift=-0.03)
                     + _swept(rng, "c", [(0.08, 0.68), (0.15, 0.72)]), ignore_index=True)
    out = stats.fronts_at_gaps(long, score="accuracy", gap="eod", family_of=candidate_family)
    ab = out[(out["family"] == "mean+a") & (out["other"] == "mean+b")]
    lv = ab[ab["kind"] == "level"]
    assert len(lv) == 5 and (lv["n"] == 8).all()
    # a's front is b's raised by 0.03 everywhere: every level and the area say +0.03, intervals exclude 0
    assert lv["mean"].to_numpy() == pytest.approx(0.03, abs=0.004)
    assert (lv["ci_low"] > 0).all()
    area = ab[ab["kind"] == "area"].iloc[0]
    assert area["mean"] == pytest.approx(0.03, abs=0.004) and area["ci_low"] > 0
    # c's two points are two of a's: over their range c's front is a's (linear between them), a tie at each
    # level — the point a method moved along its front is not a better front
    ac = out[(out["family"] == "mean+a") & (out["other"] == "mean+c") & (out["kind"] == "level")]
    assert (ac["mean"].abs() < 0.01).all()
    assert ((ac["ci_low"] <= 0.005) & (ac["ci_high"] >= -0.005)).all()


def test_no_front_comparison_without_a_sweep():
    rng = np.random.default_rng(2)
    long = pd.concat([long_of({"x": 0.7 + rng.normal(0, 0.01, 5), "y": 0.71 + rng.normal(0, 0.01, 5)}),
                      long_of({"x": 0.1 + rng.normal(0, 0.01, 5), "y": 0.12 + rng.normal(0, 0.01, 5)}, metric="eod")])
    assert stats.fronts_at_gaps(long, score="accuracy", gap="eod", family_of=lambda c: c).empty
