"""Study configs of the papers' own studies: decile (003), sim (001) and HCP (002), and the study registry.

A config file with a ``study:`` key names a study registered in :data:`STUDIES`: its config class (validated
by :func:`fairmiss.config.load_study_config`) and its flow, ``"module:function"`` (imported by
:func:`flows.run.start_flow`; the library itself never imports the flows). Adding a study with its own flow is
its config class, one ``STUDIES.register`` call, its flow module and its test — the CLI, the API and the DVC
stages dispatch through the registry.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from pydantic import Field, model_validator

from fairmiss._registry import Registry
from fairmiss._spec import SafeName, _Strict
from fairmiss.config.experiment import DatasetSpec, TrackingSpec

__all__ = ["DecileStudyConfig", "HCPStudyConfig", "Sim001StudyConfig", "STUDIES"]


class DecileStudyConfig(_Strict):
    """Paper 003's COMPAS decile study (a regression study with its own flow)."""

    study: Literal["003_decile"]
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    dataset: DatasetSpec
    n_trees: Annotated[int, Field(ge=1)] = 20
    test_size: Annotated[float, Field(gt=0, lt=1)] = 0.2
    mode: Literal["compressed", "explicit"] = "explicit"
    bounds: tuple[float, float] | None = None
    tracking: TrackingSpec = TrackingSpec()
    quick: dict[str, Any] | None = None


class Sim001StudyConfig(_Strict):
    """Paper 001's simulation table (median relative R², Model 1), a study with its own flow."""

    study: Literal["001_table"]
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    n_reps: Annotated[int, Field(ge=2)] = 20
    n_train: Annotated[int, Field(ge=50)] = 1000
    n_test: Annotated[int, Field(ge=50)] = 1000
    rho: Annotated[float, Field(ge=0, lt=1)] = 0.5
    rate: Annotated[float, Field(gt=0, lt=1)] = 0.2
    learners: list[Literal["tree", "rf", "xgb", "svm", "knn"]] = Field(default_factory=lambda: ["tree", "rf", "xgb"],
                                                                       min_length=1)
    rf_n_estimators: Annotated[int, Field(ge=1)] = 100
    xgb_n_estimators: Annotated[int, Field(ge=1)] = 500
    tolerance: Annotated[float, Field(gt=0)] = 0.03
    tracking: TrackingSpec = TrackingSpec()
    quick: dict[str, Any] | None = None


class HCPStudyConfig(_Strict):
    """Paper 002 Table 1 (HCP connectomes, scanner as the group): eight models over repeated random
    splits, per-scanner metrics in both conventions and Mann–Whitney tests (:mod:`fairmiss.studies.p002_hcp`).

    ``dataset`` defaults to ``hcp_synthetic`` (a labelled synthetic stand-in); set it to ``hcp`` when
    the restricted-access files are in the raw directory."""

    study: Literal["002_table1_hcp"]
    experiment: SafeName
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    dataset: DatasetSpec = DatasetSpec(name="hcp_synthetic")
    n_components: Annotated[int, Field(ge=1)] = 30
    n_splits: Annotated[int, Field(ge=1, le=1000)] = 300
    test_size: Annotated[float, Field(gt=0, lt=1)] = 0.3
    models: list[Literal["SVD", "SVD_Z", "LASSO_u", "RF_u", "OG", "SOG", "LASSO", "RF"]] = Field(
        default_factory=lambda: ["SVD", "SVD_Z", "LASSO_u", "RF_u", "OG", "SOG", "LASSO", "RF"], min_length=1)
    og_variant: Literal["paper", "optimal"] = "paper"
    sog_t: Annotated[float, Field(ge=1)] | None = None  # None: 0.6·sqrt(p) (SparseOrthogonalGroupSVD default)
    sog_tol: Annotated[float, Field(gt=0)] = 1e-5  # relative change of the rank-1 objective [GAP]
    sog_max_iter: Annotated[int, Field(ge=1)] = 100
    lasso_C: Annotated[float, Field(gt=0)] = 0.1
    rf_n_estimators: Annotated[int, Field(ge=1)] = 500
    threshold: Annotated[float, Field(gt=0, lt=1)] = 0.5
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05  # Mann–Whitney level (the paper gives none)
    ecdf_split: Annotated[int, Field(ge=0)] = 0
    tracking: TrackingSpec = TrackingSpec()
    quick: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check(self):
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"models: duplicated names in {self.models}")
        if self.ecdf_split >= self.n_splits:
            raise ValueError(f"ecdf_split={self.ecdf_split} must be < n_splits={self.n_splits}")
        return self


#: ``study`` -> config class (``spec``; ``build`` validates a dict into it) and ``flow``, ``"module:function"``
#: taking ``(config_path, quick=..., **kw)``
STUDIES = Registry("study")
STUDIES.register("003_decile", DecileStudyConfig, DecileStudyConfig.model_validate,
                 flow="flows.studies.p003_decile:decile_flow")
STUDIES.register("001_table", Sim001StudyConfig, Sim001StudyConfig.model_validate,
                 flow="flows.studies.p001_sim:sim001_flow")
STUDIES.register("002_table1_hcp", HCPStudyConfig, HCPStudyConfig.model_validate,
                 flow="flows.studies.p002_hcp:hcp_flow")
