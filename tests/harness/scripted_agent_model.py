"""An OpenAI Agents SDK `Model` that plays a fixed script instead of calling a provider, and
keeps what the agent sent it each turn, so a recipe's agent runs offline and a test can see
which tool results reached the model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import AgentOutputSchemaBase, Handoff, Model, ModelResponse, ModelSettings, Tool
from agents.items import TResponseInputItem, TResponseStreamEvent
from agents.models.interface import ModelTracing
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from typing_extensions import override


@dataclass(frozen=True)
class ToolCall:
    """One scripted turn in which the model calls a tool."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ModelTurn:
    """What the agent sent the model on one turn."""

    instructions: str | None
    items: list[Any]
    tool_names: list[str]

    def tool_outputs(self) -> list[str]:
        """The tool results the model was shown on this turn, in order."""
        return [
            str(item["output"])
            for item in self.items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]


@dataclass
class ScriptedModel(Model):
    """Answers turn after turn from `script`: a `ToolCall`, or a string for the final reply."""

    script: Sequence[ToolCall | str]
    turns: list[ModelTurn] = field(default_factory=list)

    @override
    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        items: list[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.turns.append(
            ModelTurn(system_instructions, list(items), [tool.name for tool in tools])
        )
        step = self.script[len(self.turns) - 1]
        number = len(self.turns)
        if isinstance(step, ToolCall):
            output: Any = ResponseFunctionToolCall(
                type="function_call",
                id=f"fc_{number}",
                call_id=f"call_{number}",
                name=step.name,
                arguments=json.dumps(step.arguments),
            )
        else:
            output = ResponseOutputMessage(
                type="message",
                id=f"msg_{number}",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=step, annotations=[])],
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    @override
    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the recipes run agents without streaming")
