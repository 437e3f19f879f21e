"""The front's figure labels coinciding points once, naming every method there (fairmiss.reporting.compare)."""

import pandas as pd

from fairmiss.reporting.compare import point_labels


def test_coinciding_points_share_one_label():
    g = pd.DataFrame({"method": ["mean+tree", "median+tree", "knn+lr"], "gap_mean": [0.1, 0.1, 0.2],
                      "accuracy_mean": [0.7, 0.7000000001, 0.71]})
    labels = point_labels(g)
    assert sorted(t for _, _, t in labels) == ["knn+lr", "mean+tree, median+tree"]
    assert len(labels) == 2
