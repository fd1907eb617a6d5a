"""The HTTP API: FastAPI app factory, auth, error mapping and request/response schemas."""
