"""The vectorised exact path of BuDRO's OT solvers for uniform candidate sets (split out of
:mod:`fairmiss.learners.budro.ot`, whose docstring describes it): every column has the same number of
candidates, so dominance pruning, the columns' upper hulls and the hull-segment sort run on ``(w, n)``
arrays (:func:`_solve_uniform`, the hinted window :func:`_solve_uniform_window`, the tilted variant
:func:`_solve_uniform_tilted`), plus the tie/complementary-slackness helpers shared with the general path.
"""

from __future__ import annotations

import numpy as np

from fairmiss.learners.budro.candidates import CandidateSet

__all__ = []


def _segment_max(a, cand):
    return np.maximum.reduceat(a, cand.indptr[:-1])


def _tied_choice(cand, s, lam, tol, key, *, largest: bool) -> np.ndarray:
    """Per column, the first tied entry (``s >= lam - tol``) with the smallest/largest ``key``."""
    tied = s >= lam[cand.cols] - tol
    fill = -np.inf if largest else np.inf
    k = np.where(tied, key, fill)
    best = (np.maximum if largest else np.minimum).reduceat(k, cand.indptr[:-1])
    idx = np.flatnonzero(tied & (k == best[cand.cols]))
    _, first = np.unique(cand.cols[idx], return_index=True)
    return idx[first]


def _dual_recover(cand, vals, eps, eta, tol):
    """Primal recovery by complementary slackness at ``eta`` (ties within ``tol``): every column
    on its cheapest tied argmax, then columns moved to their costliest tie in index order until
    the budget is tight, at most one split. Returns (entries, mass, split column or None)."""
    n = cand.n
    s = vals - eta * cand.costs
    lam = _segment_max(s, cand)
    e_lo = _tied_choice(cand, s, lam, tol, cand.costs, largest=False)
    e_hi = _tied_choice(cand, s, lam, tol, cand.costs, largest=True)
    c_lo, c_hi = cand.costs[e_lo], cand.costs[e_hi]
    need = n * eps - c_lo.sum()  # extra cost (in sum-C units) needed to make the budget tight
    delta = c_hi - c_lo
    cum = np.cumsum(delta)
    k = int(np.searchsorted(cum, need, side="left"))
    entries, mass = [e_lo, e_hi], [np.full(n, 1.0 / n), np.zeros(n)]
    if k >= n:  # numerically S_hi < n eps: move every column
        mass = [np.zeros(n), np.full(n, 1.0 / n)]
        split = False
    else:
        mass[0][:k], mass[1][:k] = 0.0, 1.0 / n
        prev = cum[k - 1] if k > 0 else 0.0
        theta = float(np.clip((need - prev) / delta[k], 0.0, 1.0)) if delta[k] > 0 else 0.0
        mass[0][k], mass[1][k] = (1 - theta) / n, theta / n
        split = 0 < theta < 1
    entries = np.concatenate(entries)
    mass = np.concatenate(mass)
    # merge duplicates (e_lo == e_hi)
    uniq, inv = np.unique(entries, return_inverse=True)
    mass = np.bincount(inv, weights=mass, minlength=len(uniq))
    return uniq, mass, (int(k) if split else None)


def _uniform_width(cand) -> int:
    """Entries per column if every column has the same number of them, else 0 (cached)."""
    w = cand.__dict__.get("_uniform_w")
    if w is None:
        n = cand.n
        w0 = int(cand.indptr[1]) if n > 0 else 0
        ok = w0 > 0 and cand.nnz == n * w0 and np.array_equal(cand.indptr, np.arange(0, n * w0 + 1, w0))
        w = w0 if ok else 0
        object.__setattr__(cand, "_uniform_w", w)
    return w


def _gather_index(cand, y, w):
    """``rows + n * y[cols]`` flat and as a contiguous ``(w, n)`` transpose: entry values are
    ``concat(loss0, loss1)[index]`` (cached on the candidate set per ``y``)."""
    cache = cand.__dict__.get("_gather_cache")
    if cache is not None and np.array_equal(cache[0], y):
        return cache[1], cache[2]
    n = cand.n
    idx = (cand.rows + n * y.astype(np.int64)[cand.cols]).astype(np.intp)
    idxT = np.ascontiguousarray(idx.reshape(n, w).T)  # intp: np.take would convert int32 on every call
    object.__setattr__(cand, "_gather_cache", (y.copy(), idx, idxT))
    return idx, idxT


def _upper_hull(c, v, col):
    """Upper concave hull of every column's Pareto points (cost-sorted, strictly increasing
    values, contiguous per column).

    A point on or below the chord of its two neighbours is not a hull vertex and is removed;
    repeated until none is left (the hull is unchanged by removing non-vertices). The first
    pass examines every point at once; later passes only the neighbours of removed points,
    through a doubly linked list, removing a non-adjacent subset at a time. A column's first
    point has a vertical incoming edge (it is dropped only for a same-cost successor).
    Returns the kept positions (increasing) and the number of passes.
    """
    m = len(c)
    if m < 2:
        return np.arange(m), 0
    same = col[1:] == col[:-1]
    dc, dv = c[1:] - c[:-1], v[1:] - v[:-1]
    in_c = np.zeros(m)
    in_v = np.ones(m)
    in_c[1:] = np.where(same, dc, 0.0)
    in_v[1:] = np.where(same, dv, 1.0)
    rem = np.zeros(m, dtype=bool)
    # remove i if slope_in <= slope_out  (dv_in / dc_in <= dv_out / dc_out, all >= 0)
    rem[:-1] = same & (in_v[:-1] * dc <= dv * in_c[:-1])
    passes = 1
    if not rem.any():
        return np.arange(m), passes
    left = np.cumsum(~rem)[rem] - 1  # index (after compression) of the kept point before each removed one
    keep = ~rem
    pos = np.flatnonzero(keep)
    c, v, col = c[keep], v[keep], col[keep]
    m = len(c)
    same = col[1:] == col[:-1]
    nxt = np.full(m, -1, dtype=np.int64)
    prv = np.full(m, -1, dtype=np.int64)
    ar = np.arange(m - 1)
    nxt[:-1] = np.where(same, ar + 1, -1)
    prv[1:] = np.where(same, ar, -1)
    alive = np.ones(m, dtype=bool)
    i = np.concatenate([left, left + 1])
    while True:
        i = np.sort(i)
        i = i[np.r_[True, i[1:] != i[:-1]]] if len(i) else i
        i = i[(i >= 0) & (i < m)]
        i = i[alive[i] & (nxt[i] >= 0)]
        if not len(i):
            break
        passes += 1
        p, q = prv[i], nxt[i]
        hp = p >= 0
        pp = np.where(hp, p, i)
        din_c = np.where(hp, c[i] - c[pp], 0.0)
        din_v = np.where(hp, v[i] - v[pp], 1.0)
        r = i[din_v * (c[q] - c[i]) <= (v[q] - v[i]) * din_c]
        if not len(r):
            break
        # remove a non-adjacent subset (a point whose predecessor is also removable waits)
        pr = prv[r]
        k = np.minimum(np.searchsorted(r, pr), len(r) - 1)
        wait = (pr >= 0) & (r[k] == pr)
        rr, waiting = r[~wait], r[wait]
        L, R = prv[rr], nxt[rr]
        hl, hr = L >= 0, R >= 0
        nxt[L[hl]] = R[hl]
        prv[R[hr]] = L[hr]
        alive[rr] = False
        i = np.concatenate([L[hl], R[hr], waiting])
    return pos[alive], passes


def _greedy_cut(slope, sdc, budget, eta_hint):
    """Segments taken by the greedy (decreasing slope, index order on ties) until ``budget``.

    Returns (taken mask, crossing segment or -1, cumulative cost before it). With ``eta_hint``
    only the segments with slope in ``eta_hint * [0.8, 1.25]`` are sorted when the crossing is
    provably inside that window (the result is the same as the full sort); else a full sort.
    """
    if eta_hint is not None and eta_hint > 0 and len(slope):
        hi, lo = eta_hint * 1.25, eta_hint * 0.8
        above = slope > hi
        s_above = float(sdc[above].sum())
        if s_above <= budget:
            win = np.flatnonzero((slope <= hi) & (slope >= lo))
            if len(win):
                ow = win[np.argsort(-slope[win], kind="stable")]
                cum = s_above + np.cumsum(sdc[ow])
                mt = int(np.searchsorted(cum, budget, side="right"))
                if mt < len(ow):
                    taken = above
                    taken[ow[:mt]] = True
                    return taken, int(ow[mt]), (float(cum[mt - 1]) if mt > 0 else s_above), "window"
    order = np.argsort(-slope, kind="stable")
    cum = np.cumsum(sdc[order])
    mt = int(np.searchsorted(cum, budget, side="right"))  # segments fully taken
    taken = np.zeros(len(slope), dtype=bool)
    taken[order[:mt]] = True
    if mt < len(order):
        return taken, int(order[mt]), (float(cum[mt - 1]) if mt > 0 else 0.0), "full"
    return taken, -1, (float(cum[-1]) if len(cum) else 0.0), "full"


def _solve_uniform(cand, w, y, loss0, loss1, eps, method, eta_hint=None, eta_hint_width=None):
    """Exact ``greedy``/``dual`` on a uniform-width candidate set without Python loops over columns.

    Dominance pruning (spec §1.3, exact) as a running max along each cost-sorted column of the
    ``(w, n)`` value matrix, then the upper concave hull of the survivors, then the
    multiple-choice-knapsack greedy: hull segments by decreasing slope until ``n eps`` is spent
    (the crossing slope is ``eta*``). ``dual`` recovers the primal by complementary slackness at
    that exact ``eta*`` (same rule as Algorithm 7's recovery, on the hull points).

    Warm start (``eta_hint``, ``eta_hint_width`` = ``rho``, default 1.25):
    :func:`_solve_uniform_window` on ``[eta_hint / rho, eta_hint * rho]``. If the greedy is not
    proven to cross the budget inside it, the step is redone without the window
    (:func:`_solve_uniform_tilted` with no tilt). Exact either way.
    Returns (entries, mass, eta, info, lam) with ``lam[j] = max_i R_ij - eta C_ij``.
    """
    hinted = eta_hint is not None and np.isfinite(eta_hint) and eta_hint > 0
    if hinted:
        rho = 1.25 if eta_hint_width is None else float(eta_hint_width)
        if not (np.isfinite(rho) and rho > 1.0):
            raise ValueError(f"eta_hint_width must be a finite number > 1, got {eta_hint_width}")
        out = _solve_uniform_window(cand, w, y, loss0, loss1, eps, method, eta_hint * (1.0 / rho), eta_hint * rho)
        if out is not None:
            return out
    out = _solve_uniform_tilted(cand, w, y, loss0, loss1, eps, method, None, 0.0)
    out[3]["tilt_fallback"] = hinted
    return out


def _solve_uniform_window(cand, w, y, loss0, loss1, eps, method, lo, hi):
    """Warm-started exact step: ``eta*`` is sought in the window ``[lo, hi]`` only.

    One pass over the ``(w, n)`` layout computes, per column, the running maxima of the tilted
    values ``R - lo C`` (dominance pruning on them keeps exactly the entries that can be an
    argmax for some ``eta > lo``) and ``R - hi C`` with its first (cheapest) argmax ``a_h``, and
    the last ``lo``-survivor ``a_l`` (the cheapest argmax at ``lo``). Every column's solution for
    any ``eta`` in ``[lo, hi]`` lies on its hull between ``a_h`` and ``a_l``; columns with
    ``a_h == a_l`` (most of them for a narrow window) are settled at ``a_h`` without being
    compressed, hulled or sorted. The step is accepted only if the budget is proven to be crossed
    inside the window (``sum C[a_h] <= n eps`` and the greedy over the window segments crosses
    it); otherwise ``None`` (the caller re-solves without a window). Same solution as
    :func:`_solve_uniform_tilted`, independent of the window.
    """
    n = cand.n
    L = np.concatenate([loss0, loss1])
    _, idxT = _gather_index(cand, y, w)
    CT = _costs_T(cand, w)
    # work arrays reused across steps (taken from the candidate set while in use, so concurrent
    # calls on the same set simply allocate their own): no per-step allocation and page faults
    small = w <= 255
    work = cand.__dict__.pop("_window_work", None)
    if work is None:
        work = (np.empty((w, n), dtype=bool), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                np.empty(n), np.empty(n, dtype=bool), np.empty(n, dtype=np.uint8),
                np.empty(n, dtype=np.uint8 if small else np.intp))
    keepT, buf, tl, th, run_lo, run_hi, gt, tt8, a_h = work
    keepT[0] = True
    np.take(L, idxT[0], out=buf)
    np.subtract(buf, lo * CT[0], out=run_lo)
    np.subtract(buf, hi * CT[0], out=run_hi)
    # a_h = last row where the hi running max strictly grew (rows only increase: a uint8 running
    # max of t * mask, SIMD-friendly unlike putmask, when w <= 255). The last lo-survivor a_l is
    # not tracked: a_l > a_h iff the final lo running max beats the tilted value at a_h.
    a_h.fill(0)
    for t in range(1, w):
        np.take(L, idxT[t], out=buf, mode="clip")  # indices are valid: clip skips the bounds check
        kt = keepT[t]
        np.multiply(CT[t], lo, out=tl)
        np.subtract(buf, tl, out=tl)
        np.greater(tl, run_lo, out=kt)
        np.maximum(run_lo, tl, out=run_lo)
        np.multiply(CT[t], hi, out=th)
        np.subtract(buf, th, out=th)
        np.greater(th, run_hi, out=gt)
        np.maximum(run_hi, th, out=run_hi)
        if small:
            np.multiply(gt.view(np.uint8), t, out=tt8)
            np.maximum(a_h, tt8, out=a_h)
        else:
            np.putmask(a_h, gt, t)
    out = _window_finish(cand, w, L, idxT, CT, keepT, run_lo, a_h.astype(np.intp), lo, eps, method)
    object.__setattr__(cand, "_window_work", work)
    return out


def _window_finish(cand, w, L, idxT, CT, keepT, run_lo, a_h, lo, eps, method):
    """The part of :func:`_solve_uniform_window` after its pass: window columns, their hulls,
    the greedy over the window segments, the solution (``None``: not proven inside the window)."""
    n = cand.n
    cols = np.arange(n)
    e_h = cols * w + a_h
    pos_h = a_h * n + cols  # the same entries in the (w, n) layout
    # a_h is a lo-survivor in exact arithmetic; if rounding says otherwise, take the safe path
    if not np.take(keepT.ravel(), pos_h, mode="clip").all():
        return None
    c_h = np.take(CT.ravel(), pos_h, mode="clip")
    budget = n * eps
    base = float(c_h.sum())
    if base > budget:
        return None  # eta* > hi
    # columns with hull segments in the window: a lo-survivor after a_h (the last one, a_l, is the
    # lo argmax; survivors' tilted values increase strictly, so a_l > a_h iff run_lo beats a_h's,
    # computed by the same operations as in the pass)
    v_h = np.take(L, np.take(idxT.ravel(), pos_h, mode="clip"), mode="clip")
    W = np.flatnonzero(run_lo > v_h - lo * c_h)
    sub = keepT[:, W].T  # (|W|, w)
    sub &= np.arange(w)[None, :] >= a_h[W][:, None]
    jj, tt = np.nonzero(sub)
    col = W[jj]
    e = col * w + tt  # window entries, column by column, increasing cost
    pos = tt * n + col  # the same entries in the (w, n) layout (gathers from it stay cache-friendly)
    c, v = CT.ravel()[pos], L[idxT.ravel()[pos]]
    pts, passes = _upper_hull(c, v, col)
    hc, hv, hj = c[pts], v[pts], col[pts]
    same = hj[1:] == hj[:-1]
    seg = np.flatnonzero(same)
    sdc = hc[seg + 1] - hc[seg]
    slope = (hv[seg + 1] - hv[seg]) / sdc
    # greedy over the window segments (every slope lies in (lo, hi]): decreasing slope, index
    # order on ties, until the budget; it must cross inside the window
    order = np.argsort(-slope, kind="stable")
    cum = base + np.cumsum(sdc[order])
    mt = int(np.searchsorted(cum, budget, side="right"))
    if mt >= len(order):
        return None  # eta* <= lo
    sg = int(order[mt])
    prev = float(cum[mt - 1]) if mt > 0 else base
    eta = float(slope[sg])
    taken = np.zeros(len(seg), dtype=bool)
    taken[order[:mt]] = True
    hstart = np.flatnonzero(np.r_[True, ~same])  # first hull point (= a_h) of each window column
    fin_w = hstart + np.bincount(np.searchsorted(W, hj[seg[taken]]), minlength=len(W))
    pf = pts[fin_w]
    final = e_h.copy()
    final[W] = e[pf]
    pos_f = pos_h.copy()
    pos_f[W] = pos[pf]
    c_f = c_h.copy()
    c_f[W] = c[pf]
    lam = v_h.copy()
    lam[W] = v[pf]
    lam -= eta * c_f
    theta = (budget - prev) / sdc[sg]
    info = {"path": "uniform/window", "pruned_entries": int(n - len(W) + len(e)), "window_columns": int(len(W)),
            "hull_points": int(n - len(W) + len(pts)), "hull_passes": passes, "segments": int(len(seg))}
    if method == "dual" and eta > 0:
        # Algorithm 7's recovery (:func:`_dual_recover`) restricted to the window columns: every
        # other column has a single hull point between a_h and a_l, so its cheapest and costliest
        # ties coincide (a zero term of the cumulative extra cost); same result as on all columns
        hcounts = np.diff(np.r_[hstart, len(pts)])
        tol = 1e-11 * max(1.0, float(np.abs(v_h).max()), float(np.abs(hv).max()),
                          eta * max(float(c_h.max()), float(hc.max())))
        local = np.repeat(np.arange(len(W)), hcounts)  # window-local column index of each hull point
        hcand = CandidateSet(np.r_[0, np.cumsum(hcounts)], hj, local, hc, cand.radius[W])
        hs = hv - eta * hc
        hlam = _segment_max(hs, hcand)
        e_lo = _tied_choice(hcand, hs, hlam, tol, hc, largest=False)
        e_hi = _tied_choice(hcand, hs, hlam, tol, hc, largest=True)
        c_lo = c_h.copy()
        c_lo[W] = hc[e_lo]
        need = n * eps - c_lo.sum()  # extra cost needed to make the budget tight
        delta = hc[e_hi] - c_lo[W]
        cum = np.cumsum(delta)
        k = int(np.searchsorted(cum, need, side="left"))
        m = len(W)
        mass_lo, mass_hi = np.full(m, 1.0 / n), np.zeros(m)
        split = None
        if k >= m:  # numerically S_hi < n eps: move every column
            mass_lo, mass_hi = np.zeros(m), np.full(m, 1.0 / n)
        else:
            mass_lo[:k], mass_hi[:k] = 0.0, 1.0 / n
            prevk = cum[k - 1] if k > 0 else 0.0
            th_k = float(np.clip((need - prevk) / delta[k], 0.0, 1.0)) if delta[k] > 0 else 0.0
            mass_lo[k], mass_hi[k] = (1 - th_k) / n, th_k / n
            if 0 < th_k < 1:
                split = int(W[k])
        # entries in column order (as np.unique would sort them), e_lo == e_hi merged
        wl, wh = e[pts[e_lo]], e[pts[e_hi]]
        two = wl != wh
        cnt = np.ones(n, dtype=np.intp)
        cnt[W] += two
        start = np.cumsum(cnt) - cnt
        ent = np.empty(int(cnt.sum()), dtype=e_h.dtype)
        mass = np.full(len(ent), 1.0 / n)
        ent[start] = e_h
        sw = start[W]
        ent[sw] = wl
        mass[sw] = np.where(two, mass_lo, mass_lo + mass_hi)
        ent[sw[two] + 1] = wh[two]
        mass[sw[two] + 1] = mass_hi[two]
        info["split_column"] = split
        return ent, mass, eta, info, lam
    split = theta > 0
    entries = np.empty(n + split, dtype=final.dtype)
    entries[:n] = final
    mass = np.full(n + split, 1.0 / n)
    cols_out = np.arange(n + split)
    if split:
        j = int(hj[seg[sg]])
        mass[j] = (1 - theta) / n
        entries[n] = e[pts[seg[sg] + 1]]
        mass[n] = theta / n
        cols_out[n] = j
        pos_f = np.append(pos_f, pos[pts[seg[sg] + 1]])
    if method == "dual":
        info["split_column"] = None
    info["_layout"] = (pos_f, cols_out)  # (w, n)-layout positions and columns of `entries` (solve_ot)
    return entries, mass, eta, info, lam


def _complete(cand) -> bool:
    c = cand.__dict__.get("_complete")
    if c is None:
        c = cand.complete
        object.__setattr__(cand, "_complete", c)
    return c


def _costs_T(cand, w):
    CT = cand.__dict__.get("_costs_T")
    if CT is None:
        CT = np.ascontiguousarray(cand.costs.reshape(cand.n, w).T)
        object.__setattr__(cand, "_costs_T", CT)
    return CT


def _solve_uniform_tilted(cand, w, y, loss0, loss1, eps, method, eta_hint, eta_lo):
    """The full uniform-width solve (``eta_lo = 0``). With ``eta_lo = 0.8 eta_hint > 0`` it is
    the previous warm start (pruning on ``R - eta_lo C``, every column started at its argmax at
    ``1.25 eta_hint``; ``None`` unless ``eta*`` is proven inside), kept as a reference for the
    tests of :func:`_solve_uniform_window`."""
    n = cand.n
    L = np.concatenate([loss0, loss1])
    idx, idxT = _gather_index(cand, y, w)
    CT = _costs_T(cand, w) if eta_lo > 0 else None
    # running max along each column of the (tilted) values, one cache-sized row t at a time
    # (row t of the (w, n) layout = every column's t-th cheapest candidate)
    keepT = np.empty((w, n), dtype=bool)
    keepT[0] = True
    run = np.take(L, idxT[0])
    buf, tmp = np.empty(n), np.empty(n)
    if CT is not None:
        run -= eta_lo * CT[0]
    for t in range(1, w):
        np.take(L, idxT[t], out=buf, mode="clip")  # indices are valid: clip skips the bounds check
        if CT is not None:
            np.multiply(CT[t], eta_lo, out=tmp)
            np.subtract(buf, tmp, out=buf)
        np.greater(buf, run, out=keepT[t])
        np.maximum(run, buf, out=run)
    e = np.flatnonzero(keepT.T)  # pruned entries, column by column, increasing cost and value
    c, v = cand.costs[e], L[idx[e]]
    col = e // w
    budget = n * eps
    if eta_lo > 0:
        # the prefix of every column up to its cheapest argmax at eta_hi = 1.25 eta_hint is taken
        # whenever eta* <= eta_hi: start each column there (its hull vertex) and drop the rest
        eta_hi = 1.25 * eta_hint
        sh = v - eta_hi * c
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        ismax = sh == np.maximum.reduceat(sh, starts)[col]
        im = np.flatnonzero(ismax)
        a_h = im[np.r_[True, col[im[1:]] != col[im[:-1]]]]
        if float(c[a_h].sum()) > budget:
            return None  # eta* > eta_hi
        sub = np.arange(len(e)) >= a_h[col]
        e, c, v, col = e[sub], c[sub], v[sub], col[sub]
    pts, passes = _upper_hull(c, v, col)
    hc, hv, hj = c[pts], v[pts], col[pts]
    same = hj[1:] == hj[:-1]
    seg = np.flatnonzero(same)  # segment from hull point seg to seg + 1
    sdc = hc[seg + 1] - hc[seg]
    slope = (hv[seg + 1] - hv[seg]) / sdc
    hstart = np.flatnonzero(np.r_[True, ~same])  # first hull point of each column (all present)
    base = float(hc[hstart].sum())  # cost of every column at its first hull point (0 untilted)
    taken, sg, prev, how = _greedy_cut(slope, sdc, budget - base, eta_hint)
    prev += base
    # hull slopes decrease along a column: the taken segments are a prefix
    final = hstart + np.bincount(hj[seg[taken]], minlength=n)
    eta, frac = 0.0, None
    if sg < 0 and eta_lo > 0:
        return None  # eta* <= eta_lo: the tilted pruning may have dropped needed entries
    if sg >= 0:
        theta = (budget - prev) / sdc[sg]
        eta = float(slope[sg])
        if theta > 0:
            frac = (int(hj[seg[sg]]), int(seg[sg] + 1), float(theta))
    info = {"path": f"uniform/{how}" + ("/tilted" if eta_lo > 0 else ""), "pruned_entries": int(len(e)),
            "hull_points": int(len(pts)), "hull_passes": passes, "segments": int(len(seg))}
    lam = hv[final] - eta * hc[final]
    if method == "dual" and eta > 0:
        counts = np.diff(np.r_[hstart, len(pts)])
        hcand = CandidateSet(np.r_[0, np.cumsum(counts)], cand.rows[e[pts]], hj, hc, cand.radius)
        tol = 1e-11 * max(1.0, float(np.abs(hv).max()), eta * float(hc.max()))
        he, mass, split = _dual_recover(hcand, hv, eps, eta, tol)
        info["split_column"] = split
        return e[pts[he]], mass, eta, info, lam
    entries = e[pts[final]]
    mass = np.full(n, 1.0 / n)
    if frac is not None:
        j, to, theta = frac
        mass[j] = (1 - theta) / n
        entries = np.append(entries, e[pts[to]])
        mass = np.append(mass, theta / n)
    if method == "dual":
        info["split_column"] = None
    return entries, mass, eta, info, lam
