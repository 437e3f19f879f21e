"""Bad-input corpus: malformed names, config files, column references, paths and
environments, each tried through the command line as a new user would, in a scratch project
(tests/badinput.py). Every case must give exit 2, one ``fairmiss: error:`` line naming the file / key /
column, no traceback, no file outside the allowed roots and no MLflow run left RUNNING.

Cases are generated from the project's real configs (``params/*.yaml``, ``params/studies/*.yaml``) and the
real raw files of the mirror by mutation. Cases that fail before Prefect starts take ~3 s; the few that
need the flow (~15 s) are in the default suite, the rest are marked slow.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from badinput import DELETE, PARAMS, BadInput, check, dump, load_params, mirror_dir, mutate, mutate_keys, run_case

from fairmiss.config import ExperimentConfig, load_study_config
from fairmiss.datasets import get_variant
X = "params/x.yaml"
STUDIES = sorted(p.name for p in (PARAMS / "studies").glob("*.yaml"))
EXPERIMENT_CONFIGS = ["compas_default.yaml"] + [f"studies/{s}" for s in STUDIES
                                                if isinstance(load_study_config(PARAMS / "studies" / s), ExperimentConfig)]


def _variant(rel: str):
    return get_variant(load_params(rel)["dataset"]["name"])


def _group_label(rel: str) -> tuple[str, str, dict]:
    """A config's group and label columns, and the files its dataset needs in the case's project: an own file
    (``dataset.file``, relative to the project) is copied there; a registered dataset needs none."""
    ds = load_params(rel)["dataset"]
    if "file" in ds:
        return ds["group"], ds["label"], {ds["file"]: (PARAMS.parent / ds["file"]).read_bytes()}
    v = _variant(rel)
    return v.group, v.label, {}


def _run(rel: str, text: str, cmd: str = "run", **kw) -> dict:
    return dict(argv=[cmd, X], files={X: text}, **kw)


# ------------------------------------------------------------------ cause 1: names that become paths
def _path_cases():
    out = []
    for s in STUDIES:  # every real study config, experiment name turned into a traversal
        stem = s[:-5]
        out.append(BadInput(f"traversal-experiment-{stem}", ["run", X], [X, "experiment", "not a safe name"],
                            files={X: mutate_keys(f"studies/{s}", {"experiment": f"../{stem}"})}))
    for name in ["..", ".", "/tmp/fairmiss-abs", "a/b", ".hidden", "x" * 200, "a\\b", "-rf"]:
        out.append(BadInput(f"experiment-name-{name[:12]!r}", ["run", X], [X, "experiment"],
                            files={X: mutate("compas_default.yaml", experiment=name)}))
    for name in ["../../../x", "/abs/exp", ".."]:
        out.append(BadInput(f"tracking-experiment-name-{name!r}", ["run", X], [X, "tracking.experiment_name"],
                            files={X: mutate_keys("compas_default.yaml", {"tracking": {"experiment_name": name}})}))
    out += [
        BadInput("missingness-name-traversal", ["run", X], [X, "missingness.0"],
                 files={X: mutate_keys("compas_default.yaml", {"missingness.0.name": "../../m"})}),
        BadInput("learner-name-separator", ["validate", X], [X, "learners.0"],
                 files={X: mutate_keys("compas_default.yaml", {"learners.0.name": "tree/../../x"})}),
        BadInput("imputer-name-dotdot", ["validate", X], [X, "imputers.0"],
                 files={X: mutate_keys("compas_default.yaml", {"imputers.0.name": ".."})}),
        BadInput("study-name-traversal", ["study", "../compas_default"], "study name"),
        BadInput("study-name-absolute", ["study", "/etc/passwd"], "study name"),
        BadInput("report-name-traversal", ["report", "../../x", "--no-mlflow"], "study name"),
        BadInput("schedule-deployment-name", ["serve", "params/s.yaml"], ["params/s.yaml", "deployments.0.name"],
                 files={"params/s.yaml": dump({"deployments": [{"name": "../x", "config": "params/compas_default.yaml",
                                                                 "interval_seconds": 60}]})}),
    ]
    return out


# ------------------------------------------------------------------ cause 5: config files
def _file_cases():
    out = []
    for rel in ["compas_default.yaml", "studies/004_table9_compas.yaml", "studies/003_decile_compas.yaml",
                "studies/001_table.yaml"]:
        text = (PARAMS / rel).read_text(encoding="utf-8")
        stem = Path(rel).stem
        latin = ("# Configuration modifiée à la main\n" + text).encode("latin-1", errors="replace")
        out += [
            BadInput(f"yaml-syntax-{stem}", ["run", X], [X, "not valid YAML", "line"],
                     files={X: text + "\nbroken: [unclosed, list\n"}),
            BadInput(f"latin1-{stem}", ["run", X], [X, "not UTF-8"], files={X: latin}),
            BadInput(f"utf16-{stem}", ["run", X], [X, "UTF-16"], files={X: text.encode("utf-16")}),
            BadInput(f"duplicate-top-key-{stem}", ["run", X], [X, "duplicate key", "line"],
                     files={X: text + "\nseed: 1\nseed: 2\n" if "seed:" not in text else text + "\nseed: 3\n"}),
        ]
    d = (PARAMS / "compas_default.yaml").read_text(encoding="utf-8")
    out += [
        BadInput("duplicate-learners", ["validate", X], [X, "duplicate key 'learners'"],
                 files={X: d + "learners:\n  - kind: logistic_regression\n"}),
        BadInput("duplicate-nested-key", ["run", X], [X, "duplicate key 'n_splits'"],
                 files={X: d.replace("n_splits: 10", "n_splits: 10\n  n_splits: 2")}),
        BadInput("config-is-directory", ["run", "params/studies"], ["params/studies", "directory"]),
        BadInput("validate-directory", ["validate", "params"], ["params", "directory"]),
        BadInput("config-is-raw-csv", ["run", "data/raw/compas-scores-two-years.csv"],
                 ["compas-scores-two-years.csv"]),
        BadInput("config-empty", ["run", X], [X, "mapping"], files={X: ""}),
        BadInput("config-top-level-list", ["run", X], [X, "mapping"], files={X: "- a\n- b\n"}),
        BadInput("study-latin1", ["study", "broken"], ["broken.yaml", "not UTF-8"],
                 files={"params/studies/broken.yaml": ("# é\n" + d).encode("latin-1")}),
        BadInput("study-yaml-error", ["study", "broken", "--quick"], ["broken.yaml", "not valid YAML"],
                 files={"params/studies/broken.yaml": d + "\n  bad: [\n"}),
        BadInput("report-config-utf16", ["report", X, "--no-mlflow"], [X, "UTF-16"], files={X: d.encode("utf-16")}),
    ]
    return out


# ------------------------------------------------------------------ cause 7: checked before data are loaded
def _column_cases():
    out = []
    for rel in EXPERIMENT_CONFIGS:  # every real experiment config: mask its dataset's group, then its label
        group, label, data = _group_label(rel)
        stem = Path(rel).stem
        for col in (group, label):
            miss = [{"kind": "mcar", "name": "bad", "rates": {col: 0.2}}]
            # a study's claims section names its own settings, which this case replaces: left out with them
            change = {"missingness": miss, **({"claims": DELETE} if "claims" in load_params(rel) else {})}
            out.append(BadInput(f"mask-{'group' if col == group else 'label'}-{stem}", ["validate", X],
                                [X, "missingness.0", col], files={X: mutate_keys(rel, change), **data}))
    miss = [{"kind": "mcar_group", "name": "typo", "rates": {"prior_count": {0: 0.4, 1: 0.1}}}]
    out += [
        BadInput("missingness-column-typo-validate", ["validate", X], [X, "missingness.0", "prior_count"],
                 files={X: mutate_keys("compas_default.yaml", {"missingness": miss})}),
        BadInput("missingness-column-typo-run", ["run", X], [X, "missingness.0", "prior_count"],
                 files={X: mutate_keys("compas_default.yaml", {"missingness": miss})}),
        BadInput("mar-driver-unknown", ["validate", X], [X, "drivers", "agee"],
                 files={X: mutate_keys("compas_default.yaml", {"missingness": [
                     {"kind": "mar", "name": "m", "columns": ["priors_count"], "drivers": ["agee"], "rate": 0.2}]})}),
        BadInput("preset-on-wrong-dataset", ["validate", X], [X, "missingness.0", "priors_count"],
                 files={X: mutate_keys("studies/003_postprocessors_adult.yaml", {"missingness": [
                     {"kind": "preset", "preset": "000_table3_compas", "name": "t3"}]})}),
        # import-path estimators whose parameter values only their fit checks: test-fitted on a sample of the data
        # before the flow starts and before anything is written (processed/ included)
        BadInput("estimator-learner-fit-fails", ["run", X],
                 [X, "learners.0: lr_l1 (sklearn.linear_model.LogisticRegression)", "could not be fitted", "penalty"],
                 files={X: mutate_keys("compas_default.yaml", {"learners": [
                     {"kind": "estimator", "name": "lr_l1", "estimator": "sklearn.linear_model.LogisticRegression",
                      "params": {"penalty": "l1", "solver": "lbfgs"}}]})}),
        BadInput("estimator-imputer-fit-fails", ["run", X],
                 [X, "imputers.0: sklearn.impute.SimpleImputer", "could not be fitted", "fill_value"],
                 files={X: mutate_keys("compas_default.yaml", {"imputers": [
                     {"kind": "estimator", "name": "const_x", "estimator": "sklearn.impute.SimpleImputer",
                      "params": {"strategy": "constant", "fill_value": "x"}}]})}),
        BadInput("extra-groups-unknown", ["validate", X], [X, "extra_groups.0", "sexx"],
                 files={X: mutate_keys("studies/004_table9_compas.yaml", {"extra_groups": ["sexx"]})}),
        BadInput("extra-groups-is-group", ["run", X], [X, "extra_groups.0"],
                 files={X: mutate_keys("studies/004_table9_compas.yaml",
                                       {"extra_groups": [_variant("studies/004_table9_compas.yaml").group]})}),
        BadInput("budro-protected-not-feature", ["validate", X], [X, "learners.0.budro.protected", "nope"],
                 files={X: mutate_keys("studies/004_table5_german.yaml", {"learners.0.protected": ["nope"]})}),
        BadInput("consistency-not-feature", ["validate", X], [X, "consistency", "zzz"],
                 files={X: mutate_keys("studies/004_table5_german.yaml", {"consistency": {"x": ["zzz"]}})}),
        BadInput("options-balance-seed-abc", ["run", X], [X, "dataset.options.balance_seed", "abc"],
                 files={X: mutate_keys("compas_default.yaml", {"dataset.options": {"balance_seed": "abc"}})}),
        BadInput("options-balance-string", ["validate", X], [X, "dataset.options.balance"],
                 files={X: mutate_keys("compas_default.yaml", {"dataset.options": {"balance": "yes"}})}),
        BadInput("options-unknown", ["validate", X], [X, "dataset.options.balanced"],
                 files={X: mutate_keys("compas_default.yaml", {"dataset.options": {"balanced": True}})}),
        BadInput("options-not-mapping", ["validate", X], [X, "dataset.options"],
                 files={X: mutate_keys("compas_default.yaml", {"dataset.options": [1, 2]})}),
        BadInput("study-options-typed", ["run", X], [X, "dataset.options"],
                 files={X: mutate_keys("studies/003_decile_compas.yaml", {"dataset.options": {"nope": 1}})}),
    ]
    return out


# ------------------------------------------------------------------ cause 6: file-system errors
def _unlink_raw(proj: Path):
    for f in (proj / "data" / "raw").iterdir():
        f.unlink()


def _fs_cases():
    out = []
    for rel in ["compas_default.yaml", "studies/000_fig2_adult.yaml", "studies/004_table5_german.yaml"]:
        rf = _variant(rel).raw_files[0].filename

        def as_dir(proj, rf=rf):
            (proj / "data" / "raw" / rf).unlink()
            (proj / "data" / "raw" / rf).mkdir()
        out.append(BadInput(f"raw-file-is-directory-{Path(rel).stem}", ["run", X], [rf, "is a directory"],
                            files={X: mutate(rel, _small=True)}, setup=as_dir))
    mirror_file = str(mirror_dir() / "compas-scores-two-years.csv")
    small = mutate("compas_default.yaml", _small=True)
    out += [
        BadInput("raw-dir-env-is-a-file", ["run", X], ["FAIRMISS_RAW_DIR", "not a directory"], files={X: small},
                 env={"FAIRMISS_RAW_DIR": mirror_file}),
        BadInput("mirror-env-is-a-file", ["run", X], ["FAIRMISS_DATA_MIRROR", "not a directory"], files={X: small},
                 env={"FAIRMISS_DATA_MIRROR": mirror_file}, setup=_unlink_raw),
        BadInput("mirror-env-missing", ["run", X], ["FAIRMISS_DATA_MIRROR", "does not exist"], files={X: small},
                 env={"FAIRMISS_DATA_MIRROR": "{project}/no-such-mirror"}, setup=_unlink_raw),
        BadInput("default-raw-dir-is-a-file", ["run", X], ["data/raw", "not a directory"], files={X: small},
                 setup=lambda p: (_unlink_raw(p), (p / "data" / "raw").rmdir(),
                                  (p / "data" / "raw").write_text("x"))),
        BadInput("raw-file-dangling-symlink", ["run", X], ["compas-scores-two-years.csv", "cannot read"],
                 files={X: small}, setup=lambda p: ((p / "data/raw/compas-scores-two-years.csv").unlink(),
                                                    (p / "data/raw/compas-scores-two-years.csv").symlink_to(
                                                        p / "nowhere.csv"))),
        BadInput("raw-file-symlink-loop", ["run", X], ["compas-scores-two-years.csv"],
                 files={X: small}, setup=lambda p: ((p / "data/raw/compas-scores-two-years.csv").unlink(),
                                                    (p / "data/raw/compas-scores-two-years.csv").symlink_to(
                                                        p / "data/raw/compas-scores-two-years.csv"))),
        BadInput("raw-file-truncated-checksum", ["run", X], ["compas-scores-two-years.csv", "checksum mismatch"],
                 files={X: small}, setup=lambda p: ((p / "data/raw/compas-scores-two-years.csv").unlink(),
                                                    (p / "data/raw/compas-scores-two-years.csv").write_bytes(
                                                        (mirror_dir() / "compas-scores-two-years.csv")
                                                        .read_bytes()[:20000]))),
        BadInput("results-dir-is-a-file", ["run", X, "--results-dir", "params/compas_default.yaml"],
                 ["--results-dir", "not a directory"], files={X: small}),
        BadInput("processed-dir-is-a-file", ["run", X, "--processed-dir", "params/compas_default.yaml"],
                 ["--processed-dir", "not a directory"], files={X: small}),
    ]
    return out


FAST = _path_cases() + _file_cases() + _column_cases() + _fs_cases()
# each case is one process start (~5 s, more on 2 loaded cores): the default suite runs one or two cases per
# family (below); the rest — per-config expansions and variants of the same mechanism — run with -m slow
DEFAULT = {
    "traversal-experiment-000_baselines_compas", "experiment-name-'..'", "experiment-name-'/tmp/fairmis'",
    "tracking-experiment-name-'../../../x'", "missingness-name-traversal", "study-name-traversal",
    "report-name-traversal",
    "yaml-syntax-003_decile_compas", "latin1-compas_default", "utf16-004_table9_compas", "duplicate-learners",
    "config-is-directory",
    "mask-group-compas_default", "mask-label-004_table5_german", "missingness-column-typo-run",
    "extra-groups-unknown", "budro-protected-not-feature", "options-balance-seed-abc",
    "raw-file-is-directory-000_fig2_adult", "mirror-env-is-a-file", "raw-dir-env-is-a-file",
    "raw-file-truncated-checksum", "results-dir-is-a-file",
}
CASES = [pytest.param(c, id=c.id, marks=[] if c.id in DEFAULT else [pytest.mark.slow]) for c in FAST]
assert DEFAULT <= {c.id for c in FAST}, DEFAULT - {c.id for c in FAST}


@pytest.mark.parametrize("case", CASES)
def test_rejected_before_the_flow(case, tmp_path):
    check(case, tmp_path)


# ------------------------------------------------------------------ causes 4, 8, 9: errors inside the flow
_small = mutate("compas_default.yaml", _small=True)
FLOW = [  # each case starts a flow (~15 s): in the slow tests, which CI runs
    BadInput("flow-test-size-tiny", ["run", X], [X, "split", "test_size"],
             files={X: mutate_keys("compas_default.yaml", {"split.test_size": 0.0001, "split.n_splits": 1,
                                                           "imputers": [{"kind": "mean"}]})},
             allow=("processed", "reports", "data")),
    BadInput("flow-all-cells-fail", ["run", X], ["all 1 cell(s) failed", "ValueError"],
             files={X: mutate_keys("compas_default.yaml", {
                 "split.n_splits": 1, "imputers": [{"kind": "mean"}],
                 "learners": [{"kind": "orthogonal", "n_components": 500}]})},
             allow=("processed", "reports", "data")),
    BadInput("flow-test-size-huge", ["run", X], [X, "split", "test_size"],
             files={X: mutate_keys("compas_default.yaml", {"split.test_size": 0.9999, "split.n_splits": 1,
                                                           "imputers": [{"kind": "mean"}]})},
             allow=("processed", "reports", "data")),
    BadInput("flow-all-cells-fail-two-splits", ["run", X], ["all 2 cell(s) failed"],
             files={X: mutate_keys("compas_default.yaml", {
                 "split.n_splits": 2, "imputers": [{"kind": "mean"}],
                 "learners": [{"kind": "orthogonal", "n_components": 500}]})},
             allow=("processed", "reports", "data")),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", FLOW, ids=lambda c: c.id)
def test_rejected_inside_the_flow(case, tmp_path):
    out = check(case, tmp_path)
    assert not any((out.project / "results").rglob("metrics.json")) if (out.project / "results").exists() else True


def test_verbose_shows_the_traceback(tmp_path):
    """``-v``: the same one error line, after the traceback."""
    case = BadInput("verbose", ["run", X], [X, "prior_count"],
                    files={X: mutate_keys("compas_default.yaml", {"missingness": [
                        {"kind": "mcar", "name": "m", "rates": {"prior_count": 0.2}}]})})
    out = run_case(case, tmp_path, verbose=True)
    assert out.returncode == 2 and "Traceback" in out.stderr and len(out.error_lines) == 1, out.stderr[-2000:]


def test_corpus_size():
    assert len(FAST) + len(FLOW) >= 40


def test_retry_only_transient_network_errors():
    import requests
    from prefect.states import Failed

    from fairmiss.datasets import ChecksumError

    from fairmiss.datasets import DatasetError

    from fairmiss.datasets import RawDataMissingError
    from tasks.experiment import _retry_on_network_error, transient_network_error

    def raised(exc, cause):
        try:
            try:
                raise cause
            except Exception as c:
                raise exc from c
        except Exception as e:
            return e

    net = raised(RawDataMissingError("x: could not be downloaded"), requests.ConnectionError("refused"))
    assert transient_network_error(net) and _retry_on_network_error(None, None, Failed(data=net))
    assert transient_network_error(requests.Timeout("slow"))
    for exc in (ChecksumError("x: checksum mismatch"), DatasetError("x: cannot parse CSV"),
                RawDataMissingError("x: missing"), ValueError("bad")):
        assert not transient_network_error(exc)
        assert not _retry_on_network_error(None, None, Failed(data=exc))


def test_scratch_project_is_isolated(tmp_path):
    """The harness itself: a write outside the allowed roots is seen (guards against a harness that
    cannot fail)."""
    case = BadInput("harness", ["validate", "params/compas_default.yaml"], "x",
                    setup=lambda p: None)
    out = run_case(case, tmp_path)
    assert out.returncode == 0 and not out.new_files
    with pytest.raises(AssertionError, match="exit 0"):
        from badinput import assert_rejected

        assert_rejected(case, out)
    os.makedirs(tmp_path / "a" / "escaped")
    (tmp_path / "a" / "escaped" / "f").write_text("x")
    from badinput import _snapshot

    assert "a/escaped/f" in _snapshot(tmp_path)
