"""A new missingness kind is one module: its spec, draw, gate and masked columns, registered with
``MISSINGNESS_KINDS.register`` exactly like the built-in kinds. The module below (``every_kth``: every k-th
row of one column goes missing) is loaded here in this process (the registry is restored afterwards) and,
in a fresh subprocess, as a plugin (entry point group ``fairmiss.missingness``), where it is a top-level
``missingness`` entry of a config and runs through ``make_split`` on COMPAS."""

from __future__ import annotations

import functools
import importlib.util
import operator
import os
import subprocess
import sys
import textwrap
from typing import Annotated

import numpy as np
import pandas as pd
import pytest
from pydantic import Field, TypeAdapter, ValidationError

from conftest import ROOT
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mechanisms import MissingnessError, check_mask, inject, masked_columns

KIND_MODULE = '''
"""Every k-th row of one column missing (``kind: every_kth``), from row ``offset`` on: a deterministic
kind (no random draw) whose gate checks that exactly those rows are missing."""
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness.kinds import MISSINGNESS_KINDS


class EveryKth(_Strict):
    kind: Literal["every_kth"] = "every_kth"
    name: SafeLabel
    column: str
    k: int = Field(ge=2)
    offset: int = Field(default=0, ge=0)


def _rows(n, kw):
    return (np.arange(n) % kw["k"] == kw["offset"] % kw["k"]) & (np.arange(n) >= kw["offset"])


def build(X, kw, *, group, rng):
    mask = pd.DataFrame(False, index=X.index, columns=X.columns)
    mask[kw["column"]] = _rows(len(X), kw)
    masked = X.copy()
    masked[kw["column"]] = masked[kw["column"]].astype(float).mask(mask[kw["column"]].to_numpy())
    return masked, mask


def check(mask, kw, group):
    want = _rows(len(mask), kw)
    got = mask[kw["column"]].to_numpy()
    if (got != want).any():
        return [f"every_kth: column '{kw['column']}': {int((got != want).sum())} rows differ from every "
                f"{kw['k']}-th row"]
    return []


def columns(kw):
    return [kw["column"]]


MISSINGNESS_KINDS.register("every_kth", EveryKth, build, check=check, columns=columns)
'''


@pytest.fixture(autouse=True)
def _registry_restored():
    """The kind registered here is forgotten afterwards: later tests see the registry as a fresh process."""
    before = dict(MISSINGNESS_KINDS._entries)
    yield
    MISSINGNESS_KINDS._entries.clear()
    MISSINGNESS_KINDS._entries.update(before)
    sys.modules.pop("every_kth_kind", None)


@pytest.fixture
def every_kth(tmp_path):
    path = tmp_path / "every_kth_kind.py"
    path.write_text(KIND_MODULE)
    spec = importlib.util.spec_from_file_location("every_kth_kind", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["every_kth_kind"] = module
    spec.loader.exec_module(module)  # registers the kind
    return module


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30), "g": np.repeat([0, 1], 15)})
    return X, X["g"].to_numpy()


def _union():
    """The missingness union rebuilt from the registry, as :mod:`fairmiss.missingness.specs` builds it."""
    from fairmiss.missingness.specs import MISSINGNESS_SPEC_ORDER

    order = list(MISSINGNESS_SPEC_ORDER)
    return TypeAdapter(Annotated[functools.reduce(operator.or_, MISSINGNESS_KINDS.specs(order)),
                                 Field(discriminator="kind")])


def test_new_kind_parses_injects_and_passes_its_gate(every_kth, frame):
    X, g = frame
    assert "every_kth" in MISSINGNESS_KINDS and MISSINGNESS_KINDS["every_kth"].spec is every_kth.EveryKth
    spec = _union().validate_python({"kind": "every_kth", "name": "k3", "column": "b", "k": 3, "offset": 1})
    assert type(spec) is every_kth.EveryKth
    with pytest.raises(ValidationError, match="greater than or equal to 2"):
        _union().validate_python({"kind": "every_kth", "name": "k1", "column": "b", "k": 1})

    assert masked_columns(spec) == ["b"]
    masked, mask = inject(X, spec, group=g, rng=np.random.default_rng(0), protected=("g",))
    assert mask["b"].to_numpy().nonzero()[0].tolist() == list(range(1, 30, 3))
    assert not mask.drop(columns="b").any().any() and masked["b"].isna().sum() == 10
    assert check_mask(mask, spec, g, original=X, masked=masked) == []

    # the kind's own gate, then the gate every kind gets (unlisted columns untouched)
    bad = mask.copy()
    bad.loc[0, "b"] = True
    bad.loc[0, "a"] = True
    problems = check_mask(bad, spec, g, original=X, masked=masked)
    assert problems[0] == "every_kth: column 'b': 1 rows differ from every 3-th row"
    assert "unlisted columns were masked: ['a']" in problems

    with pytest.raises(MissingnessError, match="protected column"):
        inject(X, {"kind": "every_kth", "column": "g", "k": 2}, group=g, rng=np.random.default_rng(0),
               protected=("g",))


def test_new_kind_in_a_config_through_shift(every_kth):
    """The config's union is built at import; a kind registered later is already valid as a ``shift``
    side, and the config check names its columns through the registry (``masked_columns``)."""
    from fairmiss.config import ConfigError
    from fairmiss.config.loading import parse_config

    base = {"experiment": "x", "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
            "learners": [{"kind": "decision_tree"}]}
    side = {"kind": "every_kth", "column": "priors_count", "k": 4}
    cfg = parse_config({**base, "missingness": [{"kind": "shift", "name": "sh", "train": side,
                                                 "test": {"kind": "none"}}]})
    assert masked_columns(cfg.missingness[0]) == ["priors_count"]
    with pytest.raises(ConfigError, match="the dataset's group"):
        parse_config({**base, "missingness": [{"kind": "shift", "name": "sh", "train": {**side, "column": "race"},
                                               "test": {"kind": "none"}}]})


def test_registry_restored_after_the_kind_tests():
    assert "every_kth" not in MISSINGNESS_KINDS
    from fairmiss.missingness.specs import MISSINGNESS_SPEC_ORDER

    assert MISSINGNESS_KINDS.specs(list(MISSINGNESS_SPEC_ORDER)) == MISSINGNESS_SPEC_ORDER


def test_new_kind_as_a_plugin_runs_through_config_and_make_split(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "every_kth_kind.py").write_text(KIND_MODULE)
    info = site / "every_kth_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: every_kth_plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[fairmiss.missingness]\nevery_kth = every_kth_kind\n")
    code = """
        import numpy as np
        from fairmiss.config.kinds import describe_kinds
        from fairmiss.config.loading import parse_config
        from fairmiss.datasets import get_variant
        from fairmiss.datasets.prepare import Processed
        from fairmiss.missingness.specs import KIND_MODULES
        from fairmiss.pipeline import make_split

        assert KIND_MODULES[-1] == "every_kth_kind", KIND_MODULES
        assert "| `every_kth` |" in describe_kinds() and "`every_kth_kind`" in describe_kinds()
        cfg = parse_config({"experiment": "x", "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
                            "learners": [{"kind": "decision_tree"}],
                            "missingness": [{"kind": "every_kth", "name": "k5", "column": "priors_count", "k": 5}]})
        spec = cfg.missingness[0]
        assert type(spec).__name__ == "EveryKth", type(spec)
        v = get_variant("compas_000")
        df, info = v.build(None)
        data = Processed("compas_000", df, list(v.features), v.group, v.label, info, "h")
        sd = make_split(cfg, data, 0, spec)
        miss = sd.X["priors_count"].isna().to_numpy()
        assert miss.nonzero()[0].tolist() == list(range(0, len(df), 5)), miss.sum()
        assert sd.X.drop(columns="priors_count").notna().all().all()
        print("OK", int(miss.sum()))
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), str(ROOT / "src")])}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=site, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("OK")
