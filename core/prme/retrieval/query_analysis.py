"""Cheap, language-level reading of a query: the current state of things, and who it names."""

from __future__ import annotations

import re

# Words that ask for the present state rather than the history of something.
_CURRENT_STATE = re.compile(
    r"\b(current(ly)?|now|nowadays|latest|still|these days|at the moment|at present|"
    r"presently|anymore|any more|most recent(ly)?|up to date|today)\b",
    re.IGNORECASE,
)


def asks_for_current_state(query: str) -> bool:
    return _CURRENT_STATE.search(query) is not None


_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)


def named_speakers(query: str, speakers: set[str]) -> set[str]:
    """The speakers a query names: every word of the speaker's name occurs in the query as a
    whole word (case-insensitive, a possessive "'s" allowed). When the query names every
    speaker among the candidates, naming tells nothing apart, so none are returned."""
    words = set()
    for word in _WORD.findall(query.casefold()):
        words.add(word)
        for suffix in ("'s", "’s"):
            if word.endswith(suffix):
                words.add(word.removesuffix(suffix))
    named = {
        speaker
        for speaker in speakers
        if (parts := _WORD.findall(speaker.casefold())) and all(p in words for p in parts)
    }
    return named if named != speakers else set()
