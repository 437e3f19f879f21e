"""fairmiss.metrics.evaluate cross-checked against fairlearn's own metric functions (1e-12)."""

import logging

import numpy as np
import pytest
from fairlearn.metrics import (MetricFrame, demographic_parity_difference, demographic_parity_ratio,
                               equalized_odds_difference, false_negative_rate, false_positive_rate,
                               selection_rate, true_negative_rate, true_positive_rate)
from sklearn.metrics import accuracy_score, roc_auc_score

from fairmiss.metrics import evaluate, group_confusion_matrices

TOL = 1e-12


def random_case(seed, n=500, groups=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.choice(groups, n)
    score = np.clip(0.3 * y + rng.random(n) * 0.8, 0, 1)
    return y, (score > 0.5).astype(int), s, score


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("groups", [("a", "b"), ("a", "b", "c", "d")], ids=["2groups", "4groups"])
def test_evaluate_matches_fairlearn(seed, groups):
    y, p, s, score = random_case(seed, groups=groups)
    out = evaluate(y, p, s, y_score=score)
    assert out["equalized_odds_difference"] == pytest.approx(
        equalized_odds_difference(y, p, sensitive_features=s), abs=TOL)
    assert out["equalized_odds_sum"] == pytest.approx(
        2 * equalized_odds_difference(y, p, sensitive_features=s, agg="mean"), abs=TOL)
    assert out["demographic_parity_difference"] == pytest.approx(
        demographic_parity_difference(y, p, sensitive_features=s), abs=TOL)
    assert out["selection_rate_ratio"] == pytest.approx(
        demographic_parity_ratio(y, p, sensitive_features=s), abs=TOL)
    ref = {"fnr": false_negative_rate, "fpr": false_positive_rate, "tpr": true_positive_rate,
           "tnr": true_negative_rate, "selection_rate": selection_rate, "accuracy": accuracy_score}
    out = evaluate(y, p, s, metrics=list(ref))
    mf = MetricFrame(metrics=ref, y_true=y, y_pred=p, sensitive_features=s)
    diff, ratio = mf.difference(), mf.ratio()
    for name in ref:
        assert out[name] == pytest.approx(mf.overall[name], abs=TOL), name
        for g in groups:
            assert out[f"{name}_group_{g}"] == pytest.approx(mf.by_group[name][g], abs=TOL), (name, g)
        assert out[f"{name}_difference"] == pytest.approx(diff[name], abs=TOL), name
        assert out[f"{name}_ratio"] == pytest.approx(ratio[name], abs=TOL), name


def test_auc_and_shares_per_group():
    y, p, s, score = random_case(7)
    out = evaluate(y, p, s, y_score=score)
    for g in "abc":
        m = s == g
        assert out[f"auc_group_{g}"] == pytest.approx(roc_auc_score(y[m], score[m]), abs=TOL)
        tn, fp, fn, tp = np.bincount(2 * y[m] + p[m], minlength=4)
        assert out[f"fn_share_group_{g}"] == pytest.approx(fn / m.sum(), abs=TOL)
        assert out[f"fp_share_group_{g}"] == pytest.approx(fp / m.sum(), abs=TOL)
        assert out[f"fnr_group_{g}"] == pytest.approx(fn / (fn + tp), abs=TOL)
        assert group_confusion_matrices(y, p, s)[g] == [[tn, fp], [fn, tp]]


def test_hand_computed_confusion_matrices():
    # group 0: TP 3, FN 1, TN 3, FP 1; group 1: TP 1, FN 1, TN 2, FP 2
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0])
    p = np.array([1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1])
    s = np.array([0] * 8 + [1] * 6)
    out = evaluate(y, p, s)
    assert (out["fnr_group_0"], out["fnr_group_1"]) == (0.25, 0.5)
    assert (out["fpr_group_0"], out["fpr_group_1"]) == (0.25, 0.5)
    assert out["fnr_difference"] == 0.25 and out["fpr_difference"] == 0.25
    assert out["equalized_odds_difference"] == 0.25 and out["equalized_odds_sum"] == 0.5
    assert out["fn_share_group_1"] == pytest.approx(1 / 6, abs=TOL)
    assert out["demographic_parity_difference"] == pytest.approx(4 / 8 - 3 / 6, abs=TOL)


def _no_positive_case():
    y = np.array([1, 0, 1, 0, 0, 0])
    p = np.array([1, 0, 0, 0, 1, 0])
    s = np.array([0, 0, 0, 1, 1, 1])  # group 1 has no positives
    return y, p, s


def test_group_without_positives_is_nan_and_logged(caplog):
    y, p, s = _no_positive_case()
    with caplog.at_level(logging.WARNING, logger="fairmiss.metrics"):
        out = evaluate(y, p, s, y_score=p.astype(float))
    assert np.isnan(out["fnr_group_1"]) and np.isnan(out["tpr_group_1"]) and np.isnan(out["auc_group_1"])
    assert out["fnr_group_0"] == 0.5
    assert "fnr_group_1" in caplog.text
    # fairlearn itself returns a silent 0 here; evaluate must not.
    assert false_negative_rate(y[s == 1], p[s == 1]) == 0.0


def test_gap_involving_an_undefined_group_is_nan():
    # non-regression: fairlearn's MetricFrame.difference skips NaN groups (silent 0 gap)
    y, p, s = _no_positive_case()
    out = evaluate(y, p, s)
    assert np.isnan(out["fnr_difference"])
    assert np.isnan(out["equalized_odds_difference"])


def _cases():
    rng = np.random.default_rng(42)
    for k in range(40):
        n = int(rng.integers(1, 400))
        groups = [0, 1] if k % 3 else ["a", "b", "c"]
        s = rng.choice(groups, n)
        y = rng.integers(0, 2, n)
        p = rng.integers(0, 2, n)
        score = np.round(rng.random(n), 1)  # many ties
        if k % 5 == 0:
            y[s == groups[0]] = 1  # a single-class group
        if k % 7 == 0:
            p[:] = 0  # nobody selected
        yield k, y, p, s, score
    yield "one row", np.array([1]), np.array([0]), np.array([0]), np.array([0.3])
    yield "all one class", np.ones(20, int), np.ones(20, int), np.repeat([0, 1], 10), np.linspace(0, 1, 20)


@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: str(c[0]))
def test_fast_evaluate_equals_the_fairlearn_reference(case):
    """The counting implementation returns exactly the reference's keys and values (1e-12, NaN = NaN)."""
    from fairmiss.metrics import evaluate_reference

    _, y, p, s, score = case
    metrics = ["accuracy", "balanced_accuracy", "error", "fpr", "fnr", "tpr", "tnr", "selection_rate", "auc"]
    fast = evaluate(y, p, s, y_score=score, metrics=metrics)
    ref = evaluate_reference(y, p, s, y_score=score, metrics=metrics)
    assert set(fast) == set(ref)
    for k, v in ref.items():
        assert (np.isnan(v) and np.isnan(fast[k])) or fast[k] == pytest.approx(v, abs=TOL), (k, fast[k], v)


def test_unknown_metric_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown metric"):
        evaluate(np.array([0, 1]), np.array([0, 1]), np.array([0, 1]), metrics=["accuracy", "precisoin"])


def test_non_binary_labels_are_a_clear_error():
    with pytest.raises(ValueError, match="y_true must be 0/1"):
        evaluate(np.array([0, 2]), np.array([0, 1]), np.array([0, 1]))
    with pytest.raises(ValueError, match="y_pred must be 0/1"):
        group_confusion_matrices(np.array([0, 1]), np.array([-1, 1]), np.array([0, 1]))


def test_gap_rms_is_the_root_mean_square_of_the_per_class_gaps():
    """Paper 004's GAPRMS by hand: group a TPR 3/4, TNR 3/4; group b TPR 1/4, TNR 4/4 → Gap_1 = 1/2, Gap_0 = 1/4,
    GAPRMS = sqrt((1/4 + 1/16) / 2), GAPMax = 1/2; and against per-class recalls from scikit-learn."""
    from sklearn.metrics import recall_score

    y = np.array([1, 1, 1, 1, 0, 0, 0, 0] * 2)
    p = np.array([1, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
    s = np.repeat(["a", "b"], 8)
    m = evaluate(y, p, s, metrics=["accuracy", "tpr", "fpr"])
    assert m["gap_rms"] == pytest.approx(np.sqrt((0.25 + 0.0625) / 2), abs=1e-15)
    assert m["equalized_odds_difference"] == pytest.approx(0.5, abs=1e-15)
    rng = np.random.default_rng(3)
    y, p, s = rng.integers(0, 2, 500), rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    gaps = [abs(recall_score(y[s == 0], p[s == 0], pos_label=c) - recall_score(y[s == 1], p[s == 1], pos_label=c))
            for c in (0, 1)]
    m = evaluate(y, p, s)
    assert m["gap_rms"] == pytest.approx(np.sqrt(np.mean(np.square(gaps))), abs=1e-12)
    assert m["equalized_odds_difference"] == pytest.approx(max(gaps), abs=1e-12)


# ---- NaN, never 0, for every difference / ratio / gap -----------------------------------

def test_auc_difference_is_nan_when_one_group_auc_is_undefined():
    """Before: auc_group_1 NaN but auc_difference 0.0 (np.nanmax - np.nanmin over one finite value)."""
    from fairmiss.metrics import evaluate_reference

    y, p, s = _no_positive_case()
    score = np.array([0.9, 0.2, 0.4, 0.1, 0.7, 0.3])
    for fn in (evaluate, evaluate_reference):
        out = fn(y, p, s, y_score=score)
        assert np.isnan(out["auc_group_1"]) and np.isfinite(out["auc_group_0"])
        assert np.isnan(out["auc_difference"]), fn.__name__


def test_reference_oracle_does_not_share_fairlearns_nan_skipping():
    """The oracle must be able to catch the flaw: fairlearn's own difference is 0.0 here, the oracle's NaN."""
    from fairlearn.metrics import MetricFrame

    from fairmiss.metrics import auc, evaluate_reference

    y, p, s = _no_positive_case()
    score = np.array([0.9, 0.2, 0.4, 0.1, 0.7, 0.3])
    s3 = np.array([0, 0, 0, 1, 1, 2])  # a third group, defined, equal AUC to nothing
    mf = MetricFrame(metrics={"auc": auc}, y_true=y, y_pred=score, sensitive_features=s)
    assert float(mf.difference(method="between_groups")["auc"]) == 0.0  # the flaw being guarded against
    assert np.isnan(evaluate_reference(y, p, s, y_score=score)["auc_difference"])
    assert np.isnan(evaluate_reference(y, p, s3, y_score=score)["fnr_difference"])


@pytest.mark.parametrize("fn_name", ["evaluate", "evaluate_reference"])
def test_one_group_gives_nan_differences_with_a_warning(fn_name, caplog):
    """Decision: with a single group every difference/ratio/derived gap is NaN (and logged)."""
    import fairmiss.metrics as M

    fn = getattr(M, fn_name)
    y = np.array([1, 0, 1, 0, 1, 1])
    p = np.array([1, 0, 0, 1, 1, 0])
    s = np.zeros(6, int)
    with caplog.at_level(logging.WARNING, logger="fairmiss.metrics"):
        out = fn(y, p, s, y_score=np.linspace(0, 1, 6))
    gaps = [k for k in out if k.endswith(("_difference", "_ratio")) or k in ("equalized_odds_sum", "gap_rms")]
    assert len(gaps) >= 15
    assert all(np.isnan(out[k]) for k in gaps), {k: out[k] for k in gaps if not np.isnan(out[k])}
    assert np.isfinite(out["accuracy"]) and np.isfinite(out["fnr_group_0"])
    assert "difference" in caplog.text or "undefined" in caplog.text


def test_every_gap_is_nan_when_an_input_group_rate_is_nan():
    """Systematic: for each per-group metric made undefined in one group, its difference, ratio and every
    derived gap built on it are NaN in both implementations."""
    from fairmiss.metrics import evaluate_reference

    y = np.array([1, 1, 1, 0, 0, 0, 0, 0])  # group 1 (last 4 rows) has no positives
    p = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    s = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    for fn in (evaluate, evaluate_reference):
        out = fn(y, p, s, y_score=np.linspace(0, 1, 8), metrics=["accuracy", "fnr", "fpr", "tpr", "tnr", "auc"])
        for k in ("fnr_difference", "fnr_ratio", "tpr_difference", "tpr_ratio", "equalized_odds_difference",
                  "equalized_odds_sum", "gap_rms", "auc_difference"):
            assert np.isnan(out[k]), (fn.__name__, k, out[k])
        for k in ("fpr_difference", "accuracy_difference", "demographic_parity_difference"):
            assert np.isfinite(out[k]), (fn.__name__, k)


def test_group_gaps_gap_rms_nan_when_a_class_is_absent_overall():
    """GAPRMS/GAPMax need both classes: with no negatives at all Gap_0 is undefined (was: silently left out)."""
    from fairmiss.learners.budro.metrics import gap_max, gap_rms, group_gaps

    y = np.ones(6, int)
    p = np.array([1, 0, 1, 1, 1, 0])
    s = np.array([0, 0, 0, 1, 1, 1])
    assert set(group_gaps(y, p, sensitive_features=s)) == {0, 1}
    assert np.isnan(gap_rms(y, p, sensitive_features=s)) and np.isnan(gap_max(y, p, sensitive_features=s))
