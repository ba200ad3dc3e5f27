"""A real S3 endpoint for tests: moto's server on 127.0.0.1, one request at a time.

moto checks ``If-None-Match`` / ``If-Match`` and then writes, without a lock, so two racing
conditional writers can both win (about 1 round in 600). :class:`S3TestServer` wraps moto's
WSGI application in a middleware that serialises requests under one lock, which makes the
conditional checks exact (what real S3 guarantees). The same middleware can inject faults:
a 503 ``SlowDown`` *before* moto sees a request, or a 500 ``InternalError`` *after* moto
applied it (a lost response), a connection reset, a response cut off mid-body
(:data:`TRUNCATE`) or one that stalls mid-body (:data:`STALL`), deterministically
(:meth:`S3TestServer.fail_next`) or at a seeded rate (:meth:`S3TestServer.set_fault_rates`).

From a shell, ``python -m arcticlite.testing [--port N] [--bucket NAME]`` serves until
Ctrl-C and prints a URI to try arcticlite's S3 path on (``pip install 'arcticlite[test]'`` for
moto): ``arcticlite write "$URI" lib SYM file.parquet``. Nothing is kept when it stops.

Example
-------
>>> server = S3TestServer().start()          # doctest: +SKIP
>>> uri = server.new_bucket_uri()            # s3://127.0.0.1:<bucket>?port=<port>&region=us-east-1
>>> server.stop()
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import struct
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["RESET", "SHORT", "STALL", "TRUNCATE", "S3TestServer"]

#: The fault "status" that drops the connection without an answer (a TCP reset).
RESET = 0
#: An "after" fault: moto's real status and headers (its ``Content-Length`` included) and the
#: first half of its body are sent, then the connection is closed (the client gets less than
#: ``Content-Length`` says).
TRUNCATE = -1
#: An "after" fault: moto's real status, headers and the first half of its body are sent, then
#: the server waits ``stall_seconds`` (:meth:`S3TestServer.set_fault_rates`) before the rest: a
#: slow response, or with a long wait one that never finishes within the client's read timeout.
STALL = -2
#: An "after" fault: moto's real status and the first half of its body, with a
#: ``Content-Length`` (and no checksum header) that says that is all: a body cut short by
#: something on the way that rewrote the headers; only the data's own checksums can tell.
SHORT = -3

_REGION = "us-east-1"
_ERROR_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
    "<Message>{message}</Message><RequestId>arcticlite-fault</RequestId></Error>"
)
_FAULTS = {
    409: ("ConditionalRequestConflict", "A conflicting operation is in progress (injected)."),
    503: ("SlowDown", "Please reduce your request rate (injected)."),
    500: ("InternalError", "We encountered an internal error (injected)."),
}


class _FaultPlan:
    """What the middleware injects; changed at runtime from the test thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queue: list[tuple[str, int, frozenset[str] | None]] = []
        self.before = 0.0
        self.after = 0.0
        self.methods: frozenset[str] | None = None
        self.before_statuses: tuple[int, ...] = (503,)
        self.after_statuses: tuple[int, ...] = (500,)
        self.rng = random.Random(0)
        self.injected = {"before": 0, "after": 0}
        self.stall_seconds = 5.0

    def decide(self, method: str) -> tuple[str, int] | None:
        with self.lock:
            for i, (when, status, methods) in enumerate(self.queue):
                if methods is None or method in methods:
                    del self.queue[i]
                    self.injected[when] += 1
                    return when, status
            if self.methods is not None and method not in self.methods:
                return None
            if self.before and self.rng.random() < self.before:
                self.injected["before"] += 1
                return "before", self.rng.choice(self.before_statuses)
            if self.after and self.rng.random() < self.after:
                self.injected["after"] += 1
                return "after", self.rng.choice(self.after_statuses)
            return None


class _Middleware:
    """Serialise requests under one lock (optional) and inject faults."""

    def __init__(
        self, app: Any, serialise: bool, plan: _FaultPlan, honour_conditions: bool
    ) -> None:
        self.app = app
        self.s3_app: Any = None
        self.honour_conditions = honour_conditions
        self.lock: Any = threading.Lock() if serialise else None
        self.plan = plan
        self.requests = 0

    def _route(self, environ: dict[str, Any]) -> Any:
        # moto's dispatcher looks the backend up on every request (a third of its time);
        # every request here but /moto-api goes to S3, so resolve that once.
        if environ.get("PATH_INFO", "").startswith("/moto-api"):
            return self.app
        if self.s3_app is None:
            self.s3_app = self.app.get_application(environ)
        return self.s3_app

    def _call_app(self, environ: dict[str, Any]) -> tuple[tuple[Any, ...], list[bytes]]:
        captured: list[tuple[Any, ...]] = []
        body: list[bytes] = []

        def start_response(status: str, headers: list[Any], exc_info: Any = None) -> Callable:
            captured.append((status, headers))
            return body.append

        result = self._route(environ)(environ, start_response)
        try:
            body.extend(result)  # materialise inside the lock
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return captured[-1], body

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        fault = (
            None if path.startswith("/moto-api") else self.plan.decide(environ["REQUEST_METHOD"])
        )
        if not self.honour_conditions:  # imitate an old S3-compatible server
            environ.pop("HTTP_IF_NONE_MATCH", None)
            environ.pop("HTTP_IF_MATCH", None)
        if fault is not None and fault[0] == "before":
            _drain(environ)
            return _error(start_response, fault[1], environ)
        if self.lock is not None:
            with self.lock:
                self.requests += 1
                (status, headers), body = self._call_app(environ)
        else:
            self.requests += 1
            (status, headers), body = self._call_app(environ)
        if fault is not None and fault[1] == SHORT:
            data = b"".join(body)
            data = data[: len(data) // 2]
            drop = {"content-length", "content-md5", "etag"}
            start_response(status, [(k, v) for k, v in headers if k.lower() not in drop and
                                    not k.lower().startswith("x-amz-checksum")] + [("Content-Length", str(len(data)))])
            return [data]
        if fault is not None and fault[1] in (TRUNCATE, STALL):  # applied; the body is cut or slow
            start_response(status, headers)
            return _partial(b"".join(body), environ, self.plan.stall_seconds if fault[1] == STALL else None)
        if fault is not None:  # "after": moto applied the request; the response is lost
            return _error(start_response, fault[1], environ)
        start_response(status, headers)
        return body


def _drain(environ: dict[str, Any]) -> None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length:
        environ["wsgi.input"].read(length)


def _partial(data: bytes, environ: dict[str, Any], stall: float | None) -> Iterable[bytes]:
    """The first half of ``data``; then either the connection closes (``stall=None``) or,
    ``stall`` seconds later, the rest."""
    yield data[: len(data) // 2]
    if stall is None:
        sock = environ.get("werkzeug.socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # an orderly close mid-body: EOF before Content-Length
        return
    time.sleep(stall)
    yield data[len(data) // 2:]


def _error(start_response: Callable, status: int, environ: dict[str, Any]) -> list[bytes]:
    if status == RESET:  # the connection drops without an answer
        sock = environ.get("werkzeug.socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()  # linger 0: the client sees a connection reset
        start_response("500 Internal Server Error", [("Content-Length", "0")])
        return []
    code, message = _FAULTS.get(status, ("InternalError", "injected"))
    body = _ERROR_XML.format(code=code, message=message).encode()
    reason = {409: "Conflict", 503: "Service Unavailable"}.get(status, "Internal Server Error")
    start_response(
        f"{status} {reason}",
        [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
    )
    return [body]


class S3TestServer:
    """moto's S3 server on ``127.0.0.1`` (a free port), in a daemon thread.

    Parameters
    ----------
    serialise : bool, default True
        Handle one request at a time (exact conditional writes). ``False`` is raw moto.
    host : str, default "127.0.0.1"
        Never bind to all interfaces in tests.
    honour_conditions : bool, default True
        ``False`` strips ``If-None-Match`` / ``If-Match`` before moto sees them, like an old
        S3-compatible server that ignores conditional writes.

    Attributes
    ----------
    endpoint_url : str
        ``http://127.0.0.1:<port>`` once started.
    port : int
        The port it listens on.
    """

    def __init__(
        self,
        *,
        serialise: bool = True,
        host: str = "127.0.0.1",
        honour_conditions: bool = True,
        port: int = 0,
    ) -> None:
        self.serialise = serialise
        self.honour_conditions = honour_conditions
        self.host = host
        self.port = port  # 0: a free port, chosen at start()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._plan = _FaultPlan()
        self._middleware: _Middleware | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __repr__(self) -> str:
        return f"S3TestServer({self.endpoint_url!r}, serialise={self.serialise})"

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> S3TestServer:
        """Start serving; returns ``self``."""
        from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = DomainDispatcherApplication(create_backend_app)
        self._middleware = _Middleware(app, self.serialise, self._plan, self.honour_conditions)
        self._server = make_server(
            self.host, self.port, self._middleware, threaded=True, request_handler=MotoRequestHandler
        )
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="arcticlite-moto", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> S3TestServer:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- buckets ---------------------------------------------------------------------------------
    def client(self) -> Any:
        """A boto3 S3 client for this server (dummy credentials)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=_REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def make_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh unique name by default) and return its name."""
        name = name or f"test-{uuid.uuid4().hex[:20]}"
        self.client().create_bucket(Bucket=name)
        return name

    def uri(self, bucket: str, **params: str) -> str:
        """ArcticDB's form of this server's URI: ``s3://127.0.0.1:<bucket>?port=…&region=…``."""
        query = {"port": str(self.port), "region": _REGION, **params}
        return f"s3://{self.host}:{bucket}?" + "&".join(f"{k}={v}" for k, v in query.items())

    def new_bucket_uri(self, **params: str) -> str:
        """Create a fresh bucket and return its ``s3://`` URI."""
        return self.uri(self.make_bucket(), **params)

    def reset(self) -> None:
        """Drop every bucket and object (moto's ``/moto-api/reset``) and clear faults."""
        self.clear_faults()
        req = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()

    # -- faults ----------------------------------------------------------------------------------
    def fail_next(
        self,
        count: int = 1,
        *,
        when: str = "before",
        status: int | None = None,
        methods: Iterable[str] | None = None,
    ) -> None:
        """Make the next ``count`` requests (of ``methods``, e.g. ``{"PUT"}``) fail.

        ``when="before"``: moto never sees the request (503 SlowDown by default).
        ``when="after"``: moto applies it, then the client gets 500 InternalError (or
        ``status``: :data:`RESET`, :data:`TRUNCATE`, :data:`STALL`, :data:`SHORT`).
        """
        if when not in ("before", "after"):
            raise ValueError("when must be 'before' or 'after'")
        if status is None:
            status = 503 if when == "before" else 500
        ms = frozenset(m.upper() for m in methods) if methods is not None else None
        with self._plan.lock:
            self._plan.queue.extend([(when, status, ms)] * count)

    def set_fault_rates(
        self,
        *,
        before: float = 0.0,
        after: float = 0.0,
        seed: int = 0,
        methods: Iterable[str] | None = None,
        before_statuses: Iterable[int] = (503,),
        after_statuses: Iterable[int] = (500,),
        stall_seconds: float = 5.0,
    ) -> None:
        """Fail requests at seeded rates: ``before`` (not applied), ``after`` (applied, the
        answer lost). Each fault answers one of ``before_statuses`` / ``after_statuses``
        (503 ``SlowDown``, 500 ``InternalError``, 409 ``ConditionalRequestConflict``, or
        :data:`RESET`: the connection is reset), chosen at the seeded rate; an ``after``
        fault can also be :data:`TRUNCATE` (the body cut off, the connection closed) or
        :data:`STALL` (the body paused ``stall_seconds`` halfway) or :data:`SHORT` (half the
        body, with headers that say it is whole)."""
        with self._plan.lock:
            self._plan.stall_seconds = stall_seconds
            self._plan.before, self._plan.after = before, after
            self._plan.before_statuses = tuple(before_statuses)
            self._plan.after_statuses = tuple(after_statuses)
            self._plan.rng = random.Random(seed)
            self._plan.methods = (
                frozenset(m.upper() for m in methods) if methods is not None else None
            )

    def clear_faults(self) -> None:
        """Stop injecting faults."""
        with self._plan.lock:
            self._plan.queue.clear()
            self._plan.before = self._plan.after = 0.0
            self._plan.methods = None
            self._plan.before_statuses, self._plan.after_statuses = (503,), (500,)

    @property
    def injected(self) -> dict[str, int]:
        """How many faults were injected so far, by kind (``before`` / ``after``)."""
        with self._plan.lock:
            return dict(self._plan.injected)


def main(argv: list[str] | None = None) -> int:
    """``python -m arcticlite.testing``: serve an empty bucket on 127.0.0.1 until Ctrl-C
    and print its URI (dummy credentials included)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m arcticlite.testing", description=main.__doc__)
    ap.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
    ap.add_argument("--bucket", default="arcticlite", help="the bucket to create (default: arcticlite)")
    args = ap.parse_args(argv)
    try:
        server = S3TestServer(port=args.port).start()
    except ImportError:
        print("the test S3 server needs moto: pip install 'moto[server]' (or 'arcticlite[test]')")
        return 1
    server.make_bucket(args.bucket)
    print(f"S3 (moto) on {server.endpoint_url}, bucket {args.bucket!r}; nothing is kept when it stops. Try:")
    print(f"  export URI='{server.uri(args.bucket, access='testing', secret='testing')}'")
    print('  arcticlite write "$URI" prices AAPL aapl.parquet && arcticlite versions "$URI" prices AAPL')
    print("Ctrl-C to stop.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
