"""Plain-language names of the metrics a reader meets in the report.

The imputation-fairness diagnostics are logged per cell under internal names (computed by
:func:`fairmiss.impute.diagnostics.cell_imputation_diagnostics`, called from
:func:`fairmiss.pipeline.cell.imputation_diagnostics` on the test split's masked cells whose true value is
known):

==================================  ===========================================================================
internal name                       meaning
==================================  ===========================================================================
``imp_miss.<col>_group_<g>``        missing share of group g: the share of the group's rows (train and test) whose
                                    value of <col> is missing, real or injected — paper 000's p_g
``imp_mse.<col>_group_<g>``         imputation error of group g: mean squared error (imputed − true)² over
                                    the group's masked cells — L_g of paper 000 Definition 1
``imp_rmse.<col>_group_<g>``        its square root, in the feature's own unit
``imp_bias.<col>_group_<g>``        mean of (imputed − true) over the group's masked cells
``imp_disc.<col>``                  discrepancy between groups, Disc = |L_0 − L_1|; with more groups (e.g.
                                    intersections) max_g L_g − min_g L_g
``imp_thm1_disc.<col>``             the Disc paper 000 Theorem 1 predicts for the optimal constant imputer α*
==================================  ===========================================================================

:func:`parse_imp_metric` splits such a name; :func:`plain_imp_name` gives the phrase the report shows,
with the group's name from ``metrics.json`` ``groups`` (code → name).
"""

from __future__ import annotations

import re

__all__ = ["IMP_QUANTITIES", "parse_imp_metric", "plain_imp_name", "group_label"]

#: internal stem -> plain phrase (the report's column / legend wording), in reading order
IMP_QUANTITIES = {
    "miss": "missing share (real or injected)",
    "mse": "imputation error (MSE)",
    "rmse": "imputation error (RMSE)",
    "bias": "imputation bias (mean imputed − true)",
    "disc": "discrepancy between groups (Disc = largest − smallest MSE)",
    "thm1_disc": "Disc predicted by Theorem 1 (best constant imputer)",
}

_IMP = re.compile(r"^imp_(?P<stat>thm1_disc|disc|miss|mse|rmse|bias)\.(?P<feature>.+?)(?:_group_(?P<group>[^_.]+))?$")


def parse_imp_metric(name: str) -> dict | None:
    """``{"stat", "feature", "group"}`` of an ``imp_*`` metric name (``group`` None for the between-group
    quantities), or None when ``name`` is not one.

    >>> parse_imp_metric("imp_mse.priors_count_group_1")
    {'stat': 'mse', 'feature': 'priors_count', 'group': '1'}
    >>> parse_imp_metric("imp_thm1_disc.sex")
    {'stat': 'thm1_disc', 'feature': 'sex', 'group': None}
    """
    m = _IMP.match(str(name))
    if m is None:
        return None
    d = m.groupdict()
    if (d["group"] is None) != (d["stat"] in ("disc", "thm1_disc")):
        return None  # a per-group stem without its group, or a between-group stem with one
    return d


def group_label(code, group_names: dict | None = None) -> str:
    """``group 0 (Black)`` where the dataset names the group, ``group 0`` where it does not."""
    name = {str(k): str(v) for k, v in (group_names or {}).items()}.get(str(code))
    return f"group {code} ({name})" if name is not None and name != str(code) else f"group {code}"


def plain_imp_name(name: str, group_names: dict | None = None) -> str:
    """The report's phrase for an ``imp_*`` metric: ``imputation error (MSE) of priors_count, group 0 (Black)``;
    any other name is returned unchanged."""
    d = parse_imp_metric(name)
    if d is None:
        return str(name)
    text = f"{IMP_QUANTITIES[d['stat']]} of {d['feature']}"
    return text if d["group"] is None else f"{text}, {group_label(d['group'], group_names)}"
