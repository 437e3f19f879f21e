"""The base of every spec (a leaf module): the frozen, extra-forbidding pydantic :class:`_Strict`
and the constrained field types :data:`Rate`, :data:`SafeName`, :data:`SafeLabel`. Kind specs
(missingness, imputers, learners) and :mod:`fairmiss.config` build on it.
"""

from __future__ import annotations

from typing import Annotated
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from fairmiss.io import SAFE_LABEL, SAFE_NAME, check_name

__all__ = ["Rate", "SafeLabel", "SafeName"]


Rate = Annotated[float, Field(ge=0.0, le=1.0)]


#: a name that becomes a file or directory name (experiment, MLflow experiment, deployment)
SafeName = Annotated[str, AfterValidator(lambda v: check_name(v, "name", SAFE_NAME))]


#: a missingness / imputer / learner name (part of cell keys and of file and artifact names)
SafeLabel = Annotated[str, AfterValidator(lambda v: check_name(v, "name", SAFE_LABEL))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
