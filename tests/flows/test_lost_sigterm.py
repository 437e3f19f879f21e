"""A SIGTERM whose exception is lost (raised inside a finalizer) still stops the flow: ``flows.errors`` keeps the
signal's number in a wake-up pipe and :func:`flows.errors.redeliver_lost_sigterm` raises it again at the flow's
next progress point. The control case shows the loss is real: without the redelivery the process goes on and
exits 0."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

SCRIPT = """
import os, signal, sys
from flows.errors import redeliver_lost_sigterm, run_guarded

class Finalised:
    def __del__(self):  # the handler's exception is raised here: Python reports it as ignored and goes on
        os.kill(os.getpid(), signal.SIGTERM)
        sum(range(1000))  # bytecode after the kill: the handler runs here

def flow():
    Finalised()
    print("went on", flush=True)
    if {redeliver}:
        redeliver_lost_sigterm()
    print("finished", flush=True)

sys.exit(run_guarded(flow))
"""


@pytest.mark.parametrize("redeliver", [True, False])
def test_a_sigterm_lost_in_a_finalizer_is_delivered_again(redeliver):
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(redeliver=redeliver)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert "went on" in r.stdout and "Exception ignored" in r.stderr  # the signal's exception was lost
    if redeliver:
        assert r.returncode == 143, (r.returncode, r.stdout, r.stderr[-2000:])
        assert "finished" not in r.stdout
        assert "SIGTERM's exception was lost" in r.stderr
    else:  # the premise: without the redelivery the process does not stop
        assert r.returncode == 0 and "finished" in r.stdout


def test_nothing_to_redeliver_outside_run_guarded_or_without_a_signal():
    code = ("from flows.errors import redeliver_lost_sigterm, run_guarded; import sys\n"
            "redeliver_lost_sigterm()\n"
            "sys.exit(run_guarded(lambda: redeliver_lost_sigterm()) + 7)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 7, r.stderr[-2000:]
