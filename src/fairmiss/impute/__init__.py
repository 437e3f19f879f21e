"""Imputation: scikit-learn imputers, per-group / mismatch / multiple imputers, +mask, and the
imputation diagnostics of paper 000 (Definition 1, Theorems 1-2)."""

# Registering every kind: importing the union module runs the discovery of the kind modules of this package
# (fairmiss._registry.discover), so the registry is complete whatever module of the package is imported first.
import fairmiss.impute.specs  # noqa: E402,F401
