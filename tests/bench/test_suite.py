"""Suite files (fairmiss.bench.suite): the shipped suite validates and expands into ordinary configs whose cells
have the same cache keys as a hand-written config's (so `fairmiss run` and `fairmiss bench` share cells); bad
suites are one `fairmiss: error:` line naming the file and key, exit 2, nothing written."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest
import yaml

from fairmiss.bench import load_suite, parse_suite
from fairmiss.config import ConfigError, parse_config
from fairmiss.pipeline import cell_cache_key

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from badinput import PARAMS, BadInput, check  # noqa: E402

SUITE = PARAMS / "suites" / "fairmiss_quick.yaml"


def suite_data() -> dict:
    return yaml.safe_load(SUITE.read_text())


def test_shipped_suite_expands():
    s = load_suite(SUITE)
    assert s.datasets == ["compas_000", "german_sex"] and s.scenarios == ["mcar20", "mar30"]
    assert len(s.candidates) == 8 and s.reference == "median+lr"
    assert [len(cfg.cells()) for _, _, cfg in s.configs] == [2 * 8 * 10] * 2
    german = dict((n, cfg) for n, _, cfg in s.configs)["german_sex"]
    assert german.missingness[0].rates == {"duration": 0.2, "credit_amount": 0.2}  # per_dataset
    q = load_suite(SUITE, quick=True)
    assert q.name == "fairmiss_quick-quick" and q.candidates == ["median+lr", "knn+lr"]
    assert [len(cfg.cells()) for _, _, cfg in q.configs] == [2 * 2 * 3] * 2


def _keys(cfg) -> dict:
    return {c.key: cell_cache_key(cfg, c, data_hash="d", code_version="c") for c in cfg.cells()}


def test_cells_are_those_of_a_hand_written_config():
    """A config a user writes for the same dataset, seed, splits, scenario and methods (another experiment name,
    another order of keys) has cells with the same cache keys as the suite's: each reuses the other's cells."""
    s = load_suite(SUITE, quick=True)
    _, raw, cfg = s.configs[0]
    hand = parse_config({
        "experiment": "my_compas_run", "seed": 2026, "dataset": {"name": "compas_000"},
        "split": {"test_size": 0.3, "n_splits": 3},
        "missingness": [{"name": "mcar20", "kind": "mcar", "rates": {"c_charge_degree": 0.2, "priors_count": 0.2}}],
        "imputers": [{"kind": "median"}], "learners": [{"name": "lr", "kind": "logistic_regression"}],
        "fairness_metric": "equalized_odds_difference",
        "tracking": {"experiment_name": raw["tracking"]["experiment_name"]},
    })
    suite_keys, hand_keys = _keys(cfg), _keys(hand)
    assert hand_keys and all(suite_keys[k] == v for k, v in hand_keys.items())
    # the full suite's cells include the quick suite's (quick takes the first splits of the same protocol)
    full = _keys(load_suite(SUITE).configs[0][2])
    assert set(suite_keys.values()) <= set(full.values())


def test_pipelines_restrict_only_the_learners_that_need_it():
    d = suite_data()
    d["candidates"] = {"imputers": [{"kind": "median"}, {"kind": "knn"}],
                       "learners": [{"kind": "logistic_regression", "name": "lr"}],
                       "pipelines": [{"imputer": {"kind": "median"}, "learner": {"kind": "decision_tree"}}]}
    d.pop("quick")
    s = parse_suite(d, "x.yaml")
    _, raw, cfg = s.configs[0]
    assert s.candidates == ["median+lr", "knn+lr", "median+decision_tree"]
    lr, tree = raw["learners"]
    assert "imputers" not in lr and tree["imputers"] == ["median"]
    assert sorted({c.imputer.label + "+" + c.learner.label for c in cfg.cells()}) == sorted(s.candidates)
    # lr's cells are those of the plain product (no restriction in their keys)
    plain = copy.deepcopy(d)
    plain["candidates"].pop("pipelines")
    pk = set(_keys(parse_suite(plain, "y.yaml").configs[0][2]).values())
    lr_keys = {v for k, v in _keys(cfg).items() if k.endswith("/lr")}
    assert lr_keys and lr_keys <= pk


@pytest.mark.parametrize("change, expect", [
    (lambda d: d["candidates"].update(learners=[]), ["candidates", "'imputers' without 'learners'"]),
    (lambda d: d.update(reference="mean+xgb"), ["reference", "'mean+xgb' is not a candidate"]),
    (lambda d: d["datasets"].append({"name": "compas_000"}), ["datasets", "listed twice"]),
])
def test_parse_errors_name_the_key(change, expect):
    d = suite_data()
    change(d)
    with pytest.raises(ConfigError) as e:
        parse_suite(d, "s.yaml")
    assert str(e.value).startswith("s.yaml: ") and all(x in str(e.value) for x in expect), str(e.value)


def _mutated(change) -> str:
    d = suite_data()
    change(d)
    return yaml.safe_dump(d, sort_keys=False)


def _case(id_, change, expect) -> BadInput:
    return BadInput(id_, ["bench", "params/suites/bad.yaml"], ["params/suites/bad.yaml", *expect],
                    files={"params/suites/bad.yaml": _mutated(change)})


CASES = [
    _case("unknown-dataset", lambda d: d["datasets"].__setitem__(1, {"name": "german_nope"}),
          ["datasets.1.name", "unknown dataset 'german_nope'"]),
    _case("unknown-missingness-kind", lambda d: d["scenarios"][0].update(kind="mcar_nope"), ["scenarios.0"]),
    _case("unknown-imputer-kind", lambda d: d["candidates"]["imputers"].append({"kind": "magic"}),
          ["candidates.imputers.4"]),
    _case("reference-not-a-candidate", lambda d: d.update(reference="mean+forest"),
          ["reference", "not a candidate"]),
    _case("empty-product", lambda d: d["candidates"].update(imputers=[]), ["candidates", "without"]),
    _case("duplicate-scenario", lambda d: d["scenarios"][1].update(kind="mcar", name="mcar20",
                                                                   rates={"priors_count": 0.1}) or
          d["scenarios"][1].pop("columns") and d["scenarios"][1].pop("drivers") and d["scenarios"][1].pop("rate")
          and d.pop("per_dataset"), ["scenarios", "duplicate scenario names ['mcar20']"]),
    _case("duplicate-candidate", lambda d: d["candidates"].update(
        pipelines=[{"imputer": {"kind": "median"}, "learner": {"kind": "logistic_regression", "name": "lr"}}]),
        ["candidates", "'median+lr' is listed twice"]),
    _case("scenario-masks-the-group", lambda d: d["scenarios"][0]["rates"].update(race=0.1),
          ["(dataset 'compas_000')", "scenarios.0", "'race'", "never masked"]),
    _case("per-dataset-column-missing", lambda d: d["per_dataset"]["german_sex"]["mar30"].update(drivers=["nope"]),
          ["(dataset 'german_sex')", "scenarios.1", "'nope'"]),
    _case("per-dataset-unknown-dataset", lambda d: d["per_dataset"].update(adult_000={"mcar20": {"rates": {}}}),
          ["per_dataset", "'adult_000' is not one of the suite's datasets"]),
    _case("rank-by-unknown-metric", lambda d: d["rank_by"].update(f9="max"), ["rank_by", "'f9' is not a metric"]),
    # f1 is recorded once listed under metrics:, the ensemble's and the imputation metrics with their evaluation
    _case("rank-by-unlisted-f1", lambda d: d["rank_by"].update(f1="max"),
          ["rank_by", "'f1' is not a metric", "listed under metrics:"]),
    _case("rank-by-ensemble-without-stability", lambda d: d["rank_by"].update(ens_accuracy="max"),
          ["rank_by", "'ens_accuracy'", "with evaluation.stability"]),
    _case("rank-by-imputation-without-quality", lambda d: d["rank_by"].update({"imp_rmse.priors_count": "min"}),
          ["rank_by", "'imp_rmse.priors_count'", "with evaluation.imputation_quality"]),
    _case("split-seeds-and-n-splits-disagree", lambda d: d.update(splits={"n_splits": 3, "seeds": [1, 2]}),
          ["splits", "n_splits 3 but 2 seeds"]),
    _case("split-seed-twice", lambda d: d.update(splits={"seeds": [100, 100]}),
          ["splits.seeds", "repeated seeds [100]"]),
    _case("unknown-key", lambda d: d.update(splitz={"n_splits": 2}), ["unknown key 'splitz'"]),
    BadInput("results-dir-is-a-file", ["bench", "params/suites/fairmiss_quick.yaml", "--quick", "--results-dir",
                                       "out.txt"], ["--results-dir", "out.txt"], files={"out.txt": "a file\n"}),
    BadInput("learner-restricted-in-a-suite", ["bench", "params/suites/bad.yaml", "--plan"],
             ["candidates: learners.0.imputers", "'imputers' is not used in a suite"],
             files={"params/suites/bad.yaml": _mutated(lambda d: d["candidates"]["learners"][0].update(
                 imputers=["median"]))}),
    BadInput("missing-file", ["bench", "params/suites/nope.yaml"], ["params/suites/nope.yaml", "suite file not found"]),
    # a swept learner (sweep: {param: [values]}): its malformed forms, through the suite file
    _case("sweep-empty-values", lambda d: d["candidates"]["learners"][0].update(sweep={"C": []}),
          ["candidates", "learners.0.sweep.C", "non-empty list"]),
    _case("sweep-unknown-parameter", lambda d: d["candidates"]["learners"][0].update(sweep={"depth": [1, 2]}),
          ["learners.0.sweep.depth", "'logistic_regression' has no parameter 'depth'"]),
    _case("sweep-fixed-key", lambda d: d["candidates"]["learners"][0].update(sweep={"name": ["a", "b"]}),
          ["learners.0.sweep.name", "cannot be swept"]),
    _case("sweep-value-twice", lambda d: d["candidates"]["learners"][0].update(sweep={"C": [1.0, 1.0]}),
          ["learners.0.sweep.C", "listed twice"]),
    _case("sweep-comma-in-name", lambda d: d["candidates"]["learners"][0].update(name="l,r", sweep={"C": [1.0]}),
          ["learners.0.sweep", "cannot hold ','"]),
    BadInput("compare-suite-missing-file", ["compare", "params/suites/nope.yaml"],
             ["params/suites/nope.yaml", "suite file not found"]),
    BadInput("compare-quick-without-suite", ["compare", "some_experiment", "--quick"],
             ["--quick", "only for a suite file"]),
    # `fairmiss validate` reads a suite file as a suite (and its quick version), with the same one-line errors
    BadInput("validate-bad-suite", ["validate", "params/suites/bad.yaml"],
             ["params/suites/bad.yaml", "unknown key 'splitz'"],
             files={"params/suites/bad.yaml": _mutated(lambda d: d.update(splitz={"n_splits": 2}))}),
    BadInput("validate-bad-quick", ["validate", "params/suites/bad.yaml"],
             ["params/suites/bad.yaml (with its quick: overrides)", "splits.n_splits"],
             files={"params/suites/bad.yaml": _mutated(lambda d: d["quick"].update(splits={"n_splits": 0}))}),
    BadInput("bad-quick", ["bench", "params/suites/bad.yaml", "--quick", "--plan"],
             ["params/suites/bad.yaml (with its quick: overrides)", "splits.n_splits"],
             files={"params/suites/bad.yaml": _mutated(lambda d: d["quick"].update(splits={"n_splits": 0}))}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_suite(case, tmp_path):
    check(case, tmp_path)


def test_a_swept_learner_is_one_candidate_per_point_and_one_front():
    from flows.bench import candidate_family

    data = suite_data()
    data["candidates"] = {"imputers": [{"kind": "median"}],
                          "learners": [{"kind": "logistic_regression", "name": "lr"},
                                       {"kind": "exponentiated_gradient", "name": "eg",
                                        "sweep": {"eps": [0.01, 0.1]}}]}
    data.pop("quick")
    s = parse_suite(data, "inline.yaml")
    assert s.candidates == ["median+lr", "median+eg,eps=0.01", "median+eg,eps=0.1"]
    assert {candidate_family(c) for c in s.candidates} == {"median+lr", "median+eg"}
    assert [len(cfg.cells()) for _, _, cfg in s.configs] == [2 * 3 * 10] * 2


@pytest.mark.parametrize("path", sorted((PARAMS / "suites").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_suite_and_its_quick_version_expand(path):
    for quick in (False, True):
        s = load_suite(path, quick=quick)
        assert s.reference in s.candidates
        for _, raw, cfg in s.configs:
            assert cfg.cells() and raw["tracking"]["experiment_name"].startswith("bench-")


def test_son_german_draws_the_suites_presets_on_the_registered_table():
    s = load_suite(PARAMS / "suites" / "son_german.yaml")
    assert s.datasets == ["german_son"] and len(s.scenarios) == 4 and len(s.candidates) == 10
    assert [len(cfg.cells()) for _, _, cfg in s.configs] == [4 * 10 * 10]


@pytest.mark.parametrize("rank_by, extra", [
    ({"f1": "max", "f1_difference": "min"}, {"metrics": ["accuracy", "f1"]}),
    ({"ens_accuracy": "max", "label_stability": "max", "jitter_difference": "min"},
     {"evaluation": {"stability": {"estimators": 5}}}),
    ({"ens_f1": "max"}, {"metrics": ["accuracy", "f1"], "evaluation": {"stability": {"estimators": 5}}}),
    ({"imp_rmse.priors_count": "min", "imp_kl_gap.priors_count": "min"}, {"evaluation": {"imputation_quality": True}}),
])
def test_rank_by_what_the_suites_evaluation_records(rank_by, extra):
    d = suite_data()
    d.update(rank_by=rank_by, **extra)
    assert parse_suite(d, "s.yaml").rank_by == rank_by


def test_leaderboard_reads_ranked_metrics_from_the_long_table(tmp_path):
    """A ranked metric outside cells.csv's headline columns (f1, ens_f1, imp_rmse.<column>) is read from the
    run's cell_metrics.csv by cell key, the overall value only (not a group's)."""
    import pandas as pd

    from flows.bench import _with_metrics

    cells = pd.DataFrame({"key": ["k1", "k2"], "accuracy": [0.7, 0.8]})
    pd.DataFrame({"key": ["k1", "k1", "k2", "k2", "k1"], "metric": ["f1", "f1_group_0", "f1", "f1_group_0", "auc"],
                  "group": [None, "female", None, "female", None], "value": [0.81, 0.5, 0.82, 0.6, 0.9]}
                 ).to_csv(tmp_path / "cell_metrics.csv", index=False)
    got = _with_metrics(cells, tmp_path, ["accuracy", "f1"])
    assert got["f1"].tolist() == [0.81, 0.82] and got["accuracy"].tolist() == [0.7, 0.8]
    assert "auc" not in got and "f1_group_0" not in got
    assert _with_metrics(cells, tmp_path, ["accuracy"]) is cells


@pytest.mark.parametrize("name", ["son_german_paper_imputers", "son_german_paper_learners"])
def test_son_german_paper_suites_follow_the_suites_protocol(name):
    """The reproduction suites split by the suite's seeds 100...600, unstratified, 30 % test, and draw each
    mechanism on the training and the test rows apart (a shift), as the Shades-of-Null code injects them."""
    s = load_suite(PARAMS / "suites" / f"{name}.yaml")
    ((_, raw, cfg),) = s.configs
    assert cfg.split.seeds == [100, 200, 300, 400, 500, 600] and cfg.split.n_splits == 6
    assert cfg.split.stratify == "none" and cfg.split.test_size == 0.3
    assert cfg.evaluation.stability.estimators == 50 and cfg.evaluation.stability.fraction == 0.8
    shifts = [m for m in cfg.missingness if m.kind == "shift"]
    assert shifts and all(m.tests for m in shifts)


def test_plan_calibrates_a_suite_whose_first_scenario_is_a_shift_with_tests(mirror):
    """--plan times one cell per candidate on the first scenario; a shift with `tests` expands into new scenario
    objects on every call of the grid, which once left no cell to time (max() of an empty list)."""
    from flows.bench import calibrate

    d = {"suite": "plan_shift", "seed": 1, "datasets": [{"name": "german_son"}],
         "scenarios": [{"kind": "shift", "name": "s", "train": {"kind": "preset", "preset": "son_german_mcar3"},
                        "tests": [{"kind": "preset", "preset": "son_german_mcar3"},
                                  {"kind": "preset", "preset": "son_german_mnar3"}]}],
         "candidates": {"imputers": [{"kind": "median"}], "learners": [{"kind": "logistic_regression", "name": "lr"},
                                                                       {"kind": "decision_tree", "name": "dt"}]},
         "splits": {"seeds": [100, 200], "stratify": "none"}}
    (line,) = calibrate(parse_suite(d, "inline.yaml"))
    assert re.search(r"german_son: ≈ \d+ s for 8 cells on \d worker", line) and "slowest median+" in line, line
    assert "failed" not in line


def test_validate_reads_a_suite_file():
    """`fairmiss validate SUITE`: the suite and its quick version expanded and counted, nothing run or written."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "flows.cli", "validate", "params/suites/fairmiss_quick.yaml"],
                       cwd=PARAMS.parent, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("params/suites/fairmiss_quick.yaml: ok — suite fairmiss_quick: 320 cells across 2 "
                                "datasets (--quick: 24)")


def test_plan_times_a_large_table_on_samples_and_carries_the_time_to_its_size():
    """A table over CALIBRATION_ROWS is timed on two stratified samples; a time quadrupling when the rows double
    grows quadratically to the table's size, one too short to measure grows linearly, the exponent kept in
    [1, 2]."""
    import dataclasses

    import pandas as pd

    from flows.bench import _extrapolated, _sample

    small = [("a", 4.0, "ok"), ("b", 0.01, "ok"), ("c", 1.0, "ok"), ("d", 8.0, "ok")]
    half = [("a", 1.0, "ok"), ("b", 0.004, "ok"), ("c", 1.0, "ok"), ("d", 0.5, "ok")]
    got = {m: t for m, t, _ in _extrapolated(small, half, 6000, 3000)}
    assert got == pytest.approx({"a": 16.0, "b": 0.02, "c": 2.0, "d": 32.0})

    @dataclasses.dataclass
    class D:
        df: pd.DataFrame
        group: str = "g"
        label: str = "y"

    df = pd.DataFrame({"g": [0] * 900 + [1] * 100, "y": ([0, 1] * 450) + [0] * 97 + [1] * 3, "x": range(1000)})
    s = _sample(D(df), 100).df
    assert len(s) in range(99, 103) and s["x"].is_monotonic_increasing and s["x"].is_unique
    assert s.groupby(["g", "y"]).size().to_dict() == {(0, 0): 45, (0, 1): 45, (1, 0): 10, (1, 1): 2}
    assert _sample(D(df), 2000).df is df
