"""Paper 002: orthogonal (group-independent) low-rank projections OG / SOG and their comparators."""
