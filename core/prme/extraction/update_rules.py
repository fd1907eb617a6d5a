"""Update wordings the rule extractor recognises: moves, job and preference changes, "no longer",
"not anymore" and corrections, each turned into a claim whose every field is a span of the sentence.

A match names the new value (or the value given up, for a negation) and, when the sentence
names it, the value it replaces; the engine decides what that supersedes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

_QUALIFIED = r"(?:(?:now|just|recently|finally|actually|officially)\s+)*"
_MONTH_OR_YEAR = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|\d{4})"
)
# Where a value ends: punctuation, a joining word, or a time phrase after it ("in May").
_END = (
    r"(?=\s+(?:and|but|now|anymore|any\s+more|last|this|since|because|after|when|for|a\s+few|"
    r"yesterday|today|recently|on|two|three|several)\b"
    rf"|\s+in\s+{_MONTH_OR_YEAR}\b|\s*[,.;!?)…]|\s*$)"
)


def _value(name: str) -> str:
    # A value starts with a letter and stops at punctuation; the caller adds the end test.
    return rf"(?P<{name}>[^\W\d_][^,.;!?]*?)"


_PREPOSITION = r"(?:(?P<prep>in|at|for|with)\s+)?"
_NEGATION = r"(?P<neg>don't|don’t|doesn't|doesn’t|do\s+not|does\s+not)"
_VERB = r"(?P<verb>[a-z]+)"
_PRONOUNS = frozenset({"i", "we", "he", "she", "they", "you", "it"})
_MAX_SUBJECT_WORDS = 8


@dataclass(frozen=True, slots=True)
class UpdateClaim:
    """What one update wording says: spans of the sentence, and the subject before it."""

    subject: str
    predicate: str
    object: str
    replaces_object: str | None
    polarity: Literal["affirmed", "negated"]


def _label(*parts: str | None) -> str:
    """A predicate label from source words: "no longer" + "live" + "in" -> "no_longer_live_in"."""
    return "_".join("_".join(p.split()) for p in parts if p)


_Builder = Callable[[re.Match[str]], tuple[str, str, str | None, Literal["affirmed", "negated"]]]


def _moved(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["verb"], "to"), m["new"], m.groupdict().get("old"), "affirmed"


def _switched(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["verb"], "to"), m["new"], m["old"], "affirmed"


def _negated(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["neg"], m["verb"], m["prep"]), m["obj"], None, "negated"


def _now(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["verb"], m["prep"]), m["new"], None, "affirmed"


def _now_at(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label("now", m["verb"]), m["new"], None, "affirmed"


def _now_in(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return "now_in", m["new"], None, "affirmed"


def _joined(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["verb"]), m["new"], m["old"], "affirmed"


def _new_job(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label("job", m["prep"]), m["new"], None, "affirmed"


def _used_to(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["verb"], m["prep"]), m["new"], m["old"], "affirmed"


def _corrected(m: re.Match[str]) -> tuple[str, str, str | None, Literal["affirmed", "negated"]]:
    return _label(m["verb"]), m["new"], m["old"], "affirmed"


# A corrected value may be a number ("it's 2029, not 2027"); it runs up to ", not".
_CORRECTED_NEW = r"(?P<new>[^\W_][^,;!?]*?)"
_CORRECTED_OLD = r"(?P<old>[^\W_][^,;!?]*?)\s*[.!]?$"

# Order matters: the first wording that matches a sentence describes it.
_WORDINGS: tuple[tuple[re.Pattern[str], _Builder], ...] = (
    (
        re.compile(
            rf"\b{_QUALIFIED}(?P<verb>moved|relocated)\s+(?:back\s+)?from\s+{_value('old')}"
            rf"\s+to\s+{_value('new')}{_END}"
        ),
        _moved,
    ),
    (
        re.compile(
            rf"\bused\s+to\s+[a-z]+\s+(?:(?:in|at|for|with)\s+)?{_value('old')},?\s+but\s+"
            rf"(?:now\s+)?(?:(?:I|we)\s+)?(?:now\s+)?{_VERB}\s+{_PREPOSITION}{_value('new')}{_END}"
        ),
        _used_to,
    ),
    (
        re.compile(
            rf"\bleft\s+{_value('old')}\s+and\s+(?:have\s+)?(?:just\s+)?"
            rf"(?P<verb>joined)\s+{_value('new')}{_END}"
        ),
        _joined,
    ),
    (
        re.compile(
            rf"\b{_QUALIFIED}(?P<verb>switched)\s+from\s+{_value('old')}\s+to\s+{_value('new')}{_END}"
        ),
        _switched,
    ),
    (
        re.compile(
            rf"\b{_QUALIFIED}(?P<verb>moved|relocated)\s+(?:back\s+)?to\s+{_value('new')}{_END}"
        ),
        _moved,
    ),
    (
        re.compile(
            rf"\b{_QUALIFIED}(?:started|began|got|have|found)\s+(?:a\s+)?new\s+job\s+"
            rf"(?P<prep>at|with)\s+{_value('new')}{_END}"
        ),
        _new_job,
    ),
    (
        re.compile(
            rf"\bnow\s+(?P<verb>live|lives|work|works)\s+(?P<prep>in|at|for)\s+{_value('new')}{_END}"
        ),
        _now,
    ),
    (
        re.compile(rf"(?:\bam|['’]m)\s+now\s+(?P<verb>at|with)\s+{_value('new')}{_END}"),
        _now_at,
    ),
    (
        re.compile(rf"(?:\bam|['’]m)\s+in\s+{_value('new')}\s+now\b"),
        _now_in,
    ),
    (
        re.compile(rf"\b(?P<neg>no\s+longer)\s+{_VERB}\s+{_PREPOSITION}{_value('obj')}{_END}"),
        _negated,
    ),
    (
        re.compile(
            rf"\b{_NEGATION}\s+{_VERB}\s+{_PREPOSITION}{_value('obj')}\s+any\s?more\b",
        ),
        _negated,
    ),
    # Corrections that name both values: "I meant Tuesday, not Thursday", "it's 2029, not
    # 2027". The subject is the one written before the verb ("I", "it").
    (
        re.compile(rf"\b(?P<verb>meant)\s+{_CORRECTED_NEW},?\s+not\s+{_CORRECTED_OLD}"),
        _corrected,
    ),
    (
        # "I said Greenfield; it's Greenwood": the value said first is the one withdrawn.
        re.compile(
            r"(?<=\bI\s)(?P<verb>said)\s+(?P<old>[^\W_][^,;!?]*?)[;,]\s+"
            rf"(?:it['’]s|it\s+is|I\s+meant)\s+{_CORRECTED_NEW}\s*[.!]?$"
        ),
        _corrected,
    ),
    (
        re.compile(
            rf"(?<=\bit)(?:['’]|\s+)(?P<verb>s|is)\s+{_CORRECTED_NEW},\s+not\s+{_CORRECTED_OLD}",
            re.IGNORECASE,
        ),
        _corrected,
    ),
)

# "Actually, I live in Berlin, not Lisbon": the clause is the claim, "not X" what it corrects.
CORRECTION_OPENER = re.compile(r"^(?:actually|sorry|correction|oops|no)\b[,:]?\s+", re.IGNORECASE)
CORRECTED_VALUE = re.compile(rf",\s+not\s+{_value('old')}\s*[.!]?$")


def _subject(prefix: str) -> str | None:
    """The subject written before the wording: the last pronoun, else the whole clause head."""
    head = re.split(r"[,;:]\s", prefix)[-1].strip()
    words = list(re.finditer(r"[^\W_]+(?:['’][^\W_]+)*", head))
    if not words or len(words) > _MAX_SUBJECT_WORDS:
        return None
    for word in reversed(words):
        # "I've moved": the pronoun a contraction opens with is the subject.
        pronoun = re.split(r"['’]", word.group())[0]
        if pronoun.casefold() in _PRONOUNS:
            # "We packed up and moved": the pronoun alone is the subject.
            return pronoun
    return head[words[0].start() : words[-1].end()]


def find_update(sentence: str) -> UpdateClaim | None:
    """The update the sentence states, or None when it uses none of the known wordings."""
    for pattern, build in _WORDINGS:
        match = pattern.search(sentence)
        if match is None:
            continue
        subject = _subject(sentence[: match.start()])
        if subject is None:
            continue
        predicate, obj, replaces, polarity = build(match)
        return UpdateClaim(
            subject=subject,
            predicate=predicate.casefold()[:80],
            object=obj.strip(),
            replaces_object=replaces.strip() if replaces else None,
            polarity=polarity,
        )
    return None


def corrected_value(sentence: str) -> tuple[str, int] | None:
    """In a correction ("Actually, it's Y, not X") the value X it withdraws, and where the
    corrected clause ends; None for any other sentence."""
    if CORRECTION_OPENER.match(sentence) is None:
        return None
    match = CORRECTED_VALUE.search(sentence)
    if match is None:
        return None
    return match["old"].strip(), match.start()
