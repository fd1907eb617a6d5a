"""Wording that says a value changed ("I moved to", "now", "no longer", "actually"): for a
question about the present, a record worded as a change is likely the newer value."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

_CHANGE = re.compile(
    r"\b(now|nowadays|these days|lately|any ?more|no longer|no more|moved|relocated|"
    r"switched|changed|started|quit|stopped|gave up|left|joined|new job|got hired|hired|"
    r"promoted|became|become|actually|i meant|correction|scratch that|sold|cancelled|"
    r"canceled|used to)\b",
    re.IGNORECASE,
)


# The speaker's own change: "My brother just quit his job" is news about someone else, while
# "my favourite ..." and a sentence that opens on its verb ("Quit keto") are the speaker's.
_FIRST_PERSON = re.compile(
    r"\b(I|I'm|I’m|I've|I’ve|we|We|we're|We're|we've|We've)\b"
    r"|\b[Mm]y\s+(?!(?:\w+\s+)?(?:brother|sister|mother|father|mom|mum|dad|wife|husband|partner|"
    r"son|daughter|friend|cousin|aunt|uncle|colleague|coworker|boss|manager|neighbou?r|"
    r"roommate|parents|grandmother|grandfather|girlfriend|boyfriend)\b)"
    r"|^(?:Quit|Sold|Got|Left|Switched|Moved|Started|Stopped|Joined|Became|Gave|Took|Found|"
    r"Changed|Graduated|Relocated|Finished|Dropped|Cancelled|Canceled)\b"
)


# Both tests run on every candidate of every retrieval: the latest records' answers are kept.
@lru_cache(maxsize=16384)
def worded_as_change(text: str) -> bool:
    """True when the speaker says something of theirs changed, or names it as the present one."""
    return _CHANGE.search(text) is not None and _FIRST_PERSON.search(text) is not None


_CORRECTION = re.compile(
    r"\b(actually|i meant|correction|scratch that|let me correct|no wait|hold on|make that|oops|typo|"
    r"sorry,? i|i mixed|i said .{1,60}; it'?s)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=16384)
def worded_as_correction(text: str) -> bool:
    """True when the text corrects something said before: it is meant to replace it."""
    return _CORRECTION.search(text) is not None


def names_mentioned(names: Mapping[str, str], texts: Iterable[str]) -> set[str]:
    """The keys of `names` whose name occurs in one of `texts` as whole words, in any case:
    the entity nodes some record says something about."""
    joined = "\n".join(texts).casefold()
    found: set[str] = set()
    for key, name in names.items():
        words = name.strip().casefold()
        if words and re.search(rf"(?<!\w){re.escape(words)}(?!\w)", joined):
            found.add(key)
    return found
