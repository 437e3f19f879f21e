"""Program 1 of paper 000 (corrected): one fair depth-D tree with MIA splits, in Pyomo.

The module is split the way odtlearn splits its formulations:

* :class:`TreeIndex` -- breadth-first indexing of branching nodes and leaves (spec 000 §2.2).
* :class:`BatchData` / :func:`prepare_batch` -- the per-batch inputs a_ij, m_ij, y_i, s_i,
  duplicate rows merged into integer weights k_i (§2.3).
* :func:`build_model` -- composed of :func:`_add_variables`, :func:`_add_tree_structure`,
  :func:`_add_mia_routing`, :func:`_add_leaf_routing`, :func:`_add_leaf_labels_and_loss`,
  :func:`_add_fairness` and :func:`_set_objective`; each is preceded by the maths it encodes,
  with equation numbers of Program 1 (Appendix B) and the errata of spec 000 §2.6.
* :class:`MIATree` -- a fitted tree as numpy arrays ``(feature, threshold, missing_left,
  value)``; prediction by MIA routing, no solver involved.
* :func:`extract_tree` -- the canonical tree recomputed from (P, q, c) on the batch
  (post-processing rules of §2.8); routing variables z, w and counts f are never trusted.
* :func:`set_start_from_tree` -- a complete MIP start (every variable) from a tree (§2.9).
* :func:`model_max_violation` -- largest constraint violation at the variables' current
  values (used to check that a MIP start is feasible, test T8).

All features are assumed already scaled to [0, 1] on the training data (§2.8); thresholds
``q_v`` live in that space and are bounded to ``[-2 eps_s, 1]``. Missing entries are NaN.

MIA semantics (§2.1): an observed value goes left iff ``x_j <= q_v``; a missing value goes
left iff ``c_v = 1``. Leaf index = binary number of "went right" decisions, root first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyomo.environ as pyo
from fairmiss.learners.fair_mip_forest.mia import (  # noqa: F401  (re-exported)
    Fairness,
    FAIRNESS_OPTIONS,
    _TERMS,
    ERR_ZERO_DENOMINATOR,
    TreeIndex,
    BatchData,
    prepare_batch,
    fairness_denominators,
    MIATree,
    canonicalize,
    tree_objective,
)

logger = logging.getLogger(__name__)


__all__ = [
    "FAIRNESS_OPTIONS",
    "FormulationOptions",
    "canonicalize",
    "BatchData",
    "MIATree",
    "TreeIndex",
    "build_model",
    "extract_tree",
    "fairness_denominators",
    "model_max_violation",
    "prepare_batch",
    "set_start_from_tree",
    "tree_objective",
]


# --------------------------------------------------------------------------------------
# Formulation
# --------------------------------------------------------------------------------------
@dataclass
class FormulationOptions:
    """Switches of :func:`build_model` (defaults = corrected Program 1 of spec 000 §2.6/§2.8).

    Attributes
    ----------
    eps_split : float
        ε_s in (18); must not exceed the smallest gap between distinct scaled values.
    eps_count : float
        ε_c in (25'); any value in (0, 1] is exact because E_l is an integer.
    eps_fair : float
        ε_f in (30), (31), (33), (34); 0 is exact (counts are integers).
    big_m : {"uniform", "tight"}
        "uniform": M_split = 2 and M_count = n + 1 (§2.8). "tight": per-row M_split from the
        row's values and per-constraint M_count from class/group totals.
    routing : {"paper", "aggregated"}
        "paper": (24) as printed, one row per (i, l, ancestor). "aggregated":
        Σ_{l∈𝓛^L(v)} z_il ≤ w_iv and Σ_{l∈𝓛^R(v)} z_il ≤ 1 - w_iv (same integer set,
        tighter LP, fewer rows).
    ordering_cuts : bool
        Add the valid inequalities w^nm_{i',v} ≤ w^nm_{i,v} + 1 - p_{v,j} for consecutive
        a_ij ≤ a_i'j (a threshold cannot send a larger value left and a smaller one right).
    label_rule : {"majority", "free"}
        "majority" keeps the paper's (25')-(28), which fix u_l to the majority label (ties
        -> 1). "free" drops (25'), (26') and the upper bounds (27) so a leaf may be labelled
        against its majority to gain fairness (§2.6 item 3).
    printed_25_26 : bool
        Use (25)-(26) exactly as printed (infeasible; regression guard T4).
    omit_w_upper : bool
        Omit the erratum w ≤ w^(1) + w^(2) (anti-test T5).
    eo_weight : float
        Weight of |ΔFPR| + |ΔFNR| for equalized odds (1 = paper, 0.5 = [REPO]).
    """

    eps_split: float = 1e-3
    eps_count: float = 1.0
    eps_fair: float = 0.0
    big_m: Literal["uniform", "tight"] = "uniform"
    routing: Literal["paper", "aggregated"] = "paper"
    ordering_cuts: bool = False
    label_rule: Literal["majority", "free"] = "majority"
    printed_25_26: bool = False
    omit_w_upper: bool = False
    eo_weight: float = 1.0
    extra: dict = field(default_factory=dict)


def build_model(
    batch: BatchData,
    *,
    depth: int,
    lambda_: float = 0.0,
    fairness: Fairness = "none",
    options: FormulationOptions | None = None,
) -> pyo.ConcreteModel:
    """Build the corrected Program 1 for one batch.

    Parameters
    ----------
    batch : BatchData
        Output of :func:`prepare_batch` on features scaled to [0, 1].
    depth : int
        Tree depth D >= 1.
    lambda_ : float
        Fairness weight λ >= 0. With λ = 0 or ``fairness="none"`` the fairness block is
        dropped (§2.7).
    fairness : {"none", "accuracy", "fpr", "fnr", "equalized_odds"}
        Regulariser.
    options : FormulationOptions, optional
        Formulation switches.

    Returns
    -------
    pyomo.environ.ConcreteModel
        With attributes ``tree_index``, ``batch``, ``terms``, ``options`` attached.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if lambda_ < 0:
        raise ValueError(f"lambda_ must be >= 0, got {lambda_}")
    if fairness not in FAIRNESS_OPTIONS:
        raise ValueError(f"fairness must be one of {FAIRNESS_OPTIONS}, got {fairness!r}")
    opts = options or FormulationOptions()
    terms = _TERMS[fairness] if lambda_ > 0 else ()
    dens = {t: fairness_denominators(batch, t) for t in terms}

    model = pyo.ConcreteModel(name=f"fair_mip_tree_D{depth}")
    model.tree_index = TreeIndex(depth)
    model.batch = batch
    model.terms = terms
    model.denominators = dens
    model.options_ = opts
    model.lambda_ = float(lambda_)
    _add_variables(model)
    _add_tree_structure(model)
    _add_mia_routing(model)
    _add_leaf_routing(model)
    _add_leaf_labels_and_loss(model)
    _add_fairness(model)
    _set_objective(model)
    return model


def _add_variables(model: pyo.ConcreteModel) -> None:
    r"""Variables of Program 1 (§2.4).

    p_{v,j}, c_v, u_l, w_{i,v}, w^{nm}_{i,v}, w^{(1)}_{i,v}, w^{(2)}_{i,v}, z_{i,l} ∈ {0,1};
    q_v ∈ [-2ε_s, 1]  (q_v = -ε_s is MIA's "q = -∞", q_v = 1 sends every observed value left);
    loss_l ∈ [0, n];   f_{t,l,g} ∈ [0, n_g]  for each fairness term t;   ℓ^{fair}_t ≥ 0.
    """
    b, ti, eps = model.batch, model.tree_index, model.options_.eps_split
    model.V = pyo.Set(initialize=list(ti.nodes), ordered=True)
    model.L = pyo.Set(initialize=list(ti.leaves), ordered=True)
    model.J = pyo.Set(initialize=list(range(b.a.shape[1])), ordered=True)
    model.I = pyo.Set(initialize=list(range(len(b.y))), ordered=True)
    model.G = pyo.Set(initialize=[0, 1], ordered=True)
    model.T = pyo.Set(initialize=list(model.terms), ordered=True)

    model.p = pyo.Var(model.V, model.J, domain=pyo.Binary)
    model.q = pyo.Var(model.V, bounds=(-2 * eps, 1.0))
    model.c = pyo.Var(model.V, domain=pyo.Binary)
    model.u = pyo.Var(model.L, domain=pyo.Binary)
    model.wnm = pyo.Var(model.I, model.V, domain=pyo.Binary)
    model.w1 = pyo.Var(model.I, model.V, domain=pyo.Binary)
    model.w2 = pyo.Var(model.I, model.V, domain=pyo.Binary)
    model.w = pyo.Var(model.I, model.V, domain=pyo.Binary)
    model.z = pyo.Var(model.I, model.L, domain=pyo.Binary)
    model.loss = pyo.Var(model.L, bounds=(0, b.n))
    n_g = {g: int(b.k[b.s == g].sum()) for g in (0, 1)}
    model.f = pyo.Var(model.T, model.L, model.G, bounds=lambda _m, _t, _l, g: (0, n_g[g]))
    model.lfair = pyo.Var(model.T, domain=pyo.NonNegativeReals)


def _xbar(model, i, v):
    """x̄_{i,v} = Σ_j p_{v,j} (1 - m_ij) x_ij."""
    a = model.batch.a
    return sum(float(a[i, j]) * model.p[v, j] for j in model.J if a[i, j] != 0.0)


def _missing_sel(model, i, v):
    """1 - o_{i,v} = Σ_j p_{v,j} m_ij  (1 iff the selected feature is missing for row i)."""
    m = model.batch.m
    return sum(model.p[v, j] for j in model.J if m[i, j])


def _add_tree_structure(model: pyo.ConcreteModel) -> None:
    r"""Structure constraints (17).

    Σ_j p_{v,j} = 1  ∀v    (one feature per branching node)
    Σ_l z_{i,l} = 1  ∀i    (each row reaches exactly one leaf)
    """
    model.one_feature = pyo.Constraint(model.V, rule=lambda m, v: sum(m.p[v, j] for j in m.J) == 1)
    model.one_leaf = pyo.Constraint(model.I, rule=lambda m, i: sum(m.z[i, l] for l in m.L) == 1)


def _add_mia_routing(model: pyo.ConcreteModel) -> None:
    r"""MIA routing at every node for every row, (18)-(23) with erratum 1.

    (18)  q_v - x̄_{i,v} ≤ M^{18}_i w^{nm}_{i,v} - ε_s (1 - w^{nm}_{i,v})
    (19)  q_v - x̄_{i,v} ≥ -M^{19}_i (1 - w^{nm}_{i,v})
          i.e. w^{nm} = 1 ⇔ q_v ≥ x̄  and  w^{nm} = 0 ⇔ q_v ≤ x̄ - ε_s.
    (20)  w^{(1)} + 1 ≥ o_{i,v} + w^{nm}             (w^{(1)} = o AND w^{nm})
    (21)  w^{(1)} ≤ o_{i,v};  w^{(1)} ≤ w^{nm}
    (22)  w^{(2)} + 1 ≥ (1 - o_{i,v}) + c_v;  w^{(2)} ≤ 1 - o_{i,v};  w^{(2)} ≤ c_v
    (23)  w ≥ w^{(1)};  w ≥ w^{(2)};  and the missing upper half  w ≤ w^{(1)} + w^{(2)}.

    "uniform" big-M: M^{18} = M^{19} = 2. "tight": q ≤ 1 and x̄ ≥ min_j a_ij give
    M^{18}_i = 1 - min_j a_ij; q ≥ -2ε_s and x̄ ≤ max_j a_ij give M^{19}_i = max_j a_ij + 2ε_s.
    Optional ordering cuts (valid for the integer hull): for consecutive rows in the order
    of a_{·j},  w^{nm}_{i',v} ≤ w^{nm}_{i,v} + 1 - p_{v,j}  when a_ij ≤ a_i'j.
    """
    opts, b = model.options_, model.batch
    eps = opts.eps_split
    if opts.big_m == "tight":
        m18 = 1.0 - b.a.min(axis=1)
        m19 = b.a.max(axis=1) + 2 * eps
    else:
        m18 = np.full(len(b.y), 2.0)
        m19 = np.full(len(b.y), 2.0)

    def r18(m, i, v):
        wn = m.wnm[i, v]
        return m.q[v] - _xbar(m, i, v) <= float(m18[i]) * wn - eps * (1 - wn)

    def r19(m, i, v):
        return m.q[v] - _xbar(m, i, v) >= -float(m19[i]) * (1 - m.wnm[i, v])

    model.c18 = pyo.Constraint(model.I, model.V, rule=r18)
    model.c19 = pyo.Constraint(model.I, model.V, rule=r19)
    # o = 1 - miss
    model.c20 = pyo.Constraint(
        model.I, model.V,
        rule=lambda m, i, v: m.w1[i, v] + 1 >= (1 - _missing_sel(m, i, v)) + m.wnm[i, v],
    )
    model.c21a = pyo.Constraint(
        model.I, model.V, rule=lambda m, i, v: m.w1[i, v] <= 1 - _missing_sel(m, i, v)
    )
    model.c21b = pyo.Constraint(model.I, model.V, rule=lambda m, i, v: m.w1[i, v] <= m.wnm[i, v])
    model.c22a = pyo.Constraint(
        model.I, model.V, rule=lambda m, i, v: m.w2[i, v] + 1 >= _missing_sel(m, i, v) + m.c[v]
    )

    def r22b(m, i, v):
        ms = _missing_sel(m, i, v)
        if isinstance(ms, int):  # row has no missing value: w2 = 0
            return m.w2[i, v] == 0
        return m.w2[i, v] <= ms

    model.c22b = pyo.Constraint(model.I, model.V, rule=r22b)
    model.c22c = pyo.Constraint(model.I, model.V, rule=lambda m, i, v: m.w2[i, v] <= m.c[v])
    model.c23a = pyo.Constraint(model.I, model.V, rule=lambda m, i, v: m.w[i, v] >= m.w1[i, v])
    model.c23b = pyo.Constraint(model.I, model.V, rule=lambda m, i, v: m.w[i, v] >= m.w2[i, v])
    if not opts.omit_w_upper:  # erratum 1 (§2.6)
        model.c23_fix = pyo.Constraint(
            model.I, model.V, rule=lambda m, i, v: m.w[i, v] <= m.w1[i, v] + m.w2[i, v]
        )
    if opts.ordering_cuts:
        cuts = []
        for j in range(b.a.shape[1]):
            order = np.argsort(b.a[:, j], kind="stable")
            for i_lo, i_hi in zip(order[:-1], order[1:], strict=True):
                cuts.append((int(i_lo), int(i_hi), j))
        model.cut_index = pyo.Set(initialize=cuts, dimen=3)
        model.ordering_cut = pyo.Constraint(
            model.cut_index, model.V,
            rule=lambda m, lo, hi, j, v: m.wnm[hi, v] <= m.wnm[lo, v] + 1 - m.p[v, j],
        )


def _add_leaf_routing(model: pyo.ConcreteModel) -> None:
    r"""Leaf assignment (24).

    "paper":       z_{i,l} ≤ w_{i,v}  ∀l∈𝓛^L(v);   z_{i,l} ≤ 1 - w_{i,v}  ∀l∈𝓛^R(v)
    "aggregated":  Σ_{l∈𝓛^L(v)} z_{i,l} ≤ w_{i,v};  Σ_{l∈𝓛^R(v)} z_{i,l} ≤ 1 - w_{i,v}
    With (17) both select the unique leaf consistent with all w_{i,v} on the path.
    """
    ti = model.tree_index
    if model.options_.routing == "aggregated":
        model.c24L = pyo.Constraint(
            model.I, model.V,
            rule=lambda m, i, v: sum(m.z[i, l] for l in ti.left_leaves(v)) <= m.w[i, v],
        )
        model.c24R = pyo.Constraint(
            model.I, model.V,
            rule=lambda m, i, v: sum(m.z[i, l] for l in ti.right_leaves(v)) <= 1 - m.w[i, v],
        )
        return
    pairs = [(l, v, right) for l in ti.leaves for v, right in ti.ancestors(l)]
    model.anc = pyo.Set(initialize=pairs, dimen=3)

    def r24(m, i, l, v, right):
        return m.z[i, l] <= (1 - m.w[i, v]) if right else m.z[i, l] <= m.w[i, v]

    model.c24 = pyo.Constraint(model.I, model.anc, rule=r24)


def _count(model, l, *, label=None, group=None):
    """Σ_i k_i [y_i = label] [s_i = group] z_{i,l} (k_i = row multiplicity)."""
    b = model.batch
    sel = np.ones(len(b.y), dtype=bool)
    if label is not None:
        sel &= b.y == label
    if group is not None:
        sel &= b.s == group
    return sum(int(b.k[i]) * model.z[i, l] for i in np.flatnonzero(sel))


def _add_leaf_labels_and_loss(model: pyo.ConcreteModel) -> None:
    r"""Leaf labels and 0-1 loss, (25')-(28) with erratum 2.

    N1_l = Σ_i k_i y_i z_{i,l},  N0_l = Σ_i k_i (1-y_i) z_{i,l},  E_l = N1_l - N0_l.
    (25')  E_l ≤ M u_l - ε_c (1 - u_l)          (u_l = 0 ⇒ N1 < N0)
    (26')  E_l ≥ -M (1 - u_l)                    (u_l = 1 ⇒ N1 ≥ N0; ties, empty ⇒ 1)
    (27)   loss_l ≤ N0_l;  loss_l ≤ N1_l
    (28)   loss_l ≥ N0_l - M(1 - u_l);  loss_l ≥ N1_l - M u_l
    Printed (25)-(26) (regression guard only): Σ 2(y_i-1) z ≤ M u - ε(1-u) and
    Σ 2(y_i-1) z ≥ M(1-u) - ε(1-u) -- infeasible whenever a leaf has a negative example.
    "tight" big-M: M = number of positives / negatives in the batch where it bounds N1 / N0.
    ``label_rule="free"`` drops (25'), (26') and (27).
    """
    b, opts = model.batch, model.options_
    n1, n0 = int(b.k[b.y == 1].sum()), int(b.k[b.y == 0].sum())
    big = float(b.n + 1)
    m_pos, m_neg = (float(n1), float(n0)) if opts.big_m == "tight" else (big, big)
    eps_c = opts.eps_count

    def n1_(m, l):
        return _count(m, l, label=1)

    def n0_(m, l):
        return _count(m, l, label=0)

    if opts.printed_25_26:
        def p25(m, l):
            lhs = sum(2 * (int(b.y[i]) - 1) * int(b.k[i]) * m.z[i, l] for i in m.I)
            return lhs <= big * m.u[l] - eps_c * (1 - m.u[l])

        def p26(m, l):
            lhs = sum(2 * (int(b.y[i]) - 1) * int(b.k[i]) * m.z[i, l] for i in m.I)
            return lhs >= big * (1 - m.u[l]) - eps_c * (1 - m.u[l])

        model.c25 = pyo.Constraint(model.L, rule=p25)
        model.c26 = pyo.Constraint(model.L, rule=p26)
    elif opts.label_rule == "majority":
        model.c25 = pyo.Constraint(
            model.L, rule=lambda m, l: n1_(m, l) - n0_(m, l) <= m_pos * m.u[l] - eps_c * (1 - m.u[l])
        )
        model.c26 = pyo.Constraint(
            model.L, rule=lambda m, l: n1_(m, l) - n0_(m, l) >= -m_neg * (1 - m.u[l])
        )
    if opts.label_rule == "majority":
        model.c27a = pyo.Constraint(model.L, rule=lambda m, l: m.loss[l] <= n0_(m, l))
        model.c27b = pyo.Constraint(model.L, rule=lambda m, l: m.loss[l] <= n1_(m, l))
    model.c28a = pyo.Constraint(
        model.L, rule=lambda m, l: m.loss[l] >= n0_(m, l) - m_neg * (1 - m.u[l])
    )
    model.c28b = pyo.Constraint(model.L, rule=lambda m, l: m.loss[l] >= n1_(m, l) - m_pos * m.u[l])


def _add_fairness(model: pyo.ConcreteModel) -> None:
    r"""Per-group error counts and the absolute-value epigraph, (29)-(36) and §2.7.

    For each term t and group g (FP_{l,g} = Σ k_i (1-y_i)[s_i=g] z_{i,l}, FN likewise with y_i):
      counts false positives (t ∈ {accuracy, fpr}):
        (29)/(32)  f_{t,l,g} ≥ FP_{l,g} - M(1 - u_l);  (30)/(33)  f ≤ FP_{l,g} + M(1 - u_l) + ε_f
      otherwise (fnr):   f_{t,l,g} ≤ M(1 - u_l) + ε_f
      counts false negatives (t ∈ {accuracy, fnr}):
        (31)/(34)  f ≥ FN_{l,g} - M u_l;  f ≤ FN_{l,g} + M u_l + ε_f
      otherwise (fpr):   f_{t,l,g} ≤ M u_l + ε_f
    (35)-(36)  ℓ^{fair}_t ≥ ±(Σ_l f_{t,l,0}/den_{t,0} - Σ_l f_{t,l,1}/den_{t,1})
    with den from :func:`fairness_denominators`. M = group size (n_g) under "tight", else n+1.
    """
    if not model.terms:
        return
    b, opts = model.batch, model.options_
    eps_f = opts.eps_fair
    n_g = {g: float(b.k[b.s == g].sum()) for g in (0, 1)}
    big = float(b.n + 1)

    def big_m(g):
        return n_g[g] if opts.big_m == "tight" else big

    rows = []
    for t in model.terms:
        for l in model.L:
            for g in (0, 1):
                rows.append((t, l, g))
    model.fair_idx = pyo.Set(initialize=rows, dimen=3)

    def fp_lo(m, t, l, g):
        if t == "fnr":
            return pyo.Constraint.Skip
        return m.f[t, l, g] >= _count(m, l, label=0, group=g) - big_m(g) * (1 - m.u[l])

    def fp_hi(m, t, l, g):
        if t == "fnr":
            return m.f[t, l, g] <= big_m(g) * (1 - m.u[l]) + eps_f
        return m.f[t, l, g] <= _count(m, l, label=0, group=g) + big_m(g) * (1 - m.u[l]) + eps_f

    def fn_lo(m, t, l, g):
        if t == "fpr":
            return pyo.Constraint.Skip
        return m.f[t, l, g] >= _count(m, l, label=1, group=g) - big_m(g) * m.u[l]

    def fn_hi(m, t, l, g):
        if t == "fpr":
            return m.f[t, l, g] <= big_m(g) * m.u[l] + eps_f
        return m.f[t, l, g] <= _count(m, l, label=1, group=g) + big_m(g) * m.u[l] + eps_f

    model.c29 = pyo.Constraint(model.fair_idx, rule=fp_lo)
    model.c30 = pyo.Constraint(model.fair_idx, rule=fp_hi)
    model.c31a = pyo.Constraint(model.fair_idx, rule=fn_lo)
    model.c31b = pyo.Constraint(model.fair_idx, rule=fn_hi)

    def diff(m, t):
        d0, d1 = model.denominators[t]
        return sum(m.f[t, l, 0] for l in m.L) / d0 - sum(m.f[t, l, 1] for l in m.L) / d1

    model.c35 = pyo.Constraint(model.T, rule=lambda m, t: m.lfair[t] >= diff(m, t))
    model.c36 = pyo.Constraint(model.T, rule=lambda m, t: m.lfair[t] >= -diff(m, t))


def _set_objective(model: pyo.ConcreteModel) -> None:
    r"""Objective (8): min Σ_l loss_l / n + λ · w_eo · Σ_t ℓ^{fair}_t.

    w_eo = ``eo_weight`` for equalized odds (two terms), 1 otherwise.
    """
    weight = model.options_.eo_weight if len(model.terms) == 2 else 1.0
    expr = sum(model.loss[l] for l in model.L) / model.batch.n
    if model.terms:
        expr = expr + model.lambda_ * weight * sum(model.lfair[t] for t in model.T)
    model.obj = pyo.Objective(expr=expr, sense=pyo.minimize)


def extract_tree(model: pyo.ConcreteModel) -> MIATree:
    """Canonical tree from the solved model's (P, q, c) (and u only under ``label_rule="free"``)."""
    ti, b = model.tree_index, model.batch
    feature = np.array([max(model.J, key=lambda j: pyo.value(model.p[v, j])) for v in ti.nodes])
    q = np.array([pyo.value(model.q[v]) for v in ti.nodes], dtype=float)
    c = np.array([pyo.value(model.c[v]) > 0.5 for v in ti.nodes])
    u = np.array([int(round(pyo.value(model.u[l]))) for l in ti.leaves])
    raw = MIATree(ti.depth, feature, q, c, u)
    free = model.options_.label_rule == "free"
    return canonicalize(raw, b, eps_split=model.options_.eps_split, relabel=not free)


# --------------------------------------------------------------------------------------
# MIP start and feasibility check
# --------------------------------------------------------------------------------------
def set_start_from_tree(model: pyo.ConcreteModel, tree: MIATree) -> tuple[MIATree, float]:
    """Set every variable of ``model`` to the solution induced by ``tree`` on its batch (§2.9).

    The tree is first canonicalised on the model's batch (q snapped to a feasible value,
    labels by majority unless ``label_rule="free"``). Returns the canonical tree and the
    start's objective value.
    """
    b, ti, opts = model.batch, model.tree_index, model.options_
    free = opts.label_rule == "free"
    t = canonicalize(tree, b, eps_split=opts.eps_split, relabel=not free)
    x = b.x
    n = len(b.y)
    for v in ti.nodes:
        for j in model.J:
            model.p[v, j].set_value(int(j == t.feature[v]))
        model.q[v].set_value(float(t.threshold[v]))
        model.c[v].set_value(int(t.missing_left[v]))
    xbar = b.a[:, t.feature]  # (n, V); 0 where missing
    miss = b.m[:, t.feature].astype(bool)
    wnm = (t.threshold[None, :] >= xbar - 1e-12).astype(int)
    w1 = (~miss & (wnm == 1)).astype(int)
    w2 = (miss & t.missing_left[None, :]).astype(int)
    w = w1 + w2
    leaf = t.apply(x)
    for i in range(n):
        for v in ti.nodes:
            model.wnm[i, v].set_value(int(wnm[i, v]))
            model.w1[i, v].set_value(int(w1[i, v]))
            model.w2[i, v].set_value(int(w2[i, v]))
            model.w[i, v].set_value(int(w[i, v]))
        for l in ti.leaves:
            model.z[i, l].set_value(int(leaf[i] == l))
    y, s, k = b.y, b.s, b.k
    for l in ti.leaves:
        u = int(t.value[l])
        model.u[l].set_value(u)
        inl = leaf == l
        n1, n0 = k[inl & (y == 1)].sum(), k[inl & (y == 0)].sum()
        model.loss[l].set_value(float(n0 if u == 1 else n1))
        for term in model.terms:
            for g in (0, 1):
                fp = k[inl & (y == 0) & (s == g)].sum()
                fn = k[inl & (y == 1) & (s == g)].sum()
                val = 0.0
                if u == 1 and term in ("accuracy", "fpr"):
                    val = fp
                if u == 0 and term in ("accuracy", "fnr"):
                    val = fn
                model.f[term, l, g].set_value(float(val))
    for term in model.terms:
        d0, d1 = model.denominators[term]
        diff = sum(pyo.value(model.f[term, l, 0]) for l in ti.leaves) / d0 - sum(
            pyo.value(model.f[term, l, 1]) for l in ti.leaves
        ) / d1
        model.lfair[term].set_value(abs(diff))
    return t, float(pyo.value(model.obj))


def model_max_violation(model: pyo.ConcreteModel) -> float:
    """Largest violation of any active constraint, variable bound or integrality at current values."""
    worst = 0.0
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        if con.has_lb():
            worst = max(worst, pyo.value(con.lower) - body)
        if con.has_ub():
            worst = max(worst, body - pyo.value(con.upper))
    for var in model.component_data_objects(pyo.Var):
        val = var.value
        if val is None:
            return float("inf")
        if var.has_lb():
            worst = max(worst, var.lb - val)
        if var.has_ub():
            worst = max(worst, val - var.ub)
        if var.is_integer():
            worst = max(worst, abs(val - round(val)))
    return float(worst)
