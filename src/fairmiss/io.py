"""Atomic file writes and content hashing.

Everything the platform writes downstream of raw data goes through :func:`atomic_write`
(write to a temporary file in the same directory, fsync, then ``os.replace``), so an
interrupted run never leaves a half-written file that a later stage could read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["output_dir_problem", "cache_dir", "check_cache_dir", "default_raw_dir", "mirror_dir", "atomic_path", "atomic_write_text", "atomic_write_json", "sha256_file", "stable_hash", "check_name",
           "safe_child", "SAFE_NAME", "SAFE_LABEL"]

#: names that become one path component (experiment, tracking experiment, study, report, deployment):
#: letters, digits, ``_ . -``, not starting with ``.`` or ``-``, no ``..``, at most 128 characters
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: names of missingness specs, imputers and learners (parts of cell keys, file and artifact names):
#: as :data:`SAFE_NAME`, plus ``+ = ,`` (method labels such as ``mean+tree``)
SAFE_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=,-]{0,127}")


def check_name(name, what: str = "name", pattern: re.Pattern = SAFE_NAME) -> str:
    """``name`` if it is one safe path component, else :class:`ValueError` saying why (``what`` names the key).

    Never a path: no separator, not absolute, not ``.``/``..``, no ``..`` anywhere, no leading dot or dash."""
    if not isinstance(name, str):
        raise ValueError(f"{what}: must be a string, got {type(name).__name__}")
    if not pattern.fullmatch(name) or ".." in name:
        allowed = "letters, digits and _ . -" + (" + = ," if pattern is SAFE_LABEL else "")
        raise ValueError(f"{what}: {name!r} is not a safe name ({allowed}; not starting with '.' or '-', no '..', "
                         f"no path separator, at most 128 characters): it becomes a file or directory name")
    return name


def safe_child(root: str | os.PathLike, name: str, *, what: str = "name", pattern: re.Pattern = SAFE_NAME) -> Path:
    """``root / name`` for a user-given ``name`` that must be one safe path component and must stay under
    ``root`` once resolved (symbolic links included). Raises :class:`fairmiss.config.ConfigError` naming
    ``what`` (the config key or argument) otherwise."""
    from fairmiss._errors import ConfigError

    try:
        check_name(name, what, pattern)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    root = Path(root)
    child = root / name
    base = root.resolve()
    resolved = child.resolve()
    if resolved != base and base not in resolved.parents:
        raise ConfigError(f"{what}: {name!r} resolves to {resolved}, outside {base}")
    return child


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive advisory lock (``fcntl.flock``) on ``path`` (created, with its parent directory,
    if missing) for the ``with`` block: one holder at a time across processes on this machine. The lock
    goes with the process, so a killed holder never leaves it taken. Used for a SQLite store's writes
    (:mod:`fairmiss.tracking`) and for starting/stopping the local Prefect server (``flows.server``)."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def output_dir_problem(path: str | os.PathLike, what: str) -> str | None:
    """Why ``path`` cannot be an output root (``--results-dir``, ``--processed-dir``), or ``None``: it must be a
    directory if it exists, and its nearest existing ancestor must be a directory (``flows.errors.check_output_dir``
    raises the message as a ConfigError; the up-to-date receipts only answer when there is none)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{p}: {what} is not a directory"
    parent = next((q for q in p.absolute().parents if q.exists()), None)
    if not str(path).strip():
        return f"{what}: an empty path; give a directory (e.g. results)"
    if not p.exists() and parent is not None and not parent.is_dir():
        return f"{p}: {what}: {parent} is a file, not a directory"
    probe = p if p.exists() else parent
    if probe is not None:  # a directory one cannot write in (read-only, /proc, no permission) fails here, not
        try:               # after every cell has run
            os.rmdir(tempfile.mkdtemp(prefix=".fairmiss-probe.", dir=probe))
        except OSError as exc:
            return f"{p}: {what}: cannot create directories in {probe}: {exc.strerror.lower()}"
    return None


def default_raw_dir() -> Path:
    """Where raw dataset files are kept: ``$FAIRMISS_RAW_DIR``, else ``data/raw`` (relative to the working
    directory). Here, not in :mod:`fairmiss.datasets.acquire`, so that the up-to-date check
    (``flows.fastcheck``) finds the raw files without importing the dataset registry."""
    return Path(os.environ.get("FAIRMISS_RAW_DIR", "data/raw"))


def mirror_dir() -> Path | None:
    """A local mirror of the official raw files (``$FAIRMISS_DATA_MIRROR``), read when a file is not in the raw
    directory; ``None`` when unset."""
    m = os.environ.get("FAIRMISS_DATA_MIRROR")
    return Path(m) if m else None


def cache_dir() -> Path:
    """fairmiss's cache of derived, re-creatable files (up-to-date receipts, the empty MLflow store template):
    ``$FAIRMISS_CACHE_DIR``, else ``$XDG_CACHE_HOME/fairmiss``, else ``~/.cache/fairmiss``. Deleting it only
    costs time."""
    base = os.environ.get("FAIRMISS_CACHE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fairmiss"


def check_cache_dir() -> None:
    """``$FAIRMISS_CACHE_DIR``, when set, can be the cache directory: it is a directory or can be made one (its
    nearest existing ancestor is a directory). Otherwise a :class:`~fairmiss._errors.ConfigError` naming the
    variable, checked before a command starts its work: every use of the cache would fail on its own and fall
    back to working without it, silently (no up-to-date receipts, every new MLflow store migrated from scratch).
    Reads only."""
    base = os.environ.get("FAIRMISS_CACHE_DIR")
    if not base:
        return
    p = Path(base)
    blocker = next((d for d in (p, *p.parents) if d.exists() or d.is_symlink()), None)
    if blocker is not None and not blocker.is_dir():
        from fairmiss._errors import ConfigError

        what = "a broken symbolic link" if not blocker.exists() else "a file, not a directory"
        at = "it is" if blocker == p else f"{blocker} is"
        raise ConfigError(f"FAIRMISS_CACHE_DIR {p}: cannot be used as a directory: {at} {what}")


def check_output_file(target: str | os.PathLike) -> Path:
    """``target`` as a Path, if a file may be written there: a path that exists and is not a regular file (or a
    link to one) raises :class:`~fairmiss._errors.OutputPathError` (a rename onto it would replace a device such as
    ``/dev/null``, a FIFO or a socket with a plain file)."""
    import stat

    from fairmiss._errors import OutputPathError

    target = Path(target)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return target  # not there (or a dangling link): created
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket"
                if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")
        raise OutputPathError(f"{target}: is {kind}, not a regular file; nothing written (choose a file path)")
    return target


def _umask() -> int:
    """The process's umask, read without changing it where Linux tells it (``/proc/self/status``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def public_mode(path: str | os.PathLike, *, directory: bool = False) -> None:
    """Give a file (or directory) made by :mod:`tempfile` — always private, 0600 / 0700 — the mode a plain
    ``open()`` / ``mkdir()`` gives under the umask, before it is renamed into place: results, reports and
    configs are read by the user's group as any other file they write (a 0600 ``report.html`` on a shared
    server, or served by a web server, is unreadable)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success rename it onto ``target``.

    On any exception the temporary file is removed and ``target`` is left untouched. A ``target`` that exists
    and is not a regular file (or a link to one) is refused before anything is written
    (:class:`~fairmiss._errors.OutputPathError`): the rename would replace a device such as ``/dev/null``, a FIFO
    or a socket with a plain file. A temporary file that cannot be created is reported under ``target``'s name,
    the path the user gave.
    """
    target = check_output_file(target)
    made = [d for d in (target.parent, *target.parent.parents) if not d.exists()]  # deepest first
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or ".tmp", dir=target.parent)
    except OSError as exc:
        _remove_empty(made)
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        public_mode(tmp_path)
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        _remove_empty(made)  # a failed write leaves no directory it created behind
        raise


def _remove_empty(dirs: list[Path]) -> None:
    """Remove ``dirs`` (deepest first) while they are empty; one another writer filled is kept."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            return


def atomic_write_text(target: str | os.PathLike, text: str) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(target)


def no_negative_zero(obj):
    """``obj`` with every float ``-0.0`` replaced by ``0.0`` (recursively through dicts, lists, tuples and
    numpy scalars). A difference that is zero up to rounding can come out as ``-0.0`` on one CPU and
    ``0.0`` on another (003's ``train_gap_after``); written results must not show that."""
    import numpy as np

    if isinstance(obj, (float, np.floating)):
        return float(obj) + 0.0  # IEEE: -0.0 + 0.0 == +0.0; NaN and inf unchanged
    if isinstance(obj, dict):
        return {k: no_negative_zero(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [no_negative_zero(v) for v in obj]
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return (obj + 0.0).tolist()
    return obj


def atomic_write_json(target: str | os.PathLike, obj) -> Path:
    """Write ``obj`` as sorted, indented JSON atomically; ``-0.0`` is written as ``0.0``."""
    return atomic_write_text(target, json.dumps(no_negative_zero(obj), indent=2, sort_keys=True,
                                                default=_json_default) + "\n")


def atomic_write_with(target: str | os.PathLike, writer: Callable[[Path], None], suffix: str = "") -> Path:
    """Call ``writer(tmp_path)`` and atomically move the result to ``target``."""
    with atomic_path(target, suffix=suffix) as tmp:
        writer(tmp)
    return Path(target)


def _json_default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stable_hash(obj, length: int = 16) -> str:
    """Hash of a JSON-serialisable object, independent of dict ordering."""
    blob = json.dumps(obj, sort_keys=True, default=_json_default, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed child its parent has not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed child not yet reaped by its parent) is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


