"""Extraction through Amazon Bedrock's Converse API: one call per source, output checked for grounding."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prme.errors import ExtractionUnavailableError
from prme.extraction.schema import SYSTEM_PROMPT, parse_extraction, user_message
from prme.model.enums import WorkFailure
from prme.model.extraction import Extraction


class BedrockConverseExtractor:
    """Asks a Bedrock model for the shared JSON extraction; the client is injected (bedrock-runtime)."""

    def __init__(self, client: Any, model_id: str, *, max_tokens: int = 1024) -> None:
        if max_tokens < 1:
            raise ValueError("max_tokens must be positive")
        self._client = client
        self._model_id = model_id
        self._max_tokens = max_tokens

    @property
    def name(self) -> str:
        return f"bedrock/{self._model_id}"

    def extract(self, text: str, *, reference_time: datetime) -> Extraction:
        if not text.strip():
            return Extraction(extractor=self.name)
        raw = self._converse(user_message(text, reference_time))
        return parse_extraction(raw, extractor=self.name, source_text=text)

    def _converse(self, prompt: str) -> str:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            ReadTimeoutError,
        )

        try:
            response = self._client.converse(
                modelId=self._model_id,
                system=[{"text": SYSTEM_PROMPT}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                # Deterministic decoding: the same source should yield the same memory.
                inferenceConfig={"maxTokens": self._max_tokens, "temperature": 0},
            )
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise ExtractionUnavailableError(
                "Extraction provider timed out", reason_code=WorkFailure.EXTRACTOR_TIMEOUT
            ) from exc
        except (ClientError, BotoCoreError) as exc:
            # Provider text stays in the chained cause for logs, never in the message.
            raise ExtractionUnavailableError(
                "Extraction provider failed", reason_code=WorkFailure.EXTRACTOR_PROVIDER_ERROR
            ) from exc
        try:
            blocks = response["output"]["message"]["content"]
            return "".join(block["text"] for block in blocks if "text" in block)
        except (KeyError, TypeError) as exc:
            raise ExtractionUnavailableError(
                "Extraction provider returned no text",
                reason_code=WorkFailure.EXTRACTOR_INVALID_OUTPUT,
            ) from exc
