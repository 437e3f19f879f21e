"""The hook through which :mod:`fairmiss.tracking` lends the ``mlflow_model`` learner its model loader.

A leaf (it imports nothing of fairmiss): the tracking module registers :func:`fairmiss.tracking.load_logged_model`
here when it is imported, and :mod:`fairmiss.learners.mlflow_model` reads it here when it loads a model. Neither
imports the other: the learners need no MLflow (layers contract in ``pyproject.toml``), and opening a tracking
store does not import the learner stack (scikit-learn, SciPy: ~0.7 s).
"""

from __future__ import annotations

from typing import Callable

_LOADER: list[Callable] = []


def set_model_loader(fn: Callable[[str, str | None], object]) -> None:
    """Register ``fn(model_uri, tracking_uri) -> fitted model`` (done by :mod:`fairmiss.tracking` on import)."""
    _LOADER[:] = [fn]


def model_loader() -> Callable | None:
    return _LOADER[0] if _LOADER else None
