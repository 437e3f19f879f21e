"""FairProjection (``kind: fair_projection``): the ADMM solution against a general convex solver on tiny
instances, the fairness constraint on the training rows, the non-binding limit, real COMPAS groups, and bad
input refused at config validation.

The oracle writes the projection problem from its definition (rates per group as weighted means of the
projected scores, the divergence as a sum over rows) and solves it over the n × C scores with SLSQP; it shares
no code with the estimator but the base scores it projects.
"""

from __future__ import annotations

import copy
import csv
import io
import warnings

import numpy as np
import pytest
import yaml
from badinput import BadInput, check, mutate_keys
from pydantic import TypeAdapter, ValidationError
from scipy.optimize import Bounds, LinearConstraint, minimize

from fairmiss.learners.build import make_learner
from fairmiss.learners.fair_projection import FairProjection
from fairmiss.learners.specs import LearnerSpec

LEARNER = TypeAdapter(LearnerSpec)


def _tiny(n=30, n_groups=3, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    s = np.arange(n) % n_groups
    X = rng.normal(size=(n, 3)) + 0.6 * s[:, None]
    score = X[:, 0] + 0.5 * X[:, 1] + 0.8 * s + rng.normal(scale=0.7, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y, s


def _rates(h, p, s, constraint):
    """[(group rate, overall rate)] of every constrained rate, from the definition."""
    C = h.shape[1]
    pairs = {"sp": [(None, c2) for c2 in range(C)], "meo": [(c, c) for c in range(C)],
             "eo": [(c, c2) for c in range(C) for c2 in range(C)]}[constraint]
    out = []
    for c, c2 in pairs:
        w = np.ones(len(h)) if c is None else p[:, c]
        overall = np.sum(w * h[:, c2]) / np.sum(w)
        for a in np.unique(s):
            wa = w * (s == a)
            out.append((np.sum(wa * h[:, c2]) / np.sum(wa), overall))
    return out


def _oracle(p, s, constraint, tol, div):
    """min (1/n) Σ_i D(h_i ‖ p_i) s.t. (1 − tol) rate ≤ rate_a ≤ (1 + tol) rate, h_i in the simplex, over the
    n·C scores: scipy's interior-point ``trust-constr`` with exact gradient and Hessian (SLSQP stops short of
    the optimum on these problems while reporting success)."""
    n, C = p.shape

    def obj(x):
        h = np.maximum(x.reshape(n, C), 1e-15)  # the interior-point steps may probe just outside the bounds
        if div == "kl":
            return np.sum(h * np.log(h / p)) / n, ((np.log(h / p) + 1) / n).ravel()
        return np.sum(p * np.log(p / h)) / n, (-p / h / n).ravel()

    def hess(x):
        x = np.maximum(x, 1e-15)
        return np.diag((1 / x if div == "kl" else p.ravel() / x ** 2) / n)

    def ineq(x):  # ≥ 0 when the constraint holds; linear in the scores
        h = x.reshape(n, C)
        return np.concatenate([[(1 + tol) * r - ra, ra - (1 - tol) * r] for ra, r in _rates(h, p, s, constraint)])

    A = np.array([ineq(e) for e in np.eye(n * C)]).T
    simplex = np.kron(np.eye(n), np.ones((1, C)))
    res = minimize(obj, np.full(n * C, 1 / C), jac=True, hess=hess, method="trust-constr",
                   constraints=[LinearConstraint(A, 0, np.inf), LinearConstraint(simplex, 1, 1)],
                   bounds=Bounds(1e-12, 1), options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000})
    assert res.status in (1, 2) and np.min(ineq(res.x)) > -1e-9, res.message
    return res.fun, res.x.reshape(n, C)


CASES = [(div, con, tol) for div in ("kl", "cross_entropy") for con in ("sp", "eo", "meo") for tol in (0.0, 0.1)]


@pytest.mark.parametrize("div,constraint,tol", CASES)
def test_admm_objective_equals_a_general_convex_solver(div, constraint, tol):
    X, y, s = _tiny()
    est = FairProjection(constraint=constraint, tol=tol, divergence=div).fit(X, y, s)
    p = est.base_proba(X)
    h = est.predict_proba(X, s)
    value, h_ref = _oracle(p, s, constraint, tol, div)
    ours = est.fit_metrics_["fp_divergence"]
    assert ours > 1e-4  # the constraint binds: the base itself is not fair on these rows
    assert abs(ours - value) < 1e-6, (ours, value)
    np.testing.assert_allclose(h, h_ref, atol=2e-3)  # the same classifier, not only the same value


def test_multiclass_three_groups_equals_the_convex_solver():
    X, y, s = _tiny(n=30, n_groups=3, n_classes=3, seed=2)
    est = FairProjection(constraint="meo", tol=0.05, divergence="kl").fit(X, y, s)
    value, _ = _oracle(est.base_proba(X), s, "meo", 0.05, "kl")
    assert est.fit_metrics_["fp_divergence"] > 1e-4
    assert abs(est.fit_metrics_["fp_divergence"] - value) < 1e-6


@pytest.mark.parametrize("div,constraint,tol", [c for c in CASES if c[2] > 0])
def test_constraint_holds_within_tol_on_training_rows(div, constraint, tol):
    X, y, s = _tiny(n=200, seed=3)
    est = FairProjection(constraint=constraint, tol=tol, divergence=div).fit(X, y, s)
    p = est.base_proba(X)
    before = max(abs(ra / r - 1) for ra, r in _rates(p, p, s, constraint))
    after = max(abs(ra / r - 1) for ra, r in _rates(est.predict_proba(X, s), p, s, constraint))
    assert before > tol  # the base breaks it
    assert after <= tol + 1e-6, after


def test_large_tol_leaves_the_base_as_it_is():
    X, y, s = _tiny(n=200, seed=4)
    est = FairProjection(constraint="eo", tol=100.0).fit(X, y, s)
    assert np.all(est.lambda_ == 0)
    np.testing.assert_array_equal(est.predict(X, s), est.estimator_.predict(X))
    np.testing.assert_allclose(est.predict_proba(X, s), est.estimator_.predict_proba(X), atol=1e-5)


def test_tightening_tol_moves_the_classifier_monotonically():
    X, y, s = _tiny(n=200, seed=5)
    div = [FairProjection(constraint="sp", tol=t).fit(X, y, s).fit_metrics_["fp_divergence"]
           for t in (0.5, 0.1, 0.01, 0.0)]
    assert all(a <= b + 1e-12 for a, b in zip(div, div[1:])), div


def test_groups_are_data_one_group_and_unseen_groups_refused():
    X, y, s = _tiny(n=60)
    with pytest.raises(ValueError, match="at least two groups"):
        FairProjection().fit(X, y, np.zeros(len(y)))
    est = FairProjection().fit(X, y, np.array(["a", "b", "c"])[s])
    with pytest.raises(ValueError, match="'z' was not met at fit"):
        est.predict(X[:2], np.array(["a", "z"]))
    with pytest.raises(ValueError, match="constraint"):
        FairProjection(constraint="dp").fit(X, y, s)
    with pytest.raises(ValueError, match="tol"):
        FairProjection(tol=-0.1).fit(X, y, s)


def test_kind_builds_through_the_registry_and_the_adapter():
    X, y, s = _tiny(n=200, seed=6)
    spec = LEARNER.validate_python({"kind": "fair_projection", "constraint": "sp", "tol": 0.02,
                                    "base": {"kind": "logistic_regression", "C": 0.5}})
    assert spec.base["C"] == 0.5 and not spec.takes_nan and not spec.wrappable_by_mi
    learner = make_learner(spec, seed=0)
    learner.fit(X, y, s)
    assert set(learner.predict(X, s)) <= {0, 1}
    score = learner.score(X, s)
    np.testing.assert_allclose(score, learner.estimator.predict_proba(X, s)[:, 1])
    assert learner.fit_metrics()["fp_max_violation"] < 1e-6
    tree = LEARNER.validate_python({"kind": "fair_projection", "base": {"kind": "decision_tree"}})
    assert tree.takes_nan  # as its base


@pytest.mark.parametrize("entry,key", [({"tol": -0.1}, "tol"), ({"constraint": "dp"}, "constraint"),
                                       ({"divergence": "hellinger"}, "divergence"),
                                       ({"base": {"kind": "exponentiated_gradient"}}, "base"),
                                       ({"rho": 0}, "rho")])
def test_spec_refuses_bad_values(entry, key):
    with pytest.raises(ValidationError, match=key):
        LEARNER.validate_python({"kind": "fair_projection", **entry})


def test_real_compas_four_groups(mirror, tmp_path):
    """COMPAS 000 with race × sex groups (four): the meo constraint holds on the training rows, the test
    accuracy stays near the base's, and the test-set rate gap shrinks."""
    from sklearn.model_selection import train_test_split

    from fairmiss.datasets import get_variant
    from fairmiss.datasets.registry import regrouped

    v = get_variant("compas_000")
    variant = regrouped(v, ["race", "sex"])
    df, _ = variant.build(tmp_path)
    y = df.pop(variant.label).to_numpy()
    s = df.pop(variant.group).to_numpy()
    X = df.to_numpy(float)
    Xtr, Xte, ytr, yte, str_, ste = train_test_split(X, y, s, test_size=0.3, random_state=0,
                                                     stratify=s * 2 + y)
    assert len(np.unique(str_)) == 4
    est = FairProjection(constraint="meo", tol=0.02).fit(Xtr, ytr, str_)
    p = est.base_proba(Xtr)
    assert max(abs(ra / r - 1) for ra, r in _rates(est.predict_proba(Xtr, str_), p, str_, "meo")) <= 0.02 + 1e-6
    acc_base = np.mean(est.estimator_.predict(Xte) == yte)
    acc = np.mean(est.predict(Xte, ste) == yte)
    assert acc > acc_base - 0.05, (acc, acc_base)

    def tpr_gap(pred):
        tpr = [pred[(ste == a) & (yte == 1)].mean() for a in np.unique(ste)]
        return max(tpr) - min(tpr)

    assert tpr_gap(est.predict(Xte, ste)) < tpr_gap(est.estimator_.predict(Xte))


# ------------------------------------------------------------------ bad input through the command line
X_CFG = "params/x.yaml"


def _fp(**entry) -> dict:
    return {"learners": [{"kind": "fair_projection", **entry}], "imputers": [{"kind": "mean"}]}


def _own_one_group() -> dict:
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "own_data"
    rows = list(csv.reader(io.StringIO((example / "credit.csv").read_text())))
    col = rows[0].index("sex")
    for r in rows[1:]:
        r[col] = "male"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    cfg = copy.deepcopy(yaml.safe_load((example / "credit.yaml").read_text()))
    cfg["dataset"]["file"] = "own.csv"
    cfg.update(_fp())
    return {X_CFG: yaml.safe_dump(cfg), "own.csv": out.getvalue()}


BAD = [
    BadInput("fair-projection-negative-tol", ["validate", X_CFG], [X_CFG, "learners.0.fair_projection.tol", "greater than or equal to 0"],
             files={X_CFG: mutate_keys("compas_default.yaml", _fp(tol=-0.1))}),
    BadInput("fair-projection-unknown-constraint", ["validate", X_CFG], [X_CFG, "learners.0.fair_projection.constraint", "demographic_parity"],
             files={X_CFG: mutate_keys("compas_default.yaml", _fp(constraint="demographic_parity"))}),
    BadInput("fair-projection-group-aware-base", ["validate", X_CFG], [X_CFG, "learners.0.fair_projection.base", "threshold_optimizer"],
             files={X_CFG: mutate_keys("compas_default.yaml", _fp(base={"kind": "threshold_optimizer"}))}),
    BadInput("fair-projection-one-group", ["validate", X_CFG], ["own.csv", "column 'sex'", "at least two groups"],
             files=_own_one_group()),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.id)
def test_bad_input_is_one_line_exit_2(case, tmp_path):
    check(case, tmp_path)


def test_a_good_config_validates(tmp_path):
    from badinput import run_case

    out = run_case(BadInput("ok", ["validate", X_CFG], "", files={
        X_CFG: mutate_keys("compas_default.yaml", _fp(constraint="eo", tol=0.05, divergence="cross_entropy"))}),
        tmp_path)
    assert out.returncode == 0, out.stderr
