"""Fixtures of the contract suite."""

from tests.contract.http_support import api  # noqa: F401 - the HTTP API on every backend
