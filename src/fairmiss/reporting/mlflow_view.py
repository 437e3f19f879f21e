"""The MLflow UI's runs page opened on the columns a comparison needs (pure strings: no MLflow import).

MLflow 3.x chooses the runs table's visible columns from its *UI state* (``selectedColumns``; by default only
the Source, Models and Dataset attributes, so no metric is visible). The URL's search parameters carry only
the search facets (``searchFilter``, ``orderByKey``, ``orderByAsc``, …), not the columns: a URL with
``orderByKey=metrics.`fnr_difference``` sorts by the gap but does not show it. What the UI does read from the
URL is a *shared view*: ``#/experiments/<id>/runs?viewStateShareKey=<key>`` loads the experiment tag
``mlflow.sharedViewState.<key>``, a JSON object holding the search facets and the UI state (the "Share" button
of the runs page writes such tags). The key is ignored when the URL also carries a search facet. Read from the
UI bundle of MLflow 3.17.2 (``mlflow/server/js/build/static/js``: the ``viewStateShareKey`` /
``mlflow.sharedViewState.`` constants and the hook that picks ``selectedColumns``, ``columnOrder``,
``columnWidths``, … from the tag) and checked in headless Chromium by ``tests/integration/test_browser.py``.

* :func:`runs_view_state`: the view — sorted by the fairness metric (smallest gap first), columns the
  fairness metric, accuracy, Dataset, a run-name column wide enough for ``<imputer>+<learner> · split <k>``; its
  chart tab (``&compareRunsMode=CHART``) holds one scatter, the fairness metric against accuracy (the UI
  state's ``compareRunCharts`` / ``compareRunSections``: with either missing MLflow draws its default charts,
  a bar or line chart per metric and never a scatter).
* :func:`shared_view_tag`: the experiment tag (key, JSON value) to set once per experiment (by
  :mod:`fairmiss.tracking`, the one module that talks to MLflow).
* :func:`runs_page_url`: the URL to print.
"""

from __future__ import annotations

import json
import re
import urllib.parse

__all__ = ["SHARED_VIEW_TAG_PREFIX", "share_key", "metric_column", "runs_view_state", "shared_view_tag",
           "runs_page_url", "RUN_NAME_WIDTH", "CHART_RUNS"]

#: MLflow's experiment-tag prefix of a shared runs-page view (the UI's ``viewStateShareKey`` URL parameter)
SHARED_VIEW_TAG_PREFIX = "mlflow.sharedViewState."

#: width (px) of the runs table's run-name column: MLflow's 190 px cuts "mean+logreg · mcar_inc…"; 320 px holds
#: a method label, the scenario and the split at the UI's font
RUN_NAME_WIDTH = 320
#: runs the chart tab draws (MLflow's own default is 10: a 36-cell sweep would show only its first 10 points)
CHART_RUNS = 1000


def share_key(fairness_metric: str) -> str:
    """The share key of the fairmiss view for ``fairness_metric`` (URL-safe): ``fairmiss-fnr_difference``."""
    return "fairmiss-" + re.sub(r"[^A-Za-z0-9_.-]", "_", fairness_metric)


def metric_column(metric: str) -> str:
    """The runs table's column id of a metric: ``metrics.`fnr_difference```."""
    return f"metrics.`{metric}`"


def runs_view_state(fairness_metric: str, *, extra_metrics=("accuracy",)) -> dict:
    """The runs-page view: sorted by ``fairness_metric`` ascending; columns the fairness metric, then
    ``extra_metrics``, then Dataset (the run name column is always shown, and MLflow puts its Created column
    before the selected ones); every run drawn on the chart tab."""
    metrics = [fairness_metric] + [m for m in extra_metrics if m != fairness_metric]
    cols = [metric_column(m) for m in metrics] + ["attributes.`Dataset`"]
    section = "fairmiss-tradeoff"
    scatter = {"type": "SCATTER", "uuid": f"fairmiss-{fairness_metric}-vs-accuracy", "deleted": False,
               "isGenerated": False, "metricSectionId": section, "runsCountToCompare": CHART_RUNS,
               "xaxis": {"key": fairness_metric, "type": "METRIC"}, "yaxis": {"key": "accuracy", "type": "METRIC"}}
    sections = [{"uuid": section, "name": f"accuracy vs {fairness_metric}", "display": True, "isReordered": False,
                 "deleted": False, "isGenerated": False}]
    return {"orderByKey": metric_column(fairness_metric), "orderByAsc": True, "selectedColumns": cols,
            "columnOrder": ["attributes.`Run Name`", *cols], "columnWidths": {"attributes.`Run Name`": RUN_NAME_WIDTH},
            "compareRunCharts": [scatter], "compareRunSections": sections,
            # every run drawn (MLflow's default hides all but the first 10 rows from the charts)
            "runsHiddenMode": "SHOW_ALL"}


def shared_view_tag(fairness_metric: str, *, extra_metrics=("accuracy",)) -> tuple[str, str]:
    """``(tag key, tag value)`` of the experiment tag that :func:`runs_page_url` opens."""
    state = runs_view_state(fairness_metric, extra_metrics=extra_metrics)
    return SHARED_VIEW_TAG_PREFIX + share_key(fairness_metric), json.dumps(state, sort_keys=True)


def runs_page_url(base_url: str, experiment_id: str, fairness_metric: str | None = None, *,
                  chart: bool = False) -> str:
    """The experiment's runs page; with ``fairness_metric``, opened on the shared view of
    :func:`shared_view_tag` (the tag must be set on the experiment, else the UI says the key does not exist
    and falls back to the plain page); ``chart``: on its chart tab (the accuracy–fairness scatter)."""
    url = f"{base_url.rstrip('/')}/#/experiments/{urllib.parse.quote(str(experiment_id))}/runs"
    if fairness_metric is None:
        return url
    url += "?viewStateShareKey=" + urllib.parse.quote(share_key(fairness_metric))
    return url + "&compareRunsMode=CHART" if chart else url
