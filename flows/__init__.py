"""Prefect flows and the ``fairmiss`` command line."""

import os

# No telemetry from the orchestration stack (CI and many users run offline).
for _k, _v in {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "GX_ANALYTICS_ENABLED": "False",
               "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
               # the ephemeral server needs more than Prefect's default 20 s on a loaded 2-core machine
               "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"}.items():
    os.environ.setdefault(_k, _v)
