"""The HTTP API: app factory, table-built and adapter routes, auth, error mapping and schemas."""
