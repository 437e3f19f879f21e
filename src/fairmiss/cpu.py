"""Which CPU code paths a process computes with, and pinning the one that moves results.

Two things in the numerical stack choose code by CPU at run time:

* **numpy's SIMD dispatch** (baseline X86_V2, then AVX2/FMA "X86_V3", AVX-512 "X86_V4" …). It decides
  e.g. how ``np.argpartition`` orders equal values; fairmiss no longer lets a result depend on that
  (k-NN imputation: :mod:`fairmiss.impute.knn`). ``NPY_DISABLE_CPU_FEATURES`` simulates an
  older CPU.
* **OpenBLAS's kernel** (``DYNAMIC_ARCH``: Haswell, SkylakeX, Zen, Sandybridge, Prescott …), used by
  numpy's and SciPy's linear algebra *and by SciPy's optimisers* (L-BFGS-B, SLSQP). Kernels sum in
  different orders, so the last bits of products differ. Most methods do not care; Zafar's penalty
  convex-concave procedure is chaotic and ends at different points (mean + Zafar τ 0.01, COMPAS split 0:
  test accuracy 0.548 Haswell / 0.499 Sandybridge / 0.571 Prescott), even with its own products written
  BLAS-free, because SciPy's SLSQP and L-BFGS-B call BLAS themselves.

:func:`pin_blas_kernel` therefore sets ``OPENBLAS_CORETYPE=Haswell`` (unless the user set it) on x86-64
CPUs that have AVX2 and FMA — every x86 server and desktop CPU since 2013–2015 — *before numpy is
imported*. Then every such machine, AVX-512 ones included, runs the same kernel and gives the same bits
(and on this project's machines Haswell is the default kernel anyway, so nothing gets slower here).
On other CPUs (ARM, macOS/Accelerate, x86 without AVX2) the kernel cannot be pinned to the same code;
there the CPU-sensitive cells listed in ``tests/cpu_sensitive.yaml`` are compared within a stated
tolerance, and :func:`cpu_fingerprint` (recorded on every MLflow run as ``cpu.fingerprint``) says why.
"""

from __future__ import annotations

import functools
import os
import platform
import sys

__all__ = ["pin_blas_kernel", "cpu_fingerprint", "numerics", "PINNED_KERNEL"]

PINNED_KERNEL = "Haswell"


def _x86_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def pin_blas_kernel() -> str | None:
    """Set ``OPENBLAS_CORETYPE`` to :data:`PINNED_KERNEL` when it is unset and this CPU can run it.
    Returns the core type in effect from the environment (``None``: OpenBLAS picks by CPU). Has no effect
    on a numpy already imported (OpenBLAS reads the variable when it is loaded)."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return os.environ["OPENBLAS_CORETYPE"]
    if platform.machine().lower() not in ("x86_64", "amd64") or not sys.platform.startswith("linux"):
        return None
    if {"avx2", "fma"} <= _x86_flags():
        os.environ["OPENBLAS_CORETYPE"] = PINNED_KERNEL
        return PINNED_KERNEL
    return None


@functools.lru_cache(maxsize=1)
def cpu_fingerprint() -> str:
    """``numpy:<highest SIMD level in use>;blas:<kernel of each BLAS library loaded>`` — what decides the
    last bits of CPU-sensitive results. Imports numpy and threadpoolctl."""
    import numpy as np  # noqa: F401  (loads OpenBLAS, so threadpoolctl sees it)

    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    levels = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    simd = levels[-1] if levels else "baseline"
    try:
        from threadpoolctl import threadpool_info

        kernels = sorted({str(i.get("architecture")) for i in threadpool_info() if i.get("user_api") == "blas"})
    except Exception:  # pragma: no cover - threadpoolctl missing or failing: still a fingerprint
        kernels = ["unknown"]
    return f"numpy:{simd};blas:{','.join(kernels) or 'none'}"


def numerics() -> dict[str, str]:
    """Each loaded BLAS library's kernel and thread count (a multi-threaded BLAS sums in another order): what,
    beside the code version, a process must share with the flow's for its cells to give the same bits. numpy's
    SIMD level is not part of it: no result depends on it (see the module docstring). Checked on every worker
    of a Dask cluster before a study's cells are submitted to it (``flows.dask_runner.check_cluster``)."""
    import numpy as np  # noqa: F401  (loads OpenBLAS, so threadpoolctl sees it)
    from threadpoolctl import threadpool_info

    blas = sorted({f"{i.get('internal_api')} {i.get('architecture')} kernel, {i.get('num_threads')} thread(s)"
                   for i in threadpool_info() if i.get("user_api") == "blas"})
    return {"blas": "; ".join(blas) or "none"}
