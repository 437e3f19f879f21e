"""Every ``dvc.yaml`` stage depends on the code it runs: the project files a stage's command imports (its flow
modules, its config's kinds, the learners and imputers it builds) are each under one of the stage's ``deps``.
A stage that missed one would not re-run when that file changes, and ``dvc repro`` would leave a stale result.
The imports are read in a fresh interpreter per stage, doing what the stage's command does before its flow runs:
one probe process imports the third-party libraries once (none of them imports a project file), then forks a
child per stage, which starts with no project module loaded (16 stages: ~10 s instead of ~100 s)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

_PROBE = r"""
import json, os, sys
from pathlib import Path
root = Path(sys.argv[1]).resolve()


def ours(m):
    f = getattr(m, "__file__", None)
    return bool(f) and Path(f).resolve().is_relative_to(root) and ".venv" not in Path(f).parts


import numpy, pandas, scipy, sklearn, mlflow, prefect, pydantic, yaml  # noqa: E401,F401
assert not [m for m in list(sys.modules.values()) if ours(m)], "a third-party import loaded a project file"
for line in sys.stdin:  # one stage's argv a line; each probed in a fork of this process
    pid = os.fork()
    if pid:
        if os.waitpid(pid, 0)[1]:  # the child failed (its traceback is on stderr): say so, do not hang the test
            print("null", flush=True)
        continue
    argv = json.loads(line)
    module = argv[argv.index("-m") + 1]
    if module == "flows.cli" and "bench" in argv:  # a suite: each dataset's config as flows.run runs it
        from flows.bench import bench_command, log_suite_run  # noqa: F401
        from flows.run import start_flow  # noqa: F401
        from fairmiss.bench import load_suite
        from fairmiss.bench.leaderboard import write_leaderboard  # noqa: F401
        import flows.cli, flows.experiment  # noqa: E401,F401
        from fairmiss.studies.claims import claim_sections
        claim_sections()
        from fairmiss.impute.build import make_imputer
        from fairmiss.learners.build import make_learner
        from fairmiss.datasets import get_variant
        suite = load_suite(argv[argv.index("bench") + 1], quick="--quick" in argv)
        for _, _, cfg in suite.configs:
            variant = get_variant(cfg.dataset.name)
            for spec in cfg.imputers:
                make_imputer(spec, 0)
            for spec in cfg.learners:
                make_learner(spec, 0, feature_names=list(variant.features))
    elif module == "flows.run":
        from flows.run import start_flow  # noqa: F401
        from fairmiss.config import ExperimentConfig, load_study_config
        cfg = load_study_config(argv[argv.index("--config") + 1], quick="--quick" in argv)
        study = getattr(cfg, "study", None)
        import importlib
        from fairmiss.config.studies import STUDIES
        flow = STUDIES[study].flags["flow"].split(":")[0] if study else "flows.experiment"
        importlib.import_module(flow)
        if isinstance(cfg, ExperimentConfig):
            from fairmiss.studies.claims import claim_sections
            claim_sections()  # the claim hooks every grid run asks
            from fairmiss.impute.build import make_imputer
            from fairmiss.learners.build import make_learner
            from fairmiss.datasets import get_variant
            variant = get_variant(cfg.dataset.name)
            names = list(variant.features) + ([variant.group] if cfg.dataset.group_as_feature else [])
            for spec in cfg.imputers:
                make_imputer(spec, 0)
            for spec in cfg.learners:
                if getattr(spec, "kind", None) != "mlflow_model":
                    make_learner(spec, 0, feature_names=names)
    else:
        import importlib
        importlib.import_module(module)
    files = sorted({str(Path(m.__file__).resolve().relative_to(root)) for m in list(sys.modules.values()) if ours(m)})
    print(json.dumps(files), flush=True)
    os._exit(0)
"""


def _stages():
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    out = []
    for name, st in doc["stages"].items():
        if "foreach" in st:  # every item runs the same command with another dataset
            item = st["foreach"][0]
            st = {k: (v.replace("${item}", item) if isinstance(v, str) else v) for k, v in st["do"].items()}
            name = f"{name}@{item}"
        out.append(pytest.param(st["cmd"], [d if isinstance(d, str) else next(iter(d)) for d in st["deps"]],
                                id=name))
    return out


@pytest.fixture(scope="module")
def probe():
    """The probe process; ``probe(argv)`` -> the project files a stage's command imports."""
    p = subprocess.Popen([sys.executable, "-c", _PROBE, str(ROOT)], cwd=ROOT, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)

    def ask(argv):
        p.stdin.write(json.dumps(argv) + "\n")
        p.stdin.flush()
        files = json.loads(p.stdout.readline() or "null")
        assert files is not None, f"the probe of {argv} failed (its traceback is in the captured stderr)"
        return files

    yield ask
    p.stdin.close()
    p.stdout.close()
    p.wait(60)


@pytest.mark.parametrize("cmd,deps", _stages())
def test_stage_depends_on_every_project_file_it_imports(cmd, deps, probe):
    argv = shlex.split(cmd)[1:]  # without scripts/py
    imported = probe(argv)
    assert any(f.startswith("src/fairmiss/") for f in imported), imported  # the probe saw the library
    covered = [d.rstrip("/") for d in deps]
    missing = [f for f in imported if f.endswith(".py") and not f.startswith("tests/")
               and not any(f == d or f.startswith(d + "/") for d in covered)]
    assert not missing, f"{cmd}: imports files that are not among its deps: {missing}"
