"""Bearer-key authentication for the HTTP API and /mcp, and the rules of keyless local mode."""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from prme.engine.credentials import CredentialService
from prme.engine.identity import Principal
from prme.errors import AuthenticationError, PermissionDeniedError, public_body, status_for
from prme.http.request_log import note_caller

logger = logging.getLogger(__name__)


class AuthPolicy:
    """How requests are authenticated, decided by the composition root when it starts.

    `open_tenant` set means keyless local mode: a request without a key acts as an operator
    of that tenant. Keyless access can only close while the process runs: as soon as a key
    is seen (one authenticates, or a keyless request finds an active key or one created since
    startup), it is off until restart, so revoking the last key never re-opens it. While a
    policy was started keyless, every request must name a loopback Host (and Origin, when one
    is sent).
    """

    def __init__(self, open_tenant: str | None = None, open_default_owner: str = "default") -> None:
        self.open_tenant = open_tenant
        self.open_default_owner = open_default_owner
        self._keyless_open = open_tenant is not None
        # Revoked keys that existed at startup; any other key means one was created since.
        self._keys_at_startup: frozenset[str] | None = None

    @classmethod
    def at_startup(cls, credentials: CredentialService, *, local_tenant: str | None) -> AuthPolicy:
        """Keyless for `local_tenant` only if the caller allows it and no active key exists now."""
        existing = credentials.list()
        # An unreadable key record may be an active key: keyless access fails closed.
        if (
            local_tenant is None
            or any(key.active for key in existing)
            or credentials.any_unreadable()
        ):
            return cls()
        policy = cls(open_tenant=local_tenant)
        policy._keys_at_startup = frozenset(key.key_id for key in existing)
        return policy

    @property
    def loopback_only(self) -> bool:
        return self.open_tenant is not None

    @property
    def keyless_open(self) -> bool:
        return self._keyless_open

    def keyless_caller(self, credentials: CredentialService) -> Principal | None:
        """The operator a keyless request acts as, or None once keyless access has closed."""
        if not self._keyless_open or self.open_tenant is None:
            return None
        known = self._keys_at_startup
        for key in credentials.list():
            if key.active or (known is not None and key.key_id not in known):
                self.close_keyless()
                return None
        return Principal.operator(self.open_tenant, default_owner_id=self.open_default_owner)

    def close_keyless(self) -> None:
        # A plain store of False: concurrent requests can only agree on closing (two of them
        # racing here may both log the line below, which is harmless).
        if self._keyless_open:
            self._keyless_open = False
            logger.warning(
                "Keyless local mode ended: an API key exists, so every request now needs one "
                "(until restart)"
            )


def is_loopback_name(host: str) -> bool:
    """`localhost` or a loopback address: the names of this machine. A DNS-rebinding page is
    addressed by its own domain name, which never passes."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _authority_is_loopback(authority: str) -> bool:
    try:
        parts = urlsplit(f"//{authority}")
        _ = parts.port  # a malformed port raises here
    except ValueError:
        return False
    return parts.hostname is not None and is_loopback_name(parts.hostname)


def _origin_is_loopback(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
        _ = parts.port
    except ValueError:
        return False
    return (
        parts.scheme in {"http", "https"}
        and parts.hostname is not None
        and is_loopback_name(parts.hostname)
    )


def require_loopback_request(headers: Headers) -> None:
    """Refuse a request whose Host or Origin is not this machine (DNS rebinding, cross-site)."""
    host = headers.get("host", "")
    origin = headers.get("origin")
    if not _authority_is_loopback(host) or (origin is not None and not _origin_is_loopback(origin)):
        raise PermissionDeniedError(
            "Keyless local mode accepts requests only for a loopback Host and Origin"
        )


class LoopbackOnlyMiddleware:
    """Applies the loopback Host and Origin rule to every route of a keyless server, those that
    authenticate nobody (health, docs, schema) included."""

    def __init__(self, app: ASGIApp, policy: AuthPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.policy.loopback_only:
            try:
                require_loopback_request(Headers(scope=scope))
            except PermissionDeniedError as exc:
                response = JSONResponse(public_body(exc), status_code=status_for(exc))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bearer_token(request: HTTPConnection) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationError()
    return token.strip()


def authenticate(
    request: HTTPConnection, credentials: CredentialService, policy: AuthPolicy
) -> Principal:
    """The caller of one request (REST route or /mcp): every surface goes through here."""
    if policy.loopback_only:
        require_loopback_request(request.headers)
    token = bearer_token(request)
    keyless = policy.keyless_caller(credentials) if token is None else None
    if keyless is not None:
        principal = keyless
    else:
        principal = credentials.authenticate(token)
        policy.close_keyless()
    note_caller(request.scope, principal)
    return principal
