"""Bad input found by generating it: output paths that are not files, stores a read-only command must not create,
schedules Prefect would refuse late. Each ends with exit 2, one ``fairmiss: error:`` line naming the path or key,
and nothing written."""

from __future__ import annotations

import os
import re
import stat

import pytest
import yaml
from conftest import ROOT, run_cli

from fairmiss._errors import OutputPathError
from fairmiss.config import ConfigError
from fairmiss.config.schedules import load_schedules
from fairmiss.io import atomic_path, atomic_write_text

INGEST = ["ingest", str(ROOT / "examples" / "own_data" / "credit.csv"), "--label", "default", "--group", "sex",
          "--positive", "yes", "--drop", "name", "--force", "--out"]


def _one_error(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("fairmiss: error: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_atomic_write_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="is a FIFO"):
        atomic_write_text(fifo, "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the FIFO: the rename would have replaced it by a file
    with pytest.raises(OutputPathError, match="is a directory"):
        atomic_write_text(tmp_path, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]  # no temporary file left
    (tmp_path / "plain.txt").write_text("old")
    assert atomic_write_text(tmp_path / "plain.txt", "new").read_text() == "new"  # a regular file: replaced


def test_ingest_out_on_a_fifo_or_directory_is_refused_even_with_force(tmp_path):
    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    _one_error(run_cli(*INGEST, str(fifo), cwd=tmp_path), str(fifo), "is a FIFO", "nothing written")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    _one_error(run_cli(*INGEST, str(tmp_path), cwd=tmp_path), "is a directory")


@pytest.mark.slow
def test_compare_reads_without_creating_and_names_a_bad_store(tmp_path):
    missing = tmp_path / "no" / "mlflow.db"
    _one_error(run_cli("compare", "x", "--tracking-uri", f"sqlite:///{missing}"), str(missing), "no such database")
    assert not (tmp_path / "no").exists()  # opening it would have created an empty MLflow store
    _one_error(run_cli("compare", "x", "--tracking-uri", "garbage://x"), "'garbage://x'", "not a tracking store")
    _one_error(run_cli("compare", "x", "--tracking-uri", f"file://{tmp_path}"), "not a tracking store")
    notdb = tmp_path / "data.csv"
    notdb.write_text("a,b\n1,2\n")
    _one_error(run_cli("compare", "x", "--tracking-uri", f"sqlite:///{notdb}"), str(notdb), "not a database")
    assert notdb.read_text() == "a,b\n1,2\n"


def _schedules(tmp_path, entries, key="deployments"):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text((ROOT / "params" / "compas_default.yaml").read_text())
    for e in entries:
        e.setdefault("config", str(cfg))
    p = tmp_path / "schedules.yaml"
    p.write_text(yaml.safe_dump({key: entries}))
    return p


@pytest.mark.parametrize("cron", ["61 25 * * *", "every day"])
def test_a_cron_string_prefect_refuses_is_a_config_error(tmp_path, cron):
    """Checked by Prefect's own schedule class as the deployments are built (before ``serve`` prints or serves);
    it was a pydantic traceback, exit 1."""
    from flows.serve import build_deployments

    p = _schedules(tmp_path, [{"name": "ok", "cron": "0 3 * * *"}, {"name": "a", "cron": cron}])
    with pytest.raises(ConfigError, match=re.escape(f"deployments.1.cron: Prefect refuses '{cron}'")):
        build_deployments(p)


def test_two_deployments_of_one_name_are_refused(tmp_path):
    p = _schedules(tmp_path, [{"name": "a", "cron": "0 3 * * *"}, {"name": "a", "cron": "0 4 * * *"}])
    with pytest.raises(ConfigError, match="deployment name 'a' is used twice"):
        load_schedules(p)


def test_serve_says_a_bad_schedules_file_in_one_line(tmp_path):
    p = _schedules(tmp_path, [{"name": "a", "cron": "0 3 * * *"}], key="deployment")
    line = _one_error(run_cli("serve", str(p), "--timeout", "30", cwd=tmp_path), str(p), "unknown key 'deployment'",
                      "deployments: missing")
    assert "\n" not in line


def test_results_dir_whose_experiment_entry_is_a_file_is_refused_before_any_cell(tmp_path):
    (tmp_path / "rd").mkdir()
    (tmp_path / "rd" / "compas_default").write_text("")
    _one_error(run_cli("run", str(ROOT / "params" / "compas_default.yaml"), "--results-dir", "rd", cwd=tmp_path),
               "rd/compas_default", "not a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rd"]  # no processed/, mlruns/ or reports/ started


def test_results_dir_where_no_directory_can_be_made_is_refused_before_any_cell(tmp_path):
    """``/proc`` exists and is a directory, but nothing can be created in it: found late (after every cell, a
    raw ``[Errno 2]`` line) before the write probe."""
    _one_error(run_cli("run", str(ROOT / "params" / "compas_default.yaml"), "--quick", "--results-dir", "/proc/fz",
                       cwd=tmp_path), "/proc/fz", "--results-dir", "cannot create directories in /proc")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_no_directory_it_created(tmp_path):
    target = tmp_path / "a" / "b" / "out.txt"
    with pytest.raises(RuntimeError), atomic_path(target):
        raise RuntimeError("the download failed")
    assert list(tmp_path.iterdir()) == []  # a/ and a/b/ were made for the write: removed with it
    (tmp_path / "keep").mkdir()
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "keep" / "new" / "x"):
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["keep"] and list((tmp_path / "keep").iterdir()) == []


def test_an_unreachable_data_url_leaves_no_empty_raw_directory(tmp_path):
    _one_error(run_cli("ingest", "http://127.0.0.1:9/nope.csv", "--label", "y", "--group", "g", cwd=tmp_path),
               "nope.csv", "could not be downloaded")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_header_name_is_named_by_ingest(tmp_path):
    f = tmp_path / "eh.csv"
    f.write_text("a,,label,grp\n1,2,0,x\n3,4,1,y\n5,6,0,x\n7,8,1,y\n")
    _one_error(run_cli("ingest", str(f), "--label", "label", "--group", "grp", cwd=tmp_path),
               str(f), "header field(s) [2] are empty")


def test_a_bad_quick_override_is_found_by_validate_and_named_by_run(tmp_path):
    cfg = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
    cfg["quick"] = {"split": {"n_splits": 0}}
    p = tmp_path / "q.yaml"
    p.write_text(yaml.safe_dump(cfg))
    for cmd in (["validate", str(p)], ["run", str(p), "--quick"]):
        _one_error(run_cli(*cmd, cwd=tmp_path), f"{p} (with its quick: overrides)", "split.n_splits")
    cfg["quick"] = {"split": {"n_splits": 1}}
    p.write_text(yaml.safe_dump(cfg))
    assert run_cli("validate", str(p), cwd=tmp_path).returncode == 0


def test_ingest_never_writes_its_config_over_the_data_file(tmp_path):
    data = tmp_path / "credit.csv"
    data.write_bytes((ROOT / "examples" / "own_data" / "credit.csv").read_bytes())
    before = data.read_bytes()
    for out in ("credit.csv", "x/../credit.csv"):  # ``x`` does not exist: still the same file
        _one_error(run_cli(*INGEST[:1], str(data), *INGEST[2:], out, cwd=tmp_path), "--out is the data file itself")
    assert data.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["credit.csv"]


def test_ingest_of_a_file_of_another_type_says_so(tmp_path):
    (tmp_path / "credit.txt").write_text("a,b\n1,2\n")
    _one_error(run_cli("ingest", "credit.txt", "--label", "a", "--group", "b", cwd=tmp_path), "credit.txt",
               ".csv or .parquet", "'.txt'")


def test_compare_refuses_a_plot_path_that_is_not_a_file_before_reading(tmp_path):
    (tmp_path / "pd").mkdir()
    for plot, words in (("/dev/null", "is a device"), ("pd", "is a directory")):
        _one_error(run_cli("compare", "x", "--plot", plot, cwd=tmp_path), plot, words, "nothing written")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # was replaced by a plain file (a figure) before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pd"]  # no store opened, nothing written


def test_bad_environment_variables_are_named(tmp_path):
    cfg = str(ROOT / "params" / "compas_default.yaml")
    for uri in ("::garbage::", str(tmp_path)):
        _one_error(run_cli("run", cfg, cwd=tmp_path, env={"MLFLOW_TRACKING_URI": uri}), "MLFLOW_TRACKING_URI",
                   "not a tracking store")
    _one_error(run_cli("compare", "x", "--tracking-uri", "http://127.0.0.1:9", cwd=tmp_path,
                       env={"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "abc"}), "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "'abc'")
    _one_error(run_cli("run", cfg, "--results-dir", "", cwd=tmp_path), "--results-dir", "an empty path")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text", ['{"trunc', "", "[1, 2]"])
def test_report_on_a_damaged_metrics_file_is_one_line(tmp_path, text):
    out = tmp_path / "results" / "compas_default"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(text)
    _one_error(run_cli("report", str(ROOT / "params" / "compas_default.yaml"), "--no-mlflow", cwd=tmp_path),
               "metrics.json", "not a results file fairmiss wrote")


def test_a_state_directory_that_is_a_file_is_named_by_every_server_command(tmp_path):
    blocker = tmp_path / "state"
    blocker.write_text("")
    for action in ("status", "stop", "start"):  # status and stop said "not running", exit 0; start: a traceback
        _one_error(run_cli("server", action, "--timeout", "5", env={"FAIRMISS_STATE_DIR": str(blocker)}),
                   f"FAIRMISS_STATE_DIR {blocker}", "cannot be used as a directory")


@pytest.mark.parametrize("kind", ["gzip", "utf16"])
def test_a_compressed_or_utf16_file_is_called_what_it_is(tmp_path, kind):
    import gzip

    text = (ROOT / "examples" / "own_data" / "credit.csv").read_text()
    f = tmp_path / "d.csv"
    f.write_bytes(gzip.compress(text.encode()) if kind == "gzip" else text.encode("utf-16"))
    _one_error(run_cli("ingest", str(f), "--label", "default", "--group", "sex", cwd=tmp_path), str(f),
               "gzip-compressed" if kind == "gzip" else "UTF-16 text")


def test_ingest_takes_a_header_with_spaces_after_the_commas(tmp_path):
    lines = (ROOT / "examples" / "own_data" / "credit.csv").read_text().splitlines(keepends=True)
    f = tmp_path / "ws.csv"
    f.write_text(lines[0].replace(",", ", ") + "".join(lines[1:]))  # pandas' "Usecols do not match" before
    r = run_cli("ingest", str(f), "--label", "default", "--group", "sex", "--positive", "yes", "--drop", "name",
                "--out", str(tmp_path / "ws.yaml"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run_cli("validate", str(tmp_path / "ws.yaml"), cwd=tmp_path).returncode == 0


def test_report_and_study_outside_a_checkout(tmp_path):
    conf = tmp_path / "c.conf"  # an existing file is a config whatever its suffix (validate takes it too)
    conf.write_text((ROOT / "params" / "compas_default.yaml").read_text())
    _one_error(run_cli("report", str(conf), "--no-mlflow", cwd=tmp_path), "no results to report on")
    _one_error(run_cli("study", "no_such_study", cwd=tmp_path), "params/studies: no such directory here")


def _knn_config() -> str:
    d = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
    d["split"]["n_splits"] = 1
    d["imputers"] = [{"kind": "knn", "n_neighbors": 5000}]  # COMPAS 000: 2944 training rows per split
    return yaml.safe_dump(d, sort_keys=False)


def _knn_case():
    from badinput import BadInput

    return BadInput("knn-more-neighbours-than-rows", ["run", "params/knn.yaml"],
                    ["params/knn.yaml: imputers.0.knn.n_neighbors: 5000 neighbours", "2944 training rows",
                     "mean imputation, not k-NN"],
                    files={"params/knn.yaml": _knn_config()}, allow=("processed", "reports"), timeout=300)


def test_a_knn_imputer_with_more_neighbours_than_training_rows_is_refused_before_any_cell(tmp_path):
    """Before: the run finished, exit 0, and every k-NN cell had imputed column means (its accuracy equal to the
    mean imputer's). `validate` cannot know the rows; `run` checks them once the table is built, before Prefect
    or the store start."""
    from badinput import check

    out = check(_knn_case(), tmp_path)
    assert not (out.project / "mlruns").exists()


def _cache_case(command: list[str]):
    from badinput import BadInput

    return BadInput(f"cache-dir-a-file-{command[0]}", command, ["FAIRMISS_CACHE_DIR", "cachefile",
                                                                 "cannot be used as a directory: it is a file"],
                    env={"FAIRMISS_CACHE_DIR": "{project}/cachefile"}, files={"cachefile": "not a directory\n"},
                    timeout=120)


@pytest.mark.parametrize("command", [["run", "params/compas_default.yaml"], ["study", "003_decile_compas"],
                                     ["report", "params/compas_default.yaml", "--no-mlflow"]],
                         ids=lambda c: c[0])
def test_a_cache_directory_that_is_a_file_is_named_before_anything_runs(command, tmp_path):
    """Before: `run` ignored it silently (no up-to-date receipts, no store template) and finished, exit 0."""
    from badinput import check

    out = check(_cache_case(command), tmp_path)
    assert (out.project / "cachefile").read_text() == "not a directory\n"
    assert not (out.project / "mlruns").exists()


def test_a_tracking_store_that_is_not_a_database_is_one_line(tmp_path):
    """MLFLOW_TRACKING_URI naming a text file: SQLAlchemy's `DatabaseError: file is not a database` traceback,
    exit 1, before; now one TrackingStoreError line naming the file, exit 2, the file untouched."""
    from badinput import BadInput, check

    d = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
    d["split"]["n_splits"] = 1
    case = BadInput("store-not-a-database", ["run", "params/one.yaml"],
                    ["MLflow tracking store", "store/notdb.db", "is not an SQLite database", "file is not a database"],
                    env={"MLFLOW_TRACKING_URI": "sqlite:///{project}/store/notdb.db"},
                    files={"params/one.yaml": yaml.safe_dump(d), "store/notdb.db": "a,b\n1,2\n"},
                    allow=("store", "processed", "reports"), timeout=300)
    out = check(case, tmp_path)
    assert (out.project / "store" / "notdb.db").read_text() == "a,b\n1,2\n"
