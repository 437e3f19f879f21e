"""Plugins: a separate installed package adds kinds through entry points in the groups
``fairmiss.datasets``, ``fairmiss.learners``, ``fairmiss.imputers``, ``fairmiss.metrics`` and
``fairmiss.missingness``. The example package ``examples/fairmiss_plugin_example`` is "installed" without
network: its source plus a ``*.dist-info`` (METADATA, entry_points.txt) in a directory on ``PYTHONPATH``,
which is how :mod:`importlib.metadata` finds installed distributions. Each check runs in a fresh
subprocess so this process's registries stay as built in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "fairmiss_plugin_example"


def _entry_points_txt(pyproject: Path) -> str:
    import tomllib

    eps = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    return "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items()) + "\n"
                   for group, items in eps.items())


def _install(site: Path, name: str, version: str, entry_points: str, package_src: Path | None = None,
             modules: dict[str, str] | None = None) -> None:
    """What ``pip install`` leaves in site-packages: the package and ``<name>-<version>.dist-info``."""
    site.mkdir(parents=True, exist_ok=True)
    if package_src is not None:
        shutil.copytree(package_src, site / package_src.name)
    for mod, text in (modules or {}).items():
        (site / mod).write_text(text)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)


def _run(site: Path, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), str(ROOT / "src")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=site, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    _install(site, "fairmiss_plugin_example", "0.1", _entry_points_txt(EXAMPLE / "pyproject.toml"),
             package_src=EXAMPLE / "fairmiss_plugin_example")
    return site


def test_entry_points_found(site):
    r = _run(site, """
        from importlib.metadata import entry_points
        print(sorted((ep.group, ep.name, ep.value) for g in ("fairmiss.learners", "fairmiss.metrics")
                     for ep in entry_points(group=g)))
    """)
    assert r.returncode == 0, r.stderr
    assert "('fairmiss.learners', 'plugin_ridge', 'fairmiss_plugin_example.learners')" in r.stdout
    assert "('fairmiss.metrics', 'npv', 'fairmiss_plugin_example.metrics')" in r.stdout


def test_plugin_kinds_registered_validate_and_run(site):
    r = _run(site, """
        import numpy as np
        from fairmiss.config import ExperimentConfig
        from fairmiss.learners.adapter import LEARNER_KINDS
        from fairmiss.learners.build import make_learner
        from fairmiss.learners.specs import KIND_MODULES
        from fairmiss.metrics import evaluate
        from fairmiss.metrics.kinds import COUNT_METRICS
        import fairmiss.metrics

        assert "plugin_ridge" in LEARNER_KINDS, LEARNER_KINDS.kinds()
        assert KIND_MODULES[-1] == "fairmiss_plugin_example.learners", KIND_MODULES
        assert "npv" in COUNT_METRICS
        assert fairmiss.metrics.KIND_MODULES[-1] == "fairmiss_plugin_example.metrics"
        cfg = ExperimentConfig.model_validate({
            "experiment": "plugin_demo", "dataset": {"name": "compas_000"},
            "imputers": [{"kind": "mean"}],
            "learners": [{"kind": "plugin_ridge", "name": "ridge", "alpha": 2.0}, {"kind": "decision_tree"}],
            "metrics": ["accuracy", "npv"],
        })
        spec = cfg.learners[0]
        assert type(spec).__name__ == "PluginRidgeSpec" and spec.alpha == 2.0 and spec.label == "ridge"
        try:
            ExperimentConfig.model_validate({"experiment": "x", "dataset": {"name": "compas_000"},
                                             "imputers": [{"kind": "mean"}],
                                             "learners": [{"kind": "plugin_ridge", "alpha": -1}]})
        except Exception as e:
            assert "alpha" in str(e)
        else:
            raise AssertionError("alpha -1 accepted")
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 3)); s = np.repeat([0, 1], 100)
        y = (X[:, 0] + 0.3 * s + rng.normal(scale=0.5, size=200) > 0).astype(int)
        learner = make_learner(spec, seed=0).fit(X, y, s)
        pred = learner.predict(X, s)
        assert set(np.unique(pred)) <= {0, 1} and (pred == y).mean() > 0.7
        m = evaluate(y, pred, s, metrics=["accuracy", "npv"])
        tn = ((pred == 0) & (y == 0)).sum(); fn = ((pred == 0) & (y == 1)).sum()
        assert abs(m["npv"] - tn / (tn + fn)) < 1e-12, m
        assert "npv_difference" in m and "npv_group_1" in m, sorted(m)
        print("OK", cfg.config_hash)
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("OK")


def test_builtin_config_hash_unchanged_with_plugin(site):
    """A built-in config has the same hash whether or not a plugin is installed."""
    code = """
        from fairmiss.config import ExperimentConfig
        print(ExperimentConfig.model_validate({"experiment": "x", "dataset": {"name": "compas_000"},
              "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree"}]}).config_hash)
    """
    with_plugin = _run(site, code)
    without = _run(site.parent, code)
    assert with_plugin.returncode == 0 and without.returncode == 0, with_plugin.stderr + without.stderr
    assert with_plugin.stdout == without.stdout


def test_broken_plugin_is_a_clear_error(tmp_path):
    site = tmp_path / "site"
    _install(site, "broken_plugin", "0.3", "[fairmiss.learners]\nbroken = broken_plugin_mod\n",
             modules={"broken_plugin_mod.py": "import no_such_module_xyz\n"})
    r = _run(site, "import fairmiss.config")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "PluginError" in last
    for part in ("'broken'", "'fairmiss.learners'", "'broken_plugin'", "broken_plugin_mod",
                 "ModuleNotFoundError", "no_such_module_xyz"):
        assert part in last, (part, last)


@pytest.mark.parametrize("module_text,why", [
    ("import no_such_module_xyz\n", "ModuleNotFoundError"),
    # a plugin that registers a kind under a built-in kind's name
    ("from typing import Literal\nfrom fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase\n"
     "class Spec(_LearnerBase):\n    kind: Literal['decision_tree'] = 'decision_tree'\n"
     "LEARNER_KINDS.register('decision_tree', Spec, lambda spec, seed, threads: None)\n", "decision_tree"),
])
def test_broken_plugin_is_one_line_from_the_command_line(tmp_path, module_text, why):
    site = tmp_path / "site"
    _install(site, "broken_plugin", "0.3", "[fairmiss.learners]\nbroken = broken_plugin_mod\n",
             modules={"broken_plugin_mod.py": module_text})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), str(ROOT / "src")])}
    r = subprocess.run([sys.executable, "-m", "flows.cli", "validate", str(ROOT / "params" / "compas_default.yaml")],
                       env=env, cwd=site, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fairmiss: error: fairmiss plugin 'broken'"), r.stderr[-2000:]
    assert "'broken_plugin'" in lines[0] and why in lines[0], lines[0]


def test_receipt_key_sees_installed_plugins_without_deprecation_warnings(site):
    """The up-to-date receipt's key lists every installed ``fairmiss.*`` entry point (flows.fastcheck._plugins),
    read per distribution: the example plugin's entry points with its distribution's name and version, each
    once, and no DeprecationWarning (the all-groups ``entry_points()`` is a deprecated dict on Python 3.11)."""
    import tomllib

    r = _run(site, """
        import json, warnings
        warnings.simplefilter("error")
        from flows.fastcheck import _plugins
        print(json.dumps(_plugins()))
    """)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    mine = [row for row in rows if row[3] == "fairmiss_plugin_example"]
    assert mine and all(row[4] == "0.1" and row[0].startswith("fairmiss") for row in mine), rows
    expected = {(g, k, v) for g, items in tomllib.loads((EXAMPLE / "pyproject.toml").read_text())
                ["project"]["entry-points"].items() for k, v in items.items()}
    assert {tuple(row[:3]) for row in mine} == expected
    assert len(rows) == len({tuple(r) for r in rows})
