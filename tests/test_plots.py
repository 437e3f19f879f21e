"""PNG helpers: files are complete PNGs, written atomically, with clear errors on bad input."""

import numpy as np
import pandas as pd
import pytest

from fairmiss.reporting import plots
from fairmiss.reporting.pareto import aggregate_splits

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(p):
    return p.read_bytes()[:8] == PNG and p.stat().st_size > 1000


@pytest.fixture
def agg():
    rng = np.random.default_rng(0)
    rows = [{"method": m, "param": t, "split": s, "gap": rng.random() * 0.2, "accuracy": 0.6 + rng.random() * 0.1}
            for m in ("zafar", "agarwal") for t in (0.1, 1, 10) for s in range(3)]
    return aggregate_splits(pd.DataFrame(rows))


def test_tradeoff_plot(tmp_path, agg):
    for mode in ("nondominated", "envelope"):
        out = plots.plot_tradeoff(agg, tmp_path / "fig" / f"tradeoff_{mode}.png", mode=mode,
                                  gap_label="FNR difference", title="COMPAS")
        assert _is_png(out)
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == ["tradeoff_envelope.png",
                                                                     "tradeoff_nondominated.png"]
    with pytest.raises(KeyError, match="gap_mean"):
        plots.plot_tradeoff(agg.drop(columns="gap_mean"), tmp_path / "x.png")


def test_ecdf_and_distributions(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.integers(0, 2, 300)
    preds = {"OR": rng.random(300), "OG": rng.random(300)}
    e = plots.plot_ecdf_by_group(preds, tmp_path / "ecdf.png", sensitive_features=s, group_names={0: "W", 1: "NW"})
    d = plots.plot_prediction_distributions(preds["OR"], tmp_path / "dist.png", sensitive_features=s)
    assert _is_png(e) and _is_png(d)
    with pytest.raises(ValueError, match="entries"):
        plots.plot_ecdf_by_group(preds, tmp_path / "bad.png", sensitive_features=s[:-1])
    assert not (tmp_path / "bad.png").exists()


def test_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "keep.png"
    target.write_bytes(b"old")

    class Boom(RuntimeError):
        pass

    def fail(self, *a, **k):
        raise Boom("disk full")

    from matplotlib.figure import Figure
    monkeypatch.setattr(Figure, "savefig", fail)
    with pytest.raises(Boom):
        plots.plot_prediction_distributions(np.arange(10.0), target, sensitive_features=[0, 1] * 5)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.png"]
