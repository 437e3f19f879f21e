"""The metric table (``fairmiss.metrics.kinds``): every list of fairness gaps is generated from it, the built-in
lists are exactly the ones results were produced with, and a gap added in one place is a config choice, has its
group requirements checked, is summarised, drawn on the kinds page and computed by ``evaluate``."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from fairmiss.metrics import evaluate, evaluate_reference
from fairmiss.metrics import kinds

# the lists that were written out by hand before the table; results (metrics.json keys, cells.csv columns, the
# config's choices and error message) depend on their content and order
CHOICES = ("fnr_difference", "fpr_difference", "equalized_odds_difference", "demographic_parity_difference",
           "accuracy_difference")
NEEDS = {"fnr_difference": (1,), "tpr_difference": (1,), "fpr_difference": (0,),
         "equalized_odds_difference": (0, 1), "equalized_odds_sum": (0, 1), "gap_rms": (0, 1),
         "demographic_parity_difference": (), "accuracy_difference": ()}
SUMMARY = ("accuracy", "balanced_accuracy", "auc", "fnr_difference", "fpr_difference", "tpr_difference",
           "equalized_odds_difference", "demographic_parity_difference", "accuracy_difference", "gap_rms")
BARS = ("accuracy", "fnr", "fpr", "selection_rate")

BASE = {"experiment": "gaps", "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
        "learners": [{"kind": "decision_tree"}]}

# group 0: TP 1, FN 1, TN 2, FP 0 (TPR 1/2, FPR 0, balanced accuracy 3/4)
# group 1: TP 2, FN 0, TN 3, FP 1 (TPR 1, FPR 1/4, balanced accuracy 7/8)
Y = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 0])
P = np.array([1, 0, 0, 0, 1, 1, 1, 0, 0, 0])
G = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])


@pytest.fixture(autouse=True)
def _metric_table_restored():
    """The gaps these tests register are forgotten afterwards: later tests (the kinds page, the config's
    choices) see the table as a fresh process does."""
    before = dict(kinds.METRIC_TABLE)
    yield
    kinds.METRIC_TABLE.clear()
    kinds.METRIC_TABLE.update(before)


def _add_gaps():
    # a gap of a per-group rate, and a gap computed from other gaps (AIF360's average odds difference)
    kinds.register_metric("balanced_accuracy_difference", kind="gap", label="balanced accuracy difference",
                          rate="balanced_accuracy", needs=(0, 1), choice=True, summary=True)
    kinds.register_metric("average_odds_difference", kind="gap", label="average odds difference",
                          compute=lambda o: (o["tpr_difference"] + o["fpr_difference"]) / 2, uses=("tpr", "fpr"),
                          needs=(0, 1), choice=True, summary=True)


def test_the_built_in_lists_are_the_ones_results_were_made_with():
    from fairmiss.config import ExperimentConfig
    from fairmiss.datasets.validate import METRIC_NEEDS
    from fairmiss.metrics import FAIRNESS_METRICS
    from fairmiss.pipeline.summary import SUMMARY_METRICS
    from fairmiss.reporting.html import GROUP_BAR_METRICS

    assert FAIRNESS_METRICS == kinds.fairness_choices() == CHOICES
    assert METRIC_NEEDS == NEEDS
    assert SUMMARY_METRICS == SUMMARY
    assert GROUP_BAR_METRICS == BARS
    schema = ExperimentConfig.model_json_schema()["properties"]["fairness_metric"]
    assert schema == {"default": "fnr_difference", "enum": list(CHOICES), "title": "Fairness Metric",
                      "type": "string"}


def test_unknown_fairness_metric_is_rejected_listing_the_choices():
    from fairmiss.config import ConfigError, parse_config

    with pytest.raises(ConfigError) as e:
        parse_config({**BASE, "fairness_metric": "fnr_diference"}, "x.yaml")
    assert str(e.value) == ("x.yaml: invalid config: fairness_metric: Input should be 'fnr_difference', "
                            "'fpr_difference', 'equalized_odds_difference', 'demographic_parity_difference' or "
                            "'accuracy_difference' (got 'fnr_diference')")
    with pytest.raises(ConfigError, match="fairness_metric: Input should be"):
        parse_config({**BASE, "fairness_metric": "gap_rms"})  # a gap, but not a config choice
    assert parse_config({**BASE, "fairness_metric": "accuracy_difference"}).fairness_metric == "accuracy_difference"


def test_an_added_gap_is_a_choice_a_need_a_summary_key_and_on_the_kinds_page():
    from fairmiss.config import ConfigError, ExperimentConfig, parse_config
    from fairmiss.config.kinds import describe_kinds

    _add_gaps()
    from fairmiss.datasets.validate import METRIC_NEEDS  # the public names are read from the table when imported
    from fairmiss.pipeline.summary import SUMMARY_METRICS

    assert kinds.fairness_choices() == CHOICES + ("balanced_accuracy_difference", "average_odds_difference")
    cfg = parse_config({**BASE, "fairness_metric": "average_odds_difference"})
    assert cfg.fairness_metric == "average_odds_difference"
    with pytest.raises(ConfigError, match="'accuracy_difference', 'balanced_accuracy_difference' or "
                                          "'average_odds_difference'"):
        parse_config({**BASE, "fairness_metric": "nope"})
    assert ExperimentConfig.model_json_schema()["properties"]["fairness_metric"]["enum"][-2:] == [
        "balanced_accuracy_difference", "average_odds_difference"]
    assert METRIC_NEEDS["balanced_accuracy_difference"] == METRIC_NEEDS["average_odds_difference"] == (0, 1)
    assert SUMMARY_METRICS == SUMMARY + ("balanced_accuracy_difference", "average_odds_difference")
    page = describe_kinds()
    assert "| `average_odds_difference` | gap |" in page and f"`{__name__}`" in page


def test_an_added_gap_is_computed_by_evaluate_and_summarised():
    from fairmiss.pipeline.summary import cells_table, summarise

    base = evaluate(Y, P, G, metrics=["accuracy"])
    assert "balanced_accuracy_difference" not in base and "average_odds_difference" not in base
    _add_gaps()
    out = evaluate(Y, P, G, metrics=["accuracy"])  # balanced accuracy is not listed: the gap needs it
    assert out["balanced_accuracy_group_0"] == 0.75 and out["balanced_accuracy_group_1"] == 0.875
    assert out["balanced_accuracy_difference"] == 0.125
    assert out["tpr_difference"] == 0.5 and out["fpr_difference"] == 0.25
    assert out["average_odds_difference"] == 0.375
    assert {k: v for k, v in out.items() if k in base} == base  # nothing else moves
    ref = evaluate_reference(Y, P, G, metrics=["accuracy"])
    assert set(ref) == set(out)
    for k, v in out.items():
        assert v == pytest.approx(ref[k], abs=1e-12, nan_ok=True), k
    # a single-class group: NaN, never 0
    one = evaluate(Y[:4], P[:4], np.array([0, 0, 1, 1]), metrics=["accuracy"])
    assert math.isnan(one["balanced_accuracy_difference"]) and math.isnan(one["average_odds_difference"])

    results = [SimpleNamespace(key=f"k{s}", split_index=s, missingness="none", method="tree", imputer="mean",
                               learner="tree", status="ok", metrics={**out, "average_odds_difference": 0.375 + s})
               for s in range(2)]
    entry = summarise(results)["none"]["tree"]
    assert entry["balanced_accuracy_difference_mean"] == 0.125 and entry["average_odds_difference_mean"] == 0.875
    cols = list(cells_table(results).columns)
    assert cols[-2:] == ["balanced_accuracy_difference", "average_odds_difference"]
    assert cols.index("gap_rms") < cols.index("balanced_accuracy_difference")


def test_data_lacking_what_an_added_gap_needs_are_refused():
    from fairmiss.datasets.registry import DatasetError
    from fairmiss.datasets.validate import check_groups

    df = pd.DataFrame({"g": [0, 0, 1, 1], "y": [1, 0, 1, 1]})  # group 1 has no negatives
    check_groups(df, "g", "y", where="d", fairness_metric="fnr_difference")
    _add_gaps()
    with pytest.raises(DatasetError, match="group 1 of column 'g' has no negatives .*'average_odds_difference'"):
        check_groups(df, "g", "y", where="d", fairness_metric="average_odds_difference")


def test_inconsistent_registrations_are_refused():
    with pytest.raises(ValueError, match="registered twice"):
        kinds.register_metric("fnr_difference", kind="gap", label="x", rate="fnr")
    with pytest.raises(ValueError, match="exactly one of rate="):
        kinds.register_metric("x_difference", kind="gap", label="x")
    with pytest.raises(ValueError, match="exactly one of rate="):
        kinds.register_metric("x_difference", kind="gap", label="x", rate="fnr", compute=lambda o: 0.0)
    with pytest.raises(ValueError, match="for gaps"):
        kinds.register_metric("x", kind="rate", label="x", choice=True)
    with pytest.raises(ValueError, match="needs lists label values"):
        kinds.register_metric("x_difference", kind="gap", label="x", rate="fnr", needs=(2,))
    assert "x_difference" not in kinds.METRIC_TABLE and "x" not in kinds.METRIC_TABLE
    json.dumps(kinds.metric_needs())  # plain data
