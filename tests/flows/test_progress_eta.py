"""The run's ETA (flows.experiment.CellProgress): start-up is not cell time, cells that finish together do not
make it jump, reused cells cost nothing. The clock is the class's own parameter, stepped by the test."""

from __future__ import annotations

import re

import pytest

from flows.experiment import CellProgress, _rounded


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _seconds(suffix: str) -> float | None:
    m = re.fullmatch(r" \(ETA (~)?(\d+):(\d\d):(\d\d)\)", suffix)
    if not suffix:
        return None
    assert m, suffix
    return int(m[2]) * 3600 + int(m[3]) * 60 + int(m[4])


def test_start_up_is_not_counted_as_cell_time():
    """30 s of start-up, then one cell every 2 s: from the third cell on the ETA is the true time left (to the
    5 s it is shown at); before, it is marked as a first guess. The old rule (time since the start over the
    cells done) said 4:35 after the third cell where 0:34 were left."""
    clock = Clock()
    p = CellProgress(20, 20, "t", clock=clock)
    clock.t = 32.0
    first = p.step(computed=True)
    assert first.startswith(" (ETA ~") and _seconds(first) == _rounded(19 * 32)
    clock.t = 34.0
    assert p.step(computed=True).startswith(" (ETA ~")
    for k in range(3, 20):
        clock.t = 32.0 + 2 * (k - 1)
        eta = _seconds(p.step(computed=True))
        true_left = 2 * (20 - k)
        assert eta == _rounded(true_left), (k, eta, true_left)
    clock.t += 2
    assert p.step(computed=True) == ""  # nothing left


def test_cells_that_finish_together_move_it_little():
    """Tasks of 4 cells finishing every 8 s after 20 s of start-up: once measured, the shown ETA never rises
    from one line to the next (the old rule went 0:40, 0:30, 0:25, 0:20, 0:30, …) and is the true time left."""
    clock = Clock()
    p = CellProgress(24, 24, "t", clock=clock)
    shown = []
    for task in range(6):
        clock.t = 20.0 + 8 * task
        for _ in range(4):
            clock.t += 0.01
            suffix = p.step(computed=True)
            if suffix:
                shown.append((clock.t, _seconds(suffix), "~" in suffix))
    assert all(b for t, s, b in shown[:8])  # the first two tasks: first guesses only
    assert not any(b for t, s, b in shown[8:])
    later = [s for t, s, b in shown[8:]]
    assert all(b <= a for a, b in zip(later, later[1:])), later
    assert later[0] == _rounded(2 * 15) and later[-1] == 5  # 2 s a cell: 15 cells left, then 1


def test_reused_cells_cost_nothing():
    clock = Clock()
    p = CellProgress(10, 4, "t", clock=clock)
    for _ in range(6):
        assert p.step(computed=False) == ""
    for t in (10.0, 20.0):
        clock.t = t
        p.step(computed=True)
    clock.t = 30.0
    assert _seconds(p.step(computed=True)) == 10  # 10 s a cell, 1 computed cell left


@pytest.mark.parametrize("sec,shown", [(0.4, 5), (2, 5), (12, 10), (12.5, 15), (13, 15), (17.5, 20), (61, 60),
                                       (604, 600), (629, 600), (630, 660), (631, 660), (690, 720), (3599, 3600)])
def test_rounding(sec, shown):
    assert _rounded(sec) == shown


def test_a_steady_stream_of_fast_cells_is_measured():
    """Cells every 0.2 s (less than a burst's gap) after 10 s of start-up: bursts end after 2 s, so from the
    third burst on the ETA is the true time left, not the start-up-laden first guess."""
    clock = Clock()
    p = CellProgress(200, 200, "t", clock=clock)
    shown = []
    for k in range(1, 200):
        clock.t = 10.0 + 0.2 * k
        shown.append((k, p.step(computed=True)))
    late = [(k, s) for k, s in shown if k >= 40]
    assert all("~" not in s for k, s in late), late[:3]
    for k, s in late:
        assert _seconds(s) == _rounded(0.2 * (200 - k)), (k, s)


def test_reused_cells_between_computed_ones_are_not_counted():
    clock = Clock()
    p = CellProgress(8, 4, "t", clock=clock)
    for t in (10.0, 20.0, 30.0):
        clock.t = t
        p.step(computed=True)
        assert p.step(computed=False) == ""
    assert p.seconds_left() == (10.0, False)  # 10 s a cell, one computed cell left


def test_without_a_terminal_a_line_every_5_percent_or_60_s():
    """2,000 cells at 0.1 s: a line at every further 5 % (20) plus the first; at 20 s a cell, one every 60 s
    (3 cells) between the 5 % steps; a failed cell always, and the failures counted."""
    t = [0.0]
    p = CellProgress(2000, 2000, "t", clock=lambda: t[0])
    shown = []
    for n in range(1, 2001):
        t[0] += 0.1
        if p.milestone(n, 2000):
            shown.append(n)
    assert shown == [1] + [100 * k for k in range(1, 21)]
    t = [0.0]
    p = CellProgress(100, 100, "t", clock=lambda: t[0])
    shown = []
    for n in range(1, 101):
        t[0] += 20.0
        if p.milestone(n, 100, failed=n == 7):
            shown.append(n)
    assert shown[:5] == [1, 4, 5, 7, 10] and shown[-1] == 100 and p.failed == 1
    assert all(b - a <= 3 for a, b in zip(shown, shown[1:]))  # never more than 60 s without a line
    small = CellProgress(12, 12, "t", clock=lambda: 0.0)
    assert all(small.milestone(n, 12) for n in range(1, 13))  # up to 20 cells: every cell's line


def test_console_filter_keeps_only_the_shown_cell_lines(monkeypatch):
    """A cell's line marked not shown stays off the console (it still reaches Prefect's log handler); a shown one
    is printed unless a progress bar draws it; ``-v`` prints every line; other records are untouched."""
    import logging

    from flows import errors

    def rec(**extra):
        r = logging.LogRecord("prefect.flow_runs", logging.INFO, __file__, 1, "[3/40] a cell", None, None)
        r.__dict__.update(extra)
        return r

    f = errors._QuietFlowErrors()
    monkeypatch.setattr(errors, "VERBOSE", False)
    monkeypatch.setattr(errors, "PROGRESS_BAR", False)
    assert f.filter(rec(fairmiss_progress=True)) and not f.filter(rec(fairmiss_progress=False))
    assert f.filter(rec())
    monkeypatch.setattr(errors, "PROGRESS_BAR", True)
    assert not f.filter(rec(fairmiss_progress=True))
    monkeypatch.setattr(errors, "VERBOSE", True)
    assert f.filter(rec(fairmiss_progress=False))
