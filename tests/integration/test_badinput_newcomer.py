"""Bad input a newcomer meets, each refused with one ``fairmiss: error:`` line naming the file and key, exit 2,
before anything is written (``processed/`` and the Data Docs included): estimators by import path that cannot be
fitted, a two-group learner on intersectional groups, ``min_group_size`` above every group, ``dask_address``
without the Dask runner, schedules entries (every error names the schedules file and the entry), ``serve`` on a
config whose data are bad, ``worker --nthreads -1``. Also what is accepted: a study config in a schedules file."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import yaml
from badinput import ROOT, BadInput, check, dump, mutate_keys, run_case

pytestmark = pytest.mark.usefixtures("variants_forgotten")

X = "params/x.yaml"
S = "params/s.yaml"
EXAMPLE = ROOT / "examples" / "own_data"


def _own_with_text_column() -> tuple[str, str]:
    """The own-data example with a numeric column holding one text value (``age`` = ``unknown`` on one row)."""
    rows = list(csv.reader(io.StringIO((EXAMPLE / "credit.csv").read_text())))
    rows[5][rows[0].index("age")] = "unknown"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    cfg = yaml.safe_load((EXAMPLE / "credit.yaml").read_text())
    cfg["dataset"]["file"] = "own.csv"
    return dump(cfg), out.getvalue()


def _sched(*entries) -> str:
    return dump({"deployments": [{"name": f"e{i}", "interval_seconds": 3600, **e} for i, e in enumerate(entries)]})


MIP_ON_FOUR = mutate_keys("compas_default.yaml", {"dataset": {"name": "compas_000", "group": ["race", "sex"]},
                                                  "missingness": [{"kind": "none"}],
                                                  "learners": [{"kind": "fair_mip_forest", "name": "fmf",
                                                                "n_trees": 1, "max_depth": 1}]})
OWN_CFG, OWN_CSV = _own_with_text_column()

CASES = [
    # refused before anything is written: the table's checks run before processed/ and the gate's Data Docs
    BadInput("estimator-learner-fit-fails-nothing-written", ["run", X],
             [X, "learners.0: lr_l1", "could not be fitted", "penalty"],
             files={X: mutate_keys("compas_default.yaml", {"learners": [
                 {"kind": "estimator", "name": "lr_l1", "estimator": "sklearn.linear_model.LogisticRegression",
                  "params": {"penalty": "l1", "solver": "lbfgs"}}]})}),
    BadInput("estimator-learner-fit-fails-validate", ["validate", X],
             [X, "learners.0: lr_l1", "could not be fitted", "penalty"],
             files={X: mutate_keys("compas_default.yaml", {"learners": [
                 {"kind": "estimator", "name": "lr_l1", "estimator": "sklearn.linear_model.LogisticRegression",
                  "params": {"penalty": "l1", "solver": "lbfgs"}}]})}),
    BadInput("estimator-imputer-wrong-type-validate", ["validate", X],
             [X, "imputers.0: sklearn.impute.SimpleImputer", "could not be fitted", "fill_value"],
             files={X: mutate_keys("compas_default.yaml", {"imputers": [
                 {"kind": "estimator", "name": "const_x", "estimator": "sklearn.impute.SimpleImputer",
                  "params": {"strategy": "constant", "fill_value": "x"}}]})}),
    BadInput("two-group-learner-four-groups-validate", ["validate", X],
             [X, "learners.0: fmf is defined for two groups", "4 groups", "Black · Female"], files={X: MIP_ON_FOUR}),
    BadInput("two-group-learner-four-groups-run", ["run", X], [X, "learners.0: fmf", "4 groups"],
             files={X: MIP_ON_FOUR}),
    BadInput("min-group-size-above-every-group-validate", ["validate", X],
             [X, "min_group_size: 5000", "every group", "give at most"],
             files={X: mutate_keys("compas_default.yaml", {"min_group_size": 5000})}),
    BadInput("min-group-size-above-every-group-run", ["run", X], [X, "min_group_size: 5000", "give at most"],
             files={X: mutate_keys("compas_default.yaml", {"min_group_size": 5000})}),
    BadInput("dask-address-with-thread-runner", ["validate", X],
             [X, "execution", "dask_address is read by the Dask runner only", "task_runner: dask"],
             files={X: mutate_keys("compas_default.yaml", {"execution": {"dask_address": "tcp://127.0.0.1:8786"}})}),
    BadInput("dask-address-with-thread-runner-run", ["run", X], [X, "execution", "task_runner: dask"],
             files={X: mutate_keys("compas_default.yaml", {"execution": {"dask_address": "tcp://127.0.0.1:8786"}})}),
    # pattern_clusters' paper rule (split: loss): its keys refused by name
    BadInput("pattern-clusters-beta-above-alpha", ["validate", X], [X, "learners.0", "beta 0.6 > alpha 0.4"],
             files={X: mutate_keys("compas_default.yaml", {"learners": [
                 {"kind": "pattern_clusters", "split": "loss", "beta": 0.6, "alpha": 0.4}]})}),
    BadInput("pattern-clusters-unknown-split", ["validate", X], [X, "learners.0", "split", "entropy", "loss"],
             files={X: mutate_keys("compas_default.yaml", {"learners": [
                 {"kind": "pattern_clusters", "split": "gini"}]})}),
    BadInput("pattern-clusters-validation-not-a-fraction", ["run", X], [X, "learners.0", "validation"],
             files={X: mutate_keys("compas_default.yaml", {"learners": [
                 {"kind": "pattern_clusters", "split": "loss", "validation": 1.5}]})}),
    # schedules: every error names the schedules file and the entry
    BadInput("schedules-config-missing", ["serve", S], [S, "deployments.0 ('e0')", "params/nope.yaml"],
             files={S: _sched({"config": "params/nope.yaml"})}),
    BadInput("schedules-config-invalid", ["serve", S], [S, "deployments.1 ('e1')", X, "split.n_splits"],
             files={S: _sched({"config": "params/compas_default.yaml"}, {"config": X}),
                    X: mutate_keys("compas_default.yaml", {"split.n_splits": 0})}),
    BadInput("schedules-study-skip-if-unchanged", ["serve", S],
             [S, "deployments.0 ('e0')", "skip_if_unchanged", "study config"],
             files={S: _sched({"config": "params/studies/003_decile_compas.yaml", "skip_if_unchanged": True})}),
    # serve checks each entry's config and data as validate does (a DatasetError was a 25-line traceback, exit 1)
    BadInput("serve-own-data-text-in-numeric-column", ["serve", S], [S, "deployments.0 ('e0')", "own.csv", "age"],
             files={S: _sched({"config": X}), X: OWN_CFG, "own.csv": OWN_CSV}),
    # the argument the worker checks first is named (it answered about the scheduler after Dask's wait)
    BadInput("worker-negative-nthreads", ["worker", "tcp://127.0.0.1:1", "--nthreads", "-1"],
             ["worker: --nthreads -1", "positive number of threads"],
             env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refused_before_anything_is_written(case, tmp_path):
    check(case, tmp_path)


def test_validate_agrees_with_run_on_own_data_text_column(tmp_path):
    check(BadInput("validate-own-data-text-in-numeric-column", ["validate", X], ["own.csv", "line 6", "'age'"],
                   files={X: OWN_CFG, "own.csv": OWN_CSV}), tmp_path)


def test_a_small_intersection_is_named_with_min_group_size(tmp_path):
    """8 and 9 test rows in two of COMPAS's race × sex groups (2 % test rows): the warning names both groups and
    points at ``min_group_size``; with ``min_group_size`` set there is no warning."""
    small = {"dataset": {"name": "compas_000", "group": ["race", "sex"]}, "split.test_size": 0.02,
             "missingness": [{"kind": "none"}]}
    out = run_case(BadInput("small-groups", ["validate", X], "", returncode=0,
                            files={X: mutate_keys("compas_default.yaml", small)}), tmp_path / "a")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stderr.splitlines() if "fewer than 30 test rows" in ln)
    assert "'Black · Female' (8)" in line and "'White · Female' (9)" in line and "min_group_size: 30" in line, line
    out = run_case(BadInput("small-groups-set", ["validate", X], "", returncode=0,
                            files={X: mutate_keys("compas_default.yaml", {**small, "min_group_size": 5})}),
                   tmp_path / "b")
    assert out.returncode == 0 and "fewer than 30 test rows" not in out.stderr, out.stderr


def test_a_study_config_is_accepted_by_a_schedules_file(tmp_path):
    """The docs say an entry may name an experiment or a study config: a study's deployment runs the study's own
    flow with the entry's parameters (no skip_if_unchanged: a study's flow has none)."""
    from flows.serve import build_deployments

    p = tmp_path / "s.yaml"
    p.write_text(dump({"deployments": [
        {"name": "decile", "config": str(ROOT / "params/studies/003_decile_compas.yaml"), "cron": "0 3 * * *"},
        {"name": "default", "config": str(ROOT / "params/compas_default.yaml"), "interval_seconds": 60}]}))
    study, default = build_deployments(p)
    assert study.entrypoint.endswith("p003_decile.py:decile_flow"), study.entrypoint
    assert "skip_if_unchanged" not in study.parameters and study.parameters["quick"] is False
    assert default.entrypoint.endswith("experiment.py:experiment_flow")
    assert default.parameters["skip_if_unchanged"] is True


NONE_WITH_LOGREG = mutate_keys("compas_default.yaml", {
    "imputers": [{"kind": "none"}, {"kind": "mean"}],
    "learners": [{"kind": "decision_tree", "name": "tree"}, {"kind": "logistic_regression", "name": "logreg"}]})
CASES_FIX = [
    BadInput("imputer-none-with-logreg-names-the-fix", ["validate", X],
             [X, "imputer 'none' with learner 'logreg'", "fix: give learners.1 imputers: [mean]"],
             files={X: NONE_WITH_LOGREG}),
    BadInput("imputer-none-only-names-the-fix", ["validate", X],
             [X, "imputer 'none' with learner 'logreg'", "add an imputer, e.g. {kind: mean}"],
             files={X: mutate_keys("compas_default.yaml", {
                 "imputers": [{"kind": "none"}], "learners": [{"kind": "logistic_regression", "name": "logreg"}]})}),
]


@pytest.mark.parametrize("case", CASES_FIX, ids=lambda c: c.id)
def test_errors_name_their_fix(case, tmp_path):
    check(case, tmp_path)


def _own_variant(edit) -> tuple[str, bytes]:
    """The own-data example's config (reading ``own.csv``) and the CSV's bytes after ``edit(rows) -> text``."""
    rows = list(csv.reader(io.StringIO((EXAMPLE / "credit.csv").read_text())))
    cfg = yaml.safe_load((EXAMPLE / "credit.yaml").read_text())
    cfg["dataset"]["file"] = "own.csv"
    return dump(cfg), edit(rows).encode()


def _csv_text(rows, end="\n") -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator=end).writerows(rows)
    return out.getvalue()


def _huge(rows):
    rows[4][rows[0].index("credit_amount")] = "1e300"
    return _csv_text(rows)


def _stray(rows):
    rows[7][rows[0].index("credit_amount")] = "n/a?"
    return _csv_text(rows)


HUGE_CFG, HUGE_CSV = _own_variant(_huge)
CR_CFG, CR_CSV = _own_variant(lambda rows: _csv_text(rows, "\r"))
_, STRAY_CSV = _own_variant(_stray)

CASES_LEFT = [
    # finite but too large: failed inside every cell, naming neither file nor column
    BadInput("own-data-1e300", ["validate", X], ["own.csv", "line 5", "'credit_amount'", "too large"],
             files={X: HUGE_CFG, "own.csv": HUGE_CSV}),
    # CR-only line endings: were reported as "header only"
    BadInput("own-data-cr-only-lines", ["validate", X], ["own.csv", "CR only"], files={X: CR_CFG, "own.csv": CR_CSV}),
    # a numeric column with one stray text value: reported by ingest, not re-typed as categorical
    BadInput("ingest-stray-text-in-numeric-column",
             ["ingest", "own.csv", "--label", "default", "--group", "sex", "--positive", "yes"],
             ["own.csv", "line 8", "'credit_amount'", "'n/a?'", "otherwise numeric"], files={"own.csv": STRAY_CSV}),
    # compare --plot into a directory that does not exist: refused, not created
    BadInput("compare-plot-missing-directory", ["compare", "compas_default", "--plot", "figs/nope/front.png"],
             ["figs/nope/front.png", "--plot", "does not exist"]),
]


@pytest.mark.parametrize("case", CASES_LEFT, ids=lambda c: c.id)
def test_found_and_left_cases_are_one_line(case, tmp_path):
    check(case, tmp_path)


def test_git_ignores_user_results_and_the_docs_site_but_not_the_dvc_metrics():
    """A user's own experiment (``results/<experiment>/metrics.json``) stays out of ``git status``; every results
    file a DVC stage declares as metrics or plots (``cache: false``, committed) is not ignored; ``site/`` (``mkdocs
    build``) is."""
    import subprocess

    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    declared = sorted({next(iter(o)) if isinstance(o, dict) else o
                       for st in dvc["stages"].values() for key in ("metrics", "plots") for o in st.get(key, [])
                       if str(next(iter(o)) if isinstance(o, dict) else o).startswith("results/")})
    assert declared and any(p.endswith("metrics.json") for p in declared)
    user = ["results/own_credit/metrics.json", "results/own_credit/cells.csv", "site/index.html"]
    r = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-n", "-v"], cwd=ROOT, text=True,
                       capture_output=True, input="\n".join(declared + user) + "\n")
    # -v -n: "source:line:pattern<TAB>path" for the last matching pattern ("!…": re-included), "::<TAB>path" for none
    ignored = {ln.split("\t")[1] for ln in r.stdout.splitlines()
               if not ln.startswith("::") and not ln.split("\t")[0].split(":", 2)[2].startswith("!")}
    assert set(user) <= ignored, r.stdout
    assert not ignored & set(declared), sorted(ignored & set(declared))


def test_every_docs_page_is_in_the_navigation():
    """Every Markdown page under ``docs/`` that ``mkdocs build`` renders is reachable from the site's navigation."""
    def pages(nav):
        for item in nav:
            if isinstance(item, str):
                yield item
            else:
                for v in item.values():
                    yield from ([v] if isinstance(v, str) else pages(v))

    nav = set(pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))
    built = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert built - nav == set(), sorted(built - nav)


#: a learner's sweep in an experiment config: each malformed form is one line naming the entry and the parameter,
#: from `validate` and from `run` (nothing written)
SWEEP_CASES = [
    BadInput(f"sweep-{cmd}-{name}", [cmd, X], [X, *expect],
             files={X: mutate_keys("compas_default.yaml", {"learners": [{"kind": "logistic_regression", "name": "lr",
                                                                         **entry}]}, small=True)})
    for cmd in ("validate", "run")
    for name, entry, expect in [
        ("empty", {"sweep": {"C": []}}, ["learners.0.sweep.C", "non-empty list"]),
        ("unknown-parameter", {"sweep": {"depth": [1, 2]}}, ["learners.0.sweep.depth", "has no parameter 'depth'"]),
        ("also-outside", {"C": 1.0, "sweep": {"C": [0.5]}}, ["learners.0.sweep.C", "also given outside the sweep"]),
        ("not-a-mapping", {"sweep": [0.1, 1.0]}, ["learners.0.sweep", "a mapping"]),
        ("wrong-type", {"sweep": {"C": ["high"]}}, ["learners", "C"]),
    ]
]


@pytest.mark.parametrize("case", SWEEP_CASES, ids=lambda c: c.id)
def test_bad_sweeps(case, tmp_path):
    check(case, tmp_path)


def _own_conditional(bucket: dict) -> str:
    cfg = yaml.safe_load((EXAMPLE / "credit.yaml").read_text())
    cfg["dataset"]["file"] = "own.csv"
    cfg["missingness"] = [{"kind": "conditional", "name": "cond", "columns": ["duration_months"],
                           "condition": {"column": "installment_rate", "buckets": [bucket]}}]
    return dump(cfg)


def _german_son_conditional() -> str:
    return dump({"experiment": "son_bad", "seed": 1, "dataset": {"name": "german_son"}, "split": {"n_splits": 1},
                 "missingness": [{"kind": "conditional", "name": "cond", "columns": ["savings-account"],
                                  "condition": {"column": "checking-account",
                                                "buckets": [{"values": ["no acount"], "rate": 0.2}]}}],
                 "imputers": [{"kind": "median"}], "learners": [{"kind": "logistic_regression"}],
                 "tracking": {"log_models": False}})


#: what only the data can refuse in a missingness scenario (a bucket value the condition column never takes) is
#: refused by `validate`, and by `run` before processed/ or anything else is written
DATA_MISSINGNESS_CASES = [
    BadInput(f"conditional-bucket-value-never-taken-own-{cmd}", [cmd, X],
             [X, "missingness 'cond'", "condition.buckets.0.values", "9"],
             files={X: _own_conditional({"values": [9], "rate": 0.2}), "own.csv": (EXAMPLE / "credit.csv").read_text()})
    for cmd in ("validate", "run")
] + [
    BadInput(f"conditional-bucket-value-never-taken-registered-{cmd}", [cmd, X],
             [X, "missingness 'cond'", "'no acount' is not a value of"], files={X: _german_son_conditional()})
    for cmd in ("validate", "run")
]


@pytest.mark.parametrize("case", DATA_MISSINGNESS_CASES, ids=lambda c: c.id)
def test_missingness_the_data_refuses(case, tmp_path):
    check(case, tmp_path)
