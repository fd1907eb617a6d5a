"""Process settings, read once by each composition root from `PRME_*` environment variables.

Nested groups use a double underscore: `PRME_SCORING__RRF_K=60`. The CDK stack reads the
names below so the deployed environment and the code cannot drift.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from prme.engine.config import EngineConfig, PackingConfig, RetrievalConfig, ScoringConfig

ENV_PREFIX = "PRME_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore", frozen=True
    )

    backend: Literal["embedded", "aws"] = "embedded"
    data_dir: Path = Path("./memory")
    tenant_id: str = Field(default="local", min_length=1, max_length=128)
    embedder: Literal["minilm", "hashing"] = "minilm"
    sqlite_synchronous: Literal["normal", "full"] = "normal"
    # AWS backend: resource names and endpoints. boto3 reads AWS_ENDPOINT_URL* and the region.
    table_name: str = "prme-local"
    queue_prefix: str = "prme-local"
    opensearch_url: str | None = None
    opensearch_index_alias: str = "prme-nodes"
    opensearch_auth: Literal["none", "es", "aoss"] = "none"
    # OpenSearch makes writes searchable at its next refresh (about 1 s). True makes each
    # store wait for visibility: read-your-writes at the cost of store latency.
    opensearch_refresh_on_write: bool = False
    # Work pending longer than this is re-announced by the sweeper.
    work_overdue_seconds: int = Field(default=120, ge=1)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    packing: PackingConfig = Field(default_factory=PackingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)

    def engine_config(self) -> EngineConfig:
        return EngineConfig(scoring=self.scoring, packing=self.packing, retrieval=self.retrieval)
