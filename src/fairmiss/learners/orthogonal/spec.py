"""Paper 002's learner kind ``orthogonal``: its spec, the projection-then-head wrapper and the factory.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase
from fairmiss.learners.baselines import _lr
from fairmiss.learners.orthogonal.head import ProjectedHead

__all__ = ['OrthogonalSpec']


class OrthogonalSpec(_LearnerBase):
    """Paper 002: a group-orthogonal representation (OG as printed, the true optimum, or SOG), then a
    head model. ``output: scores`` gives k components; ``reconstruction`` the adjusted p features."""

    kind: Literal["orthogonal"] = "orthogonal"
    projection: Literal["og_paper", "og_optimal", "sog"] = "og_paper"
    n_components: Annotated[int, Field(ge=1)] = 10
    t: Annotated[float, Field(gt=0)] | None = None
    output: Literal["scores", "reconstruction"] = "scores"
    head: Literal["logistic", "lasso", "random_forest"] = "logistic"
    C: Annotated[float, Field(gt=0)] = 1.0
    n_estimators: Annotated[int, Field(ge=1)] = 500


def _orthogonal(spec, seed, threads):
    from fairmiss.learners.orthogonal.projection import OrthogonalGroupSVD, SparseOrthogonalGroupSVD

    if spec.projection == "sog":
        proj = SparseOrthogonalGroupSVD(n_components=spec.n_components, t=spec.t, output=spec.output,
                                        random_state=seed)
    else:
        proj = OrthogonalGroupSVD(n_components=spec.n_components, output=spec.output,
                                  variant="paper" if spec.projection == "og_paper" else "optimal", random_state=seed)
    if spec.head == "random_forest":
        head = RandomForestClassifier(n_estimators=spec.n_estimators, n_jobs=threads, random_state=seed)
    else:
        head = make_pipeline(StandardScaler(), _lr(spec.C, "l1" if spec.head == "lasso" else "l2", 1000, seed))
    return Learner(ProjectedHead(proj, head), needs_sensitive_fit=True, needs_sensitive_predict=True)


LEARNER_KINDS.register("orthogonal", OrthogonalSpec, _orthogonal, needs_groups=True, family="orthogonal")
