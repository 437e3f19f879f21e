"""Paper 000: Fair MIP Forest: MIA trees trained by a MIP (Pyomo + HiGHS), an exact dynamic program,
and a local search, with a fairness regulariser."""
