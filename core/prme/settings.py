"""Process settings, read once by each composition root from `PRME_*` environment variables.

Nested groups use a double underscore: `PRME_SCORING__RRF_K=60`. The CDK stack reads the
names below so the deployed environment and the code cannot drift.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from prme.engine.config import EngineConfig, PackingConfig, RetrievalConfig, ScoringConfig
from prme.model.input_policy import DEFAULT_MAX_BODY_BYTES, LAMBDA_PAYLOAD_BYTES
from prme.retrieval.response_size import DEFAULT_MAX_RESPONSE_BYTES

ENV_PREFIX = "PRME_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore", frozen=True
    )

    backend: Literal["embedded", "aws"] = "embedded"
    data_dir: Path = Path("./memory")
    tenant_id: str = Field(default="local", min_length=1, max_length=128)
    # The owner `prme mcp` (stdio) acts for: a local agent's memory belongs to one user.
    mcp_user_id: str = Field(default="default", min_length=1, max_length=256)
    embedder: Literal["minilm", "hashing", "bedrock"] = "minilm"
    # MiniLM's linear layers: int8 weights (faster, cosine about 0.99 to float32) or float32
    # (sentence-transformers' exact vectors). Another vector space: changing it needs a reindex
    # (until then the vector channel reports embedding_model_mismatch).
    minilm_precision: Literal["int8", "float32"] = "int8"
    # Amazon Bedrock embeddings (PRME_EMBEDDER=bedrock): Titan Text Embeddings v2.
    bedrock_embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    bedrock_embedding_dimension: Literal[256, 512, 1024] = 1024
    # Extraction for POST /v1/ingest: the offline rules (default), Bedrock Converse, or any
    # OpenAI-compatible chat completions endpoint.
    extractor: Literal["rules", "bedrock", "openai"] = "rules"
    bedrock_extraction_model_id: str = "anthropic.claude-3-haiku-20240307-v1:0"
    openai_base_url: str | None = None
    openai_model: str | None = None
    openai_api_key: SecretStr | None = None
    sqlite_synchronous: Literal["normal", "full"] = "normal"
    # HTTP request bodies past this many bytes are refused with 413 while being read.
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    # A retrieval response (HTTP and MCP) holds ranked records until this many bytes, measured
    # as sent inside a Lambda response; the rest are left out and the response says so. At most
    # Lambda's own limit, which refuses a larger response with an error the caller sees as 500.
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES, ge=64 * 1024, le=LAMBDA_PAYLOAD_BYTES
    )
    # AWS backend: resource names and endpoints. boto3 reads AWS_ENDPOINT_URL* and the region.
    table_name: str = "prme-local"
    queue_prefix: str = "prme-local"
    opensearch_url: str | None = None
    opensearch_index_alias: str = "prme-nodes"
    # SigV4 for Amazon OpenSearch Service (`es`). OpenSearch Serverless is not supported:
    # its vector collections refuse documents with a given `_id`, and the index adapter
    # writes every document under its node id (idempotent upserts).
    opensearch_auth: Literal["none", "es"] = "none"
    # Replicas of every shard of the index created by bootstrap: 0 on a single node, 1 when
    # the domain has data nodes to spare (the stack's production profile).
    opensearch_replicas: int = Field(default=0, ge=0, le=5)
    # OpenSearch makes writes searchable at its next refresh (about 1 s). True makes each
    # store wait for visibility: read-your-writes at the cost of store latency.
    opensearch_refresh_on_write: bool = False
    # Time budget of one API request: every dependency call takes its timeout from what is
    # left of it, so a hung dependency costs a degraded or pending answer, never a cut-off.
    # Below API Gateway's 30 s integration timeout and the api function's timeout; on Lambda
    # the function's remaining time (less a margin) bounds it as well.
    request_budget_ms: int = Field(default=25_000, ge=100, le=900_000)
    # Work pending longer than this is re-announced by the sweeper (at most three times, then
    # failed). On AWS the maintenance function also waits until the work's queue could no
    # longer be delivering it (functions/maintenance.py).
    work_overdue_seconds: int = Field(default=120, ge=1)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    packing: PackingConfig = Field(default_factory=PackingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    # What the vector channel embeds (EngineConfig.vector_text); changing it needs a reindex.
    vector_text: Literal["speaker_then_content", "content"] = "speaker_then_content"
    # Weight of the session's previous record in each record's vector
    # (EngineConfig.vector_session_context; 0 turns it off); changing it needs a reindex.
    vector_session_context: float = Field(default=0.6, ge=0.0, le=4.0)
    # A record's own vector: the mean of its sentences' vectors, or the whole text's
    # (EngineConfig.vector_segments); changing it needs a reindex.
    vector_segments: Literal["sentences", "whole"] = "sentences"

    @field_validator("opensearch_auth", mode="before")
    @classmethod
    def _refuse_serverless(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() == "aoss":
            raise ValueError(
                "OpenSearch Serverless (aoss) is not supported: its vector collections refuse "
                "documents with a given _id, which every index write uses; use an OpenSearch "
                "Service domain (es)"
            )
        return value

    @classmethod
    def env_name(cls, field: str) -> str:
        """The environment variable of a top-level field; the CDK stack uses this, never a literal."""
        if field not in cls.model_fields:
            raise KeyError(f"no setting named {field!r}")
        return f"{ENV_PREFIX}{field.upper()}"

    def engine_config(self) -> EngineConfig:
        return EngineConfig(
            scoring=self.scoring,
            packing=self.packing,
            retrieval=self.retrieval,
            vector_text=self.vector_text,
            vector_session_context=self.vector_session_context,
            vector_segments=self.vector_segments,
        )
