"""Paper 003: equality-constrained trees (post-hoc leaf adjustment equalising group means)."""
