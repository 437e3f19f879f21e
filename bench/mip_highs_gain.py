"""Does HiGHS improve on the local-search start?

Fits a 10-tree Fair MIP Forest (search warm start) on one 70/30 split twice, with ``time_limit=2`` (HiGHS gets
2 s per tree from the search tree) and ``time_limit=0`` (solver-free: each tree is the search's), and prints the
per-tree objective gain of the solver over its start, the statuses, the wall time and the test accuracy.

Usage: ``python bench/mip_highs_gain.py VARIANT LABEL GROUP FAIRNESS LAMBDA BATCH``, e.g.
``adult_000 income gender fpr 0.5 200`` or ``hsls_synthetic math_top_half race_wa fnr 1.0 400``
(``FAIRMISS_DATA_MIRROR`` = the raw-data mirror).
"""
import os, sys, time, warnings
import numpy as np
warnings.filterwarnings("ignore")
from fairmiss.datasets import get_variant
from fairmiss.learners.fair_mip_forest.forest import FairMIPForestClassifier
name, target, sens, fair, lam, bs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
df, _ = get_variant(name).build(os.environ.get("FAIRMISS_DATA_MIRROR", "../shared/data/raw"))
print(name, df.shape, flush=True)
y = df[target].to_numpy(); s = df[sens].to_numpy()
X = df.drop(columns=[target])
rng = np.random.RandomState(0); idx = rng.permutation(len(df)); tr, te = idx[: int(.7*len(df))], idx[int(.7*len(df)):]
for tl in (2, 0):
    t0 = time.perf_counter()
    clf = FairMIPForestClassifier(n_trees=10, batch_size=bs, lambda_=lam, fairness=fair, warm_start="search", time_limit=tl, random_state=1)
    clf.fit(X.iloc[tr], y[tr], sensitive_features=s[tr])
    dt = time.perf_counter() - t0
    acc = (clf.predict(X.iloc[te]) == y[te]).mean()
    gains = [ (i["warm_start_objective"] - i["objective"]) if i["warm_start_objective"] is not None else None for i in clf.solve_info_]
    print(f"time_limit={tl}: {dt:.1f}s acc={acc:.4f} objs={[round(i['objective'],4) for i in clf.solve_info_]} gains={gains} status={[i['status'] for i in clf.solve_info_]}", flush=True)
