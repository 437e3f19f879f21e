"""Feng, Calmon & Wang (NeurIPS 2023), "Adapting Fairness Interventions to Missing Values": fair learners
adapted to missing values instead of impute-then-classify — affinely adaptive features
(:mod:`.adaptive`, kind ``adaptive``) and FairMissBag (:mod:`.bag`, kind ``fairmissbag``); specs and
factories in :mod:`.spec`. Missing-pattern clustering with a per-cluster fair classifier is not built."""
