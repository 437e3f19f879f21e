"""`fairmiss bench` end to end, in a subprocess in a scratch project: the shipped suite's quick version (COMPAS and
German credit x 2 scenarios x 2 imputers x logistic regression x 3 splits = 24 cells) through the same engine as
`fairmiss run`: cells computed by `fairmiss run` are reused by the suite and the reverse, a second invocation
computes nothing, and the three leaderboard files agree."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from badinput import make_project, mirror_dir  # noqa: E402

SUITE = "params/suites/fairmiss_quick.yaml"
OUT = Path("results/bench/fairmiss_quick-quick")


def _cli(proj: Path, *args: str, status: int = 0) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FAIRMISS_RAW_DIR")}
    env.update(FAIRMISS_DATA_MIRROR=str(mirror_dir()), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=proj, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == status, f"fairmiss {' '.join(args)}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


def _cell_runs(proj: Path) -> int:
    con = sqlite3.connect(proj / "mlruns" / "mlflow.db")
    try:
        return con.execute("SELECT count(*) FROM tags WHERE key = 'cell.cache_key'").fetchone()[0]
    finally:
        con.close()


def _interrupted(proj: Path, *args: str) -> str:
    """Run the command and send it SIGINT (Ctrl-C) once the second dataset's first cells are reported; its
    console text. Exit 130 (stopped) or 0 (it finished before the signal arrived)."""
    import signal

    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FAIRMISS_RAW_DIR")}
    env.update(FAIRMISS_DATA_MIRROR=str(mirror_dir()), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", *args], cwd=proj, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines, second = [], False
    try:
        for line in proc.stderr:
            lines.append(line)
            second = second or "dataset german_sex" in line
            if second and "[1/12]" in line:
                proc.send_signal(signal.SIGINT)
                break
        lines += proc.stderr.read().splitlines(keepends=True)
        assert proc.wait(timeout=300) in (0, 130), "".join(lines)[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    return "".join(lines)


class _Tables(HTMLParser):
    """The HTML leaderboard's per-block tables: (dataset, scenario, metric) -> rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self.cur, self.row, self.cell = {}, None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "block":
            self.cur = self.tables.setdefault((a["data-dataset"], a["data-scenario"], a["data-metric"]), [])
        elif tag == "tr" and self.cur is not None:
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = ""

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row:
            self.cur.append(self.row)
            self.row = None
        elif tag == "table":
            self.cur = None


@pytest.mark.slow
def test_quick_suite_end_to_end(tmp_path):
    proj = make_project(tmp_path)
    # a config of one's own, written by hand: one of the suite's scenarios and candidates on COMPAS, stored in the
    # suite's MLflow experiment for COMPAS
    mine = {"experiment": "my_compas", "seed": 2026, "dataset": {"name": "compas_000"},
            "split": {"n_splits": 3, "test_size": 0.3},
            "missingness": [{"kind": "mcar", "name": "mcar20", "rates": {"priors_count": 0.2, "c_charge_degree": 0.2}}],
            "imputers": [{"kind": "median"}], "learners": [{"kind": "logistic_regression", "name": "lr"}],
            "fairness_metric": "equalized_odds_difference",
            "tracking": {"experiment_name": "bench-compas_000", "log_models": False}}
    (proj / "params" / "mine.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))
    _cli(proj, "run", "params/mine.yaml")
    assert _cell_runs(proj) == 3

    nothing = _cli(proj, "compare", SUITE, "--quick", status=2)  # no leaderboard yet: one line, exit 2
    assert nothing.stderr.strip().count("\n") == 0 and "no leaderboard of suite fairmiss_quick-quick" in nothing.stderr

    plan = _cli(proj, "bench", SUITE, "--quick", "--plan")
    assert "2 datasets × 2 scenarios × 2 candidates × 3 splits = 24 cells" in plan.stdout
    assert "compas_000  2 × 2 × 3 = 12 cells, 12 fits" in plan.stdout
    assert re.search(r"german_sex: ≈ \d+ s for 12 cells on \d worker", plan.stdout), plan.stdout  # calibrated
    assert not (proj / "results" / "bench").exists() and _cell_runs(proj) == 3  # nothing computed

    # the suite, stopped with Ctrl-C while its second dataset computes, then run again: it resumes
    stopped = _interrupted(proj, "bench", SUITE, "--quick")
    assert "cache: 3 of 12 cells already FINISHED" in stopped, stopped[-4000:]  # `fairmiss run`'s cells reused
    first = _cli(proj, "bench", SUITE, "--quick")
    assert "compas_000: up to date (12 cells" in first.stdout, first.stdout
    if "fairmiss: interrupted (Ctrl-C)" in stopped:  # (else it had finished when the signal came)
        # the German cells that finished before the stop (at least the one reported) are reused
        assert re.search(r"cache: ([1-9]|1[0-2]) of 12 cells already FINISHED", first.stderr), first.stderr[-3000:]
    assert _cell_runs(proj) == 3 + 21  # no cell computed twice: those finished before the stop were reused

    out = proj / OUT
    csv = pd.read_csv(out / "leaderboard.csv", keep_default_na=False)
    doc = json.loads((out / "leaderboard.json").read_text())
    assert doc["command"] == f"fairmiss bench {SUITE} --quick" and re.fullmatch(r"\d{4}-\d\d-\d\d", doc["date"])
    assert doc["n_cells"] == 24 and doc["n_failed"] == 0 and doc["reference"] == "median+lr"
    assert len(csv) == len(doc["rows"]) == 2 * 2 * 2 * 2 + 2 * 2  # datasets x scenarios x metrics x candidates + overall
    for (_, c), j in zip(csv.iterrows(), doc["rows"]):
        assert [c["dataset"], c["scenario"], c["metric"], c["candidate"]] == \
            [j["dataset"], j["scenario"], j["metric"], j["candidate"]]
        for k in ("mean", "ci_low", "ci_high", "diff_vs_reference", "rank", "rank_low", "rank_high"):
            assert (c[k] == "" and j[k] is None) or float(c[k]) == pytest.approx(j[k], abs=1e-12), k
        assert str(c["tied_with_best"]) == ("" if j["tied_with_best"] is None else str(j["tied_with_best"]))
        if j["dataset"] != "overall":
            assert j["n_splits"] == 3
    # the HTML's tables say what the JSON says: each block's candidates, means and ties
    parser = _Tables()
    parser.feed((out / "leaderboard.html").read_text())
    blocks = {(r["dataset"], r["scenario"], r["metric"]) for r in doc["rows"] if r["dataset"] != "overall"}
    assert set(parser.tables) == blocks
    for key, rows in parser.tables.items():
        for cells in rows:
            tied = cells[0].startswith("≈ ")
            name = cells[0].removeprefix("≈ ")
            j = next(r for r in doc["rows"] if (r["dataset"], r["scenario"], r["metric"], r["candidate"]) == (*key, name))
            assert tied == j["tied_with_best"] and cells[2] == f"{j['mean']:.3f}"
    for t in doc["ties"]:
        assert t["best"] in t["tied_with_best"]
    # the fronts drawn are those of the JSON, one per dataset x scenario
    page = (out / "leaderboard.html").read_text()
    assert page.count("<svg class='front'") == len(doc["fronts"]) == 4
    assert page.count("<svg class='ranks'") == 2

    # the leaderboard is an MLflow run beside the cells: its files, the overall ranks, the datasets' runs
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{proj / 'mlruns' / 'mlflow.db'}")

    def suite_runs():
        exp = client.get_experiment_by_name("bench-suites")
        return client.search_runs([exp.experiment_id]) if exp else []

    (run,) = suite_runs()
    assert run.info.status == "FINISHED" and run.data.tags["bench.suite"] == "fairmiss_quick-quick"
    assert sorted(a.path for a in client.list_artifacts(run.info.run_id)) == \
        ["leaderboard.csv", "leaderboard.html", "leaderboard.json"]
    ov = {(r["metric"], r["candidate"]): r["rank"] for r in doc["rows"] if r["dataset"] == "overall"}
    assert {k: v for k, v in run.data.metrics.items() if k.startswith("rank/")} == pytest.approx(
        {f"rank/{m}/{c.replace('+', ' ')}": v for (m, c), v in ov.items()})
    assert {run.data.tags[f"bench.run.{d}"] for d in ("compas_000", "german_sex")} == \
        {r["parent_run_id"] for r in doc["runs"].values()}

    # `fairmiss compare` on the suite: each dataset's front from the leaderboard's runs, the leaderboard's means
    cmp = _cli(proj, "compare", SUITE, "--quick").stdout
    assert f"leaderboard run {run.info.run_id}" in cmp and "dataset compas_000" in cmp and "dataset german_sex" in cmp
    for r in doc["rows"]:
        if r["dataset"] == "compas_000" and r["metric"] == "accuracy" and r["scenario"] == "mcar20":
            assert re.search(rf"{re.escape(r['candidate'])}\s+{r['mean']:.4f} ± ", cmp), (r, cmp)

    # the quick suite again: every cell reused, nothing computed, the same leaderboard (and no second run of it)
    second = _cli(proj, "bench", SUITE, "--quick")
    assert second.stdout.count(": up to date (12 cells") == 2
    assert _cell_runs(proj) == 24
    assert pd.read_csv(out / "leaderboard.csv", keep_default_na=False).equals(csv)
    assert [r.info.run_id for r in suite_runs()] == [run.info.run_id] and "(unchanged" in second.stdout

    # and the reverse: `fairmiss run` on the config the suite ran reuses every one of its cells
    again = _cli(proj, "run", str(OUT / "configs" / "fairmiss_quick-quick-german_sex.yaml"), "--results-dir", "elsewhere")
    assert "cache: 12 of 12 cells already FINISHED" in again.stdout + again.stderr
    assert _cell_runs(proj) == 24
