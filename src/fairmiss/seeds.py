"""Seed derivation: one root seed per experiment, a derived seed per cell and purpose.

Seeds are derived with :class:`numpy.random.SeedSequence` from the root seed and a tuple of
string keys (for example ``("split", 3)`` or ``("learner", "decision_tree", 3)``), so that

* the same config always gives the same seeds (no global state is touched);
* cells that should share randomness share it by construction: every imputer and learner in
  split ``i`` sees the same train/test split and the same missingness mask;
* adding a learner or an imputer to a config does not change the seeds of the others.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["derive_seed", "derive_rng"]


def _key_to_int(key) -> int:
    return int.from_bytes(hashlib.sha256(str(key).encode()).digest()[:4], "little")


def derive_seed(root_seed: int, *keys) -> int:
    """Return a 32-bit seed derived from ``root_seed`` and ``keys``."""
    ss = np.random.SeedSequence([int(root_seed), *(_key_to_int(k) for k in keys)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def derive_rng(root_seed: int, *keys) -> np.random.Generator:
    return np.random.default_rng(derive_seed(root_seed, *keys))
