"""Grounded quantity aggregation: exact per-unit totals over every extracted quantity of an owner.

Each stored quantity is checked again before it counts: its value must be a number written in
its quote, and the quote, subject and predicate must still be found in the source message.
Anything that fails is left out and counted by reason, never summed. A small planner turns a
few complete questions ("How much did I raise?") into a structured query; any other wording
is reported unsupported without reading memory.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import (
    MAX_EMAX,
    MAX_PREC,
    MIN_EMIN,
    Context,
    Decimal,
    Inexact,
    InvalidOperation,
    Overflow,
    Rounded,
    localcontext,
)
from typing import Literal

from pydantic import ValidationError

from prme.engine.deps import EngineDeps
from prme.errors import InvalidRequestError
from prme.extraction.grounding import numbers_in, validate_grounded
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, EpistemicType, NodeType
from prme.model.extraction import ExtractedQuantity, Extraction
from prme.model.quantities import (
    GROUP_ORDER,
    MAX_QUESTION_CHARS,
    ExclusionReason,
    GroupDimension,
    QuantityAggregation,
    QuantityAggregationQuery,
    QuantityGroup,
    QuantityQuestionAnswer,
    QuantityQuestionPlan,
    QuantitySample,
    QuestionShape,
    normalize_predicate,
    normalize_text,
    predicate_has_prefix,
)
from prme.model.records import EXTRACTION_METADATA_KEY, Event, MemoryNode, OwnerKey

# Sums are exact: a result that would need rounding raises instead of being approximated.
_EXACT = Context(
    prec=MAX_PREC,
    Emax=MAX_EMAX,
    Emin=MIN_EMIN,
    traps=[InvalidOperation, Inexact, Rounded, Overflow],
)
# The stored value is plain decimal text ("1200", "-3.50"), as extraction writes it.
_PLAIN_DECIMAL = re.compile(r"[-+]?\d+(?:\.\d+)?")
_WHITESPACE = re.compile(r"\s+")


def _collapsed(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class _Stored:
    """A quantity node's recorded fields, type-checked but not yet trusted."""

    node: MemoryNode
    subject: str
    predicate: str
    value_text: str
    unit: str | None
    quote: str

    def key(self, dimension: GroupDimension) -> str | None:
        if dimension == "unit":
            return normalize_text(self.unit) if self.unit is not None else None
        if dimension == "subject":
            return normalize_text(self.subject)
        return normalize_predicate(self.predicate)

    def written(self, dimension: GroupDimension) -> str | None:
        raw = {"unit": self.unit, "subject": self.subject, "predicate": self.predicate}[dimension]
        return _collapsed(raw) if raw is not None else None


@dataclass(frozen=True)
class _Counted:
    stored: _Stored
    value: Decimal
    # The source message whose text grounds the quote.
    event_id: str


def _read_stored(node: MemoryNode) -> _Stored | ExclusionReason | None:
    """The quantity recorded on a node; None when it is not a quantity, "malformed" when broken."""
    meta = node.metadata.get(EXTRACTION_METADATA_KEY)
    if not isinstance(meta, dict) or meta.get("kind") != "quantity":
        return None
    subject, predicate = meta.get("subject"), meta.get("predicate")
    value, unit, quote = meta.get("value"), meta.get("unit"), meta.get("evidence_quote")
    texts = (subject, predicate, value, quote)
    if not all(isinstance(text, str) and text.strip() for text in texts):
        return "malformed"
    if unit is not None and not (isinstance(unit, str) and unit.strip()):
        return "malformed"
    return _Stored(
        node=node,
        subject=str(subject),
        predicate=str(predicate),
        value_text=str(value),
        unit=unit,
        quote=str(quote),
    )


@dataclass(frozen=True)
class _Filters:
    """The query's filters in normalized form, prepared once per scan."""

    subjects: frozenset[str] | None
    predicates: frozenset[str]
    prefixes: tuple[str, ...]
    predicate_filtered: bool
    units: frozenset[str] | None

    @classmethod
    def of(cls, query: QuantityAggregationQuery) -> _Filters:
        return cls(
            subjects=normalized_set(query.subjects, normalize_text),
            predicates=normalized_set(query.predicates, normalize_predicate) or frozenset(),
            prefixes=tuple(normalize_predicate(p) for p in query.predicate_prefixes or ()),
            predicate_filtered=query.predicates is not None or query.predicate_prefixes is not None,
            units=normalized_set(query.units, normalize_text),
        )

    def accepts(self, stored: _Stored, query: QuantityAggregationQuery) -> bool:
        if query.scopes is not None and stored.node.scope not in query.scopes:
            return False
        if self.subjects is not None and normalize_text(stored.subject) not in self.subjects:
            return False
        if self.units is not None and (
            stored.unit is None or normalize_text(stored.unit) not in self.units
        ):
            return False
        if not self.predicate_filtered:
            return True
        predicate = normalize_predicate(stored.predicate)
        return predicate in self.predicates or any(
            predicate_has_prefix(predicate, prefix) for prefix in self.prefixes
        )


def normalized_set(
    values: tuple[str, ...] | None, normalize: Callable[[str], str]
) -> frozenset[str] | None:
    """A query filter's values in normalized form; None (no filter) stays None."""
    return None if values is None else frozenset(normalize(v) for v in values)


def event_time_exclusion(
    node: MemoryNode, low: datetime | None, high: datetime | None
) -> Literal["no_event_time", "outside_event_time_window"] | None:
    """Why a node falls outside an inclusive event-time window (None: inside, or no window);
    a node without an event time is outside any window."""
    if low is None and high is None:
        return None
    if node.event_time is None:
        return "no_event_time"
    if (low is not None and node.event_time < low) or (high is not None and node.event_time > high):
        return "outside_event_time_window"
    return None


def _state_exclusion(
    node: MemoryNode, query: QuantityAggregationQuery, now: datetime
) -> ExclusionReason | None:
    if node.epistemic_type is EpistemicType.HYPOTHETICAL:
        return "hypothetical"
    if query.include_inactive:
        return None
    if (
        node.lifecycle_state in INACTIVE_LIFECYCLE_STATES
        or node.epistemic_type is EpistemicType.DEPRECATED
    ):
        return "inactive"
    if node.is_expired(now):
        return "expired"
    return None


class _Sources:
    """Source events read at most once per scan."""

    def __init__(self, deps: EngineDeps, owner: OwnerKey) -> None:
        self._deps, self._owner = deps, owner
        self._events: dict[str, Event | None] = {}

    def prefetch(self, event_ids: list[str]) -> None:
        """Read many sources in batches (one BatchGetItem per 100 on DynamoDB)."""
        missing = [e for e in dict.fromkeys(event_ids) if e not in self._events]
        found = self._deps.ledger.get_events(self._owner, missing)
        self._events.update({event_id: found.get(event_id) for event_id in missing})

    def get(self, event_id: str) -> Event | None:
        if event_id not in self._events:
            self._events[event_id] = self._deps.ledger.get_event(self._owner, event_id)
        return self._events[event_id]


def _revalidate(stored: _Stored, sources: _Sources) -> _Counted | ExclusionReason:
    """The quantity again through the grounding gate, against the source as stored now."""
    if _PLAIN_DECIMAL.fullmatch(stored.value_text) is None:
        return "unparsable_value"
    value = Decimal(stored.value_text)
    if value not in numbers_in(stored.quote):
        return "value_not_in_evidence"
    if stored.unit is not None and stored.unit not in stored.quote:
        return "unit_not_in_evidence"
    events = [e for e in (sources.get(ref) for ref in stored.node.evidence_refs) if e is not None]
    if not events:
        return "source_missing"
    quote = _collapsed(stored.quote)
    grounding = next((e for e in events if quote in _collapsed(e.content)), None)
    if grounding is None:
        return "evidence_not_in_source"
    try:
        claim = ExtractedQuantity(
            subject=stored.subject,
            predicate=stored.predicate,
            value=value,
            unit=stored.unit,
            evidence_quote=stored.quote,
        )
    except ValidationError:
        return "malformed"
    # The ingestion gate itself: subject in the source, predicate built from its words.
    checked = validate_grounded(
        Extraction(extractor="revalidation", quantities=(claim,)), grounding.content
    )
    if not checked.quantities:
        return "claim_not_in_source"
    return _Counted(stored=stored, value=value, event_id=grounding.id)


def _judge(
    stored: _Stored,
    query: QuantityAggregationQuery,
    filters: _Filters,
    now: datetime,
    sources: _Sources,
) -> tuple[bool, _Counted | ExclusionReason]:
    """Whether a quantity matched the query's filters, and whether it counts (or why not)."""
    if not filters.accepts(stored, query):
        return False, "filtered"
    outside = event_time_exclusion(stored.node, query.event_time_from, query.event_time_to)
    if outside is not None:
        return False, outside
    state = _state_exclusion(stored.node, query, now)
    if state is not None:
        return True, state
    return True, _revalidate(stored, sources)


@dataclass
class _Group:
    key: tuple[str | None, ...]
    members: list[_Counted] = field(default_factory=list)


def aggregate_quantities(
    deps: EngineDeps, owner: OwnerKey, query: QuantityAggregationQuery
) -> QuantityAggregation:
    """Scan every fact node of the owner and total the quantities that match and still hold."""
    nodes = deps.ledger.list_nodes(owner, node_type=NodeType.FACT)
    now = deps.clock.now()
    filters = _Filters.of(query)
    sources = _Sources(deps, owner)
    dimensions = tuple(d for d in GROUP_ORDER if d in query.group_by)
    exclusions: dict[ExclusionReason, int] = {}
    groups: dict[tuple[str | None, ...], _Group] = {}
    quantity_nodes = matched = counted = 0
    quantities = [(node, stored) for node in nodes if (stored := _read_stored(node)) is not None]
    sources.prefetch([ref for node, _ in quantities for ref in node.evidence_refs])
    for _node, stored in quantities:
        quantity_nodes += 1
        outcome: _Counted | ExclusionReason
        if isinstance(stored, str):
            was_matched, outcome = False, stored
        else:
            was_matched, outcome = _judge(stored, query, filters, now, sources)
        matched += was_matched
        if isinstance(outcome, _Counted):
            counted += 1
            key = tuple(outcome.stored.key(d) for d in dimensions)
            groups.setdefault(key, _Group(key)).members.append(outcome)
        else:
            exclusions[outcome] = exclusions.get(outcome, 0) + 1
    ordered = sorted(groups.values(), key=lambda g: _sort_key(g.key))
    return QuantityAggregation(
        query=query,
        scanned_nodes=len(nodes),
        quantity_nodes=quantity_nodes,
        matched=matched,
        counted=counted,
        groups=tuple(
            _summarize(g, dimensions, query.sample_limit) for g in ordered[: query.group_limit]
        ),
        group_count=len(ordered),
        groups_truncated=len(ordered) > query.group_limit,
        exclusions=dict(sorted(exclusions.items())),
    )


def _sort_key(key: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
    # Missing units sort after every written unit.
    return tuple((part is None, part or "") for part in key)


def _summarize(
    group: _Group, dimensions: tuple[GroupDimension, ...], sample_limit: int
) -> QuantityGroup:
    members = sorted(group.members, key=_member_order)
    values = [m.value for m in members]
    with localcontext(_EXACT):
        total = sum(values, Decimal(0))
    first_event: dict[tuple[str, Decimal], str] = {}
    repeated = 0
    for member in members:
        said = (_collapsed(member.stored.quote), member.value)
        if first_event.setdefault(said, member.event_id) != member.event_id:
            repeated += 1
    times = [m.stored.node.event_time for m in members if m.stored.node.event_time is not None]
    written: dict[str, str | None] = {
        d: _first_written(m.stored.written(d) for m in members) for d in dimensions
    }
    return QuantityGroup(
        unit=written["unit"],
        subject=written.get("subject"),
        predicate=written.get("predicate"),
        count=len(members),
        total=total,
        minimum=min(values),
        maximum=max(values),
        event_count=len({m.event_id for m in members}),
        repeated_in_other_events=repeated,
        earliest_event_time=min(times) if times else None,
        latest_event_time=max(times) if times else None,
        samples=tuple(_sample(m) for m in members[:sample_limit]),
        samples_truncated=len(members) > sample_limit,
    )


def _member_order(member: _Counted) -> tuple[bool, datetime, str]:
    # Dated quantities first, oldest first; undated ones after, by when they were stored.
    node = member.stored.node
    return (node.event_time is None, node.effective_time, node.id)


def _first_written(forms: Iterable[str | None]) -> str | None:
    present = sorted(f for f in forms if f is not None)
    return present[0] if present else None


def _sample(member: _Counted) -> QuantitySample:
    stored = member.stored
    return QuantitySample(
        node_id=stored.node.id,
        subject=stored.subject,
        predicate=stored.predicate,
        value=member.value,
        unit=stored.unit,
        evidence_quote=stored.quote,
        event_ids=stored.node.evidence_refs,
        event_time=stored.node.event_time,
    )


# -- questions -----------------------------------------------------------------------------

_IRREGULAR_PAST = {
    "begin": "began", "bet": "bet", "bid": "bid", "bleed": "bled", "break": "broke",
    "breed": "bred", "bring": "brought", "build": "built", "buy": "bought", "catch": "caught",
    "choose": "chose", "come": "came", "cost": "cost", "cut": "cut", "dig": "dug", "do": "did",
    "draw": "drew", "drink": "drank", "drive": "drove", "eat": "ate", "fall": "fell",
    "feed": "fed", "feel": "felt", "fight": "fought", "find": "found", "fly": "flew",
    "forget": "forgot", "get": "got", "give": "gave", "go": "went", "grow": "grew",
    "hang": "hung", "have": "had", "hear": "heard", "hit": "hit", "hold": "held",
    "hurt": "hurt", "keep": "kept", "know": "knew", "lay": "laid", "lead": "led",
    "leave": "left", "lend": "lent", "let": "let", "light": "lit", "lose": "lost",
    "make": "made", "mean": "meant", "meet": "met", "overpay": "overpaid", "pay": "paid",
    "put": "put", "quit": "quit", "read": "read", "repay": "repaid", "ride": "rode",
    "ring": "rang", "rise": "rose", "run": "ran", "say": "said", "see": "saw", "seek": "sought",
    "sell": "sold", "send": "sent", "set": "set", "shake": "shook", "shoot": "shot",
    "shut": "shut", "sing": "sang", "sink": "sank", "sit": "sat", "sleep": "slept",
    "speak": "spoke", "spend": "spent", "spread": "spread", "stand": "stood", "steal": "stole",
    "sweep": "swept", "swim": "swam", "take": "took", "teach": "taught", "tear": "tore",
    "tell": "told", "think": "thought", "throw": "threw", "understand": "understood",
    "wake": "woke", "wear": "wore", "weep": "wept", "win": "won", "withdraw": "withdrew",
    "write": "wrote",
}  # fmt: skip
_PAST_FORMS = frozenset(_IRREGULAR_PAST.values())
# Base forms that happen to end like a regular past ("need" is not "ne" + "ed").
_BASE_ENDING_IN_ED = frozenset(
    {"bleed", "breed", "embed", "exceed", "feed", "heed", "need", "proceed", "seed", "shed"}
    | {"speed", "succeed", "weed"}
)
_CONSONANT_Y = re.compile(r"[^aeiou]y$")
# One vowel then one final consonant ("stop", "plan"): the consonant doubles ("stopped").
_DOUBLING = re.compile(r"^[^aeiou]*[aeiou][^aeiouwxy]$")
_CURRENCY_UNITS = ("$", "€", "£", "¥", "usd", "eur", "gbp", "dollar", "dollars", "euro", "euros")


def past_tense(verb: str) -> str:
    """The simple past of a base-form verb: an irregular table, else the regular -ed rules."""
    base = verb.casefold()
    if base in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[base]
    if base.endswith("e"):
        return base + "d"
    if _CONSONANT_Y.search(base):
        return base[:-1] + "ied"
    if _DOUBLING.match(base):
        return base + base[-1] + "ed"
    return base + "ed"


def _looks_past(word: str) -> bool:
    return word in _PAST_FORMS or (word.endswith("ed") and word not in _BASE_ENDING_IN_ED)


def _singular(noun: str) -> str | None:
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("ches", "shes", "sses", "xes", "zes")):
        return noun[:-2]
    if noun.endswith("s") and not noun.endswith("ss") and len(noun) > 3:
        return noun[:-1]
    return None


_TAIL = r"(?:\s+(?:in\s+total|altogether))?\s*\??"
_SUBJECT = r"(?P<subject>I|we)"
_SHAPES: tuple[tuple[QuestionShape, re.Pattern[str]], ...] = (
    (
        "how_much_money",
        re.compile(rf"how much money did {_SUBJECT} (?P<verb>[a-z]+){_TAIL}", re.IGNORECASE),
    ),
    ("how_much", re.compile(rf"how much did {_SUBJECT} (?P<verb>[a-z]+){_TAIL}", re.IGNORECASE)),
    (
        "total",
        re.compile(
            rf"what(?: is|'s|s) the total {_SUBJECT} (?P<verb>[a-z]+){_TAIL}", re.IGNORECASE
        ),
    ),
    (
        "how_many",
        re.compile(
            rf"how many (?P<noun>[a-z]+) did {_SUBJECT} (?P<verb>[a-z]+){_TAIL}", re.IGNORECASE
        ),
    ),
)
# The same openings with anything after them, to say why a near miss is not supported.
_OPENINGS = (
    re.compile(r"how much (?:money )?did (?P<subject>\S+)(?P<rest>.*)", re.IGNORECASE),
    re.compile(r"what(?: is|'s|s) the total (?P<subject>\S+)(?P<rest>.*)", re.IGNORECASE),
    re.compile(r"how many \S+ did (?P<subject>\S+)(?P<rest>.*)", re.IGNORECASE),
)
SUPPORTED_SHAPES = (
    "How much did I/we <verb>?",
    "How much money did I/we <verb>?",
    "What is the total I/we <verb, past tense>?",
    "How many <plural noun> did I/we <verb>?",
)


def _clean_question(question: str) -> str:
    text = unicodedata.normalize("NFKC", question).replace("’", "'").replace("‘", "'")
    return _collapsed(text)


def _unsupported(question: str, reason: str) -> QuantityQuestionPlan:
    return QuantityQuestionPlan(question=question, status="unsupported", reason=reason)


def _near_miss_reason(text: str) -> str:
    shapes = "; ".join(SUPPORTED_SHAPES)
    for opening in _OPENINGS:
        match = opening.fullmatch(text)
        if match is None:
            continue
        if match["subject"].casefold() not in {"i", "we"}:
            return f"Only the subjects I and we are supported. Supported questions: {shapes}"
        return (
            "Only a single verb may follow the subject; qualifiers (time, purpose, object), "
            f"further clauses and other words are not supported. Supported questions: {shapes}"
        )
    return f"The question is not one of the supported shapes: {shapes}"


def plan_quantity_question(question: str) -> QuantityQuestionPlan:
    """The structured query a supported question stands for, or why it is not supported."""
    text = _clean_question(question)
    for shape, pattern in _SHAPES:
        match = pattern.fullmatch(text)
        if match is not None:
            return _plan(question, shape, match)
    return _unsupported(question, _near_miss_reason(text))


def _plan(question: str, shape: QuestionShape, match: re.Match[str]) -> QuantityQuestionPlan:
    subject, verb = match["subject"], match["verb"].casefold()
    if shape == "total":
        if not _looks_past(verb):
            return _unsupported(
                question, f'"What is the total" needs a past-tense verb; "{verb}" is not one'
            )
        past = verb
        reading = f'The verb "{verb}" is used as written, as the predicate'
    else:
        if _looks_past(verb) and verb not in _IRREGULAR_PAST:
            return _unsupported(
                question, f'After "did" the verb must be in its base form, not "{verb}"'
            )
        past = past_tense(verb)
        reading = f'The verb "{verb}" is read as its past tense "{past}", the predicate'
    other = "we" if subject.casefold() == "i" else "I"
    assumptions = [
        f'Only quantities whose recorded subject is exactly "{subject}" count (letter case '
        f'aside); "{other}", other people and joint subjects such as "Ana and I" are not '
        "counted.",
        f'{reading} "{past}" or an extension of it such as "{past}_tickets"; synonyms, other '
        "verbs and negated statements are not counted.",
        "Amounts are totalled per unit as written and never converted between units.",
    ]
    units: tuple[str, ...] | None = None
    if shape == "how_much_money":
        units = _CURRENCY_UNITS
        assumptions.append(
            "Only currency units count: " + ", ".join(units) + "; each is totalled separately."
        )
    elif shape == "how_many":
        noun = match["noun"].casefold()
        singular = _singular(noun)
        units = (noun,) if singular is None else (noun, singular)
        assumptions.append(
            "Only quantities counted in " + " or ".join(f'"{u}"' for u in units) + " count."
        )
    assumptions += [
        "Only amounts an extractor recorded from ingested messages are counted; amounts it "
        "missed are not, so a total can be too low.",
        "Every recorded statement counts once; the same amount mentioned in two messages "
        "counts twice (see repeated_in_other_events).",
        "Superseded, archived, deprecated and expired memories are left out; every date and "
        "scope counts.",
    ]
    query = QuantityAggregationQuery(
        subjects=(subject,), predicate_prefixes=(past,), units=units, group_by=("unit",)
    )
    return QuantityQuestionPlan(
        question=question,
        status="ready",
        shape=shape,
        query=query,
        assumptions=tuple(assumptions),
    )


def aggregate_text(deps: EngineDeps, owner: OwnerKey, question: str) -> QuantityQuestionAnswer:
    """Plan a question; aggregate only when the plan is ready, otherwise read nothing."""
    if not question.strip() or len(question) > MAX_QUESTION_CHARS:
        raise InvalidRequestError(
            f"question must contain text and be at most {MAX_QUESTION_CHARS} characters",
            field=("question",),
        )
    plan = plan_quantity_question(question)
    if plan.query is None:
        return QuantityQuestionAnswer(plan=plan, aggregation=None)
    return QuantityQuestionAnswer(
        plan=plan, aggregation=aggregate_quantities(deps, owner, plan.query)
    )
