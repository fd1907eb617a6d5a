"""Name matching for alias proposals: a deterministic similarity in [0, 1] with its signals.

Pure functions over two names; no I/O. The similarity is the strongest signal that fired,
so every proposal can be explained by one named rule. A score only suggests a review: it
never merges or links anything by itself.
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import partial

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


# Work one name may cause whatever the other names are: entries of blocks (names sharing a
# key) read while looking for its partners, and partners kept for a comparison. A key that
# thousands of names share so costs each of them a bounded amount, never one comparison per
# other name; a name whose search reaches a cap is reported as capped.
MAX_BLOCK_READS_PER_NAME = 1500
MAX_PARTNERS_PER_NAME = 100
# Only names with this many distinct words can reach the overlap threshold without one
# containing the other (six shared words, one more on each side).
_MIN_OVERLAP_ONLY_WORDS = 7


@dataclass(frozen=True)
class Partners:
    """The names one name is compared with, and whether a cap cut that search short."""

    indexes: tuple[int, ...]
    capped: bool


class CandidateIndex:
    """Blocks over one scope's names, so each name is compared only with names that could
    score at or above the threshold with it, found through keys they share.

    Positions give the order: a pair is found from its earlier name, except a word-set
    containment, found from the contained name. Blocks, all exact for the signals:
    equal compact forms and equal word sets; an acronym and the one-word name it spells;
    the contained name's rarest word for containment and overlap; for the overlap of long
    names, their rarest words (prefix filtering); for the character ratio, each name's
    rarest letter pairs (prefix filtering over the letter pairs a close spelling keeps)."""

    def __init__(self, keys: Sequence[NameKey], *, threshold: float = ALIAS_THRESHOLD) -> None:
        self._keys = list(keys)
        self._threshold = threshold
        floor = threshold - _BOUND_SLACK
        # The difflib ratio a pair needs for its cubed score to reach the threshold.
        self._ratio = floor ** (1 / 3) if floor > 0 else 0.0
        self._overlap_floor = floor
        self._equal: defaultdict[str, list[int]] = defaultdict(list)
        self._single_words: defaultdict[str, list[int]] = defaultdict(list)
        self._acronyms: defaultdict[str, list[int]] = defaultdict(list)
        self._words: defaultdict[str, list[int]] = defaultdict(list)
        for i, key in enumerate(self._keys):
            self._equal[f"c:{key.compact}"].append(i)
            self._equal[_word_set(key)].append(i)
            if _acronym_word(key):
                self._single_words[key.core[0]].append(i)
            for acronym in key.acronyms:
                self._acronyms[acronym].append(i)
            for word in key.core_set:
                self._words[word].append(i)
        self._overlap_prefixes = [self._overlap_prefix(key) for key in self._keys]
        self._long_names: defaultdict[str, list[int]] = defaultdict(list)
        for i, prefix in enumerate(self._overlap_prefixes):
            for word in prefix:
                self._long_names[word].append(i)
        # Letter pairs as a multiset: "ab0", "ab1" for a pair written twice.
        self._grams = [_letter_pairs(key.core_text) for key in self._keys]
        self._letters = [Counter(key.core_text) for key in self._keys]
        frequency: Counter[str] = Counter()
        for grams in self._grams:
            frequency.update(grams)
        self._gram_prefixes: list[tuple[str, ...]] = []
        # By letter pair and length: a probe reads only the lengths the ratio allows.
        self._by_gram: defaultdict[tuple[str, int], list[int]] = defaultdict(list)
        # Names too short for the letter-pair bound are compared with every name.
        self._unbounded: list[int] = []
        for i, grams in enumerate(self._grams):
            length = len(self._keys[i].core_text)
            if length < 2 and self._ratio > 2 / 3:
                # One letter reaches such a ratio only with itself: an equal compact form.
                self._gram_prefixes.append(())
                continue
            needed = self._kept_pairs(length)
            if needed < 1:
                self._unbounded.append(i)
                self._gram_prefixes.append(())
                continue
            elements = sorted(grams, key=lambda e: (frequency[e], e))
            prefix = tuple(elements[: len(elements) - needed + 1])
            self._gram_prefixes.append(prefix)
            for element in prefix:
                self._by_gram[(element, length)].append(i)

    def __len__(self) -> int:
        return len(self._keys)

    def partners(self, i: int) -> Partners:
        """The positions `i` is compared with, in the order found."""
        key = self._keys[i]
        if not key.text:
            return Partners((), capped=False)
        # Different numbers rule a pair out before anything else is compared.
        search = _Search(i, eligible=lambda j: self._keys[j].numbers == key.numbers)
        contains, overlaps, spelled = (
            partial(self._contains, i),
            partial(self._overlaps, i),
            partial(self._spelled, i),
        )
        search.read(self._equal.get(f"c:{key.compact}", []), later_only=True, accept=_any)
        search.read(self._equal.get(_word_set(key), []), later_only=True, accept=_any)
        if _acronym_word(key):
            search.read(self._acronyms.get(key.core[0], []), later_only=True, accept=_any)
        for acronym in sorted(key.acronyms):
            search.read(self._single_words.get(acronym, []), later_only=True, accept=_any)
        rarest = min(key.core_set, key=lambda w: (len(self._words[w]), w))
        search.read(self._words[rarest], later_only=False, accept=contains)
        for word in self._overlap_prefixes[i]:
            search.read(self._long_names[word], later_only=True, accept=overlaps)
        lengths = self._partner_lengths(len(key.core_text))
        for element in self._gram_prefixes[i]:
            for length in lengths:
                block = self._by_gram.get((element, length))
                if block is not None:
                    search.read(block, later_only=True, accept=spelled)
        if self._unbounded:
            search.read(self._unbounded, later_only=True, accept=spelled)
            if i in self._unbounded:
                search.read(range(len(self._keys)), later_only=True, accept=spelled)
        return Partners(tuple(search.found), search.capped)

    def _overlap_prefix(self, key: NameKey) -> tuple[str, ...]:
        if len(key.core_set) < _MIN_OVERLAP_ONLY_WORDS:
            return ()
        return tuple(sorted(key.core_set, key=lambda w: (len(self._words[w]), w)))[
            : len(key.core_set) - math.ceil(self._overlap_floor * len(key.core_set)) + 1
        ]

    def _partner_lengths(self, length: int) -> range:
        """Lengths a partner may have for the character ratio to reach the threshold."""
        if self._ratio <= 0:
            return range(0)
        low = math.ceil(length * self._ratio / (2 - self._ratio) - 1e-9)
        high = math.floor(length * (2 - self._ratio) / self._ratio + 1e-9)
        return range(low, high + 1)

    def _kept_pairs(self, length: int) -> int:
        """Letter pairs a name of this length keeps in any partner it could reach the
        character threshold with (the fewest over the partner lengths the ratio allows)."""
        kept = (self._kept_with(length, partner) for partner in self._partner_lengths(length))
        return min((k for k in kept if k is not None), default=0)

    def _kept_with(self, length: int, partner: int) -> int | None:
        """Letter pairs of a name kept in a partner of the given length when their ratio
        reaches the threshold; None when the lengths alone rule the pair out.

        At that ratio at most `most` letters of both go unmatched, and the unmatched
        letters of the two differ by the difference in length. Each unmatched letter of
        the name breaks at most two of its pairs, each of the partner's at most one."""
        if length < 2 or self._ratio <= 0:
            return 0
        most = math.floor((1 - self._ratio) * (length + partner) + 1e-9)
        longer_by = length - partner
        if most < abs(longer_by):
            return None
        unmatched = most if (most - longer_by) % 2 == 0 else most - 1
        own, other = (unmatched + longer_by) // 2, (unmatched - longer_by) // 2
        return (length - 1) - (2 * own + other)

    def _contains(self, i: int, j: int) -> bool:
        """`i`'s words are a strict part of `j`'s, large enough for containment or overlap."""
        short, long = self._keys[i], self._keys[j]
        if not short.core_set < long.core_set:
            return False
        return len(short.core) * 3 >= len(long.core) or len(
            short.core_set
        ) >= self._overlap_floor * len(long.core_set)

    def _overlaps(self, i: int, j: int) -> bool:
        a, b = self._keys[i].core_set, self._keys[j].core_set
        if a <= b or b <= a:
            return False  # found through the contained name instead
        return len(a & b) >= self._overlap_floor * len(a | b)

    def _spelled(self, i: int, j: int) -> bool:
        """Whether the character ratio could reach the threshold: the lengths and the
        letter pairs both names must keep leave it within reach."""
        a, b = len(self._keys[i].core_text), len(self._keys[j].core_text)
        if a + b == 0 or (2 * min(a, b) / (a + b)) ** 3 < self._threshold - _BOUND_SLACK:
            return False
        kept, kept_back = self._kept_with(a, b), self._kept_with(b, a)
        if kept is None or kept_back is None:
            return False
        needed = max(kept, kept_back)
        if needed < 1:
            return True
        if len(self._grams[i] & self._grams[j]) < needed:
            return False
        # difflib's quick_ratio: the letters both have, wherever they are.
        common = sum((self._letters[i] & self._letters[j]).values())
        return (2 * common / (a + b)) ** 3 >= self._threshold - _BOUND_SLACK


def _any(_j: int) -> bool:
    return True


def _acronym_word(key: NameKey) -> bool:
    if len(key.core) != 1:
        return False
    word = key.core[0]
    return 2 <= len(word) <= _MAX_ACRONYM_LENGTH and word.isalpha()


def _word_set(key: NameKey) -> str:
    return "s:" + "\x1f".join(sorted(key.core_set))


def _letter_pairs(text: str) -> frozenset[str]:
    written: Counter[str] = Counter()
    elements: list[str] = []
    for k in range(len(text) - 1):
        pair = text[k : k + 2]
        elements.append(f"{pair}{written[pair]}")
        written[pair] += 1
    return frozenset(elements)


class _Search:
    """One name's partner search: what it found and whether a cap stopped it."""

    def __init__(self, origin: int, *, eligible: Callable[[int], bool]) -> None:
        self.origin = origin
        self._eligible = eligible
        self.found: dict[int, None] = {}
        self.capped = False
        # Per rule: a name one rule turned down may still be another rule's partner.
        self._seen: defaultdict[Callable[[int], bool], set[int]] = defaultdict(set)
        self._reads = 0

    def read(
        self, block: Sequence[int], *, later_only: bool, accept: Callable[[int], bool]
    ) -> None:
        start = bisect_right(block, self.origin) if later_only else 0
        for position in range(start, len(block)):
            if self._reads >= MAX_BLOCK_READS_PER_NAME or len(self.found) >= MAX_PARTNERS_PER_NAME:
                self.capped = True
                return
            self._reads += 1
            j = block[position]
            seen = self._seen[accept]
            if j == self.origin or j in self.found or j in seen:
                continue
            seen.add(j)
            if self._eligible(j) and accept(j):
                self.found[j] = None


def candidate_pairs(
    keys: Sequence[NameKey], *, threshold: float = ALIAS_THRESHOLD
) -> Iterator[tuple[int, int]]:
    """Index pairs (i < j) that `compare_keys` could score at or above `threshold`, found
    through `CandidateIndex` (every such pair while no cap is reached)."""
    index = CandidateIndex(keys, threshold=threshold)
    pairs = {(min(i, j), max(i, j)) for i in range(len(keys)) for j in index.partners(i).indexes}
    yield from sorted(pairs)


__all__ = [
    "ALIAS_THRESHOLD",
    "MAX_BLOCK_READS_PER_NAME",
    "MAX_PARTNERS_PER_NAME",
    "NO_MATCH",
    "CandidateIndex",
    "NameKey",
    "NameMatch",
    "Partners",
    "candidate_pairs",
    "compare_keys",
    "compare_names",
    "name_key",
]
