"""Process settings, read once by each composition root from `PRME_*` environment variables.

Nested groups use a double underscore: `PRME_SCORING__RRF_K=60`. The engine's settings
(`Settings.engine`) keep their own names, without an `ENGINE__` part: `PRME_RETRIEVAL_PROFILE`,
`PRME_VECTOR_TEXT`, `PRME_SCORING__RRF_K`. The CDK stack reads the names below so the
deployed environment and the code cannot drift.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, create_model, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from prme.engine.config import EngineConfig
from prme.model.input_policy import DEFAULT_MAX_BODY_BYTES, LAMBDA_PAYLOAD_BYTES
from prme.model.limits import TenantLimits
from prme.model.search import VectorSearchSettings
from prme.retrieval.response_size import DEFAULT_MAX_RESPONSE_BYTES

ENV_PREFIX = "PRME_"

EmbedderName = Literal["minilm", "hashing", "bedrock"]
# Titan Text Embeddings v2 answers in 256, 512 or 1024 dimensions; PRME asks for the largest.
BEDROCK_DIMENSIONS = (256, 512, 1024)
DEFAULT_BEDROCK_DIMENSION = 1024
# Fixed by the models themselves (all-MiniLM-L6-v2; the hashing test double's default).
_FIXED_DIMENSIONS = {"minilm": 384, "hashing": 64}


def default_cache_dir() -> Path | None:
    """Where files derived from installed packages are kept between processes (the MiniLM
    graph built from its weights): `$XDG_CACHE_HOME/prme`, else `~/.cache/prme`; None (build
    in memory) when there is no home directory. Per user, not per memory directory: one copy
    serves every data directory and test run, and backups of a memory hold only memories."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "prme"
    try:
        home = Path.home()
    except RuntimeError:
        return None
    # A relative HOME would put the cache wherever the process happens to run: no cache
    # rather than that (as a relative XDG_CACHE_HOME is ignored).
    if not home.is_absolute():
        return None
    return home / ".cache" / "prme"


def embedding_dimension(
    embedder: EmbedderName, bedrock_dimension: int = DEFAULT_BEDROCK_DIMENSION
) -> int:
    """The vector dimension of an embedder setting: the one number the stack creates the
    search index with and every function checks the index against (a test keeps it equal to
    each embedder's own `model.dimension`)."""
    if embedder == "bedrock":
        return bedrock_dimension
    return _FIXED_DIMENSIONS[embedder]


# The engine settings a process reads from its environment (the others keep their defaults).
ENGINE_SETTINGS = (
    "retrieval_profile",
    "scoring",
    "packing",
    "retrieval",
    # What the vector channel embeds, how a record's own vector is made, and the weight of
    # the session's previous record in it: changing any of them needs a reindex.
    "vector_text",
    "vector_segments",
    "vector_session_context",
    # The organizer's thresholds (PRME_ORGANIZER__PROMOTION_AGE_DAYS, ...).
    "organizer",
)

# The engine settings as the environment holds them: EngineConfig's fields and types, read
# under the settings' prefix; EngineConfig then validates them and fills in the rest.
_EngineEnvironment = create_model(  # type: ignore[call-overload]
    "_EngineEnvironment",
    __base__=BaseSettings,
    **{name: (EngineConfig.model_fields[name].annotation, None) for name in ENGINE_SETTINGS},
)


class _EnvironmentSource(EnvSettingsSource):
    """The environment, with the engine's settings under their own names rather than
    `PRME_ENGINE__...`: the names deployments and documents have always used."""

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        values.pop("engine", None)
        engine = EnvSettingsSource(
            _EngineEnvironment,
            case_sensitive=self.case_sensitive,
            env_prefix=self.env_prefix,
            env_nested_delimiter=self.env_nested_delimiter,
        )()
        if engine:
            values["engine"] = engine
        return values


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore", frozen=True
    )

    backend: Literal["embedded", "aws"] = "embedded"
    data_dir: Path = Path("./memory")
    tenant_id: str = Field(default="local", min_length=1, max_length=128)
    # The owner `prme mcp` (stdio) acts for: a local agent's memory belongs to one user.
    mcp_user_id: str = Field(default="default", min_length=1, max_length=256)
    # The MCP tools listed to a model (stdio and /mcp): the few an agent needs, or every tool
    # (processing, receipts, feedback, aliases, lifecycle). Each schema costs tokens per turn.
    mcp_tools: Literal["default", "full"] = "default"
    embedder: EmbedderName = "minilm"
    # MiniLM's linear layers: int8 weights (faster, cosine about 0.99 to float32) or float32
    # (sentence-transformers' exact vectors). Another vector space: changing it needs a reindex
    # (until then the vector channel reports embedding_model_mismatch).
    minilm_precision: Literal["int8", "float32"] = "int8"
    # Where MiniLM's graph (built from its weights and quantized, seconds of work) is cached
    # for the next process: unset, `default_cache_dir()`. A damaged or stale file is rebuilt;
    # an unwritable directory only means each process builds the graph again.
    model_cache_dir: Path | None = None
    # Amazon Bedrock embeddings (PRME_EMBEDDER=bedrock): Titan Text Embeddings v2.
    bedrock_embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    # An int checked against the model's sizes, not a Literal: a Literal of ints refuses the
    # text "1024" that an environment variable holds.
    bedrock_embedding_dimension: int = DEFAULT_BEDROCK_DIMENSION
    # Extraction for POST /v1/ingest: the offline rules (default), Bedrock Converse, or any
    # OpenAI-compatible chat completions endpoint.
    extractor: Literal["rules", "bedrock", "openai"] = "rules"
    bedrock_extraction_model_id: str = "anthropic.claude-3-haiku-20240307-v1:0"
    openai_base_url: str | None = None
    openai_model: str | None = None
    openai_api_key: SecretStr | None = None
    sqlite_synchronous: Literal["normal", "full"] = "normal"
    # Embedded vector search: exact below PRME_VECTOR_SEARCH__APPROXIMATE_FROM rows of an owner,
    # approximate (clusters, PRME_VECTOR_SEARCH__PROBE of them scored) from there on.
    vector_search: VectorSearchSettings = Field(default_factory=VectorSearchSettings)
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
    # The S3 bucket that large imports are uploaded to (presigned PUT URLs); unset, the AWS
    # backend offers inline imports only.
    upload_bucket: str | None = None
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
    # Every tenant's limits unless the provider set its own (`prme limits set`), e.g.
    # PRME_LIMITS__REQUESTS_PER_SECOND=10. Unlimited by default: an embedded store has one
    # tenant, and nothing needs to starve.
    limits: TenantLimits = Field(default_factory=TenantLimits)
    # Read from the `ENGINE_SETTINGS` variables (see `_EnvironmentSource`).
    engine: EngineConfig = Field(default_factory=EngineConfig)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,  # noqa: ARG003 (replaced, see below)
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            _EnvironmentSource(settings_cls),
            dotenv_settings,
            file_secret_settings,
        )

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
        """The environment variable of a top-level field or an engine setting, or of a field
        of one of their groups by its dotted path (`scoring.rrf_k`); the CDK stack and the
        ablation benchmark use this, never a literal."""
        head, *rest = field.split(".")
        if head == "engine" or (head not in cls.model_fields and head not in ENGINE_SETTINGS):
            raise KeyError(f"no setting named {field!r}")
        return ENV_PREFIX + "__".join(part.upper() for part in (head, *rest))

    @classmethod
    def env_names(cls) -> set[str]:
        """The variable of every top-level field and engine setting (groups read nested
        names below theirs, e.g. `PRME_SCORING__RRF_K`)."""
        fields = [name for name in cls.model_fields if name != "engine"]
        return {cls.env_name(name) for name in (*fields, *ENGINE_SETTINGS)}

    @field_validator("bedrock_embedding_dimension")
    @classmethod
    def _titan_dimension(cls, value: int) -> int:
        if value not in BEDROCK_DIMENSIONS:
            raise ValueError(f"must be one of {', '.join(map(str, BEDROCK_DIMENSIONS))}")
        return value

    @property
    def embedding_dimension(self) -> int:
        return embedding_dimension(self.embedder, self.bedrock_embedding_dimension)
