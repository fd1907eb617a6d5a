"""`DeferredAPIRoute`: a FastAPI route that builds its models and handler on first use.

FastAPI builds each route's parameter analysis, body field and a serializer per response model
(every error model included) when the route is registered. An app of some sixty routes spends
more on that than a Lambda cold start's request does on its own route, so each route here
keeps only what matching a request needs (path, methods, name) and runs FastAPI's own route
construction the first time anything else of it is read: its handler when it is matched, its
models when `/openapi.json` is built. Registration errors of a route surface then, and
`tests/api` build every route through the OpenAPI document.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import compile_path, get_name

# One lock for every route: the first build of each happens once per process.
_BUILD_LOCK = threading.RLock()


class DeferredAPIRoute(APIRoute):
    """An `APIRoute` whose construction waits until an attribute it has not set is read."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        # What starlette's matching and `url_path_for` read; everything else is FastAPI's.
        self.path = path
        self.endpoint = endpoint
        name = options.get("name")
        self.name = get_name(endpoint) if name is None else name
        self.path_regex, self.path_format, self.param_convertors = compile_path(path)
        self.methods = {method.upper() for method in options.get("methods") or ["GET"]}
        self.include_in_schema = options.get("include_in_schema", True)
        self._deferred: tuple[str, Callable[..., Any], dict[str, Any]] | None = (
            path,
            endpoint,
            options,
        )

    def __getattr__(self, attribute: str) -> Any:
        # Called only for attributes not set yet: the route is built, then asked again.
        deferred = self.__dict__.get("_deferred")
        if deferred is None:
            raise AttributeError(attribute)
        with _BUILD_LOCK:
            if self.__dict__.get("_deferred") is not None:
                self._deferred = None
                path, endpoint, options = deferred
                try:
                    APIRoute.__init__(self, path, endpoint, **options)
                except BaseException:
                    self._deferred = deferred  # the same error again on the next read
                    raise
        return object.__getattribute__(self, attribute)
