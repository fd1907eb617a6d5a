"""The `prme` command: serve HTTP or MCP, manage keys, bootstrap AWS, run work, reindex."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from prme.composition import open_backend
from prme.engine.credentials import CredentialService
from prme.engine.service import MemoryEngine
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
            max_response_bytes=settings.max_response_bytes,
            request_budget_ms=settings.request_budget_ms,
            mcp_tools=settings.mcp_tools,
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
        report = backend.engine.process_materializations(None, budget_ms=args.budget_ms)
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
    """Re-embed one owner's records, or every owner's of the tenant, with the current
    embedder and vector settings."""
    from prme.engine.identity import validate_user_id

    if args.start_after is not None and not args.all_users:
        print("--start-after goes with --all-users", file=sys.stderr)
        return 2
    backend = open_backend(settings, args.data_dir)
    try:
        if not args.all_users:
            return _reindex_owner(backend.engine, settings, validate_user_id(args.user_id))
        return _reindex_tenant(backend.engine, settings, args.start_after)
    finally:
        backend.close()


def _reindex_owner(engine: MemoryEngine, settings: Settings, user_id: str) -> int:
    owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=user_id)

    def say(done: int, total: int) -> None:
        print(f"reindexed {done}/{total} records", file=sys.stderr, flush=True)

    try:
        report = engine.reindex(owner, progress=say)
    except PrmeError as exc:
        # Batches before the failure are rewritten; a rerun redoes every record.
        print(f"reindex stopped: {exc.detail}. Run it again when that is fixed.", file=sys.stderr)
        return 1
    print(f"reindexed={report.nodes} batches={report.batches} model={report.embedding_model}")
    return 0


def _reindex_tenant(engine: MemoryEngine, settings: Settings, start_after: str | None) -> int:
    """Every owner of the tenant in id order; a stop says how to resume after the last
    owner that finished (reindexing an owner again is harmless, only slower)."""
    owners = engine.list_owners(settings.tenant_id)
    if start_after is not None:
        owners = [o for o in owners if o > start_after]
    print(f"tenant {settings.tenant_id}: {len(owners)} owners to reindex", file=sys.stderr)
    finished: str | None = start_after
    records = 0
    for position, user_id in enumerate(owners, start=1):
        owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=user_id)

        def say(done: int, total: int, *, user_id: str = user_id, position: int = position) -> None:
            print(
                f"[{position}/{len(owners)}] {user_id}: reindexed {done}/{total} records",
                file=sys.stderr,
                flush=True,
            )

        try:
            report = engine.reindex(owner, progress=say)
        except PrmeError as exc:
            resume = "" if finished is None else f" --start-after {shlex.quote(finished)}"
            print(
                f"reindex stopped at {user_id}: {exc.detail}. Owners before it are done; when "
                f"that is fixed, run: prme reindex --all-users{resume}",
                file=sys.stderr,
            )
            return 1
        finished = user_id
        records += report.nodes
        print(f"user_id={user_id} reindexed={report.nodes} batches={report.batches}", flush=True)
    print(f"owners={len(owners)} reindexed={records}")
    return 0


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the MCP tools on stdin/stdout for one configured owner (nothing else on stdout)."""
    from prme.engine.identity import Principal, validate_user_id
    from prme.mcp.server import build_mcp_server

    user_id = validate_user_id(args.user_id or settings.mcp_user_id)
    backend = open_backend(settings, args.data_dir)
    principal = Principal.owner(settings.tenant_id, user_id)
    try:
        build_mcp_server(
            backend.engine,
            lambda: principal,
            max_response_bytes=settings.max_response_bytes,
            tools=settings.mcp_tools,
            transport="stdio",
        ).run("stdio")
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
    whom = reindex.add_mutually_exclusive_group(required=True)
    whom.add_argument("--user-id", help="the owner whose records to reindex")
    whom.add_argument(
        "--all-users",
        action="store_true",
        help="every owner of the tenant (PRME_TENANT_ID), in id order, with progress",
    )
    reindex.add_argument(
        "--start-after",
        default=None,
        metavar="USER_ID",
        help="with --all-users: only owners whose id sorts after this one (to resume)",
    )

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
