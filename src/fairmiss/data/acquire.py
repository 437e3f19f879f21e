"""Raw data acquisition: official URLs with SHA-256 checksums, or a local mirror.

Resolution order for each declared raw file, into the raw directory (``data/raw`` by
default, versioned by ``data.dvc``):

1. already present in the raw directory with the right checksum: nothing to do;
2. present in the mirror directory ``FAIRMISS_DATA_MIRROR`` (CI uses ``../shared/data/raw``):
   copied, then verified;
3. otherwise downloaded from its official URL with a progress bar, then verified.

A checksum mismatch is an error naming the file, its expected and actual SHA-256. Files are
written atomically, so an interrupted download never leaves a partial raw file behind.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from fairmiss.io import atomic_path, sha256_file

logger = logging.getLogger(__name__)

__all__ = [
    "RawFile",
    "ChecksumError",
    "RawDataMissingError",
    "default_raw_dir",
    "mirror_dir",
    "fetch",
    "raw_status",
]


class ChecksumError(RuntimeError):
    """A raw file's SHA-256 does not match its declaration."""


class RawDataMissingError(FileNotFoundError):
    """A raw file is neither present, mirrored nor downloadable."""


@dataclass(frozen=True)
class RawFile:
    """A raw file as published: file name, official URL, SHA-256 and a human note.

    ``sha256=None`` is reserved for user-supplied files that may not be redistributed and
    have no published checksum (HSLS:09 restricted/public-use, HCP): such a file is only
    ever taken from the raw directory or the mirror, never downloaded, and is accepted
    without a checksum check (its actual hash is logged and recorded by the builder).
    """

    filename: str
    url: str | None
    sha256: str | None
    note: str = ""
    licence: str = ""


def default_raw_dir() -> Path:
    return Path(os.environ.get("FAIRMISS_RAW_DIR", "data/raw"))


def mirror_dir() -> Path | None:
    m = os.environ.get("FAIRMISS_DATA_MIRROR")
    return Path(m) if m else None


def _verify(path: Path, raw: RawFile) -> None:
    actual = sha256_file(path)
    if raw.sha256 is None:  # user-supplied, not redistributable: nothing to compare against
        logger.warning("%s: no published checksum for user-supplied raw file '%s'; sha256 %s",
                       path, raw.filename, actual)
        return
    if actual != raw.sha256:
        raise ChecksumError(
            f"{path}: checksum mismatch for raw file '{raw.filename}': "
            f"expected sha256 {raw.sha256}, got {actual}. The file is corrupted, truncated or a "
            f"different release; delete it and run `fairmiss ingest` again."
        )


def _download(raw: RawFile, tmp: Path) -> None:
    import requests
    from tqdm import tqdm

    logger.info("downloading %s from %s", raw.filename, raw.url)
    with requests.get(raw.url, stream=True, timeout=60) as r:
        r.raise_for_status()
        total = int(r.headers.get("content-length", 0)) or None
        with open(tmp, "wb") as fh, tqdm(total=total, unit="B", unit_scale=True, desc=raw.filename) as bar:
            for chunk in r.iter_content(1 << 16):
                fh.write(chunk)
                bar.update(len(chunk))


def fetch(raw: RawFile, raw_dir: Path | None = None, *, allow_download: bool = True) -> Path:
    """Make ``raw`` present and verified in ``raw_dir``; return its path."""
    raw_dir = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    target = raw_dir / raw.filename
    if target.exists():
        _verify(target, raw)
        return target
    mirror = mirror_dir()
    if mirror is not None and (mirror / raw.filename).exists():
        src = mirror / raw.filename
        _verify(src, raw)
        with atomic_path(target) as tmp:
            shutil.copyfile(src, tmp)
        logger.info("copied %s from mirror %s", raw.filename, mirror)
        return target
    if raw.url and allow_download:
        try:
            with atomic_path(target) as tmp:
                _download(raw, tmp)
                _verify(tmp, raw)
        except ChecksumError:
            raise
        except Exception as exc:
            raise RawDataMissingError(
                f"{target}: raw file '{raw.filename}' is not present and could not be downloaded "
                f"from {raw.url} ({exc}). Set FAIRMISS_DATA_MIRROR to a directory holding it."
            ) from exc
        return target
    how = f"download it from {raw.url}" if raw.url else raw.note or "obtain it from its provider"
    raise RawDataMissingError(
        f"{target}: raw file '{raw.filename}' is missing; {how} and place it in {raw_dir} "
        f"(or set FAIRMISS_DATA_MIRROR to a directory that holds it)."
    )


def raw_status(raw: RawFile, raw_dir: Path | None = None) -> str:
    """``present``, ``in mirror``, ``downloadable`` or ``missing``."""
    raw_dir = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    if (raw_dir / raw.filename).exists():
        return "present"
    m = mirror_dir()
    if m is not None and (m / raw.filename).exists():
        return "in mirror"
    return "downloadable" if raw.url else "missing"
