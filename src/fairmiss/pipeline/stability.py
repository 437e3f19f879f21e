"""Stability of one cell's learner from a training bootstrap (``evaluation: {stability: {estimators, fraction}}``).

``estimators`` = B copies of the cell's learner (its spec, a fresh estimator each) are fitted, each on its own
resample of the cell's (imputed) training rows — ``int(fraction × n)`` rows drawn with replacement, as Virny
0.6.0's ``generate_bootstrap`` draws them — and predict the cell's evaluated test rows. From their labels
(``learner.predict``) and positive-class probabilities (``learner.score``: ``predict_proba[:, 1]``, or the hard
prediction for a learner without probabilities; a plain classifier's label is then ``p > 0.5``, its most probable
class, as Virny reads labels off probabilities) come, overall, per group and as gaps:

* ``label_stability``, ``jitter``, ``proba_std`` (:mod:`fairmiss.metrics.stability`, Virny's formulas);
* ``ens_<metric>``: every metric of :func:`fairmiss.metrics.evaluate` (the config's ``metrics:``, the fairness
  gaps) for the *ensemble*: the mean probability over the copies as the score and ``mean > 0.5`` as the label
  (Virny scores its accuracy and fairness metrics that way). The cell's own ``<metric>`` values stay those of the
  single learner fitted on every training row.

**Seeds.** Copy ``b``'s resample and its learner's seed come from ``SeedSequence(derive_seed(root, "stability",
cell key)).spawn(B)[b]``: the same cell gives the same copies on every run, and copies differ from each other
and from the cell's own learner.

**Where the copies run.** One after the other inside the cell's task, with the cell's thread budget
(``threads``, the ``n_jobs`` of a learner that takes one): the run's executor already runs up to
``max_workers`` cells at a time, so fanning a cell's copies out to it as well would put B × the cells in flight
on the same cores (and cannot be done from inside a task under the process and Dask runners). The cost is
measured in ``bench/results/stability_cost.md``.

**scikit-learn's checks, once.** The copies are fitted and predict inside :func:`copy_checks`: scikit-learn's
parameter validation is skipped (every copy has the parameters of the cell's own learner, which the cell fitted,
checked, before) and, when the training and test matrices hold no NaN or infinity (one test here), so is its
per-call finiteness scan. Both only raise errors: the fits and predictions are the same numbers. A decision tree
predicts the test rows converted to float32 once, unchecked (``predict_proba(X32, check_input=False)``, as a
forest calls its trees), instead of converting and checking them per copy: the same probabilities. On a COMPAS
cell the checks were 5–9 % of 50 fits, and half of 50 trees' probability pass (6.9 → 3.5 ms).
"""

from __future__ import annotations

import copy

import numpy as np
import sklearn
from sklearn.tree import DecisionTreeClassifier

from fairmiss.metrics import evaluate
from fairmiss.metrics.stability import STABILITY_METRICS, stability_metrics
from fairmiss.seeds import derive_seed

__all__ = ["bootstrap_predictions", "cell_stability", "copy_checks", "copy_seeds"]


def copy_seeds(root_seed: int, cell_key: str, estimators: int) -> list[np.random.SeedSequence]:
    """One seed sequence per copy, from the cell's stability seed."""
    return np.random.SeedSequence(derive_seed(root_seed, "stability", cell_key)).spawn(int(estimators))


def _finite(*arrays) -> bool:
    """Every array numeric with a finite sum: no NaN, no infinity (scikit-learn's own first-pass test)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" and bool(np.isfinite(a.sum()))
                   for a in arrays)


def copy_checks(X_tr, X_te):
    """The scikit-learn configuration the copies run in (see the module): parameter validation off, and
    ``assume_finite`` when both matrices are finite (:func:`_finite`), else left as it is (a learner that takes
    NaN, the NaN path of the "none" imputer, still checks and routes them as in a single fit)."""
    return sklearn.config_context(skip_parameter_validation=True,
                                  assume_finite=True if _finite(X_tr, X_te) else None)


def _copy(make, X_tr, y_tr, s_tr, ss, size: int, copies: list | None, b: int):
    """Copy ``b``, fitted: from ``copies`` (a fit group's earlier cell fitted it on the same rows with the same
    seed), else fitted here and, when ``copies`` is a list, kept there as fitted (a copy whose prediction draws
    random numbers is kept unused, so every cell predicts from the state its own fit would leave)."""
    if copies is not None and b < len(copies):
        kept = copies[b]
        return copy.deepcopy(kept) if kept.randomized_predict else kept
    rng = np.random.default_rng(ss)
    idx = rng.choice(len(y_tr), size=size, replace=True)
    learner = make(int(rng.integers(2**31)))
    learner.fit(X_tr[idx], y_tr[idx], s_tr[idx])
    if copies is not None:
        copies.append(copy.deepcopy(learner) if learner.randomized_predict else learner)
    return learner


def bootstrap_predictions(make, X_tr, y_tr, s_tr, X_te, s_te, *, seeds, fraction: float, copies: list | None = None):
    """``(labels, proba)``, two ``(B, n_test)`` matrices: copy ``b`` = ``make(seed)`` (an unfitted
    :class:`~fairmiss.learners.adapter.Learner`) fitted on ``int(fraction × n)`` training rows drawn with
    replacement by ``default_rng(seeds[b])``, its labels and scores on the test rows.

    ``copies``: the fitted copies shared by the cells of a fit group (a ``shift`` with ``tests``: the same
    training rows and seeds in every scenario cell, only the test rows differ), filled by its first cell and
    reused by the others, which then predict without fitting: the same numbers as fitting again."""
    n = len(y_tr)
    size = int(fraction * n)
    if size < 1:
        raise ValueError(f"evaluation.stability.fraction {fraction} of {n} training rows draws no row")
    labels, proba = [], []
    # a decision tree's checked predict_proba converts the test rows to float32 and checks them, every copy: once
    te_finite, X32 = _finite(X_te) and X_te.ndim == 2, None
    with copy_checks(X_tr, X_te):
        for b, ss in enumerate(seeds):
            learner = _copy(make, X_tr, y_tr, s_tr, ss, size, copies, b)
            if te_finite and type(learner.estimator) is DecisionTreeClassifier and not learner.needs_sensitive_predict:
                X32 = np.ascontiguousarray(X_te, dtype=np.float32) if X32 is None else X32
                p = learner.estimator.predict_proba(X32, check_input=False)[:, 1]  # = learner.score(X_te, s_te)
            else:
                p = np.asarray(learner.score(X_te, s_te), dtype=float)
            # a plain classifier's label is its most probable class (Virny's rule, p(1) > 0.5): one pass over the
            # test rows; a learner that predicts otherwise (post-processing, randomised prediction) is asked
            plain = not (learner.needs_sensitive_predict or learner.randomized_predict) and \
                hasattr(learner.estimator, "predict_proba")
            labels.append((p > 0.5).astype(int) if plain else np.asarray(learner.predict(X_te, s_te)).astype(int))
            proba.append(p)
    return np.vstack(labels), np.vstack(proba)


def cell_stability(make, X_tr, y_tr, s_tr, X_te, y_te, s_te, *, root_seed: int, cell_key: str, estimators: int,
                   fraction: float, metrics=None, copies: list | None = None) -> dict[str, float]:
    """The stability and ensemble metrics of one cell (see the module; ``copies``: :func:`bootstrap_predictions`)."""
    labels, proba = bootstrap_predictions(make, X_tr, y_tr, s_tr, X_te, s_te, fraction=fraction,
                                          seeds=copy_seeds(root_seed, cell_key, estimators), copies=copies)
    out = stability_metrics(labels, proba, s_te)
    mean = proba.mean(axis=0)
    ens = evaluate(y_te, (mean > 0.5).astype(int), s_te, y_score=mean, metrics=metrics)
    out.update({f"ens_{k}": v for k, v in ens.items()})
    out["stability_estimators"] = float(estimators)
    return out


#: the stability measures a signed difference is reported for (besides the config's metrics)
SIGNED = STABILITY_METRICS
