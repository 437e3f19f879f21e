"""Estimators from the papers: Fair MIP Forest (000), group-orthogonal projections and Pope & Sydnor
comparators (002), equality-constrained trees (003). Import submodules directly; this package
does not import them eagerly (Pyomo and XGBoost are slow to import)."""

__all__ = ["mip_forest", "mip_tree", "orthogonal", "pope_sydnor", "eqtree"]
