"""``split.seeds``: a study that names its split seeds (the Shades-of-Null suite's 100, 200, ..., 600) gets
exactly the rows scikit-learn's ``train_test_split(random_state=seed)`` gives; without it nothing changes (the
split spec dumps and hashes as before, and no cell key gains a key)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from fairmiss.config import ConfigError, parse_config
from fairmiss.config.experiment import SplitSpec
from fairmiss.pipeline import cell_params, split_rows

BASE = {"experiment": "seeds", "seed": 7, "dataset": {"name": "german_son"},
        "missingness": [{"kind": "none"}], "imputers": [{"kind": "median"}],
        "learners": [{"kind": "logistic_regression"}]}


class _Data:  # the two columns split_rows reads, of a table with 50 rows
    def __init__(self):
        import pandas as pd

        rng = np.random.default_rng(0)
        self.df = pd.DataFrame({"y": rng.integers(0, 2, 50), "g": rng.integers(0, 2, 50)})
        self.label, self.group = "y", "g"


@pytest.mark.parametrize("stratify", ["none", "label"])
def test_named_seeds_give_scikit_learns_rows(stratify):
    cfg = parse_config({**BASE, "split": {"seeds": [100, 200, 300], "test_size": 0.3, "stratify": stratify}})
    assert cfg.split.n_splits == 3
    data = _Data()
    idx = np.arange(50)
    for i, seed in enumerate([100, 200, 300]):
        tr, te = split_rows(cfg, data, i)
        ref_tr, ref_te = train_test_split(idx, test_size=0.3, random_state=seed,
                                          stratify=None if stratify == "none" else data.df["y"].to_numpy())
        assert tr.tolist() == sorted(ref_tr.tolist()) and te.tolist() == sorted(ref_te.tolist())
    # different seeds, different rows
    assert split_rows(cfg, data, 0)[1].tolist() != split_rows(cfg, data, 1)[1].tolist()


def test_without_seeds_nothing_changes():
    assert "seeds" not in SplitSpec().model_dump() and "seeds" not in SplitSpec(n_splits=3).model_dump()
    plain = parse_config({**BASE, "split": {"n_splits": 2}})
    named = parse_config({**BASE, "split": {"seeds": [100, 200]}})
    assert plain.config_hash != named.config_hash
    assert "split.seed" not in cell_params(plain, plain.cells()[0])
    assert [cell_params(named, c)["split.seed"] for c in named.cells()] == [100, 200]


@pytest.mark.parametrize("split, expect", [
    ({"seeds": [1, 2], "n_splits": 3}, "n_splits 3 but 2 seeds"),
    ({"seeds": [5, 5]}, "repeated seeds [5]"),
    ({"seeds": []}, "split.seeds"),
    ({"seeds": [-1]}, "split.seeds.0"),
])
def test_bad_seeds_name_the_key(split, expect):
    with pytest.raises(ConfigError) as e:
        parse_config({**BASE, "split": split})
    assert expect in str(e.value), str(e.value)
