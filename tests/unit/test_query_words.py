"""Both backends search the same words of a query: the lexical channel ranks from the same
terms on SQLite FTS5 and on OpenSearch."""

from __future__ import annotations

from prme.backends.aws.opensearch_index import OpenSearchIndex
from prme.backends.embedded.sqlite_index import match_expression
from prme.backends.query_words import query_words
from prme.model.records import OwnerKey
from prme.model.search import IndexFilter, IndexQuery

OWNER = OwnerKey(tenant_id="t", owner_id="o")


def test_question_and_function_words_are_left_out_once_each() -> None:
    assert query_words("What did Melanie do with her kids? What did they paint?") == [
        "melanie",
        "her",
        "kids",
        "paint",
    ]


def test_a_query_of_only_function_words_still_searches_them() -> None:
    assert query_words("Where was it?") == ["where", "was", "it"]
    assert query_words("?!") == []


def test_sqlite_and_opensearch_search_the_same_words() -> None:
    text = "What does Nate do to relax after his tournaments?"
    assert match_expression(text) == '"nate" OR "relax" OR "after" OR "his" OR "tournaments"'
    query = IndexQuery(text=text, vector=None, embedding_model=None, filters=IndexFilter())
    request = OpenSearchIndex._lexical_request(OWNER, query)
    match = request["query"]["bool"]["must"][0]["match"]["text"]
    assert match == {"query": "nate relax after his tournaments", "operator": "or"}
