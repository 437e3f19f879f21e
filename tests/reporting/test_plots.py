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


def test_error_bars_are_se_over_splits_or_a_one_split_bootstrap_interval(tmp_path):
    from fairmiss.reporting.plots import error_bars

    df = pd.DataFrame({"gap_mean": [0.10, 0.20, 0.30], "gap_se": [0.01, float("nan"), float("nan")],
                       "gap_ci_low": [float("nan"), 0.15, float("nan")], "gap_ci_high": [float("nan"), 0.32, float("nan")]})
    bars = error_bars(df, "gap")
    assert np.allclose(bars, [[0.01, 0.05, 0.0], [0.01, 0.12, 0.0]])  # SE; interval below/above; nothing
    assert error_bars(df.drop(columns=["gap_ci_low", "gap_ci_high"]), "gap") is not None  # the SE column as it is
    # an interval that does not contain the point (a percentile interval can): no negative bar (matplotlib refuses)
    off = pd.DataFrame({"gap_mean": [0.10], "gap_se": [float("nan")], "gap_ci_low": [0.12], "gap_ci_high": [0.2]})
    assert np.allclose(error_bars(off, "gap"), [[0.0], [0.1]])
    plots.plot_tradeoff(off.assign(method="m", accuracy_mean=0.7, accuracy_se=0.01), tmp_path / "t.png")


def test_compare_front_carries_the_interval_of_a_one_split_method():
    from fairmiss.reporting.compare import front_from_cells

    cells = [{"missingness": "m", "method": "a", "accuracy": 0.7, "fnr_difference": 0.1, "accuracy_ci_low": 0.66,
              "accuracy_ci_high": 0.74, "fnr_difference_ci_low": 0.05, "fnr_difference_ci_high": 0.2},
             {"missingness": "m", "method": "b", "accuracy": 0.6, "fnr_difference": 0.3},
             {"missingness": "m", "method": "b", "accuracy": 0.62, "fnr_difference": 0.2}]
    front = front_from_cells(cells, "fnr_difference").set_index("method")
    assert front.loc["a", "gap_ci_low"] == 0.05 and front.loc["a", "accuracy_ci_high"] == 0.74
    assert np.isnan(front.loc["b", "gap_ci_low"]) and front.loc["b", "n_splits"] == 2
