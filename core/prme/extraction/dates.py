"""Relative date phrases ("yesterday", "last Friday", "3 days ago") resolved to a source's time."""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNT_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_FIXED_OFFSETS = {
    "today": 0,
    "yesterday": -1,
    "tomorrow": 1,
    "the day before yesterday": -2,
    "the day after tomorrow": 2,
    "last week": -7,
}
_WEEKDAY = "|".join(WEEKDAYS)
_COUNT = r"\d{1,4}|" + "|".join(_COUNT_WORDS)
# Longer phrases come first so "the day before yesterday" is not read as "yesterday".
_PHRASE = re.compile(
    r"\b(?:"
    r"(?P<fixed>the day before yesterday|the day after tomorrow|today|yesterday|tomorrow|last week)"
    rf"|(?P<direction>last|next) (?P<weekday>{_WEEKDAY})"
    rf"|(?P<count>{_COUNT}) (?P<span>day|week)s? ago"
    r"|last (?P<period>month|year)"
    r")\b",
    re.IGNORECASE,
)


def _shift_months(day: date, months: int) -> date:
    """The same day `months` away, clamped to the end of a shorter month (Mar 31 -> Feb 29)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _resolve(match: re.Match[str], today: date) -> date:
    if match["fixed"]:
        return today + timedelta(days=_FIXED_OFFSETS[match["fixed"].lower()])
    if match["weekday"]:
        target = WEEKDAYS.index(match["weekday"].lower())
        if match["direction"].lower() == "last":
            return today - timedelta(days=(today.weekday() - target) % 7 or 7)
        return today + timedelta(days=(target - today.weekday()) % 7 or 7)
    if match["count"]:
        raw = match["count"].lower()
        count = _COUNT_WORDS[raw] if raw in _COUNT_WORDS else int(raw)
        return today - timedelta(days=count * (7 if match["span"].lower() == "week" else 1))
    return _shift_months(today, -1 if match["period"].lower() == "month" else -12)


def resolve_relative_dates(text: str, reference: datetime) -> list[tuple[str, date]]:
    """Each relative date phrase of `text` as written, with its calendar date.

    The calendar date is taken in the reference's own timezone: a message sent at 01:30
    at UTC-6 says "yesterday" about the day before its local date, not its UTC date.
    """
    today = reference.date()
    resolved: list[tuple[str, date]] = []
    for match in _PHRASE.finditer(text):
        try:
            resolved.append((match.group(), _resolve(match, today)))
        except (
            OverflowError
        ):  # "9999 days ago" leaves the calendar; that phrase resolves to nothing
            continue
    return resolved
