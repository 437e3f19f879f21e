"""How the Feng et al. (2023) learners predict: FairMissBag's random-member rule (the paper's Lemma 1), the
averaged rule as a counterexample, and reproducibility of the seeded draws (FairMissBag, pattern clusters).

Lemma 1 (Feng, Calmon & Wang 2023, §5): if every member of an ensemble satisfies equalized odds within ε, the
classifier that answers each query with a member drawn at random satisfies it within ε too, because its
P(ŷ = 1 | Y = y, S = s) is the members' rates averaged. The members here are hand-built classifiers with exactly
equal TPR and FPR in both groups (in the population): member j predicts 1 where a uniform feature u falls in an
arc of length w_y (y read from a feature that copies the label, so TPR and FPR are set separately) starting at
an offset o_s. In group 0 every member uses offset 0; in group 1 each member draws its own offset from its seed.
Every member is therefore EO-fair, the members agree in group 0 and disagree in group 1 — where a majority of
arcs rarely covers a point, so averaging the members and thresholding at 0.5 predicts 1 far less often in
group 1 than in group 0.
"""
import numpy as np
import pytest
from pydantic import TypeAdapter
from sklearn.base import BaseEstimator, ClassifierMixin

from fairmiss.learners.build import make_learner
from fairmiss.learners.feng2023.bag import FairMissBagClassifier
from fairmiss.learners.specs import LearnerSpec

T = TypeAdapter(LearnerSpec)
W = {0: 0.2, 1: 1 / 3}  # arc length, i.e. every member's FPR (y = 0) and TPR (y = 1) in both groups
N = 4000  # test rows per group


class ArcMember(ClassifierMixin, BaseEstimator):
    """An equalized-odds-fair member: 1 iff (u − o_s) mod 1 < w_y, with u = X[:, 1] and y = X[:, 0]; o_0 = 0,
    o_1 drawn from ``random_state`` at fit. ``randomized``: arcs twice as long, and inside an arc a fair coin
    (seeded by ``predict``'s ``random_state``) decides; P(ŷ = 1 | y, s) is w_y either way, but P(ŷ = 1 | x) is
    at most 0.5, so thresholding it at 0.5 never predicts 1."""

    def __init__(self, randomized: bool = False, random_state: int = 0):
        self.randomized = randomized
        self.random_state = random_state

    def fit(self, X, y, sensitive_features):
        self.offset_ = float(np.random.default_rng(self.random_state).random())
        self.classes_ = np.array([0, 1])
        return self

    def _in_arc(self, X, s):
        X, s = np.asarray(X, dtype=float), np.asarray(s)
        width = np.where(X[:, 0] > 0.5, W[1], W[0]) * (2 if self.randomized else 1)
        return np.mod(X[:, 1] - np.where(s == 1, self.offset_, 0.0), 1.0) < width

    def predict_proba(self, X, sensitive_features):
        p1 = self._in_arc(X, sensitive_features) * (0.5 if self.randomized else 1.0)
        return np.stack([1 - p1, p1], axis=1)

    def predict(self, X, sensitive_features, random_state=None):
        arc = self._in_arc(X, sensitive_features)
        if not self.randomized:
            return arc.astype(int)
        return (arc & (np.random.default_rng(random_state).random(len(arc)) < 0.5)).astype(int)


def _data(n_per_group, seed):
    """Columns: a copy of the label, u ~ U(0, 1), and a feature missing more often when y = 1 (the bag adds
    its indicator; the members ignore it)."""
    rng = np.random.default_rng(seed)
    s = np.repeat([0, 1], n_per_group)
    y = (rng.random(2 * n_per_group) < 0.5).astype(int)
    X = np.column_stack([y, rng.random(2 * n_per_group), rng.normal(size=2 * n_per_group)])
    X[rng.random(len(y)) < np.where(y == 1, 0.4, 0.1), 2] = np.nan
    return X, y, s


def _rates(pred, y, s):
    """P(ŷ = 1 | Y = y, S = g) for y, g in {0, 1}, and the cell sizes."""
    r = {(g, c): float(pred[(s == g) & (y == c)].mean()) for g in (0, 1) for c in (0, 1)}
    n = {(g, c): int(((s == g) & (y == c)).sum()) for g in (0, 1) for c in (0, 1)}
    return r, n


def _eo_gap(pred, y, s):
    r, _ = _rates(pred, y, s)
    return max(abs(r[0, c] - r[1, c]) for c in (0, 1))


def _eo_bound(y, s, k=4.0):
    """k binomial standard errors of a difference of two rates w_y between the groups, the largest over y:
    the sampling error of an EO gap whose population value is 0."""
    _, n = _rates(np.zeros(len(y)), y, s)
    return max(k * np.sqrt(W[c] * (1 - W[c]) * (1 / n[0, c] + 1 / n[1, c])) for c in (0, 1))


@pytest.fixture(scope="module")
def fitted():
    X, y, s = _data(500, seed=1)
    Xt, yt, st = _data(N, seed=2)
    bags = {rule: FairMissBagClassifier(ArcMember(), n_estimators=10, ensemble=rule, predict_groups=True,
                                        random_state=5).fit(X, y, s) for rule in ("random", "average")}
    return bags, (Xt, yt, st)


def test_members_are_eo_fair_and_disagree_in_group_1(fitted):
    bags, (X, y, s) = fitted
    bound = _eo_bound(y, s)
    offsets = [est.offset_ for _, est in bags["random"].members_]
    assert len(set(np.round(offsets, 6))) == 10
    for imp, est in bags["random"].members_:
        assert _eo_gap(est.predict(imp.transform(X), s), y, s) <= bound


def test_lemma_1_random_member_keeps_equalized_odds(fitted):
    bags, (X, y, s) = fitted
    pred = bags["random"].predict(X, s)
    gap, bound = _eo_gap(pred, y, s), _eo_bound(y, s)
    # 4 SE bound ~0.06 on 4000 rows per group (about 2000 per (s, y) cell); observed gap ~0.01
    assert bound < 0.07
    assert gap <= bound, f"random-member EO gap {gap:.4f} > 4 SE = {bound:.4f}"
    # not merely equal: every (s, y) rate is the members' rate w_y
    r, n = _rates(pred, y, s)
    for (g, c), v in r.items():
        assert abs(v - W[c]) <= 4 * np.sqrt(W[c] * (1 - W[c]) / n[g, c]), (g, c, v)


def test_thresholded_average_breaks_equalized_odds(fitted):
    bags, (X, y, s) = fitted
    pred = bags["average"].predict(X, s)
    gap, bound = _eo_gap(pred, y, s), _eo_bound(y, s)
    r, _ = _rates(pred, y, s)
    # group 0: the members agree, so the average is their common classifier (TPR 1/3); group 1: a majority of
    # ten random arcs of length 1/3 seldom covers a point, so TPR falls far below it
    assert abs(r[0, 1] - W[1]) < 0.05
    assert r[1, 1] < W[1] - 0.15
    assert gap > 3 * bound, f"averaged EO gap {gap:.4f} not beyond 3 × the 4-SE bound {bound:.4f}"


def test_randomized_members_keep_their_own_draws():
    """Members whose P(ŷ = 1 | x) never exceeds 0.5 but who predict 1 at rate w_y: the random-member rule gives
    rate w_y in every (s, y) cell (it asks each member's own seeded ``predict``); thresholding a member's or the
    averaged probability at 0.5 would predict 0 everywhere."""
    X, y, s = _data(500, seed=1)
    Xt, yt, st = _data(N, seed=2)
    bag = FairMissBagClassifier(ArcMember(randomized=True), n_estimators=10, predict_groups=True,
                                random_state=5).fit(X, y, s)
    assert bag.ensemble == "random"  # the default
    pred = bag.predict(Xt, st)
    r, n = _rates(pred, yt, st)
    for (g, c), v in r.items():
        assert abs(v - W[c]) <= 4 * np.sqrt(W[c] * (1 - W[c]) / n[g, c]), (g, c, v)
    assert _eo_gap(pred, yt, st) <= _eo_bound(yt, st)
    assert not FairMissBagClassifier(ArcMember(randomized=True), n_estimators=10, predict_groups=True,
                                     ensemble="average", random_state=5).fit(X, y, s).predict(Xt, st).any()


def _missing_data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.4).astype(int)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.6 * s + rng.normal(scale=0.8, size=n) > 0.2).astype(int)
    X[rng.random(n) < np.where(y == 1, 0.5, 0.1), 1] = np.nan
    return X, y, s


@pytest.mark.parametrize("entry", [
    {"kind": "fairmissbag", "n_estimators": 3, "base": {"kind": "exponentiated_gradient", "max_iter": 10}},
    {"kind": "fairmissbag", "n_estimators": 3, "base": {"kind": "threshold_optimizer"}},
    {"kind": "pattern_clusters", "min_cell": 10, "base": {"kind": "exponentiated_gradient", "max_iter": 10}},
], ids=["bag_eg", "bag_hardt", "clusters_eg"])
def test_same_seed_same_predictions(entry):
    X, y, s = _missing_data()
    spec = T.validate_python(entry)
    a = make_learner(spec, seed=11, feature_names=["a", "b", "c"]).fit(X, y, s)
    b = make_learner(spec, seed=11, feature_names=["a", "b", "c"]).fit(X, y, s)
    c = make_learner(spec, seed=12, feature_names=["a", "b", "c"]).fit(X, y, s)
    pa = a.predict(X, s)
    np.testing.assert_array_equal(pa, b.predict(X, s))
    np.testing.assert_array_equal(pa, a.predict(X, s))  # a second call draws the same labels
    assert a.randomized_predict  # the stability pass asks predict, not P(y = 1) > 0.5
    # the draws are real: another seed gives other labels on some rows, not on most
    pc = c.predict(X, s)
    assert 0 < (pa != pc).mean() < 0.5
    assert set(np.unique(pa)) <= {0, 1}


def test_named_alternatives_are_deterministic():
    X, y, s = _missing_data()
    for entry in ({"kind": "fairmissbag", "n_estimators": 3, "ensemble": "average",
                   "base": {"kind": "exponentiated_gradient", "max_iter": 10}},
                  {"kind": "pattern_clusters", "min_cell": 10, "prediction": "threshold",
                   "base": {"kind": "exponentiated_gradient", "max_iter": 10}}):
        L = make_learner(T.validate_python(entry), seed=11, feature_names=["a", "b", "c"]).fit(X, y, s)
        assert not L.randomized_predict
        p = L.score(X, s)
        np.testing.assert_array_equal(L.predict(X, s), (p > 0.5).astype(int))
    with pytest.raises(ValueError, match="prediction"):
        T.validate_python({"kind": "pattern_clusters", "prediction": "vote"})
    with pytest.raises(ValueError, match="ensemble"):
        T.validate_python({"kind": "fairmissbag", "ensemble": "vote"})
