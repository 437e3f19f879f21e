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

from fairmiss.io import atomic_path, default_raw_dir, mirror_dir, sha256_file

logger = logging.getLogger(__name__)

__all__ = [
    "RawFile",
    "ChecksumError",
    "RawDataMissingError",
    "RawPathError",
    "default_raw_dir",
    "mirror_dir",
    "fetch",
    "preflight",
    "raw_status",
]


class ChecksumError(RuntimeError):
    """A raw file's SHA-256 does not match its declaration."""


class RawDataMissingError(FileNotFoundError):
    """A raw file is neither present, mirrored nor downloadable."""


class RawPathError(RuntimeError):
    """A raw file or directory exists but cannot be used: a directory where a file is expected (or the
    reverse), no permission to read it, or another file-system error. The message names the path, the
    setting it comes from and the problem."""


def _check_dir(path: Path, what: str) -> None:
    if path.exists() and not path.is_dir():
        raise RawPathError(f"{path}: {what} is not a directory")


def _fs_problem(exc: OSError) -> str:
    return f"{exc.strerror or exc} ({type(exc).__name__})"


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


#: (path, sha256) of the user-supplied raw files already announced by :func:`_verify` in this process
_UNPINNED_SEEN: set[tuple[str, str]] = set()


def _verify(path: Path, raw: RawFile) -> None:
    if path.is_dir():
        raise RawPathError(f"{path}: raw file '{raw.filename}' is a directory, not a file")
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise RawPathError(f"{path}: cannot read raw file '{raw.filename}': {_fs_problem(exc)}") from None
    if raw.sha256 is None:  # user-supplied, not redistributable: nothing to compare against
        if (str(path), actual) not in _UNPINNED_SEEN:  # once per file content and process, not per check
            _UNPINNED_SEEN.add((str(path), actual))
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


_NO_MIRROR = Path("/nonexistent-fairmiss-mirror")


def _locate(raw: RawFile, raw_dir: Path | None):
    """``(raw_dir, target, mirror)``: ``mirror`` is ``None`` when ``target`` is present (and verified),
    ``_NO_MIRROR`` when no mirror is set; a raw directory or mirror that is not a directory is an error."""
    from_env = raw_dir is None and "FAIRMISS_RAW_DIR" in os.environ
    raw_dir = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    _check_dir(raw_dir, "the raw data directory" + (" (FAIRMISS_RAW_DIR)" if from_env else ""))
    target = raw_dir / raw.filename
    if target.exists() or target.is_symlink():
        _verify(target, raw)
        return raw_dir, target, None
    mirror = mirror_dir()
    if mirror is None:
        return raw_dir, target, _NO_MIRROR
    if not mirror.is_dir():
        problem = "does not exist" if not mirror.exists() else "is not a directory"
        raise RawPathError(f"{mirror}: the raw data mirror FAIRMISS_DATA_MIRROR {problem}")
    return raw_dir, target, mirror


def fetch(raw: RawFile, raw_dir: Path | None = None, *, allow_download: bool = True) -> Path:
    """Make ``raw`` present and verified in ``raw_dir``; return its path."""
    raw_dir, target, mirror = _locate(raw, raw_dir)
    if mirror is None:
        return target
    if mirror is not _NO_MIRROR and ((mirror / raw.filename).exists() or (mirror / raw.filename).is_symlink()):
        src = mirror / raw.filename
        _verify(src, raw)
        try:
            with atomic_path(target) as tmp:
                shutil.copyfile(src, tmp)
        except OSError as exc:
            raise RawPathError(f"{target}: cannot write raw file '{raw.filename}' into the raw data directory: "
                               f"{_fs_problem(exc)}") from None
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


def preflight(raw: RawFile, raw_dir: Path | None = None) -> None:
    """What :func:`fetch` would refuse, checked before a flow starts and without writing anything: the raw
    directory is a directory, the file there (or in the mirror) is a readable file with the declared
    checksum, the mirror (``FAIRMISS_DATA_MIRROR``) is a directory, and a file that is nowhere can be
    downloaded. Raises :class:`RawPathError`, :class:`ChecksumError` or :class:`RawDataMissingError`."""
    raw_dir, target, mirror = _locate(raw, raw_dir)
    if mirror is None:
        return
    if mirror is not _NO_MIRROR:
        src = mirror / raw.filename
        if src.exists() or src.is_symlink():
            _verify(src, raw)
            return
    if raw.url:
        return
    how = raw.note or "obtain it from its provider"
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
