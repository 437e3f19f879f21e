"""Imputation: scikit-learn imputers, per-group / mismatch / multiple imputers, +mask, and the
imputation diagnostics of paper 000 (Definition 1, Theorems 1-2)."""
