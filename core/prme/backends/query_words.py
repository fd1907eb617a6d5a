"""The words a lexical query searches for, the same on every backend.

SQLite FTS5 and OpenSearch analyse text differently (porter stemming vs the english
analyzer, whose stopword list keeps "what", "did", "have", ...). Both search the same
distinct words of the query, with the same function words left out, so the two
backends rank from the same terms.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
# Function words that match almost every record: they add noise to BM25 and slow the OR
# query down. Question words are among them ("what did ... do").
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def query_words(text: str) -> list[str]:
    """The query's distinct lowercased words in order, without function words; all of
    them when every word is one (a query of only function words still searches)."""
    words = list(dict.fromkeys(_WORD.findall(text.lower())))
    content = [w for w in words if w not in _STOPWORDS]
    return content or words
