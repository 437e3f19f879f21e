"""The non-grid reproductions of the papers (p000 claims, p001 simulation, p002 HCP table, p003 deciles)."""
