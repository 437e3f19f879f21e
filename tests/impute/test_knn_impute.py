"""The CPU-independent k-NN imputer: oracle checks and bit-equality under simulated CPUs."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.impute import KNNImputer

from conftest import cpu_variants

from fairmiss.impute.knn import TieAwareKNNImputer, nan_euclidean_fixed


def _oracle(train, query, k, ties):
    """Brute force, written independently of the imputer: for each missing cell enumerate every
    ordering of the tied donors (all tie-breaks a sort could make) and average scikit-learn's
    uniform-weight estimate over them ("average"), or take a stable sort ("lowest_index")."""
    out = query.copy()
    n_features = train.shape[1]
    for i, row in enumerate(query):
        for j in np.flatnonzero(np.isnan(row)):
            cand = []
            for t, donor in enumerate(train):
                if np.isnan(donor[j]):
                    continue
                both = ~np.isnan(row) & ~np.isnan(donor)
                if not both.any():
                    continue
                d = np.sqrt(n_features / both.sum() * sum((row[f] - donor[f]) ** 2 for f in np.flatnonzero(both)))
                cand.append((d, t, donor[j]))
            if not cand:
                out[i, j] = np.mean([x for x in train[:, j] if not np.isnan(x)])
                continue
            kk = min(k, int((~np.isnan(train[:, j])).sum()))
            cand.sort(key=lambda c: (c[0], c[1]))
            if len(cand) <= kk:
                out[i, j] = np.mean([c[2] for c in cand])
                continue
            if ties == "lowest_index":
                out[i, j] = np.mean([c[2] for c in cand[:kk]])
                continue
            dk = cand[kk - 1][0]
            closer = [c[2] for c in cand if c[0] < dk]
            tied = [c[2] for c in cand if c[0] == dk]
            picks = [np.mean(closer + list(sel)) for sel in itertools.combinations(tied, kk - len(closer))]
            out[i, j] = np.mean(picks)
    return out


@pytest.mark.parametrize("ties", ["average", "lowest_index"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_on_integer_data_with_ties(seed, ties):
    rng = np.random.default_rng(seed)
    train = rng.integers(0, 3, size=(14, 3)).astype(float)
    train[rng.random(train.shape) < 0.25] = np.nan
    query = rng.integers(0, 3, size=(8, 3)).astype(float)
    query[rng.random(query.shape) < 0.35] = np.nan
    k = int(rng.integers(1, 6))
    got = TieAwareKNNImputer(n_neighbors=k, ties=ties).fit(train).transform(query)
    want = _oracle(train, query, k, ties)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_average_is_independent_of_row_order():
    rng = np.random.default_rng(3)
    train = rng.integers(0, 2, size=(60, 4)).astype(float)
    train[rng.random(train.shape) < 0.2] = np.nan
    query = train.copy()
    perm = rng.permutation(len(train))
    a = TieAwareKNNImputer(n_neighbors=5).fit(train).transform(query)
    b = TieAwareKNNImputer(n_neighbors=5).fit(train[perm]).transform(query)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # lowest_index does depend on the order, and the test data make that visible (else the test above is empty)
    c = TieAwareKNNImputer(n_neighbors=5, ties="lowest_index").fit(train).transform(query)
    d = TieAwareKNNImputer(n_neighbors=5, ties="lowest_index").fit(train[perm]).transform(query)
    assert not np.allclose(c, d)


def test_equals_sklearn_without_ties():
    """Continuous features: no donor is tied at the k-th distance (probability 0), so both average the same
    donors. Uniform weights: equal to 1e-12 (only the summation order differs). Distance weights: 1e-9, since
    scikit-learn computes distances as ``x·x + y·y − 2·x·y``, whose rounding moves the weights ~1e-8 relative
    (fairmiss sums squared differences)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    X[rng.random(X.shape) < 0.2] = np.nan
    for weights in ("uniform", "distance"):
        a = KNNImputer(n_neighbors=5, weights=weights, add_indicator=True).fit(X[:200]).transform(X)
        b = TieAwareKNNImputer(n_neighbors=5, weights=weights, add_indicator=True).fit(X[:200]).transform(X)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 if weights == "uniform" else 1e-9)


def test_edge_cases_all_missing_column_and_no_common_coordinate():
    train = np.array([[1.0, np.nan, 5.0], [2.0, np.nan, np.nan], [np.nan, np.nan, 7.0]])
    query = np.array([[np.nan, np.nan, np.nan], [np.nan, np.nan, 5.0]])
    out = TieAwareKNNImputer(n_neighbors=2, keep_empty_features=True).fit(train).transform(query)
    assert out.shape == (2, 3)
    assert np.all(out[:, 1] == 0.0)  # column empty in training: kept as 0, as scikit-learn does
    assert out[0, 0] == 1.5 and out[0, 2] == 6.0  # no defined distance: the training mean
    assert not np.isnan(out).any()
    assert TieAwareKNNImputer(n_neighbors=2).fit(train).transform(query).shape == (2, 2)


def test_distances_equal_sklearn_definition():
    from sklearn.metrics.pairwise import nan_euclidean_distances

    rng = np.random.default_rng(1)
    A = rng.normal(size=(20, 6))
    B = rng.normal(size=(30, 6))
    A[rng.random(A.shape) < 0.3] = np.nan
    B[rng.random(B.shape) < 0.3] = np.nan
    np.testing.assert_allclose(nan_euclidean_fixed(A, B), nan_euclidean_distances(A, B), rtol=1e-9, equal_nan=True)


def test_bad_parameters_are_clear_errors():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    with pytest.raises(ValueError, match="ties"):
        TieAwareKNNImputer(ties="random").fit(X)
    with pytest.raises(ValueError, match="nan_euclidean"):
        TieAwareKNNImputer(metric="euclidean").fit(X)


_CHILD = r"""
import hashlib, json, sys
import numpy as np
from fairmiss.impute.knn import TieAwareKNNImputer
rng = np.random.default_rng(7)
out = {}
for name, X in (("int", rng.integers(0, 4, size=(700, 6)).astype(float)), ("float", rng.normal(size=(700, 6)))):
    X[rng.random(X.shape) < 0.2] = np.nan
    for ties in ("average", "lowest_index"):
        Z = TieAwareKNNImputer(n_neighbors=5, ties=ties).fit(X[:500]).transform(X)
        out[f"{name}-{ties}"] = hashlib.sha256(np.ascontiguousarray(Z).tobytes()).hexdigest()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_bit_identical_under_simulated_cpus():
    outs = {}
    for env in cpu_variants():
        r = subprocess.run([sys.executable, "-c", _CHILD], env={**os.environ, **env}, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        outs[json.dumps(env)] = json.loads(r.stdout.strip().splitlines()[-1])
    first = next(iter(outs.values()))
    for env, got in outs.items():
        assert got == first, f"output moved under {env}"
    assert len(outs) >= 4
