"""Usage errors of the command line are one ``fairmiss: error:`` line and exit 2 (argparse's own format prints the
whole usage first); ports out of range are usage errors, not tracebacks or a server that cannot bind."""

from __future__ import annotations

import pytest

from flows.cli import main


def _never_exec(*args):
    """`fairmiss worker` becomes `dask worker` (exec) once its checks pass: here that would replace the test
    process, so a check that lets a bad input through fails the test instead."""
    raise AssertionError(f"the command went on to exec {args[1] if len(args) > 1 else args}")


@pytest.mark.parametrize("argv,needle", [
    (["server", "start", "--port", "99999"], "server: argument --port: invalid port (1-65535) value: '99999'"),
    (["server", "start", "--port", "0"], "invalid port (1-65535) value: '0'"),
    (["ui", "--port", "http"], "ui: argument --port: invalid port (1-65535) value: 'http'"),
    (["server", "restart"], "server: argument action: invalid choice: 'restart'"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
    (["worker", "not-an-address"], "worker: 'not-an-address' is not a Dask scheduler address"),
    # Dask's own answers were a 110-line retry loop (port out of range) and a traceback (unknown scheme)
    (["worker", "tcp://127.0.0.1:99999"], "'tcp://127.0.0.1:99999' is not a Dask scheduler address"),
    (["worker", "foo://127.0.0.1:8786"], "'foo://127.0.0.1:8786' is not a Dask scheduler address"),
    # arguments passed on to `dask worker`: Dask's answer was a traceback, exit 1
    (["worker", "tcp://127.0.0.1:8786", "--nworkers", "abc"], "worker: --nworkers 'abc': give a whole number"),
    (["worker", "tcp://127.0.0.1:8786", "--nworkers", "0"], "worker: --nworkers 0: no worker process would start"),
    (["worker", "tcp://127.0.0.1:8786", "--nthreads", "abc"], "worker: Invalid value for '--nthreads': 'abc'"),
    (["worker", "tcp://127.0.0.1:8786", "--bogus"], "worker: No such option '--bogus'"),
    (["server", "start", "--timeout", "-5"], "invalid number of seconds (above 0, at most 86400) value: '-5'"),
    (["ui", "--timeout", "nan"], "ui: argument --timeout: invalid number of seconds"),
    (["serve", "--timeout", "inf"], "serve: argument --timeout: invalid number of seconds"),
])
def test_usage_error_is_one_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRMISS_STATE_DIR", str(tmp_path))
    monkeypatch.setattr("os.execv", _never_exec)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fairmiss: error: ") and needle in lines[0], err
    assert not (tmp_path / "server.lock").exists() and not (tmp_path / "server.json").exists()


@pytest.mark.parametrize("name,content,needle", [
    ("quote.csv", b'a,b,sex,default\n1,"x,1,yes\n2,y,0,no\n', "cannot be read as CSV: Error tokenizing data"),
    ("latin1.csv", "a,sex,default\n\u00e9t\u00e9,1,yes\n".encode("latin-1"), "byte 0xe9 is not valid UTF-8"),
])
def test_ingest_of_an_unreadable_file_is_one_line(tmp_path, capsys, name, content, needle):
    f = tmp_path / name
    f.write_bytes(content)
    code = main(["ingest", str(f), "--label", "default", "--group", "sex", "--out", str(tmp_path / "c.yaml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"fairmiss: error: {f}") and needle in err[0], err
    assert not (tmp_path / "c.yaml").exists()


def test_a_config_with_two_errors_is_one_line_listing_both(tmp_path, capsys):
    """Several config errors are one line: the heading, then each error naming its key, joined by "; "; a
    missing key is named without echoing the whole mapping it is missing from."""
    cfg = tmp_path / "two.yaml"
    cfg.write_text("experiment: two\ndataset: {name: compas_000}\nseed: many\nsplitt: {n_splits: 2}\n")
    code = main(["validate", str(cfg)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"fairmiss: error: {cfg}: invalid config (4 errors): seed: "), err
    assert ":;" not in err[0] and "unknown key 'splitt'" in err[0], err
    assert "; imputers: missing (a required key); learners: missing (a required key);" in err[0], err


def test_output_into_a_closed_pipe_ends_quietly():
    """`fairmiss datasets | head -1`: the reader leaves before the listing is written. The command ends with
    exit 141 (128 + SIGPIPE, as a C tool killed by SIGPIPE) and prints nothing on stderr, instead of a
    BrokenPipeError traceback (seen before the fix)."""
    import subprocess
    import sys

    from conftest import ROOT

    p = subprocess.Popen([sys.executable, "-m", "flows.cli", "datasets"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.close()  # before the command has started: its first write meets a closed pipe
    with p.stderr:
        err = p.stderr.read()
    p.wait(60)
    assert (p.returncode, err) == (141, "")


def test_a_command_dying_of_a_fatal_signal_prints_its_stack():
    """A crash inside compiled code (here: abort() where the `datasets` command would run) is not a silent
    death: the command prints Python's fatal-error report with the stack of every thread (faulthandler; without
    it stderr stays empty)."""
    import subprocess
    import sys

    from conftest import ROOT

    code = "import os, flows.cli as c; c._cmd_datasets = lambda args: os.abort(); c.main(['datasets'])"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == -6, (p.returncode, p.stderr[-2000:])
    assert "Fatal Python error: Aborted" in p.stderr and 'in main' in p.stderr, p.stderr[-2000:]


def test_a_worker_with_no_scheduler_at_its_address_is_one_line(capsys, monkeypatch):
    """`fairmiss worker tcp://127.0.0.1:<closed port>`: Dask's worker retried for its connect timeout (30 s) and
    ended with a 90-line traceback, exit 1. The address is now probed first, for the same timeout (here 1 s),
    and the command says so in one line, exit 2, without becoming the worker."""
    import dask

    from conftest import free_port

    monkeypatch.setattr("os.execv", _never_exec)
    port = free_port()
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(["worker", f"tcp://127.0.0.1:{port}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"fairmiss: error: worker: no Dask scheduler answers at tcp://127.0.0.1:{port} "
                               "(tried for 1 s: Connection refused)"), lines
