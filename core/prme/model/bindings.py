"""Typed value bindings (a source-backed presentation form paired with a caller's lookup form)
and the audit records that tool-argument resolution returns."""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from prme.model.canonical import canonical_json, checksum

MAX_REFERENCE_CHARS = 128
MAX_KIND_CHARS = 64
MAX_BOUND_TEXT_CHARS = 2048
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
# RFC 6901: every reference token starts with "/" and escapes "~" as "~0" and "/" as "~1".
JSON_POINTER_PATTERN = r"^(?:/(?:[^~/]|~[01])*)*$"

# Cc covers C0, DEL and C1 controls; Cs (lone surrogates) cannot be encoded as UTF-8, so such a
# value could never match stored text byte for byte.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs"})


def _check_bound_text(value: str) -> str:
    # Messages never repeat the value: it may be private content.
    if not value.strip():
        raise ValueError("must contain a non-whitespace character")
    if any(unicodedata.category(char) in _FORBIDDEN_CATEGORIES for char in value):
        raise ValueError("must not contain control characters")
    return value


BindingReference = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_REFERENCE_CHARS,
        pattern=LABEL_PATTERN,
        description="The caller's label for the value, e.g. rent_account",
    ),
]
BindingKind = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_KIND_CHARS,
        pattern=LABEL_PATTERN,
        description="What sort of value it is, e.g. bank_account",
    ),
]
BoundText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_BOUND_TEXT_CHARS),
    AfterValidator(_check_bound_text),
]
Presentation = Annotated[
    BoundText,
    Field(description="The value as written in the source, where it occurs verbatim"),
]
Lookup = Annotated[
    BoundText,
    Field(description="The exact form a tool needs, vouched for by the caller"),
]
NodeId = Annotated[
    str, Field(min_length=1, description="The memory node whose source holds the value")
]
BindingOperation = Literal["replaced", "already_lookup"]


class MemoryValueBinding(BaseModel):
    """A binding a caller attaches to a direct store.

    `presentation` must occur verbatim in the stored source; `lookup` is operational data the
    caller vouches for (PRME never infers or checks it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    schema_version: Literal[1] = Field(default=1, description="The binding format's version")
    reference: BindingReference
    kind: BindingKind
    presentation: Presentation
    lookup: Lookup
    lookup_authority: Literal["caller"] = Field(
        default="caller", description="Who vouches for the lookup form: always the caller"
    )


class VisibleValueBinding(BaseModel):
    """A binding whose presentation survived context packing, with the memory node it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    node_id: NodeId
    reference: BindingReference
    kind: BindingKind
    presentation: Presentation
    lookup: Lookup

    @classmethod
    def from_binding(cls, node_id: str, binding: MemoryValueBinding) -> VisibleValueBinding:
        return cls(
            node_id=node_id,
            reference=binding.reference,
            kind=binding.kind,
            presentation=binding.presentation,
            lookup=binding.lookup,
        )

    def exposes(self, binding: MemoryValueBinding) -> bool:
        """Whether `binding` carries this visible binding's reference, kind and forms."""
        return (binding.reference, binding.kind, binding.presentation, binding.lookup) == (
            self.reference,
            self.kind,
            self.presentation,
            self.lookup,
        )


def binding_value_sha256(presentation: str, lookup: str) -> str:
    """SHA-256 hex of a binding's two forms, as receipts saved before keyed digests keep them."""
    return checksum([presentation, lookup])


def binding_value_hmac(presentation: str, lookup: str, *, node_content: str) -> str:
    """HMAC-SHA256 hex of a binding's two forms keyed by the content of the node holding them.

    A bound value is short and typed (an amount, a date, a city), so a plain digest of it is
    undone by trying every likely value; keyed by the content, which a receipt never keeps, the
    digest of a deleted memory's value can be tested no more cheaply than its whole content."""
    message = canonical_json([presentation, lookup]).encode("utf-8")
    return hmac.new(node_content.encode("utf-8"), message, hashlib.sha256).hexdigest()


class SavedValueBinding(BaseModel):
    """A visible binding as a retrieval receipt keeps it: which node's binding the context
    exposed and a keyed digest of its forms, never the forms themselves.

    Tool-argument resolution reads the values from the node itself, so a memory deleted since
    the retrieval leaves no value behind in its receipts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    node_id: NodeId
    reference: BindingReference
    kind: BindingKind
    value_hmac: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="HMAC-SHA256 hex of the canonical JSON array [presentation, lookup] the "
        "context exposed, keyed by the UTF-8 content of the node holding the binding",
    )
    value_sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 hex of the canonical JSON array [presentation, lookup]; only in "
        "receipts saved before value_hmac",
    )

    @model_validator(mode="after")
    def _one_digest(self) -> Self:
        if (self.value_hmac is None) == (self.value_sha256 is None):
            raise ValueError("exactly one of value_hmac and value_sha256 is required")
        return self

    @classmethod
    def of(cls, visible: VisibleValueBinding, *, node_content: str) -> SavedValueBinding:
        return cls(
            node_id=visible.node_id,
            reference=visible.reference,
            kind=visible.kind,
            value_hmac=binding_value_hmac(
                visible.presentation, visible.lookup, node_content=node_content
            ),
        )

    def exposes(self, binding: MemoryValueBinding, *, node_content: str) -> bool:
        """Whether `binding` (read now from the node whose content is `node_content`) is the
        one the context exposed."""
        if (binding.reference, binding.kind) != (self.reference, self.kind):
            return False
        if self.value_hmac is not None:
            expected = binding_value_hmac(
                binding.presentation, binding.lookup, node_content=node_content
            )
            return hmac.compare_digest(expected, self.value_hmac)
        return binding_value_sha256(binding.presentation, binding.lookup) == self.value_sha256


class ValueBindingUse(BaseModel):
    """One argument value that matched a visible binding, located by a JSON pointer.

    `replaced`: the value equalled the presentation and now holds the lookup.
    `already_lookup`: the value already equalled an unambiguous lookup and was left unchanged.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    path: Annotated[str, Field(pattern=JSON_POINTER_PATTERN)] = Field(
        description="JSON pointer (RFC 6901) to the argument value"
    )
    operation: BindingOperation = Field(
        description="replaced: the presentation became the lookup; already_lookup: the value "
        "already was the lookup and was left unchanged"
    )
    node_id: NodeId
    reference: BindingReference
    kind: BindingKind
    presentation: Presentation
    lookup: Lookup


class ToolArgumentResolution(BaseModel):
    """The resolved copy of a tool's arguments and the audit of every binding it used.

    `binding_uses` lists every match in document order (object keys in insertion order, array
    items by index). `replacements` is the subset of those uses whose operation is `replaced`,
    i.e. exactly the values that differ from the input.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    arguments: dict[str, Any] = Field(description="The tool's arguments with lookups put in")
    binding_uses: list[ValueBindingUse] = Field(
        description="Every argument value that matched a visible binding, in document order"
    )
    replacements: list[ValueBindingUse] = Field(
        description="The uses whose operation is replaced: exactly the values that changed"
    )

    @model_validator(mode="after")
    def _replacements_are_the_replaced_uses(self) -> Self:
        expected = [use for use in self.binding_uses if use.operation == "replaced"]
        if self.replacements != expected:
            raise ValueError("replacements must be the binding uses whose operation is 'replaced'")
        return self
