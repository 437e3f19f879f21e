"""Stability from a training bootstrap and signed differences (``evaluation.stability``, ``dataset.privileged``).

The oracle below is written from Virny 0.6.0's formulas (``virny/metrics/stability_metrics.py``: ``std``,
``churn``, ``jitter``, ``per_sample_label_stability``, ``label_stability``; ``virny/custom_classes/
metrics_composer.py``: ``_difference_operation`` = dis − priv), in their own loop form with pandas, not with
our code. A planted case checks that the measures tell an unstable learner from a stable one on real data."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from fairmiss.metrics.stability import signed_differences, stability_metrics

B = 50


# --- the oracle: Virny 0.6.0's definitions, (models × samples) frames -----------------------------------
def _std(uq_predict_probas: pd.DataFrame) -> float:
    return np.mean(uq_predict_probas.std().values)


def _churn(a, b) -> float:
    return np.sum([int(a[i] != b[i]) for i in range(len(a))]) / len(a)


def _jitter(uq_labels: pd.DataFrame) -> float:
    m = uq_labels.values
    n = len(m)
    return sum(_churn(m[i], m[j]) for i, j in itertools.combinations(range(n), 2)) / (n * (n - 1) * 0.5)


def _label_stability(uq_labels: pd.DataFrame) -> float:
    out = []
    for sample in uq_labels.columns:
        p = list(uq_labels[sample].values)
        pos = sum(p)
        out.append(np.abs(pos - (len(p) - pos)) / len(p))
    return np.mean(out)


def _matrices(seed):
    rng = np.random.default_rng(seed)
    n = 120
    base = rng.random(n)
    proba = np.clip(base + rng.normal(0, 0.2, (B, n)), 0, 1)  # p(y = 1) of each copy
    p0 = pd.DataFrame(1 - proba)  # Virny works on predict_proba[:, 0]
    labels = (p0 < 0.5).astype(int)  # Virny's label rule
    group = rng.integers(0, 3, n)
    return labels, p0, proba, group


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stability_equals_virny_formulas(seed):
    labels, p0, proba, group = _matrices(seed)
    got = stability_metrics(labels.to_numpy(), proba, group)
    assert abs(got["label_stability"] - _label_stability(labels)) < 1e-12
    assert abs(got["jitter"] - _jitter(labels)) < 1e-12
    assert abs(got["proba_std"] - _std(p0)) < 1e-12
    for g in range(3):
        cols = np.flatnonzero(group == g)
        sub_l, sub_p = labels[cols], p0[cols]
        assert abs(got[f"label_stability_group_{g}"] - _label_stability(sub_l)) < 1e-12
        assert abs(got[f"jitter_group_{g}"] - _jitter(sub_l)) < 1e-12
        assert abs(got[f"proba_std_group_{g}"] - _std(sub_p)) < 1e-12
    by = [_jitter(labels[np.flatnonzero(group == g)]) for g in range(3)]
    assert abs(got["jitter_difference"] - (max(by) - min(by))) < 1e-12
    # the measure moves: copies that all agree are perfectly stable
    same = np.repeat(labels.to_numpy()[:1], B, axis=0)
    flat = stability_metrics(same, np.repeat(proba[:1], B, axis=0), group)
    assert flat["label_stability"] == 1.0 and flat["jitter"] == 0.0 and abs(flat["proba_std"]) < 1e-12


def test_signed_differences_are_dis_minus_priv():
    labels, p0, proba, group = _matrices(4)
    two = np.where(group == 2, 1, group)  # two groups: 0 and 1
    got = stability_metrics(labels.to_numpy(), proba, two)
    cols = {g: np.flatnonzero(two == g) for g in (0, 1)}
    for priv, dis in ((0, 1), (1, 0)):
        s = signed_differences(got, ["label_stability", "jitter", "proba_std"], [0, 1], priv)
        assert set(s) == {"label_stability_signed_difference", "jitter_signed_difference",
                          "proba_std_signed_difference"}
        # Virny: _difference_operation = cfm[dis_group][metric] - cfm[priv_group][metric]
        want = _jitter(labels[cols[dis]]) - _jitter(labels[cols[priv]])
        assert abs(s["jitter_signed_difference"] - want) < 1e-12
        want = _label_stability(labels[cols[dis]]) - _label_stability(labels[cols[priv]])
        assert abs(s["label_stability_signed_difference"] - want) < 1e-12
        want = _std(p0[cols[dis]]) - _std(p0[cols[priv]])
        assert abs(s["proba_std_signed_difference"] - want) < 1e-12
    # rates: Equalized_Odds_TPR = TPR_dis - TPR_priv, Statistical_Parity_Difference, Accuracy_Difference
    from fairmiss.metrics import evaluate

    y = np.random.default_rng(5).integers(0, 2, len(two))
    pred = labels.to_numpy()[0]
    ev = evaluate(y, pred, two)
    s = signed_differences(ev, ["tpr", "selection_rate", "accuracy"], [0, 1], 1)
    for name, fn in (("tpr", lambda m: pred[m & (y == 1)].mean()), ("selection_rate", lambda m: pred[m].mean()),
                     ("accuracy", lambda m: (pred[m] == y[m]).mean())):
        assert abs(s[f"{name}_signed_difference"] - (fn(two == 0) - fn(two == 1))) < 1e-12
    # k > 2 groups: every group minus the privileged one, named by group; left-out groups NaN
    got3 = stability_metrics(labels.to_numpy(), proba, group)
    s3 = signed_differences(got3, ["jitter"], [0, 1, 2], 2, left_out=[1])
    assert set(s3) == {"jitter_signed_difference_group_0", "jitter_signed_difference_group_1"}
    want = _jitter(labels[np.flatnonzero(group == 0)]) - _jitter(labels[np.flatnonzero(group == 2)])
    assert abs(s3["jitter_signed_difference_group_0"] - want) < 1e-12
    assert np.isnan(s3["jitter_signed_difference_group_1"])


def test_an_unpruned_tree_is_less_stable_than_a_logistic_regression(tmp_path, mirror):
    """Planted: on the same COMPAS cell, bootstrap copies of an unpruned tree disagree far more than copies of a
    logistic regression (high-variance vs low-variance learner). A constant measure fails this."""
    from fairmiss import pipeline
    from fairmiss.config import parse_config

    c = parse_config({"experiment": "stab", "seed": 4, "dataset": {"name": "compas_000", "privileged": "White"},
                      "split": {"n_splits": 1}, "imputers": [{"kind": "mean"}],
                      "learners": [{"kind": "decision_tree", "name": "deep", "max_depth": None},
                                   {"kind": "logistic_regression", "name": "lr"}],
                      "evaluation": {"bootstrap": 0, "stability": {"estimators": 20, "fraction": 0.8}}})
    data = pipeline.prepare(c.dataset, raw_dir=tmp_path / "raw", processed_dir=tmp_path / "proc")
    res = {}
    for cell in c.cells():
        r = pipeline.fit_evaluate(c, cell, data, pipeline.make_split(c, data, 0, cell.missingness))
        assert r.status == "ok", r.error
        res[cell.learner.label] = r.metrics
    deep, lr = res["deep"], res["lr"]
    assert deep["label_stability"] < lr["label_stability"] - 0.1
    assert deep["jitter"] > lr["jitter"] + 0.05
    assert deep["proba_std"] > lr["proba_std"]
    assert 0 < lr["jitter"] and deep["label_stability"] < 1
    for m in (deep, lr):
        assert m["label_stability_signed_difference"] == m["label_stability_group_0"] - m["label_stability_group_1"]
        assert 0 <= m["ens_accuracy"] <= 1 and "ens_fnr_difference" in m
    # reproducible: the same cell gives the same copies
    cell = c.cells()[0]
    again = pipeline.fit_evaluate(c, cell, data, pipeline.make_split(c, data, 0, cell.missingness))
    assert again.metrics["jitter"] == res[cell.learner.label]["jitter"]


# --- the copies themselves: cell_stability against a plain loop of ordinary scikit-learn calls -------------
def _copies_oracle(build, X_tr, y_tr, X_te, *, root_seed, key, estimators, fraction):
    """The module's recipe written out plainly (default scikit-learn configuration, checked calls): copy b's
    resample and learner seed from SeedSequence(derive_seed(root, "stability", key)).spawn(B)[b], fit, P(y = 1)."""
    from fairmiss.seeds import derive_seed

    n, size = len(y_tr), int(fraction * len(y_tr))
    proba = []
    for ss in np.random.SeedSequence(derive_seed(root_seed, "stability", key)).spawn(estimators):
        rng = np.random.default_rng(ss)
        idx = rng.choice(n, size=size, replace=True)
        est = build(int(rng.integers(2**31))).fit(X_tr[idx], y_tr[idx])
        proba.append(est.predict_proba(X_te)[:, 1])
    proba = np.array(proba)
    return (proba > 0.5).astype(int), proba


@pytest.mark.parametrize("kind,nan", [("logistic_regression", False), ("decision_tree", False),
                                      ("decision_tree", True)])
def test_cell_stability_equals_a_plain_loop_of_sklearn_fits(kind, nan):
    """The copies run with scikit-learn's checks off (and a tree predicts float32 rows unchecked): the labels and
    probabilities must be the very numbers of ordinary checked fits and predictions, bit for bit, and the metrics
    those of the formulas on them; a NaN in X (the "none" imputer's path) keeps the checked path."""
    import sklearn
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    from fairmiss.learners.baselines import DecisionTreeSpec, LogisticRegressionSpec
    from fairmiss.learners.build import make_learner
    from fairmiss.pipeline.stability import bootstrap_predictions, cell_stability, copy_seeds

    rng = np.random.default_rng(7)
    n, d = 700, 6
    X = rng.normal(size=(n, d))
    s = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * X[:, 1] * s + rng.normal(0, 1, n) > 0).astype(int)
    if nan:
        X[rng.random((n, d)) < 0.1] = np.nan
    tr, te = np.arange(500), np.arange(500, n)
    spec = LogisticRegressionSpec() if kind == "logistic_regression" else DecisionTreeSpec(max_depth=None)
    build = {"logistic_regression": lambda seed: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
             "decision_tree": lambda seed: DecisionTreeClassifier(max_depth=None, random_state=seed)}[kind]
    kw = dict(root_seed=3, estimators=12, fraction=0.8)
    want_l, want_p = _copies_oracle(build, X[tr], y[tr], X[te], key="cellA", **kw)

    def make(seed):
        return make_learner(spec, seed, threads=1)

    config = sklearn.get_config()
    got_l, got_p = bootstrap_predictions(make, X[tr], y[tr], s[tr], X[te], s[te], fraction=0.8,
                                         seeds=copy_seeds(3, "cellA", 12))
    assert np.array_equal(got_p, want_p) and np.array_equal(got_l, want_l)  # bit for bit
    got = cell_stability(make, X[tr], y[tr], s[tr], X[te], y[te], s[te], cell_key="cellA", **kw)
    assert sklearn.get_config() == config  # the copies' configuration does not leak
    labels, p0 = pd.DataFrame(want_l), pd.DataFrame(1 - want_p)
    assert abs(got["label_stability"] - _label_stability(labels)) < 1e-12
    assert abs(got["jitter"] - _jitter(labels)) < 1e-12
    assert abs(got["proba_std"] - _std(p0)) < 1e-12
    for g in (0, 1):
        cols = np.flatnonzero(s[te] == g)
        assert abs(got[f"jitter_group_{g}"] - _jitter(labels[cols])) < 1e-12
        assert abs(got[f"proba_std_group_{g}"] - _std(p0[cols])) < 1e-12
    mean = want_p.mean(axis=0)
    assert abs(got["ens_accuracy"] - accuracy_score(y[te], mean > 0.5)) < 1e-12
    assert abs(got["ens_auc"] - roc_auc_score(y[te], mean)) < 1e-12
    assert 0 < got["jitter"] < 0.5 and got["stability_estimators"] == 12.0
