"""The offline default extractor: deterministic patterns over sentences, no model and no invented text.

Every artifact is assembled from spans of the source (lowercased at most for predicates and
relations), so its output always passes `validate_grounded`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime

from prme.extraction.dates import WEEKDAYS, resolve_relative_dates
from prme.extraction.grounding import parse_decimal, validate_grounded
from prme.extraction.update_rules import corrected_value, find_update
from prme.model.extraction import (
    ExtractedClaim,
    ExtractedEntity,
    ExtractedQuantity,
    ExtractedRelationship,
    Extraction,
)

EXTRACTOR_NAME = "rules/1"

_MAX_QUOTE = 2000
_MAX_NAME = 200
_MAX_OBJECT = 500
_MAX_SUBJECT_TOKENS = 8


# Common verbs in base form; inflections are generated below so the list stays readable.
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_BASE_VERBS = """
accept add adopt agree allow answer arrive ask attend bake book borrow break bring build buy
call cancel carry catch celebrate change check choose clean climb close collect come cook cost
count cover create cross cut cycle dance decide deliver design die donate drink drive drop earn
eat email end enjoy enter exercise expect explain fail fall feel fight fill find finish fix fly
follow forget found get give go graduate grow hate have hear help hike hire hold hope host hurt
install invest invite join jog keep know learn leave lend like listen live lose love make marry
meet miss move need open order own paint pass pay perform pick place plan plant play prefer
prepare publish purchase quit raise reach read receive recommend register remember rent repair
replace report rest return ride run save say see sell send serve set share ship shop sign sing
sit sleep speak spend start stay stop study swim take talk teach tell test think throw train
travel try turn understand use visit vote wait wake walk want wash watch wear win work worry
write
"""
_IRREGULAR = """
ate bought broke brought built came caught chose cost cut did done drank drove eaten fell felt
flew forgot found gave given got gone grew had heard held hurt kept knew left lent lost made met
paid put quit ran read rode sang sat saw sold sent set shut slept spoke spent stood swam taken
taught thought threw told took understood went woke won wore written wrote born begun began
said
"""
_AUXILIARIES = _words(
    "am is are was were be been being has have had do does did will would can could should "
    "shall may might must"
) | frozenset(
    f"{stem}{apostrophe}t"
    for stem in _words(
        "don doesn didn isn aren wasn weren haven hasn hadn won wouldn can couldn shouldn mustn"
    )
    for apostrophe in ("'", "’")
)
_NEGATIONS = frozenset({"not", "never", "no"})
_MODALS = _words("will would can could should shall may might must")
_ADVERBS = _words(
    "just already also really finally recently always usually often sometimes still even "
    "only actually probably definitely"
)
_PRONOUNS = frozenset({"I", "we", "We", "he", "He", "she", "She", "they", "They", "you", "You"})
# Words that begin a sentence with a capital letter without being names.
_SENTENCE_STARTERS = _words("""
    a an the i we you he she they it my our your his her their this that these those there
    here what when where who why how which yesterday today tomorrow tonight last next then so
    but and or if also well oh yes no ok okay thanks thank please maybe perhaps after before
    since during on in at for from to with by of as just actually anyway hi hey hello dear
    recently finally now soon later sometimes usually every each all some many most our
    """)
_MONTHS = _words(
    "january february march april may june july august september october november december"
)
# Title abbreviations that stay attached to the name after them ("Dr. Smith").
_TITLES = frozenset({"Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Mt"})
_DETERMINERS = _words("the a an my our your his her their this that these those its every each no")
_NAME_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "der", "del", "du", "la", "le"})
_ROLES = _words("""
    sister brother mother father mom mum dad wife husband partner son daughter friend cousin
    aunt uncle niece nephew grandmother grandfather grandma grandpa boss manager colleague
    coworker roommate neighbor neighbour girlfriend boyfriend fiance fiancee doctor dentist
    teacher therapist coach mentor dog cat landlord
    """)
_PLACE_PREPOSITIONS = frozenset({"in", "to", "from", "near", "visited", "visit", "visiting"})
_LINK_VERBS = _words("""
    work works worked working live lives lived living move moves moved moving study studies
    studied studying stay stays stayed staying
    """)
_LINK_PREPOSITIONS = frozenset({"at", "in", "for", "to"})
_MEASURE_UNITS = _words("""
    kg kgs g mg lb lbs pound pounds ounce ounces oz km kms m cm mm mi mile miles meter meters
    metre metres kilometer kilometers kilometre kilometres foot feet ft inch inches l liter liters
    litre litres ml gallon gallons minute minutes min mins hour hours hr hrs h second seconds sec
    secs day days week weeks month months year years dollars dollar usd eur euro euros gbp steps
    calories kcal reps sets pages books times
    """)
# Lowercase words that follow a number without being its unit ("at 5 pm", "3 of them").
_NOT_UNITS = _words(
    "am pm of and or to in on at for is was are were has had as by the a an this that its"
)
_CONDITIONAL_OPENERS = frozenset(
    {"if", "whether", "maybe", "perhaps", "should", "would", "could", "unless", "suppose"}
)

# Openers that frame a sentence without being its subject: "These days my favourite colour
# is green" is about my favourite colour; "Just so you know, I live in Oslo" about me.
_OPENER = re.compile(
    r"(?:these\s+days|nowadays|lately|currently|right\s+now|at\s+the\s+moment|at\s+present|"
    r"just\s+so\s+you\s+know|for\s+the\s+record|heads\s+up|fyi|btw|by\s+the\s+way|"
    r"(?:big|good|great|some)\s+news)\b[,:!]?\s+",
    re.IGNORECASE,
)
_APOSTROPHE = re.compile(r"['’]")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s|$)|\n")
_ABBREVIATIONS = _words(
    "mr mrs ms dr prof sr jr st mt vs etc inc ltd co corp dept est approx no fig jan feb mar apr "
    "jun jul aug sep sept oct nov dec"
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = re.compile(r"\bhttps?://[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]")
_HANDLE = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{2,30}\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r" \d{1,2}(?:st|nd|rd|th)?(?:, \d{4})?\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)? (?:January|February|March|April|May|June|July|August|September|"
    r"October|November|December)(?: \d{4})?\b"
)
_AMOUNT = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_CURRENCY = re.compile(rf"(?<![\w.])(?P<unit>[$€£¥])\s?(?P<num>{_AMOUNT})(?![\d])")
_NUMBER_UNIT = re.compile(
    rf"(?<![\w.,$€£¥])(?P<num>{_AMOUNT})(?:\s?(?P<pct>%)|\s?(?P<unit>[^\W\d_]+)(?P<next>\s+[^\W\d_]+)?)"
)


def _verb_forms() -> frozenset[str]:
    forms: set[str] = set(_IRREGULAR.split())
    for base in _BASE_VERBS.split():
        forms.add(base)
        if base.endswith(("s", "sh", "ch", "x", "z", "o")):
            forms.add(base + "es")
        elif base.endswith("y") and base[-2] not in "aeiou":
            forms.add(base[:-1] + "ies")
        else:
            forms.add(base + "s")
        if base.endswith("e"):
            forms.update({base + "d", base[:-1] + "ing"})
        elif base.endswith("y") and base[-2] not in "aeiou":
            forms.update({base[:-1] + "ied", base + "ing"})
        else:
            forms.update({base + "ed", base + "ing"})
            # Short consonant-vowel-consonant verbs double their last letter (stop -> stopped).
            if len(base) <= 4 and base[-1] not in "aeiouwxy" and base[-2] in "aeiou":
                forms.update({base + base[-1] + "ed", base + base[-1] + "ing"})
    return frozenset(forms)


_VERBS = _verb_forms()


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    lower: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Clause:
    subject: str
    predicate: str
    object: str | None
    verb_index: int


def split_sentences(text: str) -> Iterator[tuple[int, int]]:
    """Start and end offsets of each sentence, trimmed of surrounding whitespace."""
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group() != "\n" and _continues_after(text, match):
            continue
        yield from _trimmed(text, start, match.end())
        start = match.end()
    yield from _trimmed(text, start, len(text))


def _continues_after(text: str, match: re.Match[str]) -> bool:
    """True when a period ends an abbreviation or an initial rather than a sentence."""
    if match.group() != ".":
        return False
    following = text[match.end() : match.end() + 3].lstrip()
    if following[:1].islower():
        return True
    before = re.search(r"([^\W\d_]+)$", text[max(0, match.start() - 12) : match.start()])
    if before is None:
        return False
    word = before.group(1)
    return len(word) == 1 or word.lower() in _ABBREVIATIONS


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def _tokens(sentence: str) -> list[_Token]:
    return [
        _Token(m.group(), m.group().lower(), m.start(), m.end()) for m in _TOKEN.finditer(sentence)
    ]


def _is_verb(token: _Token) -> bool:
    # Verbs inside a sentence are lowercase; a capitalized "May" or "Will" is a name.
    return token.text == token.lower and (token.lower in _VERBS or token.lower in _AUXILIARIES)


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary; still a substring of the input."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip()


def _clause(sentence: str, tokens: list[_Token]) -> _Clause | None:
    """Subject, predicate and object of the sentence's first clause, as spans of it."""
    # A word right after a determiner is a noun even when it can be a verb ("the rent is").
    opener = _OPENER.match(sentence)
    skip = sum(1 for t in tokens if opener and t.end <= opener.end())
    verb = next(
        (
            i
            for i in range(skip + 1, len(tokens))
            if _is_verb(tokens[i]) and tokens[i - 1].lower not in _DETERMINERS
        ),
        None,
    )
    if verb is None:
        return None
    subject_tokens = tokens[skip:verb]
    if tokens[skip].lower in _VERBS:
        # "Bought 3 books": no subject is written, and inventing "I" would add a word.
        return None
    comma = max(sentence.rfind(mark, 0, tokens[verb].start) for mark in ",;:")
    if comma >= 0:
        # "Yesterday, I ..." drops the opener; "My mom, Rosa, lives" keeps the apposition.
        subject_tokens = [t for t in subject_tokens if t.start > comma] or subject_tokens
    subject_tokens = _trim_subject(subject_tokens)
    if not subject_tokens or len(subject_tokens) > _MAX_SUBJECT_TOKENS:
        return None
    subject = sentence[subject_tokens[0].start : subject_tokens[-1].end]
    subject_end = subject_tokens[-1].end
    # "I'm" and "we've" carry their subject; the pronoun is the leading part of the span.
    contraction = _APOSTROPHE.split(subject)
    if len(subject_tokens) == 1 and len(contraction) == 2 and contraction[0] in _PRONOUNS:
        subject = contraction[0]
    negated = [t.lower for t in tokens[:verb] if t.lower in _NEGATIONS and t.start >= subject_end]
    main = verb
    if tokens[verb].lower in _AUXILIARIES:
        # "did not buy", "have already paid": the content verb carries the meaning.
        for look in range(verb + 1, min(verb + 4, len(tokens))):
            candidate = tokens[look]
            if candidate.lower in _NEGATIONS or candidate.lower.endswith(("n't", "n’t")):
                negated.append(candidate.lower)
                continue
            if candidate.lower in _ADVERBS:
                continue
            if _is_verb(candidate) and candidate.lower not in _AUXILIARIES:
                main = look
            break
    if tokens[verb].lower.endswith(("n't", "n’t")):
        negated.insert(0, tokens[verb].lower)
    predicate = "_".join([*negated, tokens[main].lower])
    rest = sentence[tokens[main].end :]
    # Clause ends at punctuation followed by a space, so "$1,200" and "10:30" stay whole.
    rest = re.split(r"[,;:](?=\s)|\s[-–—]\s", rest, maxsplit=1)[0]
    obj = rest.strip().rstrip(".!?…\"'”’)").strip()
    return _Clause(
        subject=_clip(subject, _MAX_NAME),
        predicate=predicate[:80],
        object=_clip(obj, _MAX_OBJECT) or None,
        verb_index=main,
    )


def _trim_subject(tokens: list[_Token]) -> list[_Token]:
    """The noun phrase right before the verb: "Last week I" -> "I", "Mark and I" stays whole."""
    tokens = [t for t in tokens if t.lower not in _NEGATIONS and t.lower not in _ADVERBS]
    for index in range(len(tokens) - 1, -1, -1):
        token = tokens[index]
        pronoun = _APOSTROPHE.split(token.text)[0]
        if pronoun in _PRONOUNS:
            joined = index > 0 and tokens[index - 1].lower in {"and", "or", "&"}
            return tokens if joined else tokens[index:]
    return tokens


def _capitalized_runs(sentence: str, tokens: list[_Token]) -> list[tuple[int, int]]:
    """Index ranges [first, last] of runs of capitalized tokens, with connectors inside names."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not tokens[i].text[0].isupper():
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and (
            sentence[tokens[j].end : tokens[j + 1].start] in {" ", "-"}
            or (tokens[j].text in _TITLES and sentence[tokens[j].end : tokens[j + 1].start] == ". ")
        ):
            nxt = tokens[j + 1]
            if nxt.text[0].isupper() and nxt.text != "I":
                j += 1
            elif (
                nxt.lower in _NAME_CONNECTORS
                and j + 2 < len(tokens)
                and tokens[j + 2].text[0].isupper()
                and sentence[nxt.end : tokens[j + 2].start] == " "
            ):
                j += 2
            else:
                break
        runs.append((i, j))
        i = j + 1
    return runs


def _name_runs(sentence: str, tokens: list[_Token]) -> list[tuple[int, int]]:
    """Capitalized runs that are names: not "I", not a capitalized sentence opener."""
    names: list[tuple[int, int]] = []
    opener = tokens[0].lower if tokens else ""
    skip_opener = opener in _SENTENCE_STARTERS or opener in _VERBS or opener in _AUXILIARIES
    for run_first, last in _capitalized_runs(sentence, tokens):
        first = run_first + 1 if run_first == 0 and skip_opener else run_first
        if first > last:
            continue
        if first == last == 0 and not _opens_as_name(tokens):
            # A lone capitalized first word ("Ping me") is a name only when a verb follows it.
            continue
        if first == last and _APOSTROPHE.split(tokens[first].text)[0] in _PRONOUNS | {"I"}:
            continue
        names.append((first, last))
    return names


def _opens_as_name(tokens: list[_Token]) -> bool:
    if tokens[0].text.endswith(("'s", "’s")):
        return True
    return len(tokens) > 1 and _is_verb(tokens[1])


def _name_text(sentence: str, tokens: list[_Token], first: int, last: int) -> str:
    text = sentence[tokens[first].start : tokens[last].end]
    # "Ana's" names Ana; the possessive is grammar, and the shorter span is still verbatim.
    for suffix in ("'s", "’s"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    return _clip(text, _MAX_NAME)


def _entity_kind(tokens: list[_Token], first: int, last: int) -> str:
    if first == last and tokens[first].lower in _MONTHS | set(WEEKDAYS):
        return "date"
    before = tokens[first - 1].lower if first > 0 else ""
    if before in _ROLES:
        return "person"
    if before in _PLACE_PREPOSITIONS:
        return "place"
    if before in {"at", "for"} and first > 1 and tokens[first - 2].lower in _LINK_VERBS:
        return "organization"
    return "name"


class _SentenceExtractor:
    """Collects the artifacts of one sentence; every text field is a span of `sentence`."""

    def __init__(self, sentence: str, reference: datetime) -> None:
        self.sentence = sentence
        self.quote = _clip(sentence, _MAX_QUOTE)
        self.tokens = _tokens(sentence)
        self.entities: list[ExtractedEntity] = []
        self.claims: list[ExtractedClaim] = []
        self.quantities: list[ExtractedQuantity] = []
        self.relationships: list[ExtractedRelationship] = []
        self.dates = resolve_relative_dates(sentence, reference)
        self.date_spans = [m.span() for m in _date_phrase_spans(sentence, self.dates)]

    def run(self) -> None:
        self._entities()
        if not self.tokens or not self._asserts_something():
            return
        clause = _clause(self.sentence, self.tokens)
        self._claim(clause)
        self._quantities(clause)
        self._relationships(clause)

    def _asserts_something(self) -> bool:
        # Questions and conditionals do not state facts about the speaker's world.
        return not self.sentence.rstrip("\"'”’) ").endswith("?") and (
            self.tokens[0].lower not in _CONDITIONAL_OPENERS
        )

    def _entity(self, name: str, kind: str) -> None:
        if name and all(e.name != name for e in self.entities):
            self.entities.append(ExtractedEntity(name=name, kind=kind, evidence_quote=self.quote))

    def _entities(self) -> None:
        for first, last in _name_runs(self.sentence, self.tokens):
            name = _name_text(self.sentence, self.tokens, first, last)
            self._entity(name, _entity_kind(self.tokens, first, last))
        for pattern, kind in ((_EMAIL, "email"), (_URL, "url"), (_HANDLE, "handle")):
            for match in pattern.finditer(self.sentence):
                self._entity(_clip(match.group(), _MAX_NAME), kind)
        for pattern in (_ISO_DATE, _MONTH_DAY):
            for match in pattern.finditer(self.sentence):
                self._entity(match.group(), "date")

    def _occurred_on(self) -> date | None:
        if self.dates:
            return self.dates[0][1]
        iso = _ISO_DATE.search(self.sentence)
        if iso is None:
            return None
        try:
            return date(int(iso[1]), int(iso[2]), int(iso[3]))
        except ValueError:  # "2024-13-45" is not a date; say nothing about when
            return None

    def _claim(self, clause: _Clause | None) -> None:
        update = find_update(self.sentence)
        if update is not None:
            # An update wording says more than the first clause: which value is current
            # now, and which one it replaces.
            self.claims.append(
                ExtractedClaim(
                    statement=self.quote,
                    subject=update.subject,
                    predicate=update.predicate,
                    object=update.object,
                    polarity=update.polarity,
                    replaces_object=update.replaces_object,
                    occurred_on=self._occurred_on(),
                    evidence_quote=self.quote,
                )
            )
            return
        if clause is None:
            return
        corrected = corrected_value(self.sentence)
        words = clause.predicate.split("_")
        negated = any(w in _NEGATIONS or w.endswith(("n't", "n’t")) for w in words)
        self.claims.append(
            ExtractedClaim(
                statement=self.quote,
                subject=clause.subject,
                predicate=self._modal(clause) + clause.predicate,
                object=clause.object,
                polarity="negated" if negated else "affirmed",
                replaces_object=corrected[0] if corrected else None,
                occurred_on=self._occurred_on(),
                evidence_quote=self.quote,
            )
        )

    def _modal(self, clause: _Clause) -> str:
        """ "might_" for "I might move": a possibility is not the same fact as a statement."""
        before = self.tokens[max(0, clause.verb_index - 3) : clause.verb_index]
        modal = next((t.lower for t in before if t.lower in _MODALS), None)
        return f"{modal}_" if modal else ""

    def _verb_before(self, position: int, clause: _Clause | None) -> str | None:
        """The nearest verb before a number: "ran 5 km and swam 2 km" pairs each with its own."""
        for token in reversed(self.tokens):
            if token.end <= position and _is_verb(token) and token.lower not in _AUXILIARIES:
                return token.lower
        return clause.predicate if clause is not None else None

    def _in_date_phrase(self, start: int) -> bool:
        return any(begin <= start < end for begin, end in self.date_spans)

    def _quantities(self, clause: _Clause | None) -> None:
        if clause is None:
            return
        found: list[tuple[int, str, str | None, str | None]] = []
        for match in _CURRENCY.finditer(self.sentence):
            found.append((match.start(), match["num"], match["unit"], None))
        for match in _NUMBER_UNIT.finditer(self.sentence):
            if self._in_date_phrase(match.start()):
                continue
            if match["pct"]:
                found.append((match.start(), match["num"], "%", None))
                continue
            unit = match["unit"]
            if unit.lower() in _MEASURE_UNITS:
                found.append((match.start(), match["num"], unit, None))
            elif (
                unit.islower()
                and unit.endswith("s")
                and len(unit) > 2
                and unit not in _NOT_UNITS
                and unit not in _VERBS
            ):
                # A counted plural noun ("2 cats") names what was counted in the predicate.
                found.append((match.start(), match["num"], unit, unit))
        for start, number, unit, counted in found:
            value = parse_decimal(number)
            verb = self._verb_before(start, clause)
            if value is None or verb is None:
                continue
            predicate = f"{verb}_{counted.lower()}" if counted else verb
            self.quantities.append(
                ExtractedQuantity(
                    subject=clause.subject,
                    predicate=predicate[:80],
                    value=value,
                    unit=unit,
                    evidence_quote=self.quote,
                )
            )

    def _relationship(self, source: str, relation: str, target: str) -> None:
        if source and target and source != target:
            self.relationships.append(
                ExtractedRelationship(
                    source=_clip(source, _MAX_NAME),
                    relation=relation[:80],
                    target=target,
                    evidence_quote=self.quote,
                )
            )

    def _relationships(self, clause: _Clause | None) -> None:
        tokens, sentence = self.tokens, self.sentence
        runs = _name_runs(sentence, tokens)
        starts = {first: (first, last) for first, last in runs}
        ends = {last: (first, last) for first, last in runs}
        for i, token in enumerate(tokens):
            # "my sister Ana" / "my sister, Ana"
            if token.lower in {"my", "our"}:
                role, after = _role_at(tokens, i + 1)
                if role is not None and after in starts:
                    first, last = starts[after]
                    name = _name_text(sentence, tokens, first, last)
                    self._relationship(token.text, role, name)
            # "Ana is my sister"
            if (
                i in ends
                and i + 3 < len(tokens)
                and tokens[i + 1].lower in {"is", "was"}
                and tokens[i + 2].lower in {"my", "our"}
            ):
                role, _ = _role_at(tokens, i + 3)
                if role is not None:
                    first, last = ends[i]
                    name = _name_text(sentence, tokens, first, last)
                    self._relationship(tokens[i + 2].text, role, name)
            # "Ana works at Siemens", "we moved to Lisbon"
            if (
                token.lower in _LINK_VERBS
                and token.text == token.lower
                and i >= 1
                and i + 2 < len(tokens)
                and tokens[i + 1].lower in _LINK_PREPOSITIONS
                and i + 2 in starts
            ):
                holder = self._holder(i, ends, clause)
                first, last = starts[i + 2]
                if holder is not None and _entity_kind(tokens, first, last) != "date":
                    target = _name_text(sentence, tokens, first, last)
                    self._relationship(holder, f"{token.lower}_{tokens[i + 1].lower}", target)

    def _holder(
        self, verb: int, ends: dict[int, tuple[int, int]], clause: _Clause | None
    ) -> str | None:
        before = self.tokens[verb - 1]
        if before.text in _PRONOUNS:
            return before.text
        if verb - 1 in ends:
            return _name_text(self.sentence, self.tokens, *ends[verb - 1])
        if clause is not None and clause.verb_index == verb:
            return clause.subject
        return None


def _role_at(tokens: list[_Token], index: int) -> tuple[str | None, int]:
    """The role named at `index` ("sister", "best friend" -> "best_friend") and the next index."""
    if index >= len(tokens):
        return None, index
    word = tokens[index].lower
    if word in {"best", "older", "younger", "little", "big", "ex"} and index + 1 < len(tokens):
        following = tokens[index + 1].lower
        if following in _ROLES:
            return f"{word}_{following}", index + 2
    if word in _ROLES:
        return word, index + 1
    return None, index


def _date_phrase_spans(sentence: str, dates: list[tuple[str, date]]) -> list[re.Match[str]]:
    spans: list[re.Match[str]] = []
    for phrase, _ in dates:
        match = re.search(re.escape(phrase), sentence)
        if match is not None:
            spans.append(match)
    return spans


class RuleExtractor:
    """Deterministic extraction from conversational sentences; every field is a span of the source."""

    @property
    def name(self) -> str:
        return EXTRACTOR_NAME

    def extract(self, text: str, *, reference_time: datetime) -> Extraction:
        entities: list[ExtractedEntity] = []
        claims: list[ExtractedClaim] = []
        quantities: list[ExtractedQuantity] = []
        relationships: list[ExtractedRelationship] = []
        seen_entities: set[tuple[str, str]] = set()
        for start, end in split_sentences(text):
            sentence = _SentenceExtractor(text[start:end], reference_time)
            sentence.run()
            for entity in sentence.entities:
                if (entity.name, entity.kind) not in seen_entities:
                    seen_entities.add((entity.name, entity.kind))
                    entities.append(entity)
            claims.extend(sentence.claims)
            quantities.extend(sentence.quantities)
            relationships.extend(sentence.relationships)
        extraction = Extraction(
            extractor=EXTRACTOR_NAME,
            entities=tuple(entities),
            claims=tuple(claims),
            quantities=tuple(quantities),
            relationships=tuple(relationships),
        )
        # The rules only copy spans, so this drops nothing; it keeps the invariant checked.
        return validate_grounded(extraction, text)
