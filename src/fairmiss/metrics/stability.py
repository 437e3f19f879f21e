"""Model stability from an ensemble of bootstrap copies, and signed differences against a privileged group.

**Stability** (Virny 0.6.0, ``virny/metrics/stability_metrics.py``; Darling & Stracuzzi 2018 for label
stability). ``labels`` is the ``(B, n)`` matrix of the 0/1 labels that ``B`` copies of a learner, each fitted on
its own bootstrap resample of the training rows, predict for ``n`` test rows; ``proba`` the ``(B, n)`` matrix of
their predicted probabilities of the positive class.

* ``label_stability`` = mean over rows of ``|#1 − #0| / B`` (1: every copy agrees; 0: a coin flip);
* ``jitter`` = mean over the ``B(B − 1)/2`` pairs of copies of the share of rows on which the two disagree
  (their churn). For 0/1 labels a row with ``c`` ones has ``c(B − c)`` disagreeing pairs, so this is computed as
  ``mean_rows c(B − c) / (B(B − 1)/2)``, the same number without the pairwise loop;
* ``proba_std`` = mean over rows of the standard deviation (``ddof=1``, pandas' default) of the row's
  probabilities over the copies (Virny's ``Std``; it takes the probability of class 0, whose spread is the
  same).

Per group each is the same formula over the group's rows (as Virny computes subgroup metrics), with
``<m>_group_<g>``, ``<m>_difference`` (max − min) and ``<m>_ratio`` (min / max) as :func:`fairmiss.metrics.evaluate`
gives for a rate (:func:`stability_metrics`).

**Signed differences** (Virny 0.6.0, ``virny/custom_classes/metrics_composer.py``: every disparity metric is
``value(dis) − value(priv)``, e.g. ``Equalized_Odds_TPR = TPR_dis − TPR_priv``, ``Statistical_Parity_Difference
= selection_rate_dis − selection_rate_priv``, ``Accuracy_Difference``, ``Label_Stability_Difference``,
``Jitter_Difference``, ``Std_Difference``): :func:`signed_differences`. With two groups ``<m>_signed_difference``
= the other group's value minus the privileged group's; with more groups there is no single "other" group and
each group gets its own, ``<m>_signed_difference_group_<g>`` = value of ``g`` − value of the privileged group,
for every ``g`` but the privileged one. NaN when either value is NaN, when the privileged group has no
evaluated row, or for a group left out of between-group values (``min_group_size``).
"""

from __future__ import annotations

import numpy as np

from fairmiss.metrics.gaps import between_groups

__all__ = ["STABILITY_METRICS", "per_row_stability", "stability_metrics", "signed_differences"]

#: the per-group stability measures, in reporting order
STABILITY_METRICS = ("label_stability", "jitter", "proba_std")


def _matrices(labels, proba) -> tuple[np.ndarray, np.ndarray]:
    L = np.asarray(labels)
    P = np.asarray(proba, dtype=float)
    if L.ndim != 2 or L.shape != P.shape:
        raise ValueError(f"labels and proba must be (copies, rows) matrices of one shape, got {L.shape} and {P.shape}")
    if L.shape[0] < 2:
        raise ValueError(f"stability needs at least 2 copies, got {L.shape[0]}")
    if L.size and not np.isin(L, (0, 1)).all():
        raise ValueError("labels must be 0/1")
    return L.astype(np.int64), P


def per_row_stability(labels, proba) -> dict[str, np.ndarray]:
    """Each test row's label stability, jitter share (disagreeing pairs / all pairs) and probability standard
    deviation; a group's value is the mean of its rows'."""
    L, P = _matrices(labels, proba)
    B = L.shape[0]
    c = L.sum(axis=0)
    return {"label_stability": np.abs(2 * c - B) / B,
            "jitter": c * (B - c) / (B * (B - 1) * 0.5),
            "proba_std": P.std(axis=0, ddof=1)}


def stability_metrics(labels, proba, group) -> dict[str, float]:
    """Overall, per-group, difference and ratio values of :data:`STABILITY_METRICS` (see the module)."""
    rows = per_row_stability(labels, proba)
    group = np.asarray(group)
    groups, gidx = np.unique(group, return_inverse=True)
    out: dict[str, float] = {}
    for name in STABILITY_METRICS:
        v = rows[name]
        out[name] = float(np.mean(v)) if len(v) else float("nan")
        by = [float(np.mean(v[gidx == k])) for k in range(len(groups))]
        out.update({f"{name}_group_{g}": b for g, b in zip(groups, by)})
        out[f"{name}_difference"], out[f"{name}_ratio"] = between_groups(by)
    return out


def signed_differences(out: dict, names, groups, privileged, *, left_out=()) -> dict[str, float]:
    """``<m>_signed_difference`` (two groups) or ``<m>_signed_difference_group_<g>`` (more) for every ``m`` of
    ``names`` whose per-group values ``<m>_group_<g>`` are in ``out``: value of ``g`` − value of ``privileged``
    (Virny's ``dis − priv``). ``groups``: the evaluated groups; ``left_out``: groups left out of between-group
    values (NaN)."""
    groups = [g.item() if hasattr(g, "item") else g for g in groups]
    left = {g.item() if hasattr(g, "item") else g for g in left_out}
    others = [g for g in groups if str(g) != str(privileged)]
    res: dict[str, float] = {}
    nan = float("nan")
    for m in names:
        if not any(f"{m}_group_{g}" in out for g in groups):
            continue
        base = out.get(f"{m}_group_{privileged}", nan)
        if any(str(g) == str(privileged) for g in left):
            base = nan
        vals = {g: (nan if g in left else out.get(f"{m}_group_{g}", nan)) - base for g in others}
        if len(groups) == 2 and len(others) == 1:
            res[f"{m}_signed_difference"] = float(vals[others[0]])
        else:
            res.update({f"{m}_signed_difference_group_{g}": float(v) for g, v in vals.items()})
    return res
