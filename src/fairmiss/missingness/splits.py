"""Seeded train/test splits stratified by group × label."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

__all__ = ["split_indices"]


def split_indices(y: np.ndarray, group: np.ndarray, *, test_size: float, seed: int, stratify: str = "group_label"):
    """Return (train_idx, test_idx) positional indices."""
    y = np.asarray(y)
    group = np.asarray(group)
    strat = None
    if stratify == "group_label":
        strat = group.astype(str).astype(object) + "|" + y.astype(str).astype(object)
    elif stratify == "label":
        strat = y
    idx = np.arange(len(y))
    tr, te = train_test_split(idx, test_size=test_size, random_state=seed, stratify=strat)
    return np.sort(tr), np.sort(te)
