"""Deprecated: the old home of the papers' estimators (before the package move). Each submodule is an
alias of its new module under :mod:`fairmiss.learners` / :mod:`fairmiss.impute`, kept one release so
that models logged to MLflow before the move still load."""
