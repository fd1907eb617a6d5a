"""An HTTP proxy in front of the local OpenSearch node that authorizes each request as
OpenSearch Service would authorize it by the caller's identity policy: `es:ESHttp<Verb>` on
`arn:aws:es:<region>:<account>:domain/<domain>/<path>`.

The caller is named by the access key in the request's SigV4 `Authorization` header (the
functions sign with `PRME_OPENSEARCH_AUTH=es`); the signature itself is not verified (moto
verifies the same keys on every AWS call). An unsigned or unknown caller is refused.
"""

from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.harness.iam_policy import allows

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")
# Hop-by-hop or recomputed headers are not forwarded.
_DROPPED = {"host", "connection", "content-length", "transfer-encoding", "keep-alive"}


class AuthorizingProxy:
    """Serves on a free loopback port; `grant(access_key, statements)` registers a caller."""

    def __init__(self, upstream: str, domain_arn: str) -> None:
        self.upstream = urlsplit(upstream)
        self.domain_arn = domain_arn
        self._callers: dict[str, list[dict[str, Any]]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def grant(self, access_key: str, statements: list[dict[str, Any]]) -> None:
        self._callers[access_key] = statements

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def authorized(self, authorization: str | None, method: str, path: str) -> bool:
        found = _CREDENTIAL.search(authorization or "")
        statements = self._callers.get(found.group(1)) if found else None
        if statements is None:
            return False
        verb = method.capitalize()  # GET -> ESHttpGet
        resource = f"{self.domain_arn}/{urlsplit(path).path.lstrip('/')}"
        return allows(statements, f"es:ESHttp{verb}", resource)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if not proxy.authorized(self.headers.get("Authorization"), self.command, self.path):
                    denied = b'{"message":"not authorized by the caller\'s identity policy"}'
                    self.send_response(403)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(denied)))
                    self.end_headers()
                    self.wfile.write(denied)
                    return
                upstream = http.client.HTTPConnection(
                    proxy.upstream.hostname or "127.0.0.1", proxy.upstream.port, timeout=30
                )
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _DROPPED}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    payload = response.read()
                finally:
                    upstream.close()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in _DROPPED:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                """Requests carry memory content: nothing is logged."""

        return Handler
