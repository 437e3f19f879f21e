"""Aliases of old module paths (kept one release after the package move).

Models logged to MLflow are cloudpickled, and a pickle names the module of each class it holds
(``fairmiss.models.mip_forest.FairMIPForest``). :func:`alias_module` makes such an old path resolve
to the very module object of its new home, so the classes are identical (``isinstance`` holds) and
the old pickles load unchanged.
"""

from __future__ import annotations

import importlib
import sys
import warnings

__all__ = ["alias_module"]


def alias_module(old: str, new: str) -> None:
    """Make ``import old`` return module ``new`` (with a DeprecationWarning naming the new path)."""
    warnings.warn(f"{old} is deprecated: it moved to {new}", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
