"""`fairmiss run` with no config runs the default experiment in any directory: params/compas_default.yaml where
it exists (a checkout), else the copy shipped in the package (src/fairmiss/defaults/), which must be the same
file byte for byte (the same config hash, the same cells, the same metrics.json as DVC's compas_default stage)."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

from flows.cli import DEFAULT_RUN_CONFIG, default_config


def test_the_shipped_default_is_the_checkout_s_default():
    shipped = ROOT / "src" / "fairmiss" / "defaults" / "compas_default.yaml"
    assert shipped.read_bytes() == (ROOT / DEFAULT_RUN_CONFIG).read_bytes(), \
        "src/fairmiss/defaults/compas_default.yaml differs from params/compas_default.yaml: copy it over"


def test_outside_a_checkout_the_shipped_default_is_run(tmp_path, monkeypatch):
    from fairmiss.config import DEFAULT_CONFIG, load_config

    assert DEFAULT_RUN_CONFIG == str(DEFAULT_CONFIG)  # the command line's light-import copy of the library's name
    monkeypatch.chdir(ROOT)
    assert default_config() == DEFAULT_RUN_CONFIG
    here = load_config(default_config())
    monkeypatch.chdir(tmp_path)  # no params/ here
    path = default_config()
    assert Path(path).is_file() and Path(path).parent.name == "defaults", path
    assert load_config(path).config_hash == here.config_hash
