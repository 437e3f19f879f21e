"""The headline's "between groups" lines (console and ``summary.txt``) name groups from the dataset registry's
group codes. With intersections and ``evaluation: {intervals: all}`` a cell records ``fnr_group_<code>`` and also
``fnr_group_<code>_ci_low`` / ``_ci_high``; the latter are interval bounds of group ``<code>``, never groups."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fairmiss.pipeline.summary import gap_groups

pytestmark = pytest.mark.usefixtures("variants_forgotten")


def test_interval_bounds_are_not_read_as_groups():
    names = {"0": "female · own", "1": "female · unknown", "2": "male · own", "3": "male · unknown"}
    fnr = {"0": 0.30, "1": 0.70, "2": 0.20, "3": 0.40}
    m = {f"fnr_group_{c}": v for c, v in fnr.items()}
    # bounds below every group's value: read as groups they would be the "lowest" ones
    m.update({f"fnr_group_{c}_ci_low": v - 0.19 for c, v in fnr.items()})
    m.update({f"fnr_group_{c}_ci_high": v + 0.1 for c, v in fnr.items()})
    m.update({"fnr_difference": 0.5, "fnr_difference_ci_low": 0.3, "fnr_difference_ci_high": 0.6})
    res = [SimpleNamespace(status="ok", missingness="none", method="mean+logreg", metrics=m)]
    assert gap_groups(res, "fnr_difference", names) == {
        ("none", "mean+logreg"): "fnr worst (highest) for 'female · unknown', lowest for 'male · own' (1 of 1 split)"}


def test_run_with_intersections_and_all_intervals_names_registry_groups(tmp_path):
    """A real run: COMPAS with ``group: [race, sex]`` and ``intervals: all`` over 2 splits; the between-groups
    line of ``summary.txt`` names two of the registry's groups and no interval column."""
    from flows.api import run
    from flows.experiment import group_names

    cfg = {"experiment": "headline_names", "seed": 5,
           "dataset": {"name": "compas_000", "group": ["race", "sex"]},
           "split": {"test_size": 0.3, "n_splits": 2},
           "missingness": [{"kind": "none"}],
           "imputers": [{"kind": "mean"}],
           "learners": [{"kind": "logistic_regression", "name": "logreg"}],
           "evaluation": {"bootstrap": 200, "ci": 0.95, "strata": "group_label", "intervals": "all"},
           "tracking": {"log_models": False}, "execution": {"max_workers": 1}}
    (tmp_path / "mlruns").mkdir()
    run(cfg, results_dir=tmp_path / "results", processed_dir=tmp_path / "processed",
        tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    text = (tmp_path / "results" / "headline_names" / "summary.txt").read_text()
    line = next(ln for ln in text.splitlines() if "worst" in ln)
    assert "_ci_" not in text, text
    names = group_names("compas_000.race_x_sex")
    assert len(names) == 4
    quoted = [n for n in names.values() if f"'{n}'" in line]
    assert len(quoted) == 2, (line, names)
