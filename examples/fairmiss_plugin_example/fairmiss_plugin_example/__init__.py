"""A minimal fairmiss plugin package: ``kind: plugin_ridge`` (a learner) and ``npv`` (a metric).

Nothing is imported here: fairmiss imports :mod:`.learners` and :mod:`.metrics` through the entry points
declared in ``pyproject.toml`` when it discovers its kinds.
"""
