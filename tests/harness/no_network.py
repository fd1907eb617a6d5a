"""Refuse every connection and name lookup that leaves the machine, for code that must run
offline (the docs' recipes): each attempt raises and is written to a report file, so an
attempt swallowed by a background thread (tracing, telemetry) still fails the test."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Any

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class RemoteConnectionRefusedError(ConnectionRefusedError):
    """A connection or name lookup outside loopback, made while the guard is on."""


def is_local(host: object) -> bool:
    """Whether a socket address host is this machine: loopback, or a Unix socket path."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def refuse_remote_connections(report: Path) -> None:
    """From now on in this process, a remote connect or lookup raises and is appended to
    `report` (one line each: what was attempted, never any payload)."""

    def refuse(what: str) -> RemoteConnectionRefusedError:
        with report.open("a", encoding="utf-8") as out:
            out.write(what + "\n")
        return RemoteConnectionRefusedError(f"offline test: refused {what}")

    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex
    original_getaddrinfo = socket.getaddrinfo

    def checked(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_local(address[0]):
            raise refuse(f"connect {address[0]}:{address[1]}")

    def connect(sock: socket.socket, address: Any) -> None:
        checked(sock, address)
        original_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        checked(sock, address)
        return original_connect_ex(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not is_local(host):
            raise refuse(f"lookup {host}")
        return original_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo
