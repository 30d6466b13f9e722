"""Full-text search: the store that answers a plan, its routes (FTS5, trigram, CJK, substring), snippets, scores and the map of sources."""
