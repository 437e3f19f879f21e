"""The study report: long per-cell metric table, per-group bars, paper-vs-ours comparison, the
self-contained HTML written by the flow, and `fairmiss report` rebuilding + logging it to MLflow."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import small_config

from fairmiss.config.experiment import ReferenceSpec
from fairmiss.reporting.html import group_metric_table, reference_comparison


def _long():
    # two splits, one method, hand-made values
    rows = []
    for split, (acc, a0, a1) in enumerate([(0.60, 0.55, 0.65), (0.70, 0.65, 0.75)]):
        for metric, v in (("accuracy", acc), ("accuracy_group_0", a0), ("accuracy_group_1", a1),
                          ("fnr_difference", 0.1 * (split + 1))):
            rows.append({"key": f"s{split}", "split": split, "missingness": "none", "method": "mean+OR",
                         "metric": metric, "value": v})
    return pd.DataFrame(rows)


def test_group_metric_table_mean_and_se():
    gt = group_metric_table(_long())
    g0 = gt[(gt.metric == "accuracy") & (gt.group == "0")].iloc[0]
    assert g0["mean"] == pytest.approx(0.60)
    assert g0["se"] == pytest.approx(np.std([0.55, 0.65], ddof=1) / np.sqrt(2))
    assert set(gt.metric) == {"accuracy"}  # 'fnr_difference' and overall 'accuracy' are not per group


def test_reference_comparison_matches_learner_name_and_reports_sd_units():
    ref = ReferenceSpec(source="hand", values={"OR": {"accuracy": 0.60, "fnr_difference": 0.2},
                                               "missing_method": {"accuracy": 0.5}},
                        sd={"OR": {"accuracy": 0.025}})
    cmp = reference_comparison(_long(), ref)
    acc = cmp[(cmp.method == "mean+OR") & (cmp.metric == "accuracy")].iloc[0]
    assert acc["ours"] == pytest.approx(0.65) and acc["diff"] == pytest.approx(0.05)
    assert acc["diff_in_sd"] == pytest.approx(2.0)
    gap = cmp[(cmp.method == "mean+OR") & (cmp.metric == "fnr_difference")].iloc[0]
    assert gap["diff"] == pytest.approx(0.15 - 0.2) and np.isnan(gap["diff_in_sd"])
    # a reference method we did not run is shown as missing, not dropped
    miss = cmp[cmp.method == "missing_method"].iloc[0]
    assert np.isnan(miss["ours"]) and miss["n"] == 0


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    from flows.experiment import run_experiment

    tmp = tmp_path_factory.mktemp("report")
    cfg = small_config(tmp, imputers=[{"kind": "mean"}], references={
        "source": "made-up numbers for the test", "loose": True,
        # an imputer+learner label: '+' is not allowed in MLflow names (references are not logged as params)
        "values": {"mean+tree_d3": {"accuracy": 0.5, "fnr_difference": 0.1}}})
    out = run_experiment(cfg, results_dir=str(tmp / "results"), processed_dir=str(tmp / "processed"))
    return tmp, cfg, out


def test_flow_writes_self_contained_report(reported):
    tmp, cfg, out = reported
    res = tmp / "results" / "compas_small"
    html = (res / "report.html").read_text()
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    # trade-off figure + 4 per-group bar charts, all embedded (no external file needed)
    assert len(imgs) >= 5
    for b in imgs:
        assert base64.b64decode(b)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "src=\"http" not in html and "<script" not in html
    for png in ("groups_accuracy.png", "groups_fnr.png", "tradeoff_table3.png"):
        assert (res / png).stat().st_size > 1000
    # the imputation diagnostics section exists (filled when cells log imp_* metrics)
    assert "Imputation-fairness diagnostics" in html
    # paper-vs-ours: our accuracy beside the reference value, difference = ours - paper
    cmp = pd.read_csv(res / "paper_vs_ours.csv")
    ours = json.loads((res / "metrics.json").read_text())["summary"]["table3"]["mean+tree_d3"]["accuracy_mean"]
    row = cmp[(cmp.metric == "accuracy")].iloc[0]
    assert row["ours"] == pytest.approx(ours, abs=1e-9) and row["diff"] == pytest.approx(ours - 0.5, abs=1e-9)
    assert "loose reference points" in html
    # per-group metrics of every cell are in the long table
    cm = pd.read_csv(res / "cell_metrics.csv")
    assert {"accuracy_group_0", "accuracy_group_1", "fnr_group_0"} <= set(cm.metric)
    assert cm.key.nunique() == 2


def test_report_logged_to_parent_run(reported):
    from mlflow.tracking import MlflowClient

    tmp, cfg, out = reported
    client = MlflowClient(out["tracking_uri"])
    names = {a.path for a in client.list_artifacts(out["parent_run_id"], "report")}
    assert "report/report.html" in names and "report/groups_accuracy.png" in names
    # the new figures reach MLflow through the calls the flow already makes
    assert {"report/confusion_table3.png", "report/confusion.csv", "report/groups_imputation_error.png"} <= names


def test_cli_report_rebuilds_and_logs_a_report_run(reported, monkeypatch):
    from mlflow.tracking import MlflowClient

    from flows.cli import main

    tmp, cfg, out = reported
    res = tmp / "results" / "compas_small"
    (res / "report.html").unlink()
    assert main(["report", str(cfg), "--results-dir", str(tmp / "results")]) == 0
    assert (res / "report.html").exists()
    client = MlflowClient(out["tracking_uri"])
    exp = client.get_run(out["parent_run_id"]).info.experiment_id
    runs = client.search_runs([exp], "tags.kind = 'report'")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    # nested under the study's run, named for the study
    assert runs[0].data.tags["mlflow.parentRunId"] == out["parent_run_id"]
    assert runs[0].info.run_name == "report · compas_small"
    assert "report/report.html" in {a.path for a in client.list_artifacts(runs[0].info.run_id, "report")}


def test_cli_report_without_results_is_a_clear_error(tmp_path, capsys):
    from flows.cli import main

    cfg = small_config(tmp_path)
    assert main(["report", str(cfg), "--results-dir", str(tmp_path / "nothing"), "--no-mlflow"]) == 2
    err = capsys.readouterr().err
    assert "metrics.json" in err and "run the study first" in err


@pytest.mark.slow
def test_paper000_run_decides_the_figure2_claims(tmp_path):
    """A COMPAS run with Fair MIP Forest cells writes claims_000.csv (B1, B4c, B5 decided from its own
    cells) and shows it in the report; the same run without Fair MIP cells writes none."""
    from flows.experiment import run_experiment

    learners = [
        {"kind": "decision_tree", "name": "baseline_tree_d3", "max_depth": 3, "imputers": ["mean", "knn"]},
        {"kind": "exponentiated_gradient", "name": "agarwal_eps0.05", "constraint": "fnr", "eps": 0.05,
         "imputers": ["mean", "knn"]},
        {"kind": "zafar", "name": "zafar_tau1", "constraint": "fnr", "tau": 1, "imputers": ["mean", "knn"]},
        {"kind": "fair_mip_forest", "name": "fairmip_lam0.5", "lambda": 0.5, "fairness": "fnr", "n_trees": 1,
         "batch_size": 100, "time_limit": 30, "node_limit": 1, "imputers": ["none"]},
    ]
    cfg = small_config(tmp_path, imputers=[{"kind": "mean"}, {"kind": "knn"}, {"kind": "none"}], learners=learners,
                       tracking={"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "log_models": False})
    run_experiment(cfg, results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    res = tmp_path / "results" / "compas_small"
    claims = pd.read_csv(res / "claims_000.csv")
    assert list(claims["claim"]) == ["B1", "B4c", "B5"]
    assert set(claims["verdict"]) <= {"holds", "does not hold", "not testable"}
    assert "Fair MIP Forest vs Agarwal + mean" in claims.set_index("claim").loc["B1", "evidence"]
    assert "Figure-2 claims" in (res / "report.html").read_text()
    cfg2 = small_config(tmp_path / "b", learners=learners[:1], imputers=[{"kind": "mean"}, {"kind": "knn"}])
    run_experiment(cfg2, results_dir=str(tmp_path / "results_b"), processed_dir=str(tmp_path / "processed"))
    assert not (tmp_path / "results_b" / "compas_small" / "claims_000.csv").exists()


def test_param_names_with_plus_are_logged(tmp_path):
    """MLflow rejects '+' in names; params (like metrics) get it replaced, so a label never fails a run."""
    from mlflow.tracking import MlflowClient

    from fairmiss.tracking import Tracker

    tr = Tracker(f"sqlite:///{tmp_path / 'm.db'}", "names")
    with tr.run("r") as rid:
        tr.log_params(rid, {"method.mean+tree": "x"})
    assert MlflowClient(tr.uri).get_run(rid).data.params == {"method.mean__tree": "x"}


# ------------------------------------------------------------------------- plain names, per-group figures
def test_imp_metric_names_parse_and_read_plainly():
    from fairmiss.reporting.names import parse_imp_metric, plain_imp_name

    groups = {"0": "African-American", "1": "Caucasian"}
    assert parse_imp_metric("imp_mse.priors_count_group_1") == {"stat": "mse", "feature": "priors_count", "group": "1"}
    assert parse_imp_metric("imp_thm1_disc.c_charge_degree") == {"stat": "thm1_disc", "feature": "c_charge_degree",
                                                                 "group": None}
    assert plain_imp_name("imp_mse.age_group_0", groups) == "imputation error (MSE) of age, group 0 (African-American)"
    assert plain_imp_name("imp_disc.age", groups).startswith("discrepancy between groups (Disc")
    assert plain_imp_name("imp_rmse.age_group_7", groups) == "imputation error (RMSE) of age, group 7"  # unnamed code
    # generated bad names: not an imp_ metric, a per-group stem without group, a between-group stem with one
    for bad in ("accuracy_group_0", "imp_mse.age", "imp_disc.age_group_0", "imp_foo.age_group_0", "imp_mse"):
        assert parse_imp_metric(bad) is None, bad
        assert plain_imp_name(bad, groups) == bad


def _imp_long(same: bool):
    """Two methods with the same imputer over two splits; identical diagnostics iff ``same``."""
    rows = []
    for split in (0, 1):
        for method in ("knn+tree", "knn+logreg"):
            bump = 0.0 if same or method == "knn+tree" else 0.5
            for metric, v in (("imp_mse.age_group_0", 1.0 + split), ("imp_mse.age_group_1", 3.0 + split + bump),
                              ("imp_disc.age", 2.0 + bump), ("accuracy", 0.7)):
                rows.append({"key": f"s{split}/{method}", "split": split, "missingness": "mcar", "method": method,
                             "metric": metric, "value": v})
    return pd.DataFrame(rows)


def test_imputation_table_collapses_learners_with_the_same_imputation():
    from fairmiss.reporting.html import imputation_diagnostics_table, imputation_diagnostics_wide

    groups = {"0": "Black", "1": "White"}
    it = imputation_diagnostics_table(_imp_long(same=True), groups)
    assert set(it["method"]) == {"knn (2 methods)"}
    g1 = it[(it["stat"] == "mse") & (it["group"] == "1")].iloc[0]
    assert g1["mean"] == pytest.approx(3.5) and g1["se"] == pytest.approx(0.5) and g1["group_name"] == "group 1 (White)"
    # values differing between the learners keep one row per method
    it2 = imputation_diagnostics_table(_imp_long(same=False), groups)
    assert set(it2["method"]) == {"knn+tree", "knn+logreg"}
    wide = imputation_diagnostics_wide(it)
    assert "imputation error (MSE), group 0 (Black)" in wide.columns
    assert wide.iloc[0]["imputation error (MSE), group 1 (White)"] == "3.500 ± 0.500"
    assert not any("imp_" in str(c) for c in wide.columns) and not wide.astype(str).apply(
        lambda c: c.str.contains("imp_")).any().any()


def test_imputation_figure_legend_names_the_groups():
    from fairmiss.reporting.group_figures import imputation_error_figure
    from fairmiss.reporting.html import imputation_diagnostics_table

    fig = imputation_error_figure(imputation_diagnostics_table(_imp_long(same=False), {"0": "Black", "1": "White"}))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["group 0 (Black)", "group 1 (White)"]
    # bar heights are the means over splits, error bars the SEs (group 1 of knn+logreg: (3.5 + 4.5) / 2)
    heights = sorted(round(p.get_height(), 9) for p in ax.patches)
    assert heights == [1.5, 1.5, 3.5, 4.0]
    assert imputation_error_figure(imputation_diagnostics_table(_long())) is None  # nothing imputed: no figure


def _brute_confusion(y, p, s):
    out = {}
    for g in sorted(set(s)):
        c = {"TN": 0, "FP": 0, "FN": 0, "TP": 0}
        for yi, pi, si in zip(y, p, s):
            if si == g:
                c[{(0, 0): "TN", (0, 1): "FP", (1, 0): "FN", (1, 1): "TP"}[(yi, pi)]] += 1
        out[str(g)] = c
    return out


def _figure_counts(fig) -> dict:
    """(panel title, cell) -> count, read from the text drawn in each heat map."""
    out = {}
    for ax in fig.axes:
        for t in ax.texts:
            cell, count = t.get_text().split("\n")
            out[(ax.get_title(), cell)] = int(count)
    return out


def test_confusion_figure_counts_are_brute_force_sums_over_splits():
    from fairmiss.metrics import group_confusion_matrices
    from fairmiss.pipeline.cell import CellResult
    from fairmiss.reporting.group_figures import confusion_figure, confusion_long, confusion_sums

    rng = np.random.default_rng(23)
    results, raw = [], []
    for split in range(3):
        for method in ("mean+tree", "knn+tree"):
            y, p, s = (rng.integers(0, 2, 200) for _ in range(3))
            raw.append((method, y, p, s))
            results.append(CellResult(key=f"split{split}/{method}", method=method, split_index=split,
                                      missingness="mcar", imputer=method.split("+")[0], learner="tree", status="ok",
                                      confusion=group_confusion_matrices(y, p, s)))
    results.append(CellResult(key="failed", method="mean+tree", split_index=9, missingness="mcar", imputer="mean",
                              learner="tree", status="failed", confusion={"0": [[1000, 0], [0, 0]]}))
    names = {"0": "Black", "1": "White"}
    counts = _figure_counts(confusion_figure(confusion_sums(confusion_long(results, names))))
    expect = {}
    for method, y, p, s in raw:
        for g, c in _brute_confusion(y.tolist(), p.tolist(), s.tolist()).items():
            for cell, v in c.items():
                key = (f"{method}\ngroup {g} ({names[g]})", cell)
                expect[key] = expect.get(key, 0) + v
    assert counts == expect


def test_confusion_matrices_name_the_labels():
    """The data's own label names on the rows and columns ("true default", "pred repaid"), long names wrapped;
    without names the codes."""
    from fairmiss.pipeline.cell import CellResult
    from fairmiss.reporting.group_figures import confusion_figure, confusion_long, confusion_sums, label_ticks

    res = [CellResult(key="split0/m", method="mean+tree", split_index=0, missingness="mcar", imputer="mean",
                      learner="tree", status="ok", confusion={"0": [[5, 1], [2, 3]], "1": [[4, 2], [1, 6]]})]
    sums = confusion_sums(confusion_long(res, {"0": "female", "1": "male"}))
    fig = confusion_figure(sums, label_names={0: "repaid", 1: "default"})
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["pred repaid", "pred default"]
        assert [t.get_text() for t in ax.get_yticklabels()] == ["true repaid", "true default"]
    plain = confusion_figure(sums)
    assert [t.get_text() for t in plain.axes[0].get_yticklabels()] == ["true 0", "true 1"]
    pred, true = label_ticks({"0": "no recidivism", "1": "recidivated within two years"})
    assert true == ["true no\nrecidivism", "true recidivated\nwithin two years"]
    assert pred == ["pred no\nrecidivism", "pred\nrecidivated\nwithin two\nyears"]


def test_flow_report_shows_named_imputation_errors_and_confusion_matrices(reported):
    from fairmiss.reporting.group_figures import confusion_figure, confusion_sums, imputation_error_figure
    from fairmiss.reporting.html import imputation_diagnostics_table

    tmp, cfg, out = reported
    res = tmp / "results" / "compas_small"
    html = (res / "report.html").read_text()
    groups = json.loads((res / "metrics.json").read_text())["groups"]
    assert groups and all(v not in ("0", "1") for v in groups.values())
    # plain names, never the internal ones; the group names in the table
    assert "imp_" not in html
    assert f"imputation error (MSE), group 0 ({groups['0']})" in html and "discrepancy between groups" in html
    # one missing-value sign: no None / nan in any table cell
    assert not re.search(r"<t[dh]>\s*(None|nan|NaN)\s*</t[dh]>", html)
    for png in ("groups_imputation_error.png", "confusion_table3.png"):
        assert (res / png).stat().st_size > 1000
        assert f'alt="{png}"' in html
    # the imputation figure's legend names the groups of this dataset
    it = imputation_diagnostics_table(pd.read_csv(res / "cell_metrics.csv"), groups)
    legend = [t.get_text() for t in imputation_error_figure(it).axes[0].get_legend().get_texts()]
    assert legend == [f"group {k} ({groups[k]})" for k in sorted(groups)]
    # confusion counts: per cell they reproduce the per-group rates computed by fairmiss.metrics (cell_metrics.csv),
    # (written with 10 significant digits), and the figure draws their sums over splits
    conf = pd.read_csv(res / "confusion.csv", dtype={"group": str})
    cm = pd.read_csv(res / "cell_metrics.csv").set_index(["key", "metric"])["value"]
    assert len(conf) == 2 * 2  # 2 splits x 2 groups
    for r in conf.itertuples():
        assert cm[(r.key, f"fnr_group_{r.group}")] == pytest.approx(r.FN / (r.FN + r.TP), rel=1e-9)
        assert cm[(r.key, f"fpr_group_{r.group}")] == pytest.approx(r.FP / (r.FP + r.TN), rel=1e-9)
        assert cm[(r.key, f"accuracy_group_{r.group}")] == pytest.approx((r.TN + r.TP) / r.n, rel=1e-9)
    assert conf["n"].sum() == cm[[(k, "n_test") for k in conf["key"].unique()]].sum()
    drawn = _figure_counts(confusion_figure(confusion_sums(conf)))
    for (method, group), g in conf.groupby(["method", "group"]):
        for cell in ("TN", "FP", "FN", "TP"):
            assert drawn[(f"{method}\ngroup {group} ({groups[group]})", cell)] == int(g[cell].sum())


def test_report_tables_use_one_missing_value_sign():
    from fairmiss.reporting.html import _pm, _table

    df = pd.DataFrame({"a": [None, np.nan, pd.NA, 1.5, "x"], "b": pd.array([1, None, 3, 4, 5], dtype="Int64"),
                       "c": [pd.NaT, pd.Timestamp(0), pd.NaT, pd.NaT, pd.NaT]})
    cells = re.findall(r"<td>([^<]*)</td>", _table(df))
    assert cells.count("—") == 8 and "1.5000" in cells
    assert not {"nan", "NaN", "<NA>", "NaT"} & set(cells)
    assert [_pm(None, None), _pm(np.nan, 0.1), _pm(pd.NA, None), _pm(0.5, np.nan), _pm(0.5, 0.25)] == [
        "—", "—", "—", "0.500", "0.500 ± 0.250"]


def test_group_bars_show_each_missingness_scenario_never_their_average(tmp_path):
    """Two scenarios, one method: two bar clusters with each scenario's own per-group means (the bars once
    averaged the scenarios under the method's name); one scenario: the methods, and the title names it."""
    from fairmiss.reporting.group_figures import group_bar_frame, plot_group_bars

    rows = [{"missingness": miss, "method": "mean+tree", "metric": "fnr", "group": g, "group_name": name,
             "mean": v, "se": 0.01, "n": 3}
            for miss, vals in (("mcar", (0.2, 0.3)), ("mnar", (0.5, 0.9)))
            for (g, name), v in zip((("0", "Black"), ("1", "White")), vals)]
    gt = pd.DataFrame(rows)
    d = group_bar_frame(gt, "fnr")
    heights = {(x, g): m for x, g, m in zip(d["_x"], d["group"], d["mean"])}
    assert heights == {("mcar · mean+tree", "0"): 0.2, ("mcar · mean+tree", "1"): 0.3,
                       ("mnar · mean+tree", "0"): 0.5, ("mnar · mean+tree", "1"): 0.9}
    one = group_bar_frame(gt[gt["missingness"] == "mnar"], "fnr")
    assert set(one["_x"]) == {"mean+tree"}
    assert plot_group_bars(gt, "fnr", tmp_path / "bars.png").stat().st_size > 0


def test_point_labels_of_coinciding_methods_do_not_overlap():
    """Two methods at the same (gap, accuracy) get labels one line apart; a distant one keeps the first line."""
    from matplotlib.figure import Figure

    from fairmiss.reporting.plots import label_offsets

    ax = Figure(figsize=(6.4, 4.8)).add_subplot()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    dy = label_offsets(ax, [(0.2, 0.6), (0.2, 0.6), (0.21, 0.6), (0.9, 0.1)])
    assert dy[0] == 3.0 and dy[1] - dy[0] >= 7.0 and dy[2] - dy[1] >= 7.0 and dy[3] == 3.0


def test_an_import_path_learner_is_its_own_family():
    from types import SimpleNamespace

    from fairmiss.reporting.html import _family

    def res(learner, kind, method):
        return SimpleNamespace(params={"learner.kind": kind}, learner=learner, imputer="knn10", method=method)

    assert _family(res("gbm", "estimator", "knn10+gbm")) == "knn10+gbm"
    assert _family(res("logreg", "estimator", "knn10+logreg")) == "knn10+logreg"
    assert _family(res("tree_d3", "decision_tree", "knn10+tree_d3")) == "knn10+decision_tree"
