"""Extractors that turn one source text into grounded entities, claims, quantities and relationships.

Only the offline pieces are exported here; LLM adapters live in their own modules so that
importing this package never pulls an HTTP or AWS client library.
"""

from __future__ import annotations

from prme.extraction.dates import resolve_relative_dates
from prme.extraction.grounding import parse_decimal, validate_grounded
from prme.extraction.rules import RuleExtractor

__all__ = ["RuleExtractor", "parse_decimal", "resolve_relative_dates", "validate_grounded"]
