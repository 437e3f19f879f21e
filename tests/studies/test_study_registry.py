"""Studies with their own flow and the papers' claim hooks are registered once: a new study is its config class,
one registration and its flow; a new paper's claims are one hook. The loader, the run command and the report
dispatch through the registries."""

from __future__ import annotations

from typing import Literal

import pandas as pd
import pytest

from fairmiss._spec import SafeName, _Strict
from fairmiss.config import ConfigError, load_study_config
from fairmiss.config.studies import STUDIES
from fairmiss.studies.claims import CLAIM_HOOKS, claim_sections, decide_claims, register_claims


class _TinyStudy(_Strict):
    study: Literal["tiny_study"]
    experiment: SafeName
    n: int = 3


@pytest.fixture
def tiny_study():
    before = dict(STUDIES._entries)
    STUDIES.register("tiny_study", _TinyStudy, _TinyStudy.model_validate, flow="tiny_flows:tiny_flow")
    yield
    STUDIES._entries.clear()
    STUDIES._entries.update(before)


def test_built_in_studies_are_registered_with_their_flows():
    assert set(STUDIES) == {"003_decile", "001_table", "002_table1_hcp"}
    for kind in STUDIES:
        module, function = STUDIES[kind].flags["flow"].split(":")
        assert module.startswith("flows.studies.") and function.endswith("_flow")


def test_a_registered_study_loads_and_runs_through_start_flow(tiny_study, tmp_path, monkeypatch):
    (tmp_path / "tiny_flows.py").write_text(
        "def tiny_flow(config_path, quick=False, **kw):\n    return {'ran': config_path, 'quick': quick}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg_path = tmp_path / "tiny.yaml"
    cfg_path.write_text("study: tiny_study\nexperiment: tiny\nn: 5\n")
    cfg = load_study_config(cfg_path)
    assert isinstance(cfg, _TinyStudy) and cfg.n == 5
    from flows.run import start_flow

    monkeypatch.setattr("flows.server.use_local_server", lambda: None)  # no server: the flow is a plain function
    assert start_flow(cfg, cfg_path) == {"ran": str(cfg_path), "quick": False}


def test_an_unknown_study_names_the_known_ones(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("study: nope\nexperiment: x\n")
    with pytest.raises(ConfigError) as e:
        load_study_config(p)
    msg = str(e.value)
    assert str(p) in msg and "unknown study 'nope'" in msg and "003_decile" in msg and "001_table" in msg


def test_claim_hooks_decide_and_head_their_report_section():
    assert {name for name, _, _ in claim_sections()} >= {"claims_000.csv", "claims_feng2023.csv",
                                                         "claims_feng2023_verdicts.csv", "claims_feng2023_evidence.csv"}
    saved = list(CLAIM_HOOKS)
    try:
        CLAIM_HOOKS.clear()
        register_claims("claims_tiny.csv", lambda cfg, results, dataset: pd.DataFrame({"claim": ["T1"],
                                                                                      "verdict": [dataset]}),
                        title="Tiny claims", note="decided by a test")
        register_claims("claims_silent.csv", lambda cfg, results, dataset: None, title="Says nothing")
        with pytest.raises(ValueError, match="twice"):
            register_claims("claims_tiny.csv", lambda *a: None, title="again")
        with pytest.raises(ValueError, match="plain .csv"):
            register_claims("../claims.csv", lambda *a: None, title="escape")
        out = decide_claims(None, [], "compas_000")
        assert list(out) == ["claims_tiny.csv"]  # a hook returning None writes nothing
        assert out["claims_tiny.csv"].to_dict("records") == [{"claim": "T1", "verdict": "compas_000"}]
        assert claim_sections() == [("claims_tiny.csv", "Tiny claims", "decided by a test"),
                                    ("claims_silent.csv", "Says nothing", "")]
    finally:
        CLAIM_HOOKS[:] = saved
