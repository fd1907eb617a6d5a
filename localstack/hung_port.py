"""A loopback port that accepts connections and never answers: a hung dependency.

A stopped dependency refuses connections at once; a hung one (a stalled node, a full
accept queue behind a load balancer) lets every request wait for its timeout. Tests and
benchmarks point an endpoint here to see what a request's deadline does about it.
"""

from __future__ import annotations

import socket
import threading


class HungPort:
    """Accepts every connection on 127.0.0.1 and holds it open without reading or writing."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._held: list[socket.socket] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="hung-port", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(connection)

    def close(self) -> None:
        self._stopped.set()
        self._thread.join()
        for connection in self._held:
            connection.close()
        self._listener.close()

    def __enter__(self) -> HungPort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
