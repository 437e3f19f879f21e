"""Deprecated alias of :mod:`fairmiss.learners.budro.boosting` (the layout before the package move).

Kept for one release so that models logged to MLflow under the old module paths still unpickle;
new code imports :mod:`fairmiss.learners.budro.boosting`."""

from fairmiss._compat import alias_module

alias_module(__name__, "fairmiss.learners.budro.boosting")
