"""The stores a history is kept in: the set of stores, archive files, their pool, profiles, replicas, cold storage and the copies seen once across them."""
