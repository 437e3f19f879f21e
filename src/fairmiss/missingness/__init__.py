"""Missingness: mechanisms, amputation, realised-rate checks, presets, and the seeded train/test splits."""
