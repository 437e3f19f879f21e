"""A study's claim settings: the optional ``claims:`` section of an experiment config, fixed in the study file
before anything runs and read by the claim hooks (:mod:`fairmiss.studies.claims`).

```yaml
claims:
  feng2023:                      # Feng, Calmon & Wang 2023: S-a ... S-e (fairmiss.studies.feng2023_verdicts)
    gap: equalized_odds_difference
    gaps: {fair_projection: mean_equalized_odds, zafar: fnr_difference}   # per arm, as the paper measures it
    outside: [ind_eqodds_tree]     # arms in no statement (they separate causes)
    mcar_mar: [mcar, mar]          # the settings (a) and (d) speak of
    mnar: [mnar]                   # the settings (b) and (c) speak of
    n_levels: 5
    equal_acc: 0.01
    above_acc: 0.01
    above_gap: 0.01
    extend_acc: 0.01
    extend_gap: 0.01
```

The section changes no cell: it is left out of the config hash, and out of dumps while unset (configs without
it keep their hash and their dump); this module is left out of the cell code version
(:data:`fairmiss.codeversion.NOT_CELL_CODE`), so editing it keeps a study's cached cells.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from fairmiss._spec import SafeLabel, _Strict

__all__ = ["ClaimsSpec", "DERIVED_MEO", "Feng2023ClaimsSpec"]

#: the paper's mean equalized odds, derived from a cell's logged ``equalized_odds_sum`` (not logged itself)
DERIVED_MEO = "mean_equalized_odds"

Tolerance = Annotated[float, Field(ge=0.0, le=1.0)]


class Feng2023ClaimsSpec(_Strict):
    """Tolerances and settings of Feng et al.'s statements S-a ... S-e (every tolerance in the units of its
    metric: accuracy, or the gap ``gap``). None has a default: a study states each before it runs."""

    #: the fairness gap the fronts are drawn against (a logged per-cell gap; default: the config's
    #: ``fairness_metric``)
    gap: Annotated[str, Field(min_length=1)] | None = None
    #: per fair-learner kind (the kind of a pair's impute-then-classify learner, e.g. ``zafar``), the gap that
    #: pair's fronts are drawn against, as the paper measures each intervention; a kind not listed uses ``gap``.
    #: Any logged gap, or ``mean_equalized_odds`` (the paper's MEO, ½(|ΔFNR| + |ΔFPR|) = ``equalized_odds_sum`` / 2)
    gaps: dict[str, Annotated[str, Field(min_length=1)]] = Field(default_factory=dict)
    #: learner families (a learner's name before its comma) run and reported but in no statement: arms that
    #: separate causes (what indicators alone, bagging alone or a randomized prediction buys), not the paper's
    outside: list[SafeLabel] = Field(default_factory=list)
    #: missingness settings (their names) that are MCAR or MAR: statements (a) and (d)
    mcar_mar: list[SafeLabel] = Field(min_length=1)
    #: missingness settings that are MNAR: statements (b) and (c)
    mnar: list[SafeLabel] = Field(min_length=1)
    #: gap (or accuracy) levels per compared pair of fronts, evenly spaced over their common range
    n_levels: Annotated[int, Field(ge=2, le=50)] = 5
    #: (a): ≈ at a level when |Δ accuracy| ≤ this; (d): the bag is *below* at a level when
    #: Δ accuracy < −max(c·SE, this)
    equal_acc: Tolerance
    #: (b), (c): *above in accuracy* at a level when Δ accuracy > max(c·SE, this)
    above_acc: Tolerance
    #: (c): *above in fairness* at an accuracy level when Δ gap < −max(c·SE, this)
    above_gap: Tolerance
    #: (d): the bag's most accurate point beyond the baseline's by more than max(c·SE, this)
    extend_acc: Tolerance
    #: (d): the bag's fairest point beyond the baseline's (a lower gap) by more than max(c·SE, this)
    extend_gap: Tolerance

    @model_validator(mode="after")
    def _disjoint(self):
        both = sorted(set(self.mcar_mar) & set(self.mnar))
        if both:
            raise ValueError(f"setting(s) {both} listed under both mcar_mar and mnar")
        return self

    @model_validator(mode="after")
    def _known_gaps(self):
        """``gaps`` maps learner kinds to gaps fairmiss logs (or the derived ``mean_equalized_odds``)."""
        from fairmiss.learners.adapter import LEARNER_KINDS
        from fairmiss.metrics.kinds import METRIC_TABLE

        kinds = [k for k in self.gaps if k not in LEARNER_KINDS]
        if kinds:
            raise ValueError(f"gaps: {kinds} are not learner kinds (one of {sorted(LEARNER_KINDS)})")
        known = sorted(m.name for m in METRIC_TABLE.values() if m.kind == "gap") + [DERIVED_MEO]
        bad = {k: g for k, g in self.gaps.items() if g not in known}
        if bad:
            raise ValueError(f"gaps: {bad} name no gap fairmiss logs (one of {known})")
        return self


class ClaimsSpec(_Strict):
    """Per paper, the settings its claim hook reads; a paper left out is decided by its hook's own rules (or
    not at all)."""

    feng2023: Feng2023ClaimsSpec | None = None
