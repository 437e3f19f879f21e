"""Feng, Calmon & Wang (NeurIPS 2023), "Adapting Fairness Interventions to Missing Values": fair learners
adapted to missing values instead of impute-then-classify — affinely adaptive features (:mod:`.adaptive`,
kind ``adaptive``), missing-pattern clusters with a fair classifier per cluster (:mod:`.clusters`, kind
``pattern_clusters``; a simple greedy splitting rule, see there) and FairMissBag (:mod:`.bag`, kind
``fairmissbag``); specs and factories in :mod:`.spec`."""
