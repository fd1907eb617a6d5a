"""Cheap, language-level reading of a query: the current state of things, who it names,
and the calendar dates it mentions."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

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


# English month names and their usual abbreviations ("Sep" and "Sept").
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(
    rf"\b(?P<day>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<month>{_MONTH})\.?,?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b(?P<month>{_MONTH})\.?\s+(?P<day>\d{{1,2}}){_ORDINAL},?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b(?P<month>{_MONTH})\.?,?\s+(?P<year>\d{{4}})\b", re.IGNORECASE)
# A bare year only after a word that makes it one ("in 2024", not "2000 coins").
_YEAR = re.compile(
    r"\b(?:in|during|since|until|by|from|of|year)\s+(?P<year>1[6-9]\d\d|2\d{3})\b",
    re.IGNORECASE,
)


def mentioned_periods(query: str) -> list[tuple[date, date]]:
    """The calendar periods a query names, as half-open [start, end) day ranges: a day
    ("25 May, 2022", "May 25 2022", "2022-05-25"), a month ("November 2022") or a year
    ("in 2024", "during 2023"). The most precise reading of each piece of text wins: "May 25, 2022" is one
    day, not also May and 2022. Relative phrases ("last week") need a reference time and
    are not read here."""
    periods: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []

    def claim(match: re.Match[str], start: date, end: date) -> None:
        if any(a < match.end() and match.start() < b for a, b in taken):
            return
        taken.append((match.start(), match.end()))
        periods.append((start, end))

    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _ISO_DATE):
        for match in pattern.finditer(query):
            month = match["month"]
            number = int(month) if month.isdigit() else _MONTHS[month.lower()]
            try:
                day = date(int(match["year"]), number, int(match["day"]))
            except ValueError:
                continue  # "31 February": not a date
            claim(match, day, day + timedelta(days=1))
    for match in _MONTH_YEAR.finditer(query):
        year, number = int(match["year"]), _MONTHS[match["month"].lower()]
        following = date(year + 1, 1, 1) if number == 12 else date(year, number + 1, 1)
        claim(match, date(year, number, 1), following)
    for match in _YEAR.finditer(query):
        year = int(match["year"])
        claim(match, date(year, 1, 1), date(year + 1, 1, 1))
    return periods
