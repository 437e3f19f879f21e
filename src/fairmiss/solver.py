"""The one place in fairmiss that names a MIP/LP/QP solver.

Every optimisation model in the library (Fair MIP trees, the equality-constrained-tree QP,
BuDRO's transport LP oracle) is built with Pyomo and handed to :func:`solve`, which runs
HiGHS through Pyomo's APPSI interface. APPSI is used rather than the newer
``pyomo.contrib.solver`` HiGHS interface because only APPSI passes a MIP start (warm start)
to HiGHS, which the Fair MIP Forest needs (spec 000 §2.9).

Solving never raises on a non-optimal termination: the caller receives a
:class:`SolveResult` describing status, incumbent, bound, gap and timings and decides what
to do (keep an incumbent with a warning, fall back to a warm start, ...).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

logger = logging.getLogger(__name__)

SOLVER_NAME = "highs"

# Pyomo's APPSI wraps every HiGHS run in ``capture_output(capture_fd=True)``, which swaps the
# process-wide stdout/stderr file descriptors and is not thread-safe: two solves in two threads
# deadlock or fail with "Captured output does not match sys.stdout". Solves in one process are
# therefore serialised; run MIP-heavy sweeps with processes (``execution.task_runner: dask``) for
# parallelism, and give each solve ``threads = cores // workers``.
_SOLVE_LOCK = threading.Lock()

__all__ = ["SOLVER_NAME", "SolveResult", "SolverUnavailableError", "solve", "solver_available"]


class SolverUnavailableError(RuntimeError):
    """Raised when HiGHS (the ``highspy`` package) cannot be loaded."""


@dataclass(frozen=True)
class SolveResult:
    """Outcome of one solve.

    Attributes
    ----------
    status : str
        One of ``optimal``, ``time_limit``, ``infeasible``, ``unbounded``,
        ``infeasible_or_unbounded``, ``other``.
    has_solution : bool
        Whether a feasible solution was loaded into the model's variables.
    incumbent : float or None
        Objective value of the best feasible solution found.
    bound : float or None
        Best proven bound on the objective.
    gap : float or None
        Relative gap ``|incumbent - bound| / max(|incumbent|, 1e-10)``.
    solve_seconds : float
        Wall time spent inside the solver (including model hand-over).
    warm_start_given : bool
        Whether a MIP start was passed to the solver.
    """

    status: str
    has_solution: bool
    incumbent: float | None
    bound: float | None
    gap: float | None
    solve_seconds: float
    warm_start_given: bool


def _load_highs():
    try:
        from pyomo.contrib.appsi.solvers.highs import Highs
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise SolverUnavailableError(f"Pyomo's HiGHS interface could not be imported: {exc}") from exc
    opt = Highs()
    if not opt.available():
        raise SolverUnavailableError(
            "HiGHS is not available: install the 'highspy' package (it is in requirements.lock)."
        )
    return opt


def _solve_quadratic(model, *, time_limit, threads, random_seed, options) -> SolveResult:
    """Convex QP through ``pyomo.contrib.solver``'s HiGHS interface (APPSI's is linear only)."""
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
    from pyomo.contrib.solver.solvers.highs import Highs

    opt = Highs()
    if not opt.available():
        raise SolverUnavailableError("HiGHS is not available: install 'highspy'.")
    with _SOLVE_LOCK:
        t0 = time.perf_counter()
        res = opt.solve(
            model,
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
            time_limit=time_limit,
            threads=threads,
            solver_options={"random_seed": int(random_seed), "output_flag": False, **(options or {})},
        )
        elapsed = time.perf_counter() - t0
    tc = res.termination_condition
    status = {
        TerminationCondition.convergenceCriteriaSatisfied: "optimal",
        TerminationCondition.maxTimeLimit: "time_limit",
        TerminationCondition.provenInfeasible: "infeasible",
        TerminationCondition.unbounded: "unbounded",
        TerminationCondition.infeasibleOrUnbounded: "infeasible_or_unbounded",
    }.get(tc, "other")
    has_solution = res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if has_solution:
        res.solution_loader.load_vars()
    inc = res.incumbent_objective if has_solution else None
    bound = res.objective_bound
    bound = float(bound) if bound is not None and math.isfinite(bound) else None
    gap = abs(inc - bound) / max(abs(inc), 1e-10) if inc is not None and bound is not None else None
    return SolveResult(status, has_solution, inc, bound, gap, elapsed, False)


def solver_available() -> bool:
    """Return True when HiGHS can be used."""
    try:
        _load_highs()
    except SolverUnavailableError:
        return False
    return True


def solve(
    model,
    *,
    time_limit: float | None = None,
    threads: int = 1,
    rel_gap: float | None = None,
    warm_start: bool = False,
    random_seed: int = 0,
    options: dict | None = None,
    log: bool = False,
) -> SolveResult:
    """Solve a Pyomo model with HiGHS and load the best solution if there is one.

    Parameters
    ----------
    model : pyomo.environ.ConcreteModel
        The model. With ``warm_start=True`` the current values of its variables are passed
        to HiGHS as a MIP start.
    time_limit : float, optional
        Seconds. ``None`` means no limit.
    threads : int
        HiGHS threads. Keep ``concurrency x threads <= cores``.
    rel_gap : float, optional
        Relative MIP gap at which to stop.
    warm_start : bool
        Pass the variables' current values as a MIP start.
    random_seed : int
        HiGHS ``random_seed`` (HiGHS is deterministic for a given seed and thread count).
    options : dict, optional
        Extra raw HiGHS options.
    log : bool
        Route the solver log to this module's logger at INFO level.
    """
    import pyomo.environ as pyo

    objectives = list(model.component_data_objects(pyo.Objective, active=True))
    if objectives and objectives[0].expr.polynomial_degree() not in (0, 1):
        if warm_start:
            logger.warning("HiGHS QP path ignores the warm start")
        return _solve_quadratic(
            model, time_limit=time_limit, threads=threads, random_seed=random_seed, options=options
        )

    from pyomo.contrib.appsi.base import TerminationCondition

    opt = _load_highs()
    opt.config.load_solution = False
    opt.config.stream_solver = False
    # HiGHS's log goes to this module's logger: INFO with log=True, else DEBUG (and HiGHS output
    # off), so it never reaches a console handler on the root logger (Prefect installs one).
    opt.config.solver_output_logger = logger
    opt.config.log_level = logging.INFO if log else logging.DEBUG
    if time_limit is not None:
        opt.config.time_limit = float(time_limit)
    if rel_gap is not None:
        opt.config.mip_gap = float(rel_gap)
    opt.config.warmstart = bool(warm_start)
    opt.highs_options = {"threads": int(threads), "random_seed": int(random_seed), "output_flag": bool(log),
                         **(options or {})}

    with _SOLVE_LOCK:
        t0 = time.perf_counter()
        res = opt.solve(model)
        elapsed = time.perf_counter() - t0

    tc = res.termination_condition
    status = {
        TerminationCondition.optimal: "optimal",
        TerminationCondition.maxTimeLimit: "time_limit",
        TerminationCondition.infeasible: "infeasible",
        TerminationCondition.unbounded: "unbounded",
        TerminationCondition.infeasibleOrUnbounded: "infeasible_or_unbounded",
    }.get(tc, "other")
    incumbent = res.best_feasible_objective
    bound = res.best_objective_bound
    has_solution = incumbent is not None and math.isfinite(incumbent)
    if has_solution:
        res.solution_loader.load_vars()
    gap = None
    if has_solution and bound is not None and math.isfinite(bound):
        gap = abs(incumbent - bound) / max(abs(incumbent), 1e-10)
    out = SolveResult(
        status=status,
        has_solution=has_solution,
        incumbent=float(incumbent) if has_solution else None,
        bound=float(bound) if bound is not None and math.isfinite(bound) else None,
        gap=gap,
        solve_seconds=elapsed,
        warm_start_given=bool(warm_start),
    )
    logger.debug("HiGHS solve: %s", out)
    return out
