"""The fast ``TieAwareKNNImputer`` equals, bit for bit, its previous dense implementation (kept in
``tests/_knn_reference.py`` as the oracle): same values, same integer view of the floats (signs of zero
and NaN payloads included), same dtype and output layout."""

from __future__ import annotations

import numpy as np
import pytest

from _knn_reference import ReferenceTieAwareKNNImputer

from fairmiss.impute.knn import TieAwareKNNImputer

VARIANTS = [
    {},
    {"ties": "lowest_index"},
    {"weights": "distance"},
    {"weights": "distance", "ties": "lowest_index"},
    {"add_indicator": True},
    {"keep_empty_features": True},
    {"add_indicator": True, "keep_empty_features": True, "weights": "distance"},
]


def _assert_same(train, query, **params):
    want = ReferenceTieAwareKNNImputer(**params).fit(train).transform(query)
    got = TieAwareKNNImputer(**params).fit(train).transform(query)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True), f"values differ for {params}"
    as_int = np.int64 if got.dtype == np.float64 else np.int32
    assert np.array_equal(np.ascontiguousarray(got).view(as_int), np.ascontiguousarray(want).view(as_int)), \
        f"bits differ for {params}"


@pytest.fixture(scope="module")
def compas_table3(tmp_path_factory, mirror):
    from fairmiss import pipeline
    from fairmiss.config import load_config

    cfg = load_config("params/studies/000_fig2_compas.yaml")
    data = pipeline.prepare(cfg.dataset, processed_dir=tmp_path_factory.mktemp("processed"))
    out = []
    for split_i in (0, 1):
        split = pipeline.make_split(cfg, data, split_i, cfg.missingness[0])
        X = split.X.to_numpy(dtype=float)
        out.append((X[split.train_idx], X[split.test_idx]))
    return out


@pytest.mark.parametrize("params", VARIANTS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()) or "default")
def test_compas_table3(compas_table3, params):
    for train, test in compas_table3:
        assert np.isnan(train).any() and np.isnan(test).any()
        for n_neighbors in (1, 5, 12):
            _assert_same(train, train, n_neighbors=n_neighbors, **params)
            _assert_same(train, test, n_neighbors=n_neighbors, **params)


@pytest.mark.parametrize("seed", range(8))
def test_random_integer_data_with_ties(seed):
    rng = np.random.default_rng(seed)
    n, f = int(rng.integers(150, 900)), int(rng.integers(2, 7))
    X = rng.integers(-2, 3, size=(n, f)).astype(float)
    X[rng.random(X.shape) < rng.uniform(0.05, 0.5)] = np.nan
    cut = n * 2 // 3
    for params in VARIANTS:
        _assert_same(X[:cut], X, n_neighbors=int(rng.integers(1, 9)), **params)


@pytest.mark.parametrize("seed", range(4))
def test_random_float_data_many_donors(seed):
    # enough donors that the k-th distance is bounded from a sample; signed values of mixed magnitudes
    rng = np.random.default_rng(100 + seed)
    n, f = 2500, 5
    X = rng.normal(size=(n, f)) * np.array([1.0, 1e-3, 1e4, 3.0, 1.0])[:f]
    X[:, 3] = np.round(X[:, 3])  # one discrete column: ties inside continuous data
    X[rng.random(X.shape) < 0.25] = np.nan
    for params in VARIANTS[:4]:
        _assert_same(X[:1800], X, n_neighbors=5, **params)


def test_rows_with_no_shared_features_and_all_nan_columns():
    train = np.array([[1.0, np.nan, np.nan, 4.0],
                      [2.0, np.nan, np.nan, np.nan],
                      [np.nan, 3.0, np.nan, np.nan],
                      [np.nan, 5.0, np.nan, 1.0],
                      [7.0, np.nan, np.nan, 2.0]])
    query = np.array([[np.nan, 1.0, np.nan, np.nan],  # shares nothing with the donors of column 0
                      [np.nan, np.nan, np.nan, 3.0],
                      [np.nan, np.nan, 1.0, np.nan],  # only the all-NaN column is present
                      [np.nan, np.nan, np.nan, np.nan],
                      [1.0, 2.0, 3.0, 4.0]])
    for params in VARIANTS:
        for k in (1, 2, 3, 10):
            _assert_same(train, query, n_neighbors=k, **params)


def test_k_larger_than_the_number_of_donors():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(40, 4)).astype(float)
    X[rng.random(X.shape) < 0.3] = np.nan
    X[:30, 2] = np.nan
    X[1, 2] = 1.0  # one donor for column 2 in training
    for params in VARIANTS:
        for k in (3, 25, 100):
            _assert_same(X[:30], X, n_neighbors=k, **params)


def test_zero_results_signs_and_cancellation():
    # imputed values that are exactly 0 (donor values that cancel, -0.0 and +0.0 donors): the sign of the
    # zero must be the dense implementation's
    train = np.array([[0.0, 1.0], [0.0, -1.0], [1.0, -0.0], [1.0, 0.0], [2.0, -0.0], [2.0, -0.0],
                      [3.0, 2.5], [3.0, -2.5], [4.0, -3.0], [5.0, 0.0]])
    query = np.array([[0.0, np.nan], [1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [4.5, np.nan], [-0.0, np.nan]])
    for params in VARIANTS:
        for k in (1, 2, 3, 4):
            _assert_same(train, query, n_neighbors=k, **params)


@pytest.mark.filterwarnings("ignore:overflow encountered in multiply:RuntimeWarning")  # the case under test
@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")  # inf / inf weights
def test_huge_magnitudes_and_overflowing_distances():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(60, 3)) * 1e200
    X[rng.random(X.shape) < 0.3] = np.nan
    for params in VARIANTS[:4]:
        _assert_same(X[:40], X, n_neighbors=3, **params)


def test_duplicate_receivers_and_donors_across_many_summation_leaves():
    # many identical rows: tie groups spread over many of numpy's 128-element summation blocks
    rng = np.random.default_rng(11)
    base = rng.integers(0, 3, size=(30, 3)).astype(float)
    X = base[rng.integers(0, 30, size=1500)] + rng.normal(size=(1500, 3)) * (rng.random((1500, 3)) < 0.1)
    X[rng.random(X.shape) < 0.2] = np.nan
    for params in VARIANTS[:4]:
        _assert_same(X[:1000], X, n_neighbors=5, **params)


def test_copy_false_and_float32_input():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(200, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    _assert_same(X[:150], X.copy())
    a = ReferenceTieAwareKNNImputer(copy=False).fit(X[:150].astype(float)).transform(X.astype(float))
    b = TieAwareKNNImputer(copy=False).fit(X[:150].astype(float)).transform(X.astype(float))
    assert np.array_equal(a.view(np.int64), b.view(np.int64))


def test_tiny_magnitudes_with_subnormal_squared_distances():
    # squared differences in the subnormal range, where rounding errors are absolute; enough donors that the
    # k-th distance is bounded from a sample
    rng = np.random.default_rng(13)
    X = rng.integers(-40, 40, size=(1500, 3)) * 1e-161 + rng.normal(size=(1500, 3)) * 1e-163
    X[rng.random(X.shape) < 0.2] = np.nan
    for params in VARIANTS[:4]:
        _assert_same(X[:1000], X, n_neighbors=5, **params)


def test_pairwise_sum_replay_matches_numpy_sum():
    # the replay of numpy's summation order on sparse rows (what makes the fast weighted means bit-identical
    # to dense ``.sum(axis=1)``); fails loudly if numpy ever changes its pairwise summation
    from fairmiss.impute.knn import _sparse_row_sums

    rng = np.random.default_rng(21)
    for n in [1, 5, 7, 8, 9, 127, 128, 129, 255, 256, 257, 1000, 2944, 8191, 8192, 8193, 16800, 21001]:
        n_rows = 12
        dense = np.zeros((3, n_rows, n))
        for i in range(n_rows):
            count = int(rng.integers(1, min(n, 40) + 1)) if i % 3 else n  # some rows dense, most sparse
            pos = rng.choice(n, size=count, replace=False)
            dense[:, i, pos] = rng.normal(size=(3, count)) * 10.0 ** rng.integers(-6, 6, size=(3, count))
        row, pos = np.nonzero(dense[0] != 0)
        got = _sparse_row_sums(n, row, pos, dense[:, row, pos], n_rows)
        want = dense.sum(axis=2)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), n
