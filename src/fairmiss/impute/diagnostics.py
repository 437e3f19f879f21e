"""Imputation-fairness diagnostics (paper 000 §3; spec 000 §1.2-§1.6). Pure functions, no I/O.

Notation (spec 000 §1.4). For one feature j with mask column M_j and binary group S:

* ``share_among_missing`` p_s^ms = P(S = s | M_j = 1) -- Theorem 1's weight;
* ``missing_rate_given_group`` p_s = P(M_j = 1 | S = s) -- Theorem 2's weight;
* m_s = E[X_j | S = s], Var_s = Var[X_j | S = s] (ddof = 0) from the *true* (pre-injection) values.

Functions
---------
:func:`imputation_error_table`
    Per feature and group: n_missing, MSE (= L_s of Definition 1), MAE, bias, RMSE.
:func:`imputation_discrimination_risk`
    Definition 1 per feature: L_0, L_1 and Disc = |L_0 - L_1| on masked cells with known truth.
:func:`theorem1_factors`
    The three factors of Theorem 1, the product term, the predicted Disc of the optimal constant
    α*, of the observed mean α_obs and of any constant α, with ``stats="all"`` (population
    statistics of each group) or ``stats="masked"`` (exact identity on the masked rows).
:func:`disc_standard_error`
    Delta-method or bootstrap standard error of a measured Disc.
:func:`theorem1_report`
    Factors, predictions and measured Disc for oracle α*, observed-mean and any supplied imputers.
:func:`mismatch_bound` / :func:`mismatch_bound_from_model`
    Theorem 2 with the pushforward total variation of (h(f(X̃)), Y) on masked rows.
:func:`constrained_risk_minimum`
    Program (7) by enumeration over a finite hypothesis set (Definition 2, Theorem 3).
:func:`mcar_diagnostics`
    Pooled and per-group tests of M ⟂ X (Lemma 1 semantics).
:func:`cell_imputation_diagnostics`
    What the pipeline logs per cell: Definition 1 and per-group errors (averaged over draws for a
    stochastic / multiple imputer) and Theorem 1's factors, as flat metrics plus one table.
:func:`missing_share_table`
    Per feature and group: the share of the group's rows whose value is missing (which group loses
    most data; Theorem 2's weight p_g), for any number of groups (intersections included).
:func:`imputation_quality`
    Per feature and group, on the masked cells: accuracy and macro F1 of categorical imputations, and the
    KL divergence between the true and the imputed values' distributions, with the gaps between groups.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

logger = logging.getLogger(__name__)

__all__ = [
    "DiagnosticsError",
    "imputation_error_table",
    "imputation_discrimination_risk",
    "theorem1_factors",
    "disc_standard_error",
    "theorem1_report",
    "mismatch_bound",
    "mismatch_bound_from_model",
    "constrained_risk_minimum",
    "mcar_diagnostics",
    "cell_imputation_diagnostics",
    "missing_share_table",
    "imputation_quality",
]


class DiagnosticsError(ValueError):
    """Inconsistent inputs to a diagnostic (shapes, groups, masks)."""


# --------------------------------------------------------------------------- helpers
def _as_frame(X, columns=None) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    return pd.DataFrame(X, columns=columns if columns is not None else range(X.shape[1]))


def _groups(sensitive_features, n: int) -> np.ndarray:
    s = np.asarray(sensitive_features).reshape(-1)
    if len(s) != n:
        raise DiagnosticsError(f"sensitive_features has {len(s)} entries but the data have {n} rows")
    return s


def _aligned(X_true, X_imputed, mask):
    T = _as_frame(X_true)
    imp = _as_frame(X_imputed, columns=T.columns)
    M = _as_frame(mask, columns=T.columns).astype(bool)
    if imp.shape[0] != T.shape[0] or M.shape[0] != T.shape[0]:
        raise DiagnosticsError(f"row counts differ: true {T.shape[0]}, imputed {imp.shape[0]}, mask {M.shape[0]}")
    missing_cols = [c for c in M.columns if c not in T.columns or c not in imp.columns]
    if missing_cols:
        raise DiagnosticsError(f"mask columns {missing_cols} absent from the true or imputed data")
    return T, imp, M


# --------------------------------------------------------------------------- Definition 1
def imputation_error_table(X_true, X_imputed, mask, *, sensitive_features, columns=None) -> pd.DataFrame:
    """Per-feature, per-group imputation error on masked cells whose true value is known.

    Parameters
    ----------
    X_true : DataFrame or array of shape (n, d)
        Pre-injection values (NaN where the truth itself is unknown; such cells are skipped).
    X_imputed : DataFrame or array of shape (n, d)
        Imputed values (same column order as ``X_true`` when arrays are given).
    mask : DataFrame or array of shape (n, d), bool
        True where the entry was masked.
    sensitive_features : array-like of shape (n,)
    columns : list, optional
        Features to report; default: every column with at least one masked cell.

    Returns
    -------
    DataFrame
        Columns ``feature, group, n_missing, mse, rmse, mae, bias``; ``mse`` is L_s of
        Definition 1 (NaN when the group has no masked cell of that feature).
    """
    T, imp, M = _aligned(X_true, X_imputed, mask)
    s = _groups(sensitive_features, len(T))
    cols = [c for c in M.columns if M[c].any()] if columns is None else list(columns)
    rows = []
    for c in cols:
        truth = T[c].to_numpy(dtype=float)
        est = imp[c].to_numpy(dtype=float)
        m = M[c].to_numpy() & ~np.isnan(truth)
        if np.isnan(est[m]).any():
            raise DiagnosticsError(f"imputed column {c!r} still has NaN on masked cells")
        for g in np.unique(s):
            sel = m & (s == g)
            k = int(sel.sum())
            err = est[sel] - truth[sel]
            mse = float(np.mean(err**2)) if k else np.nan
            rows.append({"feature": c, "group": g.item() if hasattr(g, "item") else g, "n_missing": k, "mse": mse,
                         "rmse": float(np.sqrt(mse)) if k else np.nan,
                         "mae": float(np.mean(np.abs(err))) if k else np.nan,
                         "bias": float(np.mean(err)) if k else np.nan})
    return pd.DataFrame(rows, columns=["feature", "group", "n_missing", "mse", "rmse", "mae", "bias"])


def imputation_discrimination_risk(X_true, X_imputed, mask, *, sensitive_features, columns=None) -> pd.DataFrame:
    """Imputation discrimination risk of paper 000 Definition 1, per feature.

    L_s(f_imp) = E[(f_imp(X̃)_j − X_j)² | M_j = 1, S = s] and Disc = |L_0 − L_1|, estimated on the
    masked cells with known truth (multivariate rows: per feature j, rows with M_j = 1; spec 000
    §1.3).

    Parameters
    ----------
    X_true, X_imputed, mask, sensitive_features, columns
        As in :func:`imputation_error_table`. Exactly two groups are required.

    Returns
    -------
    DataFrame
        One row per feature: ``feature, group0, group1, n_missing_0, n_missing_1, L_0, L_1, disc``.
    """
    tab = imputation_error_table(X_true, X_imputed, mask, sensitive_features=sensitive_features, columns=columns)
    groups = list(pd.unique(tab["group"]))
    if len(groups) != 2:
        raise DiagnosticsError(f"Definition 1 needs exactly two groups, got {groups}")
    g0, g1 = sorted(groups)
    out = []
    for c, sub in tab.groupby("feature", sort=False):
        a = sub.set_index("group")
        out.append({"feature": c, "group0": g0, "group1": g1,
                    "n_missing_0": int(a.loc[g0, "n_missing"]), "n_missing_1": int(a.loc[g1, "n_missing"]),
                    "L_0": a.loc[g0, "mse"], "L_1": a.loc[g1, "mse"],
                    "disc": abs(a.loc[g0, "mse"] - a.loc[g1, "mse"])})
    return pd.DataFrame(out)


def missing_share_table(X, *, sensitive_features, columns=None) -> pd.DataFrame:
    """Per feature and group, how much of the group's data is missing.

    Parameters
    ----------
    X : DataFrame or array of shape (n, d)
        The data as the learner sees them (NaN = missing, real or injected).
    sensitive_features : array-like of shape (n,)
        Any number of groups (an intersection of several columns is one group).
    columns : list, optional
        Features to report; default: every column with at least one missing entry.

    Returns
    -------
    DataFrame
        Columns ``feature, group, n_rows, n_missing, share``: ``share`` = P(X_j missing | S = g) =
        ``n_missing / n_rows`` (paper 000's p_g), one row per feature and group present in ``sensitive_features``.
    """
    F = _as_frame(X)
    s = _groups(sensitive_features, len(F))
    miss = np.isnan(F.to_numpy(dtype=float))
    cols = [c for j, c in enumerate(F.columns) if miss[:, j].any()] if columns is None else list(columns)
    levels, inv = np.unique(s, return_inverse=True)
    n_rows = np.bincount(inv, minlength=len(levels))
    rows = []
    for c in cols:
        j = F.columns.get_loc(c)
        n_miss = np.bincount(inv, weights=miss[:, j], minlength=len(levels))
        for g, n, k in zip(levels, n_rows, n_miss):
            rows.append({"feature": c, "group": g.item() if hasattr(g, "item") else g, "n_rows": int(n),
                         "n_missing": int(k), "share": float(k / n)})
    return pd.DataFrame(rows, columns=["feature", "group", "n_rows", "n_missing", "share"])


# --------------------------------------------------------------------------- Theorem 1
def theorem1_factors(x_true, mask, *, sensitive_features, stats="all", alpha=None) -> dict:
    """Factors of paper 000 Theorem 1 for one feature (spec 000 §1.4).

    Disc(f*) = |(p₁^ms − p₀^ms)(m₁ − m₀)² + (Var₀ − Var₁)|, and for any constant α,
    Disc(α) = |(m₁ − m₀)(2α − m₀ − m₁) + Var₀ − Var₁|.

    Parameters
    ----------
    x_true : array-like of shape (n,)
        Pre-injection values of the feature.
    mask : array-like of shape (n,), bool
        True where the value was masked.
    sensitive_features : array-like of shape (n,)
        Binary group; the two sorted values are groups 0 and 1.
    stats : {"all", "masked"}, default="all"
        ``"all"``: m_s, Var_s over all rows of group s (the population statistics; the formula
        then predicts Disc under per-group MCAR). ``"masked"``: over masked rows only, with which
        Disc of α* = mean of masked true values equals the formula exactly (check T10).
    alpha : float, optional
        An extra constant to evaluate with the general form.

    Returns
    -------
    dict
        ``p0_ms, p1_ms`` (shares among missing), ``p0, p1`` (rates given group), ``m0, m1,
        var0, var1``, ``share_gap`` (p₁^ms − p₀^ms), ``mean_gap`` (m₁ − m₀), ``var_gap``
        (Var₀ − Var₁), ``product_term``, ``alpha_star``, ``alpha_obs`` (mean of observed values),
        ``predicted_disc`` (Theorem 1), ``predicted_disc_obs_mean`` and, if ``alpha`` is given,
        ``predicted_disc_alpha``.
    """
    if stats not in ("all", "masked"):
        raise DiagnosticsError(f"stats must be 'all' or 'masked', got {stats!r}")
    x = np.asarray(x_true, dtype=float).reshape(-1)
    m = np.asarray(mask, dtype=bool).reshape(-1)
    s = _groups(sensitive_features, len(x))
    if len(m) != len(x):
        raise DiagnosticsError(f"mask has {len(m)} entries, x_true has {len(x)}")
    if np.isnan(x).any():
        raise DiagnosticsError("x_true must be fully known (pre-injection values)")
    levels = np.unique(s)
    if len(levels) != 2:
        raise DiagnosticsError(f"Theorem 1 needs exactly two groups, got {levels.tolist()}")
    n_miss = m.sum()
    if n_miss == 0:
        raise DiagnosticsError("no masked entries: Theorem 1 is undefined")
    out = {}
    for k, g in enumerate(levels):
        ing = s == g
        ref = ing & m if stats == "masked" else ing
        if not ref.any():
            raise DiagnosticsError(f"group {g!r} has no rows for stats={stats!r}")
        out[f"p{k}_ms"] = float((m & ing).sum() / n_miss)
        out[f"p{k}"] = float((m & ing).sum() / ing.sum())
        out[f"m{k}"] = float(x[ref].mean())
        out[f"var{k}"] = float(x[ref].var())
    out["share_gap"] = out["p1_ms"] - out["p0_ms"]
    out["mean_gap"] = out["m1"] - out["m0"]
    out["var_gap"] = out["var0"] - out["var1"]
    out["product_term"] = out["share_gap"] * out["mean_gap"] ** 2
    out["predicted_disc"] = abs(out["product_term"] + out["var_gap"])
    out["alpha_star"] = out["p0_ms"] * out["m0"] + out["p1_ms"] * out["m1"]
    out["alpha_obs"] = float(x[~m].mean()) if (~m).any() else np.nan

    def _const(a):
        return abs(out["mean_gap"] * (2 * a - out["m0"] - out["m1"]) + out["var_gap"])

    out["predicted_disc_obs_mean"] = _const(out["alpha_obs"])
    if alpha is not None:
        out["predicted_disc_alpha"] = _const(float(alpha))
    return out


def disc_standard_error(x_true, x_imputed, mask, *, sensitive_features, method="delta", n_boot=1000,
                        random_state=None) -> float:
    """Standard error of the measured Disc = |L̂₀ − L̂₁| for one feature.

    Parameters
    ----------
    x_true, x_imputed : array-like of shape (n,)
    mask : array-like of shape (n,), bool
    sensitive_features : array-like of shape (n,), two groups
    method : {"delta", "bootstrap"}, default="delta"
        ``"delta"``: sqrt(Σ_s Var[(x̂−x)² | M=1, S=s] / n_s), imputed values held fixed.
        ``"bootstrap"``: resample masked rows within each group ``n_boot`` times.
    n_boot : int, default=1000
    random_state : int, Generator or None
        Used only by the bootstrap.

    Returns
    -------
    float
    """
    x = np.asarray(x_true, dtype=float).reshape(-1)
    xi = np.asarray(x_imputed, dtype=float).reshape(-1)
    m = np.asarray(mask, dtype=bool).reshape(-1)
    s = _groups(sensitive_features, len(x))
    levels = np.unique(s)
    if len(levels) != 2:
        raise DiagnosticsError(f"need exactly two groups, got {levels.tolist()}")
    sq = [(xi[m & (s == g)] - x[m & (s == g)]) ** 2 for g in levels]
    if any(len(a) < 2 for a in sq):
        raise DiagnosticsError("each group needs at least two masked cells for a standard error")
    if method == "delta":
        return float(np.sqrt(sum(a.var(ddof=1) / len(a) for a in sq)))
    if method != "bootstrap":
        raise DiagnosticsError(f"method must be 'delta' or 'bootstrap', got {method!r}")
    rng = np.random.default_rng(random_state)
    boots = np.empty(n_boot)
    for b in range(n_boot):
        l0, l1 = (a[rng.integers(0, len(a), len(a))].mean() for a in sq)
        boots[b] = abs(l0 - l1)
    return float(boots.std(ddof=1))


def theorem1_report(X_true, mask, *, sensitive_features, imputed: Mapping[str, object] | None = None,
                    columns=None) -> pd.DataFrame:
    """Theorem 1 report per feature: factors, predicted and measured Disc with standard errors.

    For every masked feature, reports the factors (``stats="all"``), the predicted Disc for the
    optimal constant α* and the observed mean, and the measured Disc (with delta-method SE) for
    the oracle α* (mean of the masked true values), the observed-mean imputer, and each matrix in
    ``imputed`` (e.g. k-NN, whose Disc has no closed form). It also reports the exact masked-rows
    identity residual (check T10).

    Parameters
    ----------
    X_true : DataFrame of shape (n, d)
    mask : DataFrame of shape (n, d), bool
    sensitive_features : array-like of shape (n,)
    imputed : mapping of name -> DataFrame of shape (n, d), optional
    columns : list, optional

    Returns
    -------
    DataFrame
        One row per (feature, imputer).
    """
    T = _as_frame(X_true)
    M = _as_frame(mask, columns=T.columns).astype(bool)
    s = _groups(sensitive_features, len(T))
    cols = [c for c in M.columns if M[c].any()] if columns is None else list(columns)
    rows = []
    for c in cols:
        x = T[c].to_numpy(dtype=float)
        m = M[c].to_numpy()
        f = theorem1_factors(x, m, sensitive_features=s, stats="all")
        fm = theorem1_factors(x, m, sensitive_features=s, stats="masked")
        cands = {"oracle_alpha_star": np.where(m, x[m].mean(), x),
                 "observed_mean": np.where(m, f["alpha_obs"], x)}
        for name, Z in (imputed or {}).items():
            cands[name] = _as_frame(Z, columns=T.columns)[c].to_numpy(dtype=float)
        for name, xi in cands.items():
            l = [np.mean((xi[m & (s == g)] - x[m & (s == g)]) ** 2) for g in np.unique(s)]
            measured = abs(l[0] - l[1])
            try:
                se = disc_standard_error(x, xi, m, sensitive_features=s)
            except DiagnosticsError:
                se = np.nan
            predicted = {"oracle_alpha_star": f["predicted_disc"],
                         "observed_mean": f["predicted_disc_obs_mean"]}.get(name, np.nan)
            rows.append({"feature": c, "imputer": name, **{k: f[k] for k in (
                "p0_ms", "p1_ms", "p0", "p1", "m0", "m1", "var0", "var1", "share_gap", "mean_gap", "var_gap",
                "product_term", "alpha_star", "alpha_obs")},
                "predicted_disc": predicted, "measured_disc": measured, "se": se,
                "z": (measured - predicted) / se if se and np.isfinite(predicted) else np.nan,
                "masked_identity_residual": (abs(measured - fm["predicted_disc"])
                                             if name == "oracle_alpha_star" else np.nan)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Theorem 2
def _tv_pushforward(a_train, a_test, y) -> float:
    """Total variation between the empirical laws of (a_train, y) and (a_test, y)."""
    keys = np.unique(np.concatenate([a_train, a_test]))
    ys = np.unique(y)
    n = len(y)
    tv = 0.0
    for a in keys:
        for yy in ys:
            tv += abs(np.sum((a_train == a) & (y == yy)) - np.sum((a_test == a) & (y == yy)))
    return 0.5 * tv / n


def mismatch_bound(y_true, y_pred_train, y_pred_test, *, sensitive_features, missing_rows, K=1.0) -> dict:
    """Paper 000 Theorem 2 (eq. 6) on empirical data with the pushforward TV (spec 000 §1.5).

    |L₀(h∘f^test) − L₁(h∘f^test)| ≤ |L₀(h∘f^train) − L₁(h∘f^train)| + K Σ_s p_s D_TV(Q_s^train, Q_s^test),

    with the 0-1 loss (K = 1), p_s = P(M = 1 | S = s) and Q_s^· the empirical law of (ŷ, y) on
    the masked rows of group s. The empirical inequality holds deterministically when both
    imputers are the identity on complete rows (checked: ``complete_rows_agree``).

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred_train : array-like of shape (n,)
        Predictions h(f^train(X̃)), discrete labels.
    y_pred_test : array-like of shape (n,)
        Predictions h(f^test(X̃)).
    sensitive_features : array-like of shape (n,), two groups
    missing_rows : array-like of shape (n,), bool
        M_i = 1 iff row i has any imputed entry.
    K : float, default=1.0
        Loss bound (1 for the 0-1 loss).

    Returns
    -------
    dict
        ``lhs, rhs, slack`` (rhs − lhs), ``disc_train``, ``holds``, ``complete_rows_agree`` and,
        per group k, ``L{k}_train, L{k}_test, p{k}, tv{k}, coupling{k}`` (P(ŷ_train ≠ ŷ_test | M=1,
        S=s), an upper bound on ``tv{k}``).
    """
    y = np.asarray(y_true).reshape(-1)
    a, b = np.asarray(y_pred_train).reshape(-1), np.asarray(y_pred_test).reshape(-1)
    M = np.asarray(missing_rows, dtype=bool).reshape(-1)
    s = _groups(sensitive_features, len(y))
    if not (len(a) == len(b) == len(M) == len(y)):
        raise DiagnosticsError("y_true, predictions and missing_rows must have the same length")
    levels = np.unique(s)
    if len(levels) != 2:
        raise DiagnosticsError(f"Theorem 2 needs exactly two groups, got {levels.tolist()}")
    out = {"complete_rows_agree": bool(np.array_equal(a[~M], b[~M]))}
    if not out["complete_rows_agree"]:
        logger.warning("predictions differ on complete rows: the imputers are not the identity there; "
                       "Theorem 2's bound need not hold")
    loss_tr, loss_te = (a != y).astype(float), (b != y).astype(float)
    penalty = 0.0
    for k, g in enumerate(levels):
        ing = s == g
        mg = ing & M
        out[f"L{k}_train"] = float(loss_tr[ing].mean())
        out[f"L{k}_test"] = float(loss_te[ing].mean())
        out[f"p{k}"] = float(mg.sum() / ing.sum())
        out[f"tv{k}"] = _tv_pushforward(a[mg], b[mg], y[mg]) if mg.any() else 0.0
        out[f"coupling{k}"] = float((a[mg] != b[mg]).mean()) if mg.any() else 0.0
        penalty += out[f"p{k}"] * out[f"tv{k}"]
    out["disc_train"] = abs(out["L0_train"] - out["L1_train"])
    out["lhs"] = abs(out["L0_test"] - out["L1_test"])
    out["rhs"] = out["disc_train"] + K * penalty
    out["slack"] = out["rhs"] - out["lhs"]
    out["holds"] = bool(out["lhs"] <= out["rhs"] + 1e-12)
    return out


def mismatch_bound_from_model(estimator, X_missing, y_true, *, sensitive_features, imputer_train, imputer_test,
                              K=1.0) -> dict:
    """Theorem 2 bound from a fitted model and two fitted imputers.

    Parameters
    ----------
    estimator : fitted classifier
        h, trained on data imputed by ``imputer_train``.
    X_missing : array-like of shape (n, d)
        Evaluation data with NaN.
    y_true : array-like of shape (n,)
    sensitive_features : array-like of shape (n,)
    imputer_train, imputer_test : fitted transformers
        f^train and f^test (for :class:`~fairmiss.impute.imputers.MismatchImputer`, pass its
        ``train_imputer_`` and the imputer itself).
    K : float, default=1.0

    Returns
    -------
    dict
        As :func:`mismatch_bound`.
    """
    X = np.asarray(X_missing, dtype=float)
    rows = np.isnan(X).any(axis=1)
    tr = getattr(imputer_train, "transform_train", imputer_train.transform)
    return mismatch_bound(y_true, estimator.predict(tr(X)), estimator.predict(imputer_test.transform(X)),
                          sensitive_features=sensitive_features, missing_rows=rows, K=K)


# --------------------------------------------------------------------------- Definition 2
def constrained_risk_minimum(predictions: Mapping[object, np.ndarray], y_true, *, sensitive_features, eps,
                             sample_weight=None) -> tuple[float, object]:
    """Optimal value of program (7) over a finite hypothesis set, by enumeration.

    min_h L(h) s.t. |L₀(h) − L₁(h)| ≤ ε, with the 0-1 loss. An imputation is (ε, δ)-conformal
    for the class iff this value is ≤ δ (paper 000 Definition 2).

    Parameters
    ----------
    predictions : mapping hypothesis -> array of shape (n,)
        Predictions of each hypothesis on the imputed data.
    y_true : array-like of shape (n,)
    sensitive_features : array-like of shape (n,), two groups
    eps : float
    sample_weight : array-like of shape (n,), optional
        Probability weights of the rows (default uniform).

    Returns
    -------
    (value, hypothesis)
        ``(inf, None)`` if no hypothesis is feasible.
    """
    y = np.asarray(y_true).reshape(-1)
    s = _groups(sensitive_features, len(y))
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    levels = np.unique(s)
    if len(levels) != 2:
        raise DiagnosticsError(f"program (7) needs exactly two groups, got {levels.tolist()}")
    best, arg = np.inf, None
    for h, pred in predictions.items():
        err = (np.asarray(pred).reshape(-1) != y).astype(float)
        L = [np.average(err[s == g], weights=w[s == g]) for g in levels]
        if abs(L[0] - L[1]) <= eps:
            total = float(np.average(err, weights=w))
            if total < best:
                best, arg = total, h
    return best, arg


# --------------------------------------------------------------------------- Lemma 1
def mcar_diagnostics(x_true, mask, *, sensitive_features) -> pd.DataFrame:
    """Test M ⟂ X pooled and within each group (Lemma 1: neither implies the other).

    Binary ``x_true`` uses a 2x2 chi-square test (no continuity correction); otherwise Welch's
    t-test of X between masked and observed rows.

    Parameters
    ----------
    x_true : array-like of shape (n,)
        Pre-injection values.
    mask : array-like of shape (n,), bool
    sensitive_features : array-like of shape (n,)

    Returns
    -------
    DataFrame
        Rows ``scope`` in {"pooled", "group=<s>"} with ``n, missing_rate, test, statistic,
        p_value``.
    """
    x = np.asarray(x_true, dtype=float).reshape(-1)
    m = np.asarray(mask, dtype=bool).reshape(-1)
    s = _groups(sensitive_features, len(x))
    binary = len(np.unique(x)) <= 2
    rows = []
    scopes = [("pooled", np.ones(len(x), bool))] + [(f"group={g}", s == g) for g in np.unique(s)]
    for name, sel in scopes:
        xs, ms = x[sel], m[sel]
        if binary:
            vals = np.unique(x)
            table = np.array([[np.sum((ms == a) & (xs == v)) for v in vals] for a in (False, True)])
            if (table.sum(axis=0) == 0).any() or (table.sum(axis=1) == 0).any():
                stat, p, test = np.nan, np.nan, "chi2"
            else:
                stat, p = sps.chi2_contingency(table, correction=False)[:2]
                test = "chi2"
        else:
            if ms.sum() < 2 or (~ms).sum() < 2:
                stat, p = np.nan, np.nan
            else:
                stat, p = sps.ttest_ind(xs[ms], xs[~ms], equal_var=False)
            test = "welch_t"
        rows.append({"scope": name, "n": int(sel.sum()), "missing_rate": float(ms.mean()), "test": test,
                     "statistic": float(stat), "p_value": float(p)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- per-cell summary
def cell_imputation_diagnostics(X_true: pd.DataFrame, X_imputed, mask: pd.DataFrame, *,
                                sensitive_features, left_out=()) -> tuple[dict, pd.DataFrame]:
    """Imputation-fairness diagnostics of one experiment cell (flat metrics + one table).

    For every column of ``mask`` with at least one masked cell whose true value is known:

    * per group g: L_g = MSE (Definition 1), RMSE, MAE, bias of the imputed values, over the masked
      cells; for a list of imputed matrices (the m draws of a multiple imputer) the per-draw MSE,
      MAE and bias are averaged (L_g of a stochastic imputer is an expectation over its draws) and
      RMSE = sqrt(mean MSE);
    * Disc = |L_0 − L_1| (Definition 1) for two groups; for k groups (e.g. intersections) its extension
      max_g L_g − min_g L_g over the groups with masked cells, the pair attaining it named in the table
      (``disc_high_group`` / ``disc_low_group``; a tie goes to the lower group code); groups in ``left_out``
      (fewer test rows than ``min_group_size``) keep their own errors and are left out of Disc;
    * Theorem 1's factors with population statistics of the evaluated rows (``stats="all"``): the
      share gap p₁^ms − p₀^ms, the mean gap m₁ − m₀, the variance gap Var₀ − Var₁ and the predicted
      Disc of the optimal constant imputer α* (skipped when the truth has unknown entries).

    Parameters
    ----------
    X_true : DataFrame of shape (n, d)
        Values before injection (NaN where the truth itself is unknown).
    X_imputed : DataFrame or array of shape (n, d), or a list of them
        The imputed matrix/matrices, columns in the order of ``X_true``.
    mask : DataFrame of shape (n, d), bool
        Injected missingness (True = masked).
    sensitive_features : array-like of shape (n,)
    left_out : collection, optional
        Group codes left out of Disc.

    Returns
    -------
    (metrics, table)
        ``metrics``: ``imp_disc.<col>``, ``imp_mse.<col>_group_<g>``, ``imp_rmse.<col>_group_<g>``,
        ``imp_bias.<col>_group_<g>``, ``imp_thm1_disc.<col>``; ``table``: one row per feature and
        group with ``n_missing, mse, rmse, mae, bias, disc`` and the Theorem 1 quantities.
    """
    T = _as_frame(X_true)
    Tv = T.to_numpy(dtype=float)
    Mv = np.asarray(mask.to_numpy() if isinstance(mask, pd.DataFrame) else mask, dtype=bool)
    if Mv.shape != Tv.shape:
        raise DiagnosticsError(f"mask has shape {Mv.shape}, X_true has {Tv.shape}")
    s = _groups(sensitive_features, len(T))
    left = {g.item() if hasattr(g, "item") else g for g in left_out}
    known = Mv & ~np.isnan(Tv)
    cols = [c for j, c in enumerate(T.columns) if known[:, j].any()]
    draws = X_imputed if isinstance(X_imputed, list) else [X_imputed]
    if not cols or not draws:
        return {}, pd.DataFrame()
    d = T.shape[1]  # imputed matrices may carry indicator columns after the d features

    def _first_d(Z):
        Z = Z.iloc[:, :d].to_numpy(dtype=float) if isinstance(Z, pd.DataFrame) else np.asarray(Z, dtype=float)
        if Z.ndim != 2 or Z.shape[1] < d:
            raise DiagnosticsError(f"imputed matrix has shape {Z.shape}; expected at least {d} columns")
        return pd.DataFrame(Z[:, :d], columns=T.columns)

    # numpy in, one small table out: this runs once per experiment cell and must stay at a few ms
    Tf, Mf = pd.DataFrame(Tv, columns=T.columns), pd.DataFrame(Mv, columns=T.columns)
    tabs = [imputation_error_table(Tf, _first_d(Z), Mf, sensitive_features=s, columns=cols) for Z in draws]
    if len(tabs) == 1:
        records = tabs[0].to_dict("records")
    else:
        records = (pd.concat(tabs).groupby(["feature", "group"], sort=False, as_index=False)
                   .agg(n_missing=("n_missing", "first"), mse=("mse", "mean"), mae=("mae", "mean"),
                        bias=("bias", "mean")).to_dict("records"))
    by_feature: dict = {}
    for r in records:
        r["rmse"] = float(np.sqrt(r["mse"])) if r["n_missing"] else np.nan
        r["n_draws"] = len(draws)
        by_feature.setdefault(r["feature"], []).append(r)
    levels = np.unique(s)
    metrics: dict = {}
    rows = []
    for j, c in enumerate(T.columns):
        if c not in by_feature:
            continue
        recs = by_feature[c]
        for r in recs:
            if r["n_missing"]:
                for k in ("mse", "rmse", "bias"):
                    metrics[f"imp_{k}.{c}_group_{r['group']}"] = float(r[k])
        # Disc over the groups with masked cells, less those left out: |L_0 - L_1| for two groups (Definition 1),
        # max_g L_g - min_g L_g for more (fairlearn's between_groups); a tie goes to the lower group code
        pool = [r for r in recs if r["n_missing"] and r["group"] not in left]
        disc, hi, lo = np.nan, None, None
        if len(pool) >= 2:
            hi, lo = max(pool, key=lambda r: r["mse"]), min(pool, key=lambda r: r["mse"])
            disc = float(hi["mse"] - lo["mse"])
            hi, lo = hi["group"], lo["group"]
            metrics[f"imp_disc.{c}"] = disc
        f = {}
        try:
            f = theorem1_factors(Tv[:, j], Mv[:, j], sensitive_features=s, stats="all")
            metrics[f"imp_thm1_disc.{c}"] = f["predicted_disc"]
        except DiagnosticsError as exc:
            logger.debug("Theorem 1 factors skipped for %r: %s", c, exc)
        for k, r in enumerate(recs):
            rows.append({**r, "disc": disc, "disc_high_group": hi, "disc_low_group": lo,
                         "left_out": r["group"] in left,
                         "p_given_group": f.get(f"p{k}", np.nan), "share_among_missing": f.get(f"p{k}_ms", np.nan),
                         "true_mean": f.get(f"m{k}", np.nan), "true_var": f.get(f"var{k}", np.nan),
                         **{k2: f.get(k2, np.nan) for k2 in ("share_gap", "mean_gap", "var_gap", "product_term",
                                                             "alpha_star", "alpha_obs")},
                         "thm1_predicted_disc": f.get("predicted_disc", np.nan)})
    table = pd.DataFrame(rows, columns=["feature", "group", "n_missing", "n_draws", "mse", "rmse", "mae", "bias",
                                        "disc", "disc_high_group", "disc_low_group", "left_out", "p_given_group", "share_among_missing", "true_mean", "true_var",
                                        "share_gap", "mean_gap", "var_gap", "product_term", "alpha_star",
                                        "alpha_obs", "thm1_predicted_disc"])
    return metrics, table


# --------------------------------------------------------------------------- imputation quality
#: equal-width bins of a numeric column's KL divergence
KL_BINS = 10
#: pseudo-count added to every bin of both distributions before the KL divergence (Laplace smoothing)
KL_ALPHA = 1.0


def _nearest_level(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Each value replaced by the nearest of the sorted ``levels`` (a tie goes to the lower level)."""
    pos = np.clip(np.searchsorted(levels, values), 1, max(len(levels) - 1, 1))
    lo, hi = levels[pos - 1], levels[np.minimum(pos, len(levels) - 1)]
    return np.where(np.abs(values - lo) <= np.abs(hi - values), lo, hi)


def _kl(p_counts: np.ndarray, q_counts: np.ndarray, alpha: float) -> float:
    """KL(P ‖ Q) in nats of two count vectors over the same bins, each bin given ``alpha`` more counts."""
    p = (p_counts + alpha) / (p_counts.sum() + alpha * len(p_counts))
    q = (q_counts + alpha) / (q_counts.sum() + alpha * len(q_counts))
    return float(np.sum(p * np.log(p / q)))


def imputation_quality(X_true, X_imputed, mask, *, sensitive_features, categorical=(), levels=None,
                       left_out=(), bins: int = KL_BINS, alpha: float = KL_ALPHA) -> tuple[dict, pd.DataFrame]:
    """How well the imputed values match the true ones on the masked cells, per feature and group.

    For every column with a masked cell whose true value is known, over those cells:

    * ``categorical`` columns (binary or categorical features): the imputed value read as the nearest of the
      column's ``levels`` (default: the distinct true values of the masked cells; a tie goes to the lower level
      — a mean imputation of 0.4 in a 0/1 column reads as 0), then ``imp_acc`` = the share of cells whose read
      value equals the truth (scikit-learn's ``accuracy_score``) and ``imp_f1`` = the macro F1 over the levels
      present in the truth or the read values (``f1_score(average="macro", zero_division=0)``);
    * numeric columns: ``imp_rmse.<col>``, the root mean squared error over every masked cell of the column
      (per group it is the diagnostics' ``imp_rmse.<col>_group_<g>``);
    * every column: ``imp_kl`` = KL(P_true ‖ Q_imputed) in nats between the distributions of the true and the
      imputed values, on shared bins: a categorical column's levels (after the reading above); a numeric
      column's ``bins`` equal-width bins over ``[min, max]`` of the true and imputed values of all its masked
      cells (every group binned alike, so the groups' values compare). Both histograms get ``alpha``
      pseudo-counts per bin (Laplace smoothing: the divergence stays finite when an imputer puts nothing in a
      bin the truth uses — a constant imputation puts everything in one bin). 0 when the two histograms are
      equal; larger when the imputations' distribution is further from the truth's.

    Overall (``imp_acc.<col>``, every masked cell), per group (``imp_acc.<col>_group_<g>``) and the gap between
    groups, max − min over the groups with masked cells less ``left_out`` (``imp_acc_gap.<col>``, as ``imp_disc``
    for the MSE); likewise ``imp_f1`` and ``imp_kl``. A list of imputed matrices (the draws of a multiple
    imputer) gives the mean of each value over the draws.

    Returns ``(metrics, table)``: the flat metrics, and one row per feature and group (``group`` ``"all"`` for
    the overall row) with ``n_missing, accuracy, macro_f1, kl``.
    """
    from sklearn.metrics import accuracy_score, f1_score

    T = _as_frame(X_true)
    Tv = T.to_numpy(dtype=float)
    Mv = np.asarray(mask.to_numpy() if isinstance(mask, pd.DataFrame) else mask, dtype=bool)
    if Mv.shape != Tv.shape:
        raise DiagnosticsError(f"mask has shape {Mv.shape}, X_true has {Tv.shape}")
    s = _groups(sensitive_features, len(T))
    left = {g.item() if hasattr(g, "item") else g for g in left_out}
    cat = set(categorical)
    known = Mv & ~np.isnan(Tv)
    draws = X_imputed if isinstance(X_imputed, list) else [X_imputed]
    d = T.shape[1]
    draws = [np.asarray(Z.iloc[:, :d] if isinstance(Z, pd.DataFrame) else Z, dtype=float)[:, :d] for Z in draws]
    metrics: dict = {}
    rows = []
    for j, c in enumerate(T.columns):
        m = known[:, j]
        if not m.any():
            continue
        truth, sg = Tv[m, j], s[m]
        if any(np.isnan(Z[m, j]).any() for Z in draws):
            raise DiagnosticsError(f"imputed column {c!r} still has NaN on masked cells")
        is_cat = c in cat
        if is_cat:
            lv = np.unique(truth) if levels is None or c not in levels else np.unique(np.asarray(levels[c], float))
            ests = [_nearest_level(Z[m, j], lv) for Z in draws]
            edges = None
        else:
            ests = [Z[m, j] for Z in draws]
            lo = min(truth.min(), *(e.min() for e in ests))
            hi = max(truth.max(), *(e.max() for e in ests))
            edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)

        def hist(v):
            if edges is None:
                return np.array([(v == x).sum() for x in lv], dtype=float)
            return np.histogram(v, bins=edges)[0].astype(float)

        def values(sel):
            t = truth[sel]
            out = {"n_missing": int(sel.sum())}
            if not sel.any():
                return {**out, "accuracy": np.nan, "macro_f1": np.nan, "kl": np.nan, "rmse": np.nan}
            kl = [_kl(hist(t), hist(e[sel]), alpha) for e in ests]
            out["kl"] = float(np.mean(kl))
            if is_cat:
                out["accuracy"] = float(np.mean([accuracy_score(t, e[sel]) for e in ests]))
                out["macro_f1"] = float(np.mean([f1_score(t, e[sel], average="macro", zero_division=0)
                                                 for e in ests]))
                out["rmse"] = np.nan
            else:
                out["accuracy"] = out["macro_f1"] = np.nan
                # the draws' mean squared error, then the root (as imp_rmse.<col>_group_<g> of the diagnostics)
                out["rmse"] = float(np.sqrt(np.mean([np.mean((e[sel] - t) ** 2) for e in ests])))
            return out

        names = {"accuracy": "imp_acc", "macro_f1": "imp_f1", "kl": "imp_kl"}
        used = [k for k in names if is_cat or k == "kl"]
        overall = values(np.ones(len(truth), dtype=bool))
        rows.append({"feature": c, "group": "all", **overall})
        metrics.update({f"{names[k]}.{c}": overall[k] for k in used})
        if not is_cat:  # over every masked cell of a numeric column (the per-group values: the diagnostics')
            metrics[f"imp_rmse.{c}"] = overall["rmse"]
        pool = {k: [] for k in used}
        for g in np.unique(s):
            gv = g.item() if hasattr(g, "item") else g
            r = values(sg == g)
            rows.append({"feature": c, "group": gv, **r})
            if r["n_missing"]:
                for k in used:
                    metrics[f"{names[k]}.{c}_group_{gv}"] = r[k]
                    if gv not in left:
                        pool[k].append(r[k])
        for k in used:
            if len(pool[k]) >= 2:
                metrics[f"{names[k]}_gap.{c}"] = float(max(pool[k]) - min(pool[k]))
    return metrics, pd.DataFrame(rows, columns=["feature", "group", "n_missing", "accuracy", "macro_f1", "kl", "rmse"])
