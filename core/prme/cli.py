"""The `prme` command: serve the HTTP API, manage API keys, process pending work, reindex."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from prme.composition import open_backend
from prme.engine.credentials import CredentialService
from prme.errors import PrmeError
from prme.model.enums import CredentialRole
from prme.model.records import OwnerKey
from prme.settings import Settings


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from prme.http.auth import AuthPolicy, is_loopback_name

    if args.backend:
        settings = settings.model_copy(update={"backend": args.backend})
    backend = open_backend(settings, args.data_dir)
    keyed = backend.credentials.any_active()
    if not is_loopback_name(args.host) and not keyed:
        print(
            f"refusing to bind {args.host}: no API key exists, so the API would be open to the "
            "network. Create one with `prme keys create --user-id NAME` or bind 127.0.0.1.",
            file=sys.stderr,
        )
        backend.close()
        return 2
    import uvicorn

    from prme.http.app import create_app
    from prme.http.dependencies import ApiRuntime
    from prme.logs import start_json_logging

    # Keyless calls are a local convenience of the embedded default, never of the cloud backend,
    # and are decided here, once: a key created later closes them until restart.
    local = is_loopback_name(args.host) and settings.backend == "embedded"
    policy = AuthPolicy.at_startup(
        backend.credentials, local_tenant=settings.tenant_id if local else None
    )
    app = create_app(
        ApiRuntime(
            engine=backend.engine,
            credentials=backend.credentials,
            auth=policy,
            max_body_bytes=settings.max_body_bytes,
            request_budget_ms=settings.request_budget_ms,
        )
    )
    base = f"http://{args.host}:{args.port}"
    where = settings.backend if settings.backend == "aws" else args.data_dir or settings.data_dir
    print(f"PRME serving {where} at {base}  (docs: {base}/docs)")
    if not policy.keyless_open:
        print("Send 'Authorization: Bearer <key>' with every request (prme keys create).")
    else:
        print(
            "No API key exists: loopback callers act as an operator (user_id defaults to 'default')"
            " until a key is created."
        )
    print(
        f"  curl -s {base}/v1/store -H 'content-type: application/json' "
        '-d \'{"content": "I moved to Lisbon in May.", "user_id": "alice"}\''
    )
    print(
        f"  curl -s {base}/v1/retrieve -H 'content-type: application/json' "
        '-d \'{"query": "Where do I live?", "user_id": "alice"}\''
    )
    sys.stdout.flush()
    # JSON lines on stderr from a background thread; uvicorn's own loggers included, and no
    # access log of its own (the request middleware writes one line per request).
    listener = start_json_logging(("prme", "uvicorn"))
    logging.getLogger("uvicorn").setLevel(logging.WARNING)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)
    finally:
        listener.stop()
        backend.close()
    return 0


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    if settings.backend == "aws":
        from prme.backends.aws.service import open_aws_credentials

        # Keys live in the table only: no embedder, queue or search setting is read.
        return _manage_keys(args, settings, open_aws_credentials(settings))
    backend = open_backend(settings, args.data_dir)
    try:
        return _manage_keys(args, settings, backend.credentials)
    finally:
        backend.close()


def _manage_keys(args: argparse.Namespace, settings: Settings, service: CredentialService) -> int:
    if args.keys_command == "create":
        if args.operator == (args.user_id is not None):
            print("give exactly one of --user-id NAME or --operator", file=sys.stderr)
            return 2
        issued = service.create(
            tenant_id=settings.tenant_id,
            owner_id=args.user_id,
            role=CredentialRole.OPERATOR if args.operator else CredentialRole.OWNER,
            label=args.label,
        )
        c = issued.credential
        print(f"key_id: {c.key_id}\nrole: {c.role.value}\nuser_id: {c.owner_id or '-'}")
        print(f"api_key: {issued.secret}")
        print("Store the api_key now: only its hash is kept.", file=sys.stderr)
    elif args.keys_command == "list":
        for c in service.list(settings.tenant_id):
            state = "revoked" if c.revoked_at else "active"
            print(f"{c.key_id}  {c.role.value:8}  {c.owner_id or '-':20}  {state:7}  {c.label}")
    else:
        revoked = service.revoke(args.key_id)
        print(f"revoked {revoked.key_id}")
    return 0


def _bootstrap(_args: argparse.Namespace, settings: Settings) -> int:
    """Create the AWS resources (table, queues, index); safe to repeat. A CDK deployment
    needs none of it (the stack makes all three); it sets up the local AWS or a hand-made one."""
    from prme.backends.aws.service import bootstrap_from_settings, build_clients

    bootstrap_from_settings(
        settings, build_clients(settings), dimension=settings.embedding_dimension, say=print
    )
    return 0


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    backend = open_backend(settings, args.data_dir)
    try:
        report = backend.engine.process_pending(None, budget_ms=args.budget_ms)
        aliases = backend.engine.propose_aliases(None)
        print(
            f"processed={report.processed} pending={report.pending} failed={report.failed} "
            f"alias_proposals={aliases.proposals_created} "
            f"alias_pairs_compared={aliases.pairs_compared} "
            f"alias_scan_complete={str(aliases.complete).lower()}"
        )
        return 0
    finally:
        backend.close()


def _reindex(args: argparse.Namespace, settings: Settings) -> int:
    """Re-embed one owner's records with the current embedder and vector settings."""
    from prme.engine.identity import validate_user_id

    user_id = validate_user_id(args.user_id)
    backend = open_backend(settings, args.data_dir)
    owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=user_id)

    def say(done: int, total: int) -> None:
        print(f"reindexed {done}/{total} records", file=sys.stderr, flush=True)

    try:
        report = backend.engine.reindex(owner, progress=say)
    except PrmeError as exc:
        # Batches before the failure are rewritten; a rerun redoes every record.
        print(f"reindex stopped: {exc.detail}. Run it again when that is fixed.", file=sys.stderr)
        return 1
    finally:
        backend.close()
    print(f"reindexed={report.nodes} batches={report.batches} model={report.embedding_model}")
    return 0


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the MCP tools on stdin/stdout for one configured owner (nothing else on stdout)."""
    from prme.engine.identity import Principal, validate_user_id
    from prme.mcp.server import build_mcp_server

    user_id = validate_user_id(args.user_id or settings.mcp_user_id)
    backend = open_backend(settings, args.data_dir)
    principal = Principal.owner(settings.tenant_id, user_id)
    try:
        build_mcp_server(backend.engine, lambda: principal).run("stdio")
        return 0
    finally:
        backend.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prme", description="PRME memory service")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="data directory (PRME_DATA_DIR)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--backend", choices=["embedded", "aws"], default=None, help="PRME_BACKEND")

    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key (the secret is printed once)")
    create.add_argument("--user-id", default=None, help="bind the key to this owner")
    create.add_argument("--operator", action="store_true", help="a tenant-wide operator key")
    create.add_argument("--label", default="")
    keys_sub.add_parser("list", help="list keys (never their secrets)")
    revoke = keys_sub.add_parser("revoke", help="revoke a key")
    revoke.add_argument("key_id")

    sub.add_parser("bootstrap", help="create the AWS table, queues and index (idempotent)")

    worker = sub.add_parser("worker", help="run one pass over pending work")
    worker.add_argument("--budget-ms", type=int, default=None)

    reindex = sub.add_parser(
        "reindex",
        help="re-embed one owner's records (after changing the embedder or vector settings)",
    )
    reindex.add_argument("--user-id", required=True, help="the owner whose records to reindex")

    mcp = sub.add_parser("mcp", help="serve the MCP tools over stdio for one owner")
    mcp.add_argument(
        "--user-id", default=None, help="the owner the tools act for (PRME_MCP_USER_ID)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings()
    handlers = {
        "serve": _serve,
        "keys": _keys,
        "worker": _worker,
        "bootstrap": _bootstrap,
        "mcp": _mcp,
        "reindex": _reindex,
    }
    return handlers[args.command](args, settings)


if __name__ == "__main__":
    raise SystemExit(main())
