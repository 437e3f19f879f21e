"""Prefect flows and the ``fairmiss`` command line."""

import os

# No telemetry from the orchestration stack (CI and many users run offline).
for _k, _v in {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "GX_ANALYTICS_ENABLED": "False",
               "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}.items():
    os.environ.setdefault(_k, _v)
