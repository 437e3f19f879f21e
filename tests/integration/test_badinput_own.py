"""Own data that cannot work is refused by `validate` / `run` before anything starts: one `fairmiss: error:`
line naming the file, key or column, exit 2, nothing written.

Each class is built from the shipped own-data example (examples/own_data/credit.*) with one thing broken.
Most are checked in-process through `parse_config` (what every entry point runs first: CLI, DVC stage,
`flows.api.run`, `serve`); three go through the command line end to end (exit 2, one line, no files)."""

from __future__ import annotations

import copy
import csv
import io
from pathlib import Path

import pytest
import yaml
from badinput import BadInput, check

from fairmiss.config import ConfigError
from fairmiss.config.loading import parse_config
from fairmiss.datasets.registry import DatasetError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "own_data"
BASE = yaml.safe_load((EXAMPLE / "credit.yaml").read_text())
ROWS = list(csv.reader(io.StringIO((EXAMPLE / "credit.csv").read_text())))


pytestmark = pytest.mark.usefixtures("variants_forgotten")


def _csv(rows) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _with_column(name: str, values) -> str:
    return _csv([ROWS[0] + [name]] + [r + [v] for r, v in zip(ROWS[1:], values)])


def _cfg(data_file: str, **dataset) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["dataset"]["file"] = data_file
    cfg["dataset"].update(dataset)
    return cfg


# id -> (csv text or None for the example's own file, config changes, top-level changes, what the line names)
CASES = {
    "identifier-as-category": (_with_column("account", [f"acc{i:05d}" for i in range(len(ROWS) - 1)]),
                               {"categorical": ["purpose", "housing", "account"]}, {},
                               ["column 'account'", "distinct values", "dataset.drop"]),
    "empty-categorical": (_with_column("empty", [""] * (len(ROWS) - 1)),
                          {"categorical": ["purpose", "housing", "empty"]}, {}, ["column 'empty'", "empty in all"]),
    "empty-numeric": (_with_column("blank", [""] * (len(ROWS) - 1)), {}, {},
                      ["column 'blank'", "empty in all", "dataset.drop"]),  # imputers failed on it cell by cell
    "two-groups-one-name": (None, {"group_names": {"female": "women", "male": "women"}}, {},
                            ["group_names", "'women'"]),
    "group-names-list": (None, {"group_names": ["f", "m"]}, {}, ["group_names", "got a list"]),
    "upper-case-id-kept": (_with_column("ID", [str(i) for i in range(len(ROWS) - 1)]), {}, {}, ["'ID'", "PII"]),
    "sha256-mismatch": (None, {"sha256": "0" * 64}, {}, ["SHA-256", "dataset.sha256"]),
    "features-empty": (None, {"features": []}, {}, ["features is empty"]),
    "rate-for-absent-group": (None, {}, {"missingness": [{"kind": "mcar_group", "name": "m",
                                                           "rates": {"duration_months": {0: 0.2, 2: 0.3}}}]},
                              ["missingness.0", "group 2", "0 = female, 1 = male"]),
    "tracking-unknown-scheme": (None, {}, {"tracking": {"uri": "foo://bar"}}, ["tracking.uri", "foo://bar"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_own_data_refused_at_parse(case, tmp_path, monkeypatch):
    text, dataset, top, expect = CASES[case]
    monkeypatch.chdir(tmp_path)
    data_file = "data.csv"
    (tmp_path / data_file).write_text(text if text is not None else (EXAMPLE / "credit.csv").read_text())
    cfg = {**_cfg(data_file, **dataset), **top}
    with pytest.raises((ConfigError, DatasetError)) as err:
        parse_config(cfg, "x.yaml")
    msg = str(err.value)
    assert "\n" not in msg, msg
    for s in expect:
        assert s in msg, (s, msg)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]  # nothing written


def test_the_example_itself_parses(tmp_path, monkeypatch):
    """The reference the cases above break: the unbroken example is valid."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text((EXAMPLE / "credit.csv").read_text())
    cfg = parse_config(_cfg("data.csv"), "x.yaml")
    assert cfg.dataset.name.startswith("own_data_")


def test_max_levels_can_be_raised(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text(_with_column("branch", [f"b{i % 150}" for i in range(len(ROWS) - 1)]))
    cfg = _cfg("data.csv", categorical=["purpose", "housing", "branch"])
    with pytest.raises(DatasetError, match="150 distinct values"):
        parse_config(cfg, "x.yaml")
    monkeypatch.setenv("FAIRMISS_MAX_LEVELS", "200")
    assert parse_config(cfg, "x.yaml").dataset.file == "data.csv"


X = "own.yaml"
CLI = [
    BadInput("cli-identifier-as-category", ["run", X], ["column 'account'", "distinct values"],
             files={X: yaml.safe_dump(_cfg("own.csv", categorical=["purpose", "housing", "account"])),
                    "own.csv": CASES["identifier-as-category"][0]}),
    BadInput("cli-tracking-unknown-scheme", ["run", X], ["tracking.uri"],
             files={X: yaml.safe_dump({**_cfg("own.csv"), "tracking": {"uri": "foo://bar"}}),
                    "own.csv": (EXAMPLE / "credit.csv").read_text()}),
    BadInput("cli-device-as-file", ["validate", X], ["dev.csv", "not a regular file"],
             files={X: yaml.safe_dump(_cfg("dev.csv"))},
             setup=lambda proj: (proj / "dev.csv").symlink_to("/dev/zero"), timeout=60),
]


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_own_data_refused_by_the_command(case, tmp_path):
    check(case, tmp_path)


def _bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nexperiment: *a{levels - 1}\n"


YAML_CASES = {
    "alias-bomb": (_bomb(), "aliases expand to more than"),
    "many-aliases": ("a: &a 1\nb: [" + ", ".join(["*a"] * 150) + "]\n", "more than 100 aliases"),
    "deep-nesting": ("experiment: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 50 levels"),
    "self-alias": ("experiment: &a [*a]\n", "contains it"),
    "too-large": ("# " + "x" * (1 << 20) + "\nexperiment: x\n", "more than 1,048,576"),
}


@pytest.mark.parametrize("case", sorted(YAML_CASES))
def test_yaml_read_with_limits(case, tmp_path):
    """Alias bombs, deep nesting and huge files are one line, at once: before, a bomb took 100 s to a
    MemoryError and deep nesting a RecursionError traceback."""
    import time

    from fairmiss.config.loading import read_yaml

    text, expect = YAML_CASES[case]
    path = tmp_path / "x.yaml"
    path.write_text(text)
    start = time.monotonic()
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    assert time.monotonic() - start < 10
    msg = str(err.value)
    assert expect in msg and str(path) in msg and "\n" not in msg and len(msg) < 400, msg


def test_yaml_limits_leave_real_configs_alone():
    from fairmiss.config.loading import read_yaml

    for p in sorted((ROOT / "params").rglob("*.yaml")) + sorted((ROOT / "examples").rglob("*.yaml")):
        assert isinstance(read_yaml(p), dict), p


def test_sensitive_features_needs_a_fit_that_takes_them():
    """``sensitive_features: true`` on an estimator whose fit / predict take no such argument is refused at parse
    (every cell failed inside the flow before)."""
    from pydantic import ValidationError

    from fairmiss.learners.estimator import EstimatorSpec

    with pytest.raises(ValidationError, match=r"LogisticRegression\.fit\(\) takes no 'sensitive_features'"):
        EstimatorSpec(estimator="sklearn.linear_model.LogisticRegression", sensitive_features=True)
    # fairlearn's convention is accepted, and so is an estimator without the flag
    from sklearn.linear_model import LogisticRegression

    EstimatorSpec(estimator="fairlearn.postprocessing.ThresholdOptimizer", sensitive_features=True,
                  params={"estimator": LogisticRegression()})
    EstimatorSpec(estimator="sklearn.linear_model.LogisticRegression")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_store_checked_before_anything_is_written(tmp_path):
    """flows.run.check_store: a SQLite store blocked by a file, a server that does not answer — one line each;
    a usable store passes and the probe leaves nothing behind."""
    from flows.run import check_store

    (tmp_path / "mlruns").write_text("not a directory")
    with pytest.raises(ConfigError, match="a path component is a file, not a directory"):
        check_store(f"sqlite:///{tmp_path / 'mlruns' / 'sub' / 'mlflow.db'}")
    port = _free_port()
    with pytest.raises(ConfigError, match=rf"MLflow tracking store http://127.0.0.1:{port}: the tracking server "
                                          "did not answer"):
        check_store(f"http://127.0.0.1:{port}")
    good = tmp_path / "store"
    good.mkdir()
    check_store(f"sqlite:///{good / 'mlflow.db'}")
    assert list(good.iterdir()) == []


CLI_STORE = [
    BadInput("cli-tracking-server-down", ["run", X], ["tracking server did not answer"],
             files={X: yaml.safe_dump({**_cfg("own.csv"), "tracking": {"uri": "http://127.0.0.1:9"}}),
                    "own.csv": (EXAMPLE / "credit.csv").read_text()}, timeout=120),
]


@pytest.mark.parametrize("case", CLI_STORE, ids=[c.id for c in CLI_STORE])
def test_store_refused_by_the_command(case, tmp_path):
    check(case, tmp_path)
