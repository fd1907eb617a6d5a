"""Rules of typed value bindings: admission, storage in node metadata, visibility after packing and
exact resolution of tool arguments."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from prme.errors import ValueBindingError, ValueBindingResolutionError
from prme.model.bindings import (
    BindingOperation,
    MemoryValueBinding,
    ToolArgumentResolution,
    ValueBindingUse,
    VisibleValueBinding,
)
from prme.model.records import VALUE_BINDINGS_METADATA_KEY

# The top-level argument object counts as depth 1; deeper containers are rejected.
MAX_ARGUMENT_DEPTH = 64

BindingEntry = tuple[str, str, Sequence[MemoryValueBinding]]
"""(node_id, packed_text, bindings) of one record that survived context packing."""

_RENDER_HEADER = (
    "Bound values (kind, reference, exact form). Write a bound value exactly as quoted"
    " wherever it is needed, including tool arguments:"
)


def check_binding_admission(
    bindings: Sequence[MemoryValueBinding], *, source_content: str, indexed_text: str
) -> None:
    """Raise ValueBindingError unless every presentation occurs verbatim in both texts.

    `indexed_text` is the text the index receives (retrieval_content when given, else content).
    References must be unique within the memory. Errors name the binding by index and
    reference and never repeat the content.
    """
    _check_unique_references(bindings, field_prefix=("value_bindings",))
    # Python compares code points, which for UTF-8 text is the same as comparing bytes; no
    # normalisation or case folding happens, so "byte for byte" holds.
    for index, binding in enumerate(bindings):
        for text, description in (
            (source_content, "the source content"),
            (indexed_text, "the indexed text"),
        ):
            if binding.presentation not in text:
                raise ValueBindingError(
                    f"value_bindings[{index}] (reference {binding.reference!r}): presentation"
                    f" does not occur verbatim in {description}",
                    field=("value_bindings", index, "presentation"),
                )


def bindings_to_metadata(bindings: Sequence[MemoryValueBinding]) -> list[dict[str, Any]]:
    """The JSON-ready value stored under the reserved metadata key `prme_value_bindings_v1`."""
    return [binding.model_dump(mode="json") for binding in bindings]


def bindings_from_metadata(value: object) -> list[MemoryValueBinding]:
    """Read bindings back from a stored metadata value; `None` (key absent) means no bindings.

    Raises ValueBindingError when the value is not a list of valid bindings with unique
    references. The key is reserved, so that only happens to metadata written outside PRME.
    """
    if value is None:
        return []
    field_prefix: tuple[str | int, ...] = ("metadata", VALUE_BINDINGS_METADATA_KEY)
    if not isinstance(value, list | tuple):
        raise ValueBindingError(
            f"metadata {VALUE_BINDINGS_METADATA_KEY!r} must be a list of value bindings",
            field=field_prefix,
        )
    bindings: list[MemoryValueBinding] = []
    for index, item in enumerate(value):
        try:
            bindings.append(MemoryValueBinding.model_validate(item))
        except ValidationError as exc:
            # The pydantic message would echo the stored values; name only the failing fields.
            fields = sorted(
                {".".join(str(part) for part in error["loc"]) for error in exc.errors()}
            )
            raise ValueBindingError(
                f"metadata {VALUE_BINDINGS_METADATA_KEY!r}[{index}] is not a valid value binding"
                f" (fields: {', '.join(fields) or 'binding'})",
                field=(*field_prefix, index),
            ) from exc
    _check_unique_references(bindings, field_prefix=field_prefix)
    return bindings


def visible_bindings(entries: Iterable[BindingEntry]) -> list[VisibleValueBinding]:
    """Bindings whose presentation occurs verbatim in the packed text of their own record.

    Order follows the entries, then each record's bindings; repeats are listed once.
    """
    seen: set[VisibleValueBinding] = set()
    visible: list[VisibleValueBinding] = []
    for node_id, packed_text, bindings in entries:
        for binding in bindings:
            # A record cut by packing, or a key/value or reference-only rendering of it, may no
            # longer show the presentation; such a binding must not steer a tool call.
            if binding.presentation not in packed_text:
                continue
            candidate = VisibleValueBinding.from_binding(node_id, binding)
            if candidate not in seen:
                seen.add(candidate)
                visible.append(candidate)
    return visible


def render_value_bindings(visible: Sequence[VisibleValueBinding]) -> str:
    """A short listing of the visible presentation forms with kind and reference, or "".

    Lookup values are deliberately left out: the model should write the presentation form and
    let the resolver swap in the lookup at the tool boundary.
    """
    lines: list[str] = []
    listed: set[tuple[str, str, str]] = set()
    for binding in visible:
        key = (binding.kind, binding.reference, binding.presentation)
        if key in listed:
            continue
        listed.add(key)
        # JSON quoting shows exactly where the value starts and ends, spaces included.
        quoted = json.dumps(binding.presentation, ensure_ascii=False)
        lines.append(f"- {binding.kind} {binding.reference}: {quoted}")
    if not lines:
        return ""
    return "\n".join([_RENDER_HEADER, *lines])


def resolve_tool_arguments(
    arguments: Mapping[str, Any], visible: Sequence[VisibleValueBinding]
) -> ToolArgumentResolution:
    """Copy a JSON argument object, replacing complete string values equal to a visible
    presentation with its lookup.

    Only whole-value, case-sensitive equality counts. A value equal to an unambiguous visible
    lookup (and to no presentation) is reported as `already_lookup` and left unchanged; a
    lookup reached from several presentations is not reported. A value equal to a presentation
    that is visible with different lookups raises ValueBindingResolutionError, as do non-JSON
    input, non-finite floats, non-string keys and nesting deeper than MAX_ARGUMENT_DEPTH.
    The input is never mutated.
    """
    if not isinstance(arguments, dict):
        raise ValueBindingResolutionError("tool arguments must be a JSON object")
    resolver = _ArgumentResolver(visible)
    resolved = resolver.copy_object(arguments, path="", depth=1)
    uses = resolver.uses
    return ToolArgumentResolution(
        arguments=resolved,
        binding_uses=uses,
        replacements=[use for use in uses if use.operation == "replaced"],
    )


def _check_unique_references(
    bindings: Sequence[MemoryValueBinding], *, field_prefix: tuple[str | int, ...]
) -> None:
    first_index: dict[str, int] = {}
    for index, binding in enumerate(bindings):
        earlier = first_index.setdefault(binding.reference, index)
        if earlier != index:
            raise ValueBindingError(
                f"value binding {index} reuses reference {binding.reference!r} of binding"
                f" {earlier}; references must be unique within one memory",
                field=(*field_prefix, index, "reference"),
            )


def _escape_pointer_token(token: str) -> str:
    # RFC 6901 order matters: escaping "/" first would turn its "~1" into "~01".
    return token.replace("~", "~0").replace("/", "~1")


def _describe(path: str) -> str:
    # The empty pointer is the whole document; "/" would name the key "".
    return f"at {path}" if path else "at the top level"


class _ArgumentResolver:
    """Indexes the visible bindings once, then walks one argument tree collecting uses."""

    def __init__(self, visible: Sequence[VisibleValueBinding]) -> None:
        self._by_presentation: dict[str, VisibleValueBinding] = {}
        self._conflicts: dict[str, list[VisibleValueBinding]] = {}
        first_by_lookup: dict[str, VisibleValueBinding] = {}
        presentations_by_lookup: dict[str, set[str]] = {}
        for binding in visible:
            first = self._by_presentation.setdefault(binding.presentation, binding)
            if first.lookup != binding.lookup:
                self._conflicts.setdefault(binding.presentation, [first]).append(binding)
            first_by_lookup.setdefault(binding.lookup, binding)
            presentations_by_lookup.setdefault(binding.lookup, set()).add(binding.presentation)
        # A lookup reached from several presentations cannot say which form the caller meant.
        self._by_lookup = {
            lookup: binding
            for lookup, binding in first_by_lookup.items()
            if len(presentations_by_lookup[lookup]) == 1
        }
        self.uses: list[ValueBindingUse] = []

    def copy_object(self, value: dict[Any, Any], *, path: str, depth: int) -> dict[str, Any]:
        self._check_depth(path, depth)
        copied: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise ValueBindingResolutionError(
                    f"tool argument object {_describe(path)} has a non-string key"
                )
            copied[key] = self._copy_value(
                item, path=f"{path}/{_escape_pointer_token(key)}", depth=depth
            )
        return copied

    def _copy_value(self, value: object, *, path: str, depth: int) -> Any:
        # Leaves must be plain JSON scalars: a subclass (an enum, say) could compare equal to
        # a presentation yet serialise differently.
        if value is None or type(value) in (bool, int):
            return value
        if type(value) is float:
            if not math.isfinite(value):
                raise ValueBindingResolutionError(f"tool argument at {path} is not a finite number")
            return value
        if type(value) is str:
            return self._resolve_string(value, path=path)
        if isinstance(value, dict):
            return self.copy_object(value, path=path, depth=depth + 1)
        if isinstance(value, list | tuple):
            self._check_depth(path, depth + 1)
            return [
                self._copy_value(item, path=f"{path}/{index}", depth=depth + 1)
                for index, item in enumerate(value)
            ]
        raise ValueBindingResolutionError(
            f"tool argument at {path} has non-JSON type {type(value).__name__}"
        )

    def _resolve_string(self, value: str, *, path: str) -> str:
        conflicting = self._conflicts.get(value)
        if conflicting is not None:
            references = ", ".join(sorted({binding.reference for binding in conflicting}))
            raise ValueBindingResolutionError(
                f"tool argument at {path} matches a presentation bound to different lookup"
                f" values (references: {references}); refusing to choose one"
            )
        binding = self._by_presentation.get(value)
        if binding is not None:
            self._record(path, "replaced", binding)
            return binding.lookup
        binding = self._by_lookup.get(value)
        if binding is not None:
            self._record(path, "already_lookup", binding)
        return value

    def _record(self, path: str, operation: BindingOperation, binding: VisibleValueBinding) -> None:
        self.uses.append(
            ValueBindingUse(
                path=path,
                operation=operation,
                node_id=binding.node_id,
                reference=binding.reference,
                kind=binding.kind,
                presentation=binding.presentation,
                lookup=binding.lookup,
            )
        )

    @staticmethod
    def _check_depth(path: str, depth: int) -> None:
        if depth > MAX_ARGUMENT_DEPTH:
            raise ValueBindingResolutionError(
                f"tool argument {_describe(path)} nests deeper than {MAX_ARGUMENT_DEPTH} levels"
            )
