"""Which groups a gap is between (``fairmiss.metrics.gap_pairs``), on a three-group example worked by hand."""
from __future__ import annotations

import numpy as np
import pytest

from fairmiss.metrics import evaluate, gap_pairs


def _group(tp, fn, fp, tn):
    y = [1] * (tp + fn) + [0] * (fp + tn)
    p = [1] * tp + [0] * fn + [1] * fp + [0] * tn
    return y, p


# group a: TPR 1,   FPR 1/4, accuracy 7/8, selection 5/8, balanced accuracy 7/8
# group b: TPR 1/2, FPR 1/2, accuracy 1/2, selection 1/2, balanced accuracy 1/2
# group c: TPR 3/4, FPR 0,   accuracy 7/8, selection 3/8, balanced accuracy 7/8
PARTS = {"a": _group(4, 0, 1, 3), "b": _group(2, 2, 2, 2), "c": _group(3, 1, 0, 4)}
Y = np.concatenate([PARTS[g][0] for g in "abc"])
P = np.concatenate([PARTS[g][1] for g in "abc"])
G = np.repeat(list("abc"), 8)


def test_three_groups_worked_by_hand():
    e = evaluate(Y, P, G)
    assert (e["tpr_difference"], e["fpr_difference"], e["equalized_odds_difference"], e["equalized_odds_sum"]) == (
        0.5, 0.5, 0.5, 1.0)
    out = gap_pairs(Y, P, G)
    assert out["tpr_difference_pair"] == "a vs b"  # TPR 1 (a) vs 1/2 (b)
    assert out["fnr_difference_pair"] == "b vs a"  # FNR 1/2 (b) vs 0 (a): the higher group first
    assert out["fpr_difference_pair"] == "b vs c"  # FPR 1/2 (b) vs 0 (c)
    assert out["accuracy_difference_pair"] == "a vs b"  # a and c tie at 7/8: the first in group order
    assert out["demographic_parity_difference_pair"] == out["selection_rate_difference_pair"] == "a vs c"
    # max(ΔTPR, ΔFPR) = 1/2: attained by (a, b) through ΔTPR and by (b, c) through ΔFPR; the first pair names it
    assert out["equalized_odds_difference_pair"] == "a vs b"
    # ΔTPR + ΔFPR = 1 is attained by no single pair (a-b: 3/4, a-c: 1/2, b-c: 3/4): its inputs' pairs are named
    assert out["equalized_odds_sum_pair"] == "tpr: a vs b; fpr: b vs c"
    assert out["gap_rms_pair"] == "tpr: a vs b; fpr: b vs c"
    # worst off: highest FNR / FPR, lowest accuracy / balanced accuracy; selection rate has no direction
    assert (out["fnr_worst_group"], out["fpr_worst_group"], out["accuracy_worst_group"],
            out["balanced_accuracy_worst_group"]) == ("b", "b", "b", "b")
    assert "selection_rate_worst_group" not in out
    assert all(v is None or isinstance(v, str) for v in out.values())


def test_a_computed_gap_attained_by_one_pair():
    # c's FPR is now 1/2 too: ΔFPR is 1/4 (b vs a), ΔTPR 1/2 (a vs b) — every gap is between a and b
    parts = {"a": _group(4, 0, 1, 3), "b": _group(2, 2, 2, 2), "c": _group(3, 1, 2, 2)}
    y = np.concatenate([parts[g][0] for g in "abc"])
    p = np.concatenate([parts[g][1] for g in "abc"])
    out = gap_pairs(y, p, G)
    assert out["equalized_odds_sum_pair"] == out["gap_rms_pair"] == out["equalized_odds_difference_pair"] == "a vs b"


@pytest.mark.parametrize("case", ["one_group", "no_positives", "equal"])
def test_undefined_and_tied(case):
    if case == "one_group":
        out = gap_pairs(Y, P, np.zeros(len(Y), dtype=int))
        assert out["fnr_difference_pair"] is None and out["equalized_odds_difference_pair"] is None
        assert out["accuracy_worst_group"] is None
    elif case == "no_positives":  # group 1 has no positives: FNR (and what uses it) undefined, FPR not
        y, p, g = np.array([1, 0, 0, 0]), np.array([1, 1, 0, 0]), np.array([0, 0, 1, 1])
        out = gap_pairs(y, p, g)
        assert out["fnr_difference_pair"] is None and out["equalized_odds_difference_pair"] is None
        assert out["fnr_worst_group"] is None
        assert out["fpr_difference_pair"] == "0 vs 1" and out["fpr_worst_group"] == "0"
    else:
        y, p, g = np.array([1, 0, 1, 0]), np.array([1, 0, 1, 0]), np.array([3, 3, 7, 7])
        out = gap_pairs(y, p, g)
        assert out["fnr_difference_pair"] == "3 vs 7" and out["equalized_odds_sum_pair"] == "3 vs 7"
