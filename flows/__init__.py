"""Prefect flows and the ``fairmiss`` command line."""
