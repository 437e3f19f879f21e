"""Error types shared across the library (a leaf: imports nothing from fairmiss)."""

from __future__ import annotations

__all__ = ["ConfigError", "OutputPathError"]


class ConfigError(ValueError):
    """A config file (or a value in it) that cannot be used; the message names the file and the problem."""


class OutputPathError(ConfigError):
    """An output path that must not be written over (a device, a FIFO, a socket, a directory): nothing is
    written. A user error (exit 2), like the config errors it derives from."""
