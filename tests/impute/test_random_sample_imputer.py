"""The ``random_sample`` (hot-deck) imputer kind (added in one module)."""
import numpy as np
import pytest
from pydantic import TypeAdapter

from fairmiss.impute.specs import ImputerSpec
from fairmiss.impute.build import make_imputer
from fairmiss.impute.random_sample import RandomSampleImputer


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 4, n).astype(float), rng.normal(size=n), rng.exponential(size=n)])
    M = rng.random(X.shape) < 0.3
    Xm = X.copy()
    Xm[M] = np.nan
    return X, Xm, M


def test_fills_only_missing_entries_with_observed_training_values():
    _, Xm, M = _data()
    Z = RandomSampleImputer(random_state=1).fit(Xm).transform(Xm)
    assert not np.isnan(Z).any()
    np.testing.assert_array_equal(Z[~M], Xm[~M])  # observed entries untouched
    for j in range(Xm.shape[1]):  # every filled value was observed in that column at fit
        assert set(Z[M[:, j], j]) <= set(Xm[~M[:, j], j])


def test_keeps_the_marginal_distribution_the_mean_does_not():
    X, Xm, M = _data(n=4000)
    Z = RandomSampleImputer(random_state=0).fit(Xm).transform(Xm)
    # category frequencies of column 0 among imputed entries match the observed ones (4000 rows, 30 % missing)
    obs = np.bincount(Xm[~M[:, 0], 0].astype(int), minlength=4) / (~M[:, 0]).sum()
    imp = np.bincount(Z[M[:, 0], 0].astype(int), minlength=4) / M[:, 0].sum()
    assert np.abs(obs - imp).max() < 0.05
    assert abs(Z[:, 1].std() - X[:, 1].std()) < 0.05  # the mean would shrink it by about sqrt(0.7)


def test_same_seed_same_output_other_seed_other_output():
    _, Xm, _ = _data()
    a = RandomSampleImputer(random_state=5).fit(Xm).transform(Xm)
    b = RandomSampleImputer(random_state=5).fit(Xm).transform(Xm)
    c = RandomSampleImputer(random_state=6).fit(Xm).transform(Xm)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_all_missing_column_is_filled_with_zero_and_indicator_is_appended():
    _, Xm, M = _data()
    Xm[:, 2] = np.nan
    spec = TypeAdapter(ImputerSpec).validate_python({"kind": "random_sample", "add_indicator": True})
    assert spec.label == "random_sample+mask"
    Z = make_imputer(spec, seed=0).fit(Xm).transform(Xm)
    assert Z.shape == (Xm.shape[0], 6)
    np.testing.assert_array_equal(Z[:, 2], 0.0)
    np.testing.assert_array_equal(Z[:, 3:], np.isnan(Xm).astype(float))


def test_transform_rejects_a_different_number_of_columns():
    _, Xm, _ = _data()
    imp = RandomSampleImputer().fit(Xm)
    with pytest.raises(ValueError, match="features"):
        imp.transform(Xm[:, :2])
