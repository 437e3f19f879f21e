"""Prefect flows and the ``fairmiss`` command line."""

import os

# No telemetry from the orchestration stack (CI and many users run offline).
for _k, _v in {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "GX_ANALYTICS_ENABLED": "False",
               "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
               # the ephemeral server needs more than Prefect's default 20 s on a loaded 2-core machine
               "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
               # One BLAS/OpenMP thread per worker: parallelism is across cells (execution.max_workers),
               # so workers x threads never exceed the cores, and results do not depend on the machine's
               # default BLAS thread count (the Zafar CCP was seen to end differently with 1 vs 2 threads).
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}.items():
    os.environ.setdefault(_k, _v)

# One OpenBLAS kernel on every x86-64 CPU with AVX2 (before numpy is imported): the BLAS inside SciPy's
# optimisers otherwise moves chaotic fits (Zafar) between CPUs — see fairmiss.cpu.
from fairmiss.cpu import pin_blas_kernel  # noqa: E402  (imports neither numpy nor anything heavy)

pin_blas_kernel()
