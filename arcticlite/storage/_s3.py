"""S3 backend (``s3://`` / ``s3s://``): every key is one object under one prefix of a bucket.

Conditional writes use S3's preconditions: ``write_if_absent`` is ``PutObject`` with
``If-None-Match: *`` and ``compare_and_swap`` is ``PutObject`` with ``If-Match: "<md5>"`` (the
ETag of a single-part PUT is the MD5 of its body, and every value here is a single-part PUT).
A failed precondition is HTTP 412: the write lost.

The ambiguity rule: a conditional PUT is not idempotent. If an attempt fails in transit or with a
5xx, it may have landed; should the retry then get 412, nobody knows whether this call won. The
store raises :class:`~arcticlite.exceptions.AmbiguousWriteError` and the caller reads the key
back (the engine compares its unique write token).

botocore's retries are disabled (they share one budget per client); each call retries on its
own, with exponential backoff and full jitter, on throttling, 5xx and connection errors, and
raises :class:`~arcticlite.exceptions.StorageUnavailableError` when its budget is spent.
Credentials come only from boto3's default chain or an injected client.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from arcticlite import config
from arcticlite.exceptions import (
    AmbiguousWriteError,
    BucketNotFoundError,
    ConditionalWritesUnsupportedError,
    KeyNotFoundException,
    MissingDependencyError,
    PermissionException,
    StorageException,
    StorageUnavailableError,
    UserInputException,
)
from arcticlite.storage._base import Buffer, KVStore
from arcticlite.storage._retry import RetryPolicy

if TYPE_CHECKING:
    from arcticlite.storage._uri import S3Uri

__all__ = ["S3Store"]

T = TypeVar("T")

_DELETE_CHUNK = 1000
_RETRY_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestThrottled",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "InternalError",
        "ServiceUnavailable",
        "ConditionalRequestConflict",
        "OperationAborted",
    }
)
_MAX_KEY_BYTES = 1024


def _drop_last_modified(response_dict: dict[str, Any] | None = None, **_: Any) -> None:
    """botocore hook: remove a GET response's ``Last-Modified`` header before it is parsed
    (arcticlite reads the body only; botocore parses that date with dateutil, slowly)."""
    headers = response_dict.get("headers") if response_dict else None
    if headers is not None:
        headers.pop("last-modified", None)
        headers.pop("Last-Modified", None)


#: Prefetched values kept for a later read (see ``S3Store.prefetch``).
_AHEAD_MAX = 32
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_DENIED_CODES = frozenset({"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"})


def _setting(name: str, default: int) -> int:
    """A positive integer setting of :mod:`arcticlite.config`, else ``default``."""
    value = config.get_config_int(name)
    return value if value is not None and value > 0 else default


def _boto() -> tuple[Any, Any, Any]:
    try:
        import boto3
        import botocore.config
        import botocore.exceptions
    except ImportError as exc:
        raise MissingDependencyError(
            "the S3 backend needs boto3: pip install 'arcticlite[s3]'"
        ) from exc
    return boto3, botocore.config, botocore.exceptions


class S3Store(KVStore):
    """A key-value store in an S3 bucket (AWS or any S3-compatible endpoint).

    Parameters
    ----------
    bucket : str
        Bucket name; it must exist.
    prefix : str, default ""
        Every key is stored as ``<prefix>/<key>`` (no slash added when ``prefix`` is empty).
    endpoint_url : str, optional
        ``http(s)://host:port`` of an S3-compatible endpoint; ``None`` for AWS.
    region : str, optional
        Region; ``None`` uses boto3's default chain (``AWS_DEFAULT_REGION``, config files).
    client : botocore client, optional
        An S3 client to use as is (its own retry settings are kept). Credentials otherwise
        come from boto3's default chain, never from arguments.
    addressing_style : {"path", "virtual", "auto"}, default "path"
    profile : str, optional
        Named profile of boto3's configuration files.
    verify : str or bool, optional
        CA bundle path, or ``False`` to skip certificate verification (default: verify, unless
        the ``S3Storage.VerifySSL`` setting of :mod:`arcticlite.config` is 0).
    retry : RetryPolicy, optional
        Per-call retry budget and backoff (default: 8 attempts, 50 ms doubling to 2 s).
    max_workers : int, optional
        Threads of the pool that serves :meth:`read_many` / :meth:`write_many` (default: the
        ``VersionStore.NumIOThreads`` setting, else 16).
    connect_timeout, read_timeout : float, optional
        Seconds to wait for a connection, and for each read from the socket: a response that
        stalls longer fails that attempt, which is retried (so a read gives up after at most
        about ``retry.max_attempts`` × ``read_timeout``, never hangs). Default: the URI's
        ``connect_timeout=`` / ``read_timeout=``, else the ``S3Storage.ConnectTimeoutMs`` /
        ``RequestTimeoutMs`` settings, else 10 and 60. Not applied to an injected ``client``.
    credentials : (str, str), optional
        Access key and secret (from a URI's ``access=`` / ``secret=``); default: boto3's chain.

    Notes
    -----
    Thread-safe: one boto3 client and one thread pool per store (re-created in a forked
    child). :meth:`commit` is not atomic on S3: create one key (the commit point) per commit.
    """

    atomic_commit = False

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        client: Any = None,
        *,
        addressing_style: str = "path",
        profile: str | None = None,
        verify: str | bool | None = None,
        retry: RetryPolicy | None = None,
        max_workers: int | None = None,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._root = f"{self.prefix}/" if self.prefix else ""
        self.endpoint_url = endpoint_url
        self.region = region
        self.retry = retry or RetryPolicy()
        self.max_workers = max_workers or _setting("VersionStore.NumIOThreads", 16)
        self._addressing_style = addressing_style
        self._profile = profile
        if verify is None and config.get_config_int("S3Storage.VerifySSL") == 0:
            verify = False
        self._verify = verify
        self._timeouts = (
            connect_timeout if connect_timeout is not None else _setting("S3Storage.ConnectTimeoutMs", 10_000) / 1000,
            read_timeout if read_timeout is not None else _setting("S3Storage.RequestTimeoutMs", 60_000) / 1000,
        )
        self._credentials = credentials  # never in repr or messages
        self._injected = client
        self._client: Any = client
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        #: GETs started by :meth:`prefetch`, not yet claimed by a read (insertion order)
        self._ahead: dict[str, concurrent.futures.Future[bytes]] = {}
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._closed = False
        _boto()  # fail early, with the extra to install, if boto3 is missing

    @classmethod
    def from_uri(cls, uri: S3Uri, **kwargs: Any) -> S3Store:
        """Open the store an :class:`~arcticlite.storage.S3Uri` names."""
        return cls(
            uri.bucket,
            prefix=uri.path_prefix,
            endpoint_url=uri.endpoint_url,
            region=uri.region,
            addressing_style="virtual" if uri.use_virtual_addressing else "path",
            profile=uri.aws_profile,
            verify=uri.ca_cert_path,
            credentials=(uri.access, uri.secret) if uri.access and uri.secret else None,
            **{"connect_timeout": uri.connect_timeout, "read_timeout": uri.read_timeout, **kwargs},
        )

    def __repr__(self) -> str:
        return (
            f"S3Store(bucket={self.bucket!r}, prefix={self.prefix!r}, "
            f"endpoint_url={self.endpoint_url!r})"
        )

    # -- plumbing ------------------------------------------------------------------------------
    def _check_pid(self) -> None:
        if self._pid != os.getpid():  # forked: boto3 clients and pools are not fork-safe
            with self._lock:
                if self._pid != os.getpid():
                    self._client = self._injected if self._injected is not None else None
                    self._pool = None
                    self._ahead = {}
                    self._lock = threading.Lock()
                    self._pid = os.getpid()

    def _s3(self) -> Any:
        self._check_pid()
        if self._closed:
            raise StorageException(f"{self!r} is closed")
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                boto3, botocore_config, _ = _boto()
                options: dict[str, Any] = dict(
                    retries={"mode": "standard", "total_max_attempts": 1},
                    max_pool_connections=_setting("S3Storage.MaxConnections", max(self.max_workers * 2, 10)),
                    connect_timeout=self._timeouts[0],
                    read_timeout=self._timeouts[1],
                    s3={"addressing_style": self._addressing_style},
                )
                # CRC32 of every body sent and received only when S3 requires one (DeleteObjects)
                # or the S3Storage.TransportChecksums setting asks: every value arcticlite stores
                # carries checksums of its own, checked on every read (docs/storage.md)
                mode = "when_supported" if config.get_config_int("S3Storage.TransportChecksums") == 1 else "when_required"
                try:
                    cfg = botocore_config.Config(request_checksum_calculation=mode, response_checksum_validation=mode,
                                                 **options)
                except TypeError:  # a botocore without flexible checksums (before 1.36)
                    cfg = botocore_config.Config(**options)
                session = boto3.session.Session(profile_name=self._profile)
                kwargs: dict[str, Any] = {"config": cfg}
                if self.endpoint_url:
                    kwargs["endpoint_url"] = self.endpoint_url
                if self.region:
                    kwargs["region_name"] = self.region
                if self._verify is not None:
                    kwargs["verify"] = self._verify
                if self._credentials is not None:
                    kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = self._credentials
                client = session.client("s3", **kwargs)
                # a GET's Last-Modified (parsed by dateutil: ~0.2 ms of CPU a request) is not used
                client.meta.events.register("before-parse.s3.GetObject", _drop_last_modified)
                self._client = client
            return self._client

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        self._check_pid()
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(
                        max_workers=self.max_workers, thread_name_prefix="arcticlite-s3"
                    )
                pool = self._pool
        return pool

    def _path(self, key: str) -> str:
        path = self._root + key
        if len(path.encode()) > _MAX_KEY_BYTES:
            raise UserInputException(
                f"key {path[:80]!r}... is {len(path.encode())} bytes; S3 allows {_MAX_KEY_BYTES} "
                f"(the path_prefix {self.prefix!r} takes {len(self._root)}): use a shorter prefix or names")
        return path

    @staticmethod
    def _error_code(exc: Any) -> tuple[str, int]:
        resp = getattr(exc, "response", None) or {}
        code = str(resp.get("Error", {}).get("Code", ""))
        status = int(resp.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        return code, status

    def _call(self, what: str, fn: Callable[[Any], T]) -> T:
        """Run ``fn(client)`` with this store's bounded retries (non-conditional requests)."""
        return self._attempts(what, fn, conditional_key=None)

    def _attempts(self, what: str, fn: Callable[[Any], T], conditional_key: str | None) -> T:
        """Run ``fn(client)``, retrying throttling, 5xx and transport errors with backoff.

        ``ClientError`` 412 and 404 are re-raised for the caller to interpret, except that a
        412 on a conditional request after an attempt that may have landed becomes
        :class:`AmbiguousWriteError`.
        """
        _, _, bexc = _boto()
        import urllib3.exceptions as urllib3_errors  # botocore's HTTP layer

        client = self._s3()
        maybe_landed = False
        last: BaseException | None = None
        for attempt in range(self.retry.max_attempts):
            try:
                return fn(client)
            except bexc.ClientError as exc:
                code, status = self._error_code(exc)
                if status == 412 or code == "PreconditionFailed":
                    if conditional_key is not None and maybe_landed:
                        raise AmbiguousWriteError(
                            f"{what}: refused (412) after an earlier attempt failed in transit; "
                            "it may have landed: read the key back to decide",
                            key=conditional_key,
                        ) from exc
                    raise
                if code == "NoSuchBucket":
                    raise BucketNotFoundError(
                        f"{what}: bucket {self.bucket!r} does not exist (S3 said NoSuchBucket); "
                        "check the URI or create the bucket") from exc
                if code in _MISSING_CODES or status in (404, 416) or code == "InvalidRange":
                    raise  # the caller interprets these
                if code in _DENIED_CODES or status == 403:
                    raise PermissionException(
                        f"{what}: access denied by S3 ({code}) in bucket {self.bucket!r}: the credentials in use "
                        "lack this permission (credentials that may only read: open with read_only=True)") from exc
                if code in _RETRY_CODES or status >= 500 or status == 429 or status == 409:
                    # 409 ConditionalRequestConflict: refused, not applied
                    if status >= 500:
                        maybe_landed = True
                    last = exc
                else:
                    raise StorageException(f"{what}: S3 error {code or status}: {exc}") from exc
            except (
                bexc.HTTPClientError,
                bexc.IncompleteReadError,
                bexc.ResponseStreamingError,
                urllib3_errors.HTTPError,  # a body botocore reads itself can raise urllib3's own
                                           # (ReadTimeoutError, ProtocolError) untranslated
            ) as exc:
                maybe_landed = True  # sent, then the connection failed: it may have applied
                last = exc
            except bexc.ConnectionError as exc:
                last = exc  # never reached the server
            except bexc.NoCredentialsError as exc:
                raise PermissionException(
                    f"{what}: no AWS credentials found in boto3's default chain "
                    "(environment, ~/.aws, instance role)"
                ) from exc
            except bexc.BotoCoreError as exc:
                raise StorageException(f"{what}: {type(exc).__name__}: {exc}") from exc
            if attempt + 1 < self.retry.max_attempts:
                self.retry.sleep(attempt)
        extra = ""
        if maybe_landed and not what.startswith(("read", "list_keys", "exists")):
            extra = " (a conditional write may have landed: read it back)"
        raise StorageUnavailableError(
            f"{what}: S3 did not answer after {self.retry.max_attempts} attempts{extra}: {last}"
        ) from last

    def _missing(self, exc: BaseException, key: str) -> KeyNotFoundException:
        return KeyNotFoundException(f"key {key!r} not found in {self!r}")

    def _is_missing(self, exc: BaseException) -> bool:
        code, status = self._error_code(exc)
        return code in _MISSING_CODES or status == 404

    # -- reads ---------------------------------------------------------------------------------
    def prefetch(self, keys: Sequence[str]) -> None:
        """Start GETs of ``keys`` (immutable values) in the pool; the next :meth:`read` of one
        takes its result (a failed fetch is simply read again). At most :data:`_AHEAD_MAX`
        fetches are kept: the oldest unclaimed ones are forgotten."""
        pool = self._executor()
        with self._lock:
            for key in keys:
                if key not in self._ahead:
                    self._ahead[key] = pool.submit(self._get, key)
            while len(self._ahead) > _AHEAD_MAX:
                self._ahead.pop(next(iter(self._ahead)))

    def read(self, key: str) -> bytes:
        """Return the value of ``key`` (one GET, or the one :meth:`prefetch` started)."""
        if self._ahead:
            with self._lock:
                ahead = self._ahead.pop(key, None)
            if ahead is not None:
                try:
                    return ahead.result()
                except Exception:  # read it again below: that read reports what is wrong
                    pass
        return self._get(key)

    def _get(self, key: str) -> bytes:
        _, _, bexc = _boto()
        path = self._path(key)

        def get(c: Any) -> bytes:
            resp = c.get_object(Bucket=self.bucket, Key=path)
            body = resp["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()

        try:
            return self._call(f"read {key!r}", get)
        except bexc.ClientError as exc:
            if self._is_missing(exc):
                raise self._missing(exc, key) from exc
            raise StorageException(f"read {key!r}: {exc}") from exc

    def read_range(self, key: str, offset: int, length: int) -> bytes:
        """Return ``length`` bytes from ``offset`` with one ranged GET (fewer at the end)."""
        _, _, bexc = _boto()
        if offset < 0 or length < 0:
            raise ValueError("offset and length must be >= 0")
        if length == 0:
            if not self.exists(key):
                raise KeyNotFoundException(f"key {key!r} not found in {self!r}")
            return b""
        path = self._path(key)

        def get(c: Any) -> bytes:
            resp = c.get_object(
                Bucket=self.bucket, Key=path, Range=f"bytes={offset}-{offset + length - 1}"
            )
            body = resp["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()

        try:
            return self._call(f"read_range {key!r}", get)
        except bexc.ClientError as exc:
            code, status = self._error_code(exc)
            if code == "InvalidRange" or status == 416:
                return b""  # offset at or past the end of an existing object
            if self._is_missing(exc):
                raise self._missing(exc, key) from exc
            raise StorageException(f"read_range {key!r}: {exc}") from exc

    def read_many(self, keys: Sequence[str]) -> list[Buffer]:
        """GET ``keys`` in parallel (thread pool); raises for the first missing key in order."""
        if len(keys) <= 1:
            return [self.read(k) for k in keys]
        futures = [self._executor().submit(self.read, k) for k in keys]
        return [f.result() for f in futures]

    def exists(self, key: str) -> bool:
        _, _, bexc = _boto()
        path = self._path(key)
        try:
            self._call(f"exists {key!r}", lambda c: c.head_object(Bucket=self.bucket, Key=path))
        except bexc.ClientError as exc:
            if self._is_missing(exc):
                return False
            raise StorageException(f"exists {key!r}: {exc}") from exc
        return True

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        """Yield keys starting with ``prefix``, lazily, one ListObjectsV2 page at a time."""
        for key, _ in self.list_sizes(prefix):
            yield key

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """``(key, bytes)`` of the keys starting with ``prefix``, from the listing itself."""
        full = self._path(prefix)
        cut = len(self._root)
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": full}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._list_page(prefix, kwargs)
            for obj in page.get("Contents", ()):
                yield obj["Key"][cut:], int(obj.get("Size", 0))
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")
            if not token:
                return

    def _list_page(self, prefix: str, kwargs: dict[str, Any]) -> Any:
        _, _, bexc = _boto()
        try:
            return self._call(f"list_keys {prefix!r}", lambda c: c.list_objects_v2(**kwargs))
        except bexc.ClientError as exc:
            raise StorageException(f"list_keys {prefix!r}: {exc}") from exc

    # -- writes --------------------------------------------------------------------------------
    def write(self, key: str, data: Buffer) -> None:
        _, _, bexc = _boto()
        path, body = self._path(key), bytes(data)
        try:
            self._call(
                f"write {key!r}", lambda c: c.put_object(Bucket=self.bucket, Key=path, Body=body)
            )
        except bexc.ClientError as exc:
            raise StorageException(f"write {key!r}: {exc}") from exc

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        """PUT ``items`` in parallel (thread pool); not atomic."""
        if len(items) <= 1:
            for k, v in items.items():
                self.write(k, v)
            return
        futures = [self._executor().submit(self.write, k, v) for k, v in items.items()]
        for f in futures:
            f.result()

    def _conditional_put(self, key: str, body: bytes, what: str, **cond: str) -> bool:
        _, _, bexc = _boto()
        path = self._path(key)
        try:
            self._attempts(
                what,
                lambda c: c.put_object(Bucket=self.bucket, Key=path, Body=body, **cond),
                conditional_key=key,
            )
        except bexc.ClientError as exc:
            code, status = self._error_code(exc)
            if status == 412 or code == "PreconditionFailed":
                return False
            if self._is_missing(exc):  # If-Match on an absent key
                return False
            raise StorageException(f"{what}: {exc}") from exc
        return True

    def write_if_absent(self, key: str, data: Buffer) -> bool:
        """Create ``key`` with ``If-None-Match: *``; ``False`` if it exists.

        Raises :class:`AmbiguousWriteError` when a retry was refused after an attempt that may
        have landed.
        """
        return self._conditional_put(key, bytes(data), f"write_if_absent {key!r}", IfNoneMatch="*")

    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        """Replace ``key`` if its body equals ``expected`` (``If-Match`` on its MD5 ETag).

        An ETag is the MD5 of the body, so an identical body written in between still
        matches (ABA): put a unique token in every mutable value.
        """
        what = f"compare_and_swap {key!r}"
        if expected is None:
            return self._conditional_put(key, bytes(new), what, IfNoneMatch="*")
        etag = '"' + hashlib.md5(bytes(expected), usedforsecurity=False).hexdigest() + '"'
        return self._conditional_put(key, bytes(new), what, IfMatch=etag)

    def delete(self, keys: Iterable[str]) -> None:
        """DeleteObjects in chunks of 1000; absent keys are ignored."""
        _, _, bexc = _boto()
        paths = list(dict.fromkeys(self._path(k) for k in keys))  # each key once
        for i in range(0, len(paths), _DELETE_CHUNK):
            objects = [{"Key": p} for p in paths[i : i + _DELETE_CHUNK]]
            request: dict[str, Any] = {"Objects": objects, "Quiet": True}

            def send(c: Any, request: dict[str, Any] = request) -> Any:
                return c.delete_objects(Bucket=self.bucket, Delete=request)

            try:
                resp = self._call(f"delete of {len(objects)} keys", send)
            except bexc.ClientError as exc:
                raise StorageException(f"delete: {exc}") from exc
            errors = [e for e in resp.get("Errors", ()) if e.get("Code") not in _MISSING_CODES]
            if errors:
                first = errors[0]
                error = PermissionException if first.get("Code") in _DENIED_CODES else StorageException
                raise error(
                    f"delete failed for {len(errors)} keys, e.g. {first.get('Key')!r}: "
                    f"{first.get('Code')} {first.get('Message')}"
                )

    # -- endpoint checks -----------------------------------------------------------------------
    def probe_conditional_writes(self) -> bool:
        """Check that the endpoint enforces ``If-None-Match`` and ``If-Match``.

        Writes a probe key under ``_arcticlite_probe/``, tries to create it again and to
        replace it with a wrong ETag; both must be refused (412). Deletes the probe key.
        Old S3-compatible servers silently ignore the headers: the engine then refuses
        multi-writer commits with :class:`ConditionalWritesUnsupportedError`.
        """
        key = f"_arcticlite_probe/{uuid.uuid4().hex}"
        written = True  # unless the first write is refused (e.g. credentials that may only read)

        def landed(fn: Callable[[], bool], body: bytes) -> bool:
            # a lost answer (5xx, then 412 on the retry) is no verdict: the probe's bodies
            # are unique, so the stored body says which write landed
            try:
                return fn()
            except AmbiguousWriteError:
                return bytes(self.read(key)) == body

        try:
            try:
                created = landed(lambda: self.write_if_absent(key, b"probe-1"), b"probe-1")
            except PermissionException:
                written = False
                raise
            if not created:
                return False
            if landed(lambda: self.write_if_absent(key, b"probe-2"), b"probe-2"):
                return False
            if landed(lambda: self.compare_and_swap(key, b"not-the-body", b"probe-3"), b"probe-3"):
                return False
            return self.read(key) == b"probe-1"
        finally:
            if written:  # a probe key left behind is harmless; its deletion never hides the real error
                with contextlib.suppress(StorageException):
                    self.delete([key])

    def require_conditional_writes(self) -> None:
        """Raise :class:`ConditionalWritesUnsupportedError` if :meth:`probe_conditional_writes`
        fails."""
        if not self.probe_conditional_writes():
            raise ConditionalWritesUnsupportedError(
                f"the endpoint of {self!r} ignores If-None-Match / If-Match: concurrent "
                "writers could overwrite each other's commits. Use an endpoint with "
                "conditional writes (AWS S3, MinIO), or a single writer."
            )

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Shut the thread pool down; the store must not be used afterwards."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._ahead = {}
            self._closed = True
        if pool is not None and self._pid == os.getpid():
            pool.shutdown(wait=True)
