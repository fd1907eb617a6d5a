"""Default classification of a source from its role, when the caller does not say."""

from __future__ import annotations

from prme.model.enums import EpistemicType, Role, SourceType

_SOURCE_BY_ROLE = {
    Role.USER: SourceType.USER_STATED,
    Role.PARTICIPANT: SourceType.USER_STATED,
    Role.ASSISTANT: SourceType.SYSTEM_INFERRED,
    Role.SYSTEM: SourceType.SYSTEM_INFERRED,
    Role.TOOL: SourceType.TOOL_OUTPUT,
}

# What a source of each kind establishes by default: people assert, tools observe,
# the system infers. The caller can always say otherwise.
_EPISTEMIC_BY_SOURCE = {
    SourceType.USER_STATED: EpistemicType.ASSERTED,
    SourceType.USER_DEMONSTRATED: EpistemicType.OBSERVED,
    SourceType.SYSTEM_INFERRED: EpistemicType.INFERRED,
    SourceType.EXTERNAL_DOCUMENT: EpistemicType.ASSERTED,
    SourceType.TOOL_OUTPUT: EpistemicType.OBSERVED,
}

# Starting confidence by epistemic class when none is given.
_CONFIDENCE_BY_EPISTEMIC = {
    EpistemicType.OBSERVED: 0.9,
    EpistemicType.ASSERTED: 0.75,
    EpistemicType.INFERRED: 0.5,
    EpistemicType.HYPOTHETICAL: 0.3,
    EpistemicType.CONDITIONAL: 0.5,
    EpistemicType.DEPRECATED: 0.1,
    EpistemicType.UNVERIFIED: 0.4,
}


def infer_source_type(role: Role) -> SourceType:
    return _SOURCE_BY_ROLE[role]


def infer_epistemic_type(source_type: SourceType) -> EpistemicType:
    return _EPISTEMIC_BY_SOURCE[source_type]


def default_confidence(epistemic_type: EpistemicType) -> float:
    return _CONFIDENCE_BY_EPISTEMIC[epistemic_type]
