"""The line a stopped command prints says only what is true of this invocation (``flows.errors.stopped_line``):
before the experiment flow's MLflow parent run exists, nothing was recorded; once the run was marked FAILED (checked
in a real store), the finished cells are kept and the run is named; a run whose end was not confirmed is not said
to be FAILED."""

from __future__ import annotations

import pytest

from flows import errors


@pytest.fixture(autouse=True)
def _fresh_state():
    errors.STOPPED_RUN.clear()
    yield
    errors.STOPPED_RUN.clear()


def test_no_flow_keeps_the_general_line():
    assert errors.stopped_line("interrupted (Ctrl-C)") == f"fairmiss: interrupted (Ctrl-C); {errors.RESUME_HINT}"


def test_before_the_parent_run_nothing_is_said_to_be_failed():
    errors.STOPPED_RUN["flow"] = True
    line = errors.stopped_line("interrupted (Ctrl-C)")
    assert "before the MLflow run started" in line and "nothing was recorded" in line
    assert "FAILED" not in line.replace("FINISHED", "")


def test_a_parent_run_marked_failed_is_named_and_the_store_agrees(tmp_path):
    from fairmiss.tracking import Tracker

    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "stop")
    errors.STOPPED_RUN["flow"] = True
    with pytest.raises(KeyboardInterrupt):
        with tracker.run("stop") as parent:
            errors.STOPPED_RUN.update(parent=parent, tracker=tracker)
            raise KeyboardInterrupt
    line = errors.stopped_line("stopped (SIGTERM)")
    assert line.startswith("fairmiss: stopped (SIGTERM); the cells that finished are kept") and \
        f"(MLflow run {parent}) is marked FAILED" in line, line
    assert tracker.client.get_run(parent).info.status == "FAILED"


def test_a_parent_run_not_confirmed_failed_is_not_said_to_be(tmp_path):
    from fairmiss.tracking import Tracker

    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "stop")
    parent = tracker.start_run("stop")  # started, never ended: as when the store does not answer end_run in time
    errors.STOPPED_RUN.update(flow=True, parent=parent, tracker=tracker)
    line = errors.stopped_line("interrupted (Ctrl-C)")
    assert "is marked FAILED" not in line and "was not confirmed FAILED" in line and parent in line, line
    assert tracker.client.get_run(parent).info.status == "RUNNING"


@pytest.mark.parametrize("delay", [0.3, 0.8])
def test_ctrl_c_while_the_command_starts_is_one_line_and_130(tmp_path, delay):
    """Ctrl-C in the command's first second (its imports, the config's checks), before a flow's own handling is in
    place: one line and exit 130 — it was a KeyboardInterrupt traceback and death by SIGINT (exit -2)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    p = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", str(ROOT / "params" / "compas_default.yaml"),
                          "--results-dir", str(tmp_path / "results"), "--processed-dir", str(tmp_path / "processed")],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         # a terminal's Ctrl-C: SIGINT handled as Python does by default, also when this test
                         # session runs in the background (`cmd &` in a script ignores SIGINT, and children inherit it)
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])})
    time.sleep(delay)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("fairmiss: interrupted (Ctrl-C)"), err[-2000:]
