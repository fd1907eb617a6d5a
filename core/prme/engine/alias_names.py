"""Name matching for alias proposals: a deterministic similarity in [0, 1] with its signals.

Pure functions over two names; no I/O. The similarity is the strongest signal that fired,
so every proposal can be explained by one named rule. A score only suggests a review: it
never merges or links anything by itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import combinations

import numpy as np

# A pair at or above this similarity becomes a proposal.
ALIAS_THRESHOLD = 0.75

# Leading titles and articles, trailing suffixes and company designators: they say how a
# name was written, not which thing it names ("Dr. Smith", "The Acme Corp.").
_LEADING = frozenset(
    {
        "the", "a", "an",
        "mr", "mrs", "ms", "miss", "mx", "dr", "doctor", "prof", "professor", "sir", "dame",
        "lord", "lady", "rev", "reverend", "fr", "father", "capt", "captain", "sgt", "col",
        "gen", "hon", "madam", "mme", "mlle", "herr", "frau", "uncle", "aunt", "auntie",
    }
)  # fmt: skip
_TRAILING = frozenset(
    {
        "jr", "sr", "ii", "iii", "iv", "phd", "md", "esq",
        "inc", "incorporated", "ltd", "limited", "llc", "corp", "corporation", "co",
        "company", "plc", "gmbh", "ag", "sa", "srl", "bv", "nv", "lp", "llp",
    }
)  # fmt: skip
# Words an acronym usually skips ("Bank of America" -> "BOA" or "BA").
_CONNECTORS = frozenset({"of", "and", "for", "the", "de", "du", "la", "le", "von", "van", "der"})

_SCORE_NORMALIZED_EQUAL = 1.0
_SCORE_CORE_EQUAL = 0.95
_SCORE_TOKEN_SET_EQUAL = 0.9
_SCORE_COMPACT_EQUAL = 0.9
_SCORE_ACRONYM = 0.9
# "Smith" in "John Smith": the family name (or head noun) is the strongest containment.
_SCORE_TAIL_CONTAINMENT = 0.8
_SCORE_CONTAINMENT = 0.76
# Containment counts only when the shorter name covers this share of the longer one.
_MIN_CONTAINMENT_COVERAGE = 1 / 3
_MAX_ACRONYM_LENGTH = 10

# Characters are counted in this many buckets for the vectorised bound of `candidate_pairs`;
# a shared bucket only loosens the bound, it never drops a pair.
_CHAR_BUCKETS = 64
# Scores are rounded to 4 places: a bound within half a step of the threshold still passes.
_BOUND_SLACK = 5e-5

_NON_WORD = re.compile(r"[^\w]+")
_APOSTROPHES = re.compile(r"['\u2019\u02bc`]")


@dataclass(frozen=True)
class NameKey:
    """A name reduced to what the signals compare (computed once per name in a scan)."""

    text: str  # casefolded, accents and punctuation removed, single spaces
    core: tuple[str, ...]  # tokens without titles, articles, suffixes and designators
    numbers: frozenset[str]
    core_set: frozenset[str]
    core_text: str
    compact: str  # the core without spaces
    # Initials of a multi-word core, with and without connector words.
    acronyms: frozenset[str]


@dataclass(frozen=True)
class NameMatch:
    similarity: float
    # Every signal that fired, as (name, score), strongest first.
    signals: tuple[tuple[str, float], ...]


NO_MATCH = NameMatch(0.0, ())


def name_key(name: str) -> NameKey:
    folded = unicodedata.normalize("NFKD", name.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    folded = _APOSTROPHES.sub("", folded.replace("&", " and "))
    tokens = _join_initials(_NON_WORD.sub(" ", folded).replace("_", " ").split())
    core = list(tokens)
    while len(core) > 1 and core[0] in _LEADING:
        core.pop(0)
    while len(core) > 1 and core[-1] in _TRAILING:
        core.pop()
    acronyms: frozenset[str] = frozenset()
    if len(core) >= 2:
        acronyms = frozenset(
            {"".join(t[0] for t in core), "".join(t[0] for t in core if t not in _CONNECTORS)}
        )
    return NameKey(
        text=" ".join(tokens),
        core=tuple(core),
        numbers=frozenset(t for t in tokens if any(c.isdigit() for c in t)),
        core_set=frozenset(core),
        core_text=" ".join(core),
        compact="".join(core),
        acronyms=acronyms,
    )


def _join_initials(tokens: list[str]) -> list[str]:
    """ "i b m" (from "I.B.M.") becomes "ibm": a run of two or more single letters."""
    out: list[str] = []
    run: list[str] = []
    for token in [*tokens, ""]:
        if len(token) == 1 and token.isalpha():
            run.append(token)
            continue
        if len(run) >= 2:
            out.append("".join(run))
        else:
            out.extend(run)
        run = []
        if token:
            out.append(token)
    return out


def compare_names(a: str, b: str) -> NameMatch:
    return compare_keys(name_key(a), name_key(b))


def compare_keys(a: NameKey, b: NameKey, *, threshold: float = ALIAS_THRESHOLD) -> NameMatch:
    """Score two names. `threshold` only decides when the (slower) character comparison
    is worth running for names no other signal connects."""
    if not a.text or not b.text:
        return NO_MATCH
    if a.numbers != b.numbers:
        # "Flight 12" and "Flight 21", "May 5" and "May": different numbers, different things.
        return NameMatch(0.0, (("numbers_differ", 0.0),))
    shared = a.core_set & b.core_set
    acronym = _is_acronym_of(a, b) or _is_acronym_of(b, a)
    if not shared and not acronym and a.compact != b.compact:
        # Only the character ratio can still connect these names: check it alone, cheaply.
        character = _character_similarity(a.core_text, b.core_text, needed=threshold)
        return NO_MATCH if character is None else NameMatch(character, (_character(character),))
    signals: list[tuple[str, float]] = []
    if a.text == b.text:
        signals.append(("normalized_equal", _SCORE_NORMALIZED_EQUAL))
    elif a.core == b.core:
        signals.append(("core_equal", _SCORE_CORE_EQUAL))
    elif a.core_set == b.core_set and len(a.core) == len(b.core):
        signals.append(("token_set_equal", _SCORE_TOKEN_SET_EQUAL))
    elif a.compact == b.compact:
        # "Open AI" and "OpenAI": the same letters, split differently.
        signals.append(("compact_equal", _SCORE_COMPACT_EQUAL))
    if acronym:
        signals.append(("acronym", _SCORE_ACRONYM))
    containment = _containment(a.core, b.core)
    if containment is not None:
        signals.append(containment)
    if shared and a.core_set != b.core_set:
        signals.append(("token_overlap", round(len(shared) / len(a.core_set | b.core_set), 4)))
    if a.core != b.core:  # equal cores already scored above; their ratio adds nothing
        character = _character_similarity(a.core_text, b.core_text, needed=None)
        if character is not None:
            signals.append(_character(character))
    # Strongest first; on a tie the named rule explains better than the character ratio.
    signals.sort(key=lambda s: (-s[1], s[0] == "character_similarity", s[0]))
    return NameMatch(signals[0][1], tuple(signals)) if signals else NO_MATCH


def _character(score: float) -> tuple[str, float]:
    return ("character_similarity", score)


def _is_acronym_of(short: NameKey, long: NameKey) -> bool:
    if len(short.core) != 1 or not long.acronyms:
        return False
    word = short.core[0]
    return 2 <= len(word) <= _MAX_ACRONYM_LENGTH and word.isalpha() and word in long.acronyms


def _containment(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, float] | None:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) == len(long) or not set(short) <= set(long):
        return None
    if any(len(t) < 2 or t.isdigit() for t in short):
        return None
    if len(short) / len(long) < _MIN_CONTAINMENT_COVERAGE:
        return None
    if long[-len(short) :] == short:
        return ("tail_token_containment", _SCORE_TAIL_CONTAINMENT)
    return ("token_containment", _SCORE_CONTAINMENT)


def _character_similarity(a: str, b: str, *, needed: float | None) -> float | None:
    """The difflib ratio cubed, so only near-identical spellings (ratio >= 0.91, such as
    "Jon Smith" and "John Smith") reach the threshold on their own, while "Austria" and
    "Australia" (0.875) do not. With `needed`, skip pairs whose cheap upper bounds fall short."""
    bound = needed - _BOUND_SLACK if needed is not None else None
    if bound is not None and (2 * min(len(a), len(b)) / (len(a) + len(b))) ** 3 < bound:
        return None  # the lengths alone rule it out (difflib's real_quick_ratio, inlined)
    # difflib's ratio depends on the argument order; a fixed order keeps scores symmetric.
    first, second = sorted((a, b))
    matcher = SequenceMatcher(None, first, second, autojunk=False)
    if bound is not None and matcher.quick_ratio() ** 3 < bound:
        return None
    score = round(matcher.ratio() ** 3, 4)
    if needed is not None and score < needed:
        return None
    return score if score > 0 else None


def candidate_pairs(
    keys: Sequence[NameKey], *, threshold: float = ALIAS_THRESHOLD
) -> Iterator[tuple[int, int]]:
    """Index pairs (i < j) that `compare_keys` could score at or above `threshold`.

    Every other pair is left out without comparing it: pairs sharing a core token, the
    compact form or an acronym, plus pairs whose character counts (difflib's quick_ratio
    bound, computed for all pairs at once) leave the character signal within reach."""
    related: set[tuple[int, int]] = set()
    groups: defaultdict[str, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        for token in key.core_set:
            groups[f"t:{token}"].append(i)
        groups[f"c:{key.compact}"].append(i)
        if len(key.core) == 1:
            groups[f"a:{key.core[0]}"].append(i)
        for acronym in key.acronyms:
            groups[f"a:{acronym}"].append(i)
    for members in groups.values():
        related.update(combinations(members, 2))
    yield from sorted(related)
    if len(keys) < 2:
        return
    counts = np.zeros((len(keys), _CHAR_BUCKETS), dtype=np.int32)
    for i, key in enumerate(keys):
        for char in key.core_text:
            counts[i, ord(char) % _CHAR_BUCKETS] += 1
    lengths = counts.sum(axis=1)
    for i in range(len(keys) - 1):
        common = np.minimum(counts[i], counts[i + 1 :]).sum(axis=1)
        total = np.maximum(lengths[i] + lengths[i + 1 :], 1)
        reachable = np.nonzero((2.0 * common / total) ** 3 >= threshold - _BOUND_SLACK)[0]
        for offset in reachable.tolist():
            pair = (i, i + 1 + offset)
            if pair not in related:
                yield pair


__all__ = [
    "ALIAS_THRESHOLD",
    "NO_MATCH",
    "NameKey",
    "NameMatch",
    "candidate_pairs",
    "compare_keys",
    "compare_names",
    "name_key",
]
