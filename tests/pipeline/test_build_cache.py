"""fairmiss.datasets.prepare.build_cached: a built table is kept and reused, exactly, and never trusted blindly.

Real raw files (COMPAS from the local mirror into a temporary raw directory), real builds."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from fairmiss.datasets import get_variant
from fairmiss.datasets.acquire import ChecksumError
from fairmiss.datasets.prepare import BUILD_CACHE_DIR, build_cached, build_key, frame_hash



@pytest.fixture()
def dirs(tmp_path):
    raw, processed = tmp_path / "raw", tmp_path / "processed"
    raw.mkdir()
    return raw, processed


def _kept(processed):
    return sorted((processed / BUILD_CACHE_DIR).glob("*.parquet"))


def test_reused_table_is_the_built_table(dirs, caplog):
    raw, processed = dirs
    v = get_variant("compas_000")
    df1, info1 = build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    assert len(_kept(processed)) == 1
    caplog.set_level(logging.INFO, logger="fairmiss.datasets.prepare")
    df2, info2 = build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    assert "built table reused" in caplog.text
    pd.testing.assert_frame_equal(df1, df2, check_exact=True)
    assert list(df1.dtypes) == list(df2.dtypes) and frame_hash(df1) == frame_hash(df2)
    assert info1 == info2 and json.dumps(info1, sort_keys=True, default=str) == json.dumps(info2, sort_keys=True,
                                                                                           default=str)
    # and equal to a build that never saw a cache
    df3, _ = v.build(raw)
    assert frame_hash(df3) == frame_hash(df1)


def test_key_follows_options_and_raw_checksums():
    v = get_variant("compas_000")
    k = build_key(v, {})
    assert k == build_key(v, {})
    opt = next(iter(v.options))
    other = {opt: "changed-value-for-the-key"}
    assert build_key(v, other) != k


def test_a_damaged_kept_file_is_rebuilt(dirs, caplog):
    raw, processed = dirs
    v = get_variant("compas_000")
    df1, _ = build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    (kept,) = _kept(processed)
    kept.write_bytes(b"not a parquet file")
    caplog.set_level(logging.INFO, logger="fairmiss.datasets.prepare")
    df2, _ = build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    assert "unreadable" in caplog.text
    assert frame_hash(df1) == frame_hash(df2)
    assert frame_hash(pd.read_parquet(kept)) == frame_hash(df1)  # rewritten whole


def test_a_kept_table_that_is_not_the_built_one_is_not_used(dirs, caplog):
    raw, processed = dirs
    v = get_variant("compas_000")
    df1, _ = build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    (kept,) = _kept(processed)
    other = df1.copy()
    other.iloc[0, 0] = other.iloc[1, 0] if other.iloc[0, 0] != other.iloc[1, 0] else other.iloc[2, 0]
    other.to_parquet(kept, index=False)  # readable, but not what the build gives
    caplog.set_level(logging.WARNING, logger="fairmiss.datasets.prepare")
    df2, _ = build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    assert "not the built one" in caplog.text
    assert frame_hash(df2) == frame_hash(df1)


def test_an_altered_raw_file_is_refused_even_with_a_kept_table(dirs):
    raw, processed = dirs
    v = get_variant("compas_000")
    build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    f = raw / v.raw_files[0].filename
    f.write_bytes(f.read_bytes()[:-100])  # truncated
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        build_cached(v, {}, raw_dir=raw, processed_dir=processed)


def test_rebuild_env_and_unwritable_cache(dirs, monkeypatch, caplog):
    raw, processed = dirs
    v = get_variant("compas_000")
    monkeypatch.setenv("FAIRMISS_REBUILD", "1")
    build_cached(v, {}, raw_dir=raw, processed_dir=processed)
    assert not _kept(processed)  # nothing kept, nothing read
    monkeypatch.delenv("FAIRMISS_REBUILD")
    processed.mkdir()
    (processed / BUILD_CACHE_DIR).write_text("a file where the cache directory goes")
    caplog.set_level(logging.WARNING, logger="fairmiss.datasets.prepare")
    df, _ = build_cached(v, {}, raw_dir=raw, processed_dir=processed)  # the run goes on
    assert len(df) and "not kept" in caplog.text


def test_prepare_keeps_only_a_table_that_passed_and_reuses_it(dirs):
    """prepare() builds without keeping, keeps the table only after the group checks, the gate and the processed
    files, and a second prepare() reuses it with the same content hash."""
    from fairmiss.config.experiment import DatasetSpec
    from fairmiss.pipeline import prepare

    raw, processed = dirs
    v = get_variant("compas_000")
    build_cached(v, {}, raw_dir=raw, processed_dir=processed, keep=False)
    assert not (processed / BUILD_CACHE_DIR).exists()  # keep=False writes nothing
    first = prepare(DatasetSpec(name="compas_000"), raw_dir=raw, processed_dir=processed)
    assert len(_kept(processed)) == 1 and (processed / "compas_000.parquet").exists()
    second = prepare(DatasetSpec(name="compas_000"), raw_dir=raw, processed_dir=processed)
    assert second.data_hash == first.data_hash and len(_kept(processed)) == 1
