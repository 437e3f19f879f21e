"""fairmiss: fairness when data have missing values.

The library (this package) is free of Prefect and DVC; MLflow is used only in
:mod:`fairmiss.tracking`. Orchestration lives in the top-level ``flows`` and ``tasks``
packages.
"""

__version__ = "0.1.0"
