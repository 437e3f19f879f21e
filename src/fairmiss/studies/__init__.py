"""The non-grid reproductions of the papers (p000 claims, p001 simulation, p002 HCP table, p003 deciles), and
the claim hooks an experiment run asks (:mod:`fairmiss.studies.claims`)."""
