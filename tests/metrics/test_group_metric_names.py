"""fairmiss.tracking.groups: the groups' names in MLflow metric keys, and back to codes without loss."""

from __future__ import annotations

import itertools
import random

import pytest

from fairmiss.tracking.groups import coded_metrics, group_slugs, named_metrics


def _metrics(codes, extra=()):
    out = {"accuracy": 0.7, "fnr_difference": 0.1, "fnr_ratio": 0.8, "gap_rms": 0.05, "n_test": 100.0,
           "imp_mse.age_group_1": 0.3, "cc.fnr_group_0": 0.2, **{k: 1.0 for k in extra}}
    for c, m in itertools.product(codes, ("fnr", "fpr", "accuracy", "selection_rate", "auc")):
        out[f"{m}_group_{c}"] = random.random()
    return out


def test_names_replace_codes_and_read_back():
    m = _metrics(["0", "1"])
    named, slugs = named_metrics(m, {"0": "Black", "1": "White"})
    assert slugs == {"0": "Black", "1": "White"}
    assert named["fnr_Black"] == m["fnr_group_0"] and named["imp_mse.age_White"] == m["imp_mse.age_group_1"]
    assert named["cc.fnr_Black"] == m["cc.fnr_group_0"] and named["fnr_difference"] == m["fnr_difference"]
    assert not any("_group_" in k for k in named)
    assert coded_metrics(named, slugs) == m


@pytest.mark.parametrize("names, expect", [
    ({"0": "Black · Female", "1": "Black · Male"}, {"0": "Black_Female", "1": "Black_Male"}),
    ({"0": "age < 25", "1": "age >= 25"}, {"0": "age_lt_25", "1": "age_ge_25"}),
    ({"0": "a-b", "1": "a b"}, {"0": "a_b", "1": "group_1"}),  # the same name twice: the code
    ({"0": "difference", "1": "ratio"}, {"0": "group_0", "1": "group_1"}),  # words a metric name ends with
    ({"0": "0", "1": "1"}, {"0": "group_0", "1": "group_1"}),  # only digits
    ({"0": "·", "1": "male"}, {"0": "group_0", "1": "male"}),  # nothing usable
])
def test_names_that_cannot_be_keys_keep_the_code(names, expect):
    assert group_slugs(names) == expect
    m = _metrics(list(names))
    named, slugs = named_metrics(m, names)
    assert coded_metrics(named, slugs) == m


def test_names_that_would_not_read_back_fall_back_to_codes_for_every_group():
    """'female' and 'Female' differ, but a metric already named like a renamed one would merge two keys."""
    m = _metrics(["0", "1"], extra=("fnr_female",))
    named, slugs = named_metrics(m, {"0": "female", "1": "male"})
    assert slugs == {"0": "group_0", "1": "group_1"} and named == m


def test_random_names_always_round_trip():
    rng = random.Random(0)
    alphabet = "abAB _-·<>=019"
    for _ in range(300):
        k = rng.randint(2, 5)
        names = {str(c): "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for c in range(k)}
        m = _metrics(list(names))
        named, slugs = named_metrics(m, names)
        assert len(named) == len(m) and coded_metrics(named, slugs) == m, (names, slugs)


def test_runs_without_the_tag_are_read_as_they_are():
    m = _metrics(["0", "1"])
    assert coded_metrics(m, None) == m and coded_metrics(m, "{}") == m


def test_cell_metrics_csv_names_the_group_of_each_per_group_row():
    """cell_metrics.csv's ``group`` column, key by key (written out, not derived from the code's pattern)."""
    from types import SimpleNamespace

    from fairmiss.reporting.html import cell_metrics_long

    metrics = {"fnr_group_0": 0.1, "fnr_group_1_ci_low": 0.2, "fnr_group_1_ci_high": 0.3, "left_out_group_1": 1.0,
               "imp_miss.duration_group_0": 0.3, "cc.fnr_group_1": 0.4, "fnr_difference": 0.5,
               "n_groups_left_out": 0.0, "imp_disc.age_group_adult": 1.0, "accuracy": 0.7}
    cell = SimpleNamespace(key="k", split_index=0, missingness="none", method="mean+tree", status="ok", metrics=metrics)
    expected = {"fnr_group_0": "female", "fnr_group_1_ci_low": "male", "fnr_group_1_ci_high": "male",
                "left_out_group_1": "male", "imp_miss.duration_group_0": "female", "cc.fnr_group_1": "male",
                "fnr_difference": "", "n_groups_left_out": "", "imp_disc.age_group_adult": "", "accuracy": ""}
    got = dict(cell_metrics_long([cell], {0: "female", 1: "male"})[["metric", "group"]].itertuples(index=False))
    assert got == expected
    coded = dict(cell_metrics_long([cell], None)[["metric", "group"]].itertuples(index=False))
    assert coded == {k: {"female": "0", "male": "1"}.get(v, "") for k, v in expected.items()}
