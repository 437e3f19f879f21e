"""Audit a model that is already trained and logged in MLflow (``kind: mlflow_model``), without refitting::

    learners:
      - kind: mlflow_model
        name: deployed
        model_uri: models:/credit/3        # or runs:/<run id>/model
        tracking_uri: sqlite:///mlruns/mlflow.db   # optional: where the model lives (default below)
        accepts_nan: false                 # true: the model takes NaN itself (pair it with imputer `none`)

The model is evaluated in every missingness x imputer cell of the config: the config's imputer (fitted on
the training rows, as for any learner) fills the masked test rows and the deployed model predicts them. It
answers "how would this deployed model's accuracy and fairness change if these features went missing this
way, and were imputed this way?". ``fit`` never refits it: it only checks that the model takes the
dataset's features and predicts the label's classes {0, 1}.

Choices, written down:

- **Only MLflow URIs** (``models:/NAME/VERSION`` with an integer version, or ``runs:/RUN_ID/PATH``) are
  accepted, never a file path or URL: models are not unpickled from user-given paths
  (``tests/integration/test_contracts.py``), and MLflow resolves the URI inside a tracking store the user chose.
- **Pinned references only**: ``models:/NAME/latest``, stages and ``@alias`` move when someone registers a
  new version, and a cell's cached result (its cache key holds the URI) would then silently be stale.
  ``runs:/`` URIs and numbered versions do not move.
- **Where the model lives**: ``tracking_uri`` if given, else ``MLFLOW_TRACKING_URI``, else the project's
  store ``sqlite:///mlruns/mlflow.db`` (:func:`fairmiss.tracking.resolve_uri`). The store is only read;
  a store that does not exist is an error, never created.
- **Feature order**: a model fitted on a DataFrame (``feature_names_in_``) gets the columns it names, by
  name (each must be a feature of the processed table); otherwise the model must take exactly the
  processed table's features, in its column order (models logged by fairmiss itself are of this kind).
- **Loading** goes through :func:`fairmiss.tracking.load_logged_model` (MLflow's scikit-learn flavour,
  else the pyfunc flavour), registered here by :mod:`fairmiss.tracking` at import: MLflow stays in
  ``fairmiss.tracking`` (import-linter), and this kind module only holds a loader function.
  A pyfunc model's output must be labels in {0, 1} or P(y = 1) (thresholded at 0.5).
- The URI is resolved before a run starts (``flows.run.run_any``): a URI that does not resolve is a user
  error (exit 2) and nothing is written.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
from pydantic import field_validator
from sklearn.base import BaseEstimator, ClassifierMixin

from fairmiss._model_loader import model_loader, set_model_loader  # set_model_loader: re-exported (__all__)
from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ["MLflowModelSpec", "PrefitModel", "set_model_loader", "check_model_uri_syntax"]

_RUNS = re.compile(r"^runs:/[0-9a-f]{8,64}/[^\s]+$")
_MODELS = re.compile(r"^models:/([^/\s@]+)/([^/\s]+)$")


def check_model_uri_syntax(uri: str) -> str:
    """``uri`` if it is a pinned MLflow model URI, else a ``ValueError`` saying what is accepted."""
    if _RUNS.match(uri):
        return uri
    m = _MODELS.match(uri)
    if m:
        if m.group(2).isdigit() and int(m.group(2)) >= 1:
            return uri
        raise ValueError(f"model_uri {uri!r}: pin a version number (models:/{m.group(1)}/3): "
                         f"'{m.group(2)}' can move to another model, and cached results would be stale")
    if uri.startswith("models:/") and "@" in uri:
        raise ValueError(f"model_uri {uri!r}: an alias can move to another model version; pin a version number "
                         "(models:/NAME/3) so that cached results stay true")
    raise ValueError(f"model_uri {uri!r}: expected an MLflow model URI, models:/NAME/VERSION or runs:/RUN_ID/PATH "
                     "(file paths and URLs are not loaded: models are read through a tracking store)")


class MLflowModelSpec(_LearnerBase):
    kind: Literal["mlflow_model"] = "mlflow_model"
    #: ``models:/NAME/VERSION`` (integer version) or ``runs:/RUN_ID/PATH``
    model_uri: str
    #: the tracking store (and model registry) holding the model; None: MLFLOW_TRACKING_URI, else mlruns/
    tracking_uri: str | None = None
    #: the model takes NaN in X itself (it then pairs with the ``none`` imputer)
    accepts_nan: bool = False

    @field_validator("model_uri")
    @classmethod
    def _pinned(cls, v: str) -> str:
        return check_model_uri_syntax(v.strip())

    @property
    def label(self) -> str:
        return self.name or "mlflow_model"

    @property
    def takes_nan(self) -> bool:
        return self.accepts_nan

    @property
    def wrappable_by_mi(self) -> bool:
        return False  # the multiple imputer refits what it wraps; a deployed model is not refitted


def _load(uri: str, tracking_uri: str | None):
    loader = model_loader()
    if loader is None:
        import importlib.util

        # the flows and tasks import fairmiss.tracking, which registers the loader; plain library use must too
        hint = "import fairmiss.tracking" if importlib.util.find_spec("mlflow") else "install mlflow"
        raise RuntimeError(f"no MLflow model loader registered to load {uri!r} ({hint} first)")
    return loader(uri, tracking_uri)


class PrefitModel(ClassifierMixin, BaseEstimator):
    """A fitted classifier that ``fit`` does not refit: it checks the features and classes and keeps the model.

    ``feature_names`` are the processed table's feature columns (the order of ``X``'s columns). A scikit-learn
    estimator (``get_params``, ``__sklearn_tags__``), so that MLflow's scikit-learn flavour logs the audited
    model of each cell without a warning."""

    def __init__(self, model, feature_names=None, model_uri: str = ""):
        self.model = model
        self.feature_names = feature_names
        self.model_uri = model_uri

    def __sklearn_clone__(self):
        # a clone shares the fitted model (read-only, never refit; as scikit-learn's FrozenEstimator): the default
        # clone would deep-clone it into an unfitted estimator
        return type(self)(self.model, self.feature_names, self.model_uri)

    def _columns(self, n: int):
        names = getattr(self.model, "feature_names_in_", None)
        if names is not None:
            names = [str(c) for c in names]
            have = list(self.feature_names or [])
            missing = [c for c in names if c not in have]
            if missing:
                raise ValueError(f"model {self.model_uri}: it was fitted on column(s) {missing} that are not features "
                                 f"of this dataset (features: {have})")
            return names, [have.index(c) for c in names]
        want = getattr(self.model, "n_features_in_", None)
        if want is not None and int(want) != n:
            raise ValueError(f"model {self.model_uri}: it takes {int(want)} features, the dataset has {n} "
                             f"({list(self.feature_names or [])}); fit it on the processed table's features, in order")
        return None, None

    def _input(self, X):
        X = np.asarray(X, dtype=float)
        names, idx = self._columns(X.shape[1])
        if names is None:
            return X
        import pandas as pd

        return pd.DataFrame(X[:, idx], columns=names)

    def fit(self, X, y=None, **_):
        """No refit: check that the model takes these features and predicts labels in {0, 1}."""
        self._columns(np.asarray(X).shape[1])
        classes = getattr(self.model, "classes_", None)
        if classes is not None and not set(np.asarray(classes).tolist()) <= {0, 1}:
            raise ValueError(f"model {self.model_uri}: it predicts classes {np.asarray(classes).tolist()}, the label is "
                             "coded 0/1 (1 = the positive value)")
        self.n_features_in_ = np.asarray(X).shape[1]
        self.classes_ = np.array([0, 1])
        return self

    def _raw(self, X):
        out = self.model.predict(self._input(X))
        return np.asarray(getattr(out, "values", out), dtype=float).reshape(len(X), -1)[:, -1]

    def predict(self, X):
        raw = self._raw(X)
        if not np.isin(raw, (0.0, 1.0)).all():
            if np.isnan(raw).any() or (raw < 0).any() or (raw > 1).any():
                raise ValueError(f"model {self.model_uri}: predictions are neither labels 0/1 nor probabilities")
            return (raw >= 0.5).astype(int)
        return raw.astype(int)

    def predict_proba(self, X):
        if hasattr(self.model, "predict_proba"):
            p = np.asarray(self.model.predict_proba(self._input(X)), dtype=float)
            classes = np.asarray(getattr(self.model, "classes_", [0, 1])).tolist()
            p1 = p[:, classes.index(1)] if 1 in classes else np.zeros(len(p))
        else:  # pyfunc: its output is P(y = 1) or a 0/1 label (then a degenerate probability)
            p1 = self._raw(X)
        return np.column_stack([1.0 - p1, p1])


def _mlflow_model(spec, seed, threads, feature_names=None):
    model = _load(spec.model_uri, spec.tracking_uri)
    return Learner(PrefitModel(model, list(feature_names) if feature_names is not None else None, spec.model_uri),
                   seed=seed, info={"model_uri": spec.model_uri})


# accepts_nan is per instance (MLflowModelSpec.takes_nan), asked by ExperimentConfig
LEARNER_KINDS.register("mlflow_model", MLflowModelSpec, _mlflow_model, family="baseline", needs_feature_names=True)
