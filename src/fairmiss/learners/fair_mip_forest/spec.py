"""Paper 000's learner kind ``fair_mip_forest``: its spec and factory (the estimator is imported only
when one is built).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_serializer

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ['FairMIPForestSpec']


class FairMIPForestSpec(_LearnerBase):
    """Paper 000's Fair MIP Forest (exact DP trees by default; Pyomo + HiGHS with ``solver: mip``); handles NaN
    natively (MIA)."""

    kind: Literal["fair_mip_forest"] = "fair_mip_forest"
    max_depth: Annotated[int, Field(ge=1, le=4)] = 3
    lambda_: Annotated[float, Field(ge=0, alias="lambda")] = 0.1
    fairness: Literal["none", "accuracy", "fpr", "fnr", "equalized_odds"] = "fnr"
    eo_weight: Annotated[float, Field(ge=0)] = 1.0
    n_trees: Annotated[int, Field(ge=1)] = 30
    batch_size: Annotated[int, Field(ge=4)] = 200
    #: solver "mip" only: seconds per tree for HiGHS; 0 = no MIP, each tree is its warm start (solver-free)
    time_limit: Annotated[float, Field(ge=0)] = 10.0
    #: solver "mip" only: HiGHS node budget per tree; set it (and a generous time_limit) for bit-reproducible fits
    node_limit: Annotated[int, Field(ge=1)] | None = None
    #: solver "mip" only (the start HiGHS improves on); "search": seeded local search on the exact fair objective (fairmiss.learners.fair_mip_forest.search),
    #: never worse than "best" on the batch; "best": better of the previous tree and CART
    warm_start: Literal["previous", "cart", "best", "search", "none"] = "best"
    #: restarts of the "search" warm start
    search_restarts: Annotated[int, Field(ge=0)] = 50
    #: per feature, at most this many candidate thresholds in the search (None: every observed value);
    #: binding only for continuous features (HSLS), where the search's time grows about with its square
    search_max_thresholds: Annotated[int, Field(ge=1)] | None = 64
    stratify_batches: bool = True
    #: how each tree is found: "dp" (the default) = the exact dynamic program
    #: (fairmiss.learners.fair_mip_forest.dp: proven optimum, no solver, no clock); "mip" = warm start + HiGHS
    #: (time_limit; 0 = the warm start is the tree; the earlier default); "search" = the local search alone
    solver: Literal["mip", "dp", "search"] = "dp"
    #: solver "dp": stop after this many root splits with the best tree and a lower bound (None: optimal)
    dp_node_limit: Annotated[int, Field(ge=1)] | None = None
    #: solver "dp": per feature at most this many candidate thresholds (None: every observed value)
    dp_max_thresholds: Annotated[int, Field(ge=1)] | None = None
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_serializer(mode="wrap")
    def _omit_default_solver_fields(self, handler):
        """Leave ``solver: mip`` and unset DP limits out of dumps: a config that asks for the computation
        configs did before the solver field existed (HiGHS after the warm start) keeps its config hash and
        cell cache keys. ``solver: dp`` (the default) is always written, so every config
        that relied on the old implicit ``mip`` gets a new hash and never reuses results of the old solver."""
        out = handler(self)
        for k, omitted in (("solver", "mip"), ("dp_node_limit", None), ("dp_max_thresholds", None)):
            if k in out and out[k] == omitted:
                del out[k]
        return out


def _fair_mip(spec, seed, threads):
    from fairmiss.learners.fair_mip_forest.forest import FairMIPForestClassifier

    est = FairMIPForestClassifier(max_depth=spec.max_depth, lambda_=spec.lambda_, fairness=spec.fairness,
                                  eo_weight=spec.eo_weight, n_trees=spec.n_trees, batch_size=spec.batch_size,
                                  time_limit=spec.time_limit, node_limit=spec.node_limit,
                                  stratify_batches=spec.stratify_batches,
                                  warm_start=None if spec.warm_start == "none" else spec.warm_start,
                                  search_restarts=spec.search_restarts,
                                  search_max_thresholds=spec.search_max_thresholds,
                                  solver=spec.solver, dp_node_limit=spec.dp_node_limit,
                                  dp_max_thresholds=spec.dp_max_thresholds,
                                  threads=threads, random_state=seed)
    return Learner(est, needs_sensitive_fit=True)


LEARNER_KINDS.register("fair_mip_forest", FairMIPForestSpec, _fair_mip, accepts_nan=True, needs_groups=True,
                       two_groups=True,  # its regulariser compares exactly two groups (paper 000)
                       family="fair_mip_forest")
