"""Error types shared across the library (a leaf: imports nothing from fairmiss)."""

from __future__ import annotations

__all__ = ["ConfigError", "OutputPathError", "TRACKING_SCHEMES", "tracking_uri_problem"]


class ConfigError(ValueError):
    """A config file (or a value in it) that cannot be used; the message names the file and the problem."""


class OutputPathError(ConfigError):
    """An output path that must not be written over (a device, a FIFO, a socket, a directory): nothing is
    written. A user error (exit 2), like the config errors it derives from."""


#: URI schemes MLflow 3 accepts for a tracking store (it refuses the plain file store, ``file://`` or a path)
TRACKING_SCHEMES = ("sqlite", "http", "https", "postgresql", "mysql", "mssql", "databricks")


def tracking_uri_problem(uri: str) -> str | None:
    """Why MLflow could not use ``uri`` as a tracking store (its scheme, ``+driver`` ignored), or ``None``."""
    scheme = uri.split("://", 1)[0].split("+", 1)[0].lower() if "://" in uri else ""
    if scheme in TRACKING_SCHEMES:
        return None
    return ("is not a tracking store MLflow can use: give sqlite:///PATH (a local store), http(s)://HOST:PORT "
            f"(an MLflow server) or another of the schemes {', '.join(TRACKING_SCHEMES)}")
