"""Reporting: Pareto fronts, plots and the HTML report (no MLflow: reads results files)."""
