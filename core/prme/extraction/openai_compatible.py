"""Extraction through any OpenAI-compatible chat completions endpoint (vLLM, Ollama, hosted APIs)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from prme.errors import ExtractionUnavailableError
from prme.extraction.schema import SYSTEM_PROMPT, parse_extraction, user_message
from prme.model.enums import WorkFailure
from prme.model.extraction import Extraction

if TYPE_CHECKING:
    import httpx


class OpenAiCompatibleExtractor:
    """One JSON-mode chat completion per source; the API key travels only in the Authorization header."""

    def __init__(
        self,
        http_client: httpx.Client,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        timeout_s: float = 30,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self._http = http_client
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        # The default repr would not show the key, but say so explicitly for anyone logging adapters.
        return f"OpenAiCompatibleExtractor(url={self._url!r}, model={self._model!r})"

    @property
    def name(self) -> str:
        return f"openai-compatible/{self._model}"

    def extract(self, text: str, *, reference_time: datetime) -> Extraction:
        if not text.strip():
            return Extraction(extractor=self.name)
        raw = self._complete(user_message(text, reference_time))
        return parse_extraction(raw, extractor=self.name, source_text=text)

    def _complete(self, prompt: str) -> str:
        import httpx

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "response_format": {"type": "json_object"},
            "temperature": 0,
        }
        try:
            response = self._http.post(
                self._url, json=body, headers=headers, timeout=self._timeout_s
            )
        except httpx.TimeoutException as exc:
            raise ExtractionUnavailableError(
                "Extraction provider timed out", reason_code=WorkFailure.EXTRACTOR_TIMEOUT
            ) from exc
        except httpx.HTTPError as exc:
            raise ExtractionUnavailableError(
                "Extraction provider failed", reason_code=WorkFailure.EXTRACTOR_PROVIDER_ERROR
            ) from exc
        if response.status_code >= 400:
            # The body may quote the request; the status code is all a caller learns.
            raise ExtractionUnavailableError(
                f"Extraction provider answered HTTP {response.status_code}",
                reason_code=WorkFailure.EXTRACTOR_PROVIDER_ERROR,
            )
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ExtractionUnavailableError(
                "Extraction provider returned an unexpected body",
                reason_code=WorkFailure.EXTRACTOR_INVALID_OUTPUT,
            ) from exc
        if not isinstance(content, str):
            raise ExtractionUnavailableError(
                "Extraction provider returned no text",
                reason_code=WorkFailure.EXTRACTOR_INVALID_OUTPUT,
            )
        return content
