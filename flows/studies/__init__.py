"""The flows of the paper studies that are not an experiment grid (001 simulation, 002 HCP table and
Figure 2, 003 deciles); :mod:`flows.run` dispatches to them by the config's ``study:`` key."""
