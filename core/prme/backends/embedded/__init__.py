"""The embedded backend: one local data directory, SQLite for the ledger and the index."""
