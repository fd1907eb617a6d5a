"""Adapters of the ports: in-memory fakes, the embedded (SQLite) backend and the AWS backend."""
