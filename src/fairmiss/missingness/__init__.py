"""Missingness: mechanisms, amputation, realised-rate checks, presets, and the seeded train/test splits."""

# Registering every kind: importing the union module runs the discovery of the kind modules of this package
# (fairmiss._registry.discover), so the registry is complete whatever module of the package is imported first.
import fairmiss.missingness.specs  # noqa: E402,F401
