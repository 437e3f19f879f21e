"""The suite-wide progress line of `fairmiss bench`: dataset i of n, the suite's cells done, the time left."""

from __future__ import annotations

from flows.bench import SuiteProgress


def test_suite_progress_counts_cells_and_extrapolates_the_time_left():
    now = [100.0]
    p = SuiteProgress([40, 40, 20], clock=lambda: now[0])
    assert p.before(0) == "suite: dataset 1 of 3, 0 of 100 cells done"
    now[0] += 80  # 40 cells in 80 s: 2 s a cell, 60 cells left
    assert p.after(0) == "suite: 40 of 100 cells done in 0:01:20, ~0:02:00 left"
    assert p.before(1) == "suite: dataset 2 of 3, 40 of 100 cells done"
    now[0] += 40  # 80 cells in 120 s: 1.5 s a cell, 20 left
    assert p.after(1) == "suite: 80 of 100 cells done in 0:02:00, ~0:00:30 left"
    now[0] += 3700
    assert p.after(2) == "suite: 100 of 100 cells done in 1:03:40"  # nothing left: no estimate
