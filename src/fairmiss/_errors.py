"""Error types shared across the library (a leaf: imports nothing from fairmiss)."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A config file (or a value in it) that cannot be used; the message names the file and the problem."""
