"""Statistics: the report's SQL, usage by model, the rollup that follows the file."""
