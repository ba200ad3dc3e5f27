"""Connection strings: parse a URI into a typed, frozen value, and open the store it names.

Accepted forms (ArcticDB's, so existing connection strings keep working)::

    mem://[anything]                       a new, empty in-memory store per open
    lmdb://<path>[?map_size=2GB]           LMDB environment in directory <path>
    s3://<endpoint>:<bucket>[?options]     S3 over HTTP (ArcticDB's convention)
    s3s://<endpoint>:<bucket>[?options]    S3 over HTTPS

S3 options: ``port``, ``path_prefix``, ``region``, ``use_virtual_addressing``, ``ssl``,
``aws_auth``, ``aws_profile``, ``CA_cert_path``, ``connect_timeout`` / ``read_timeout`` (seconds;
arcticlite's own), and ArcticDB's ``access`` / ``secret``
(masked in ``repr``, messages and :func:`redact`); without them credentials come from boto3's
default chain (environment, config files, instance roles) or a client injected into
:class:`S3Store`. Values are taken as written, as ArcticDB parses them (pairs split on ``&``
or ``;``, no %- or +-decoding).
"""

from __future__ import annotations

import dataclasses
import os
import re

from arcticlite.exceptions import LmdbOptionsError, StorageUriError

__all__ = ["LmdbUri", "MemoryUri", "S3Uri", "StoreUri", "parse_uri", "redact"]

_S3_RE = re.compile(
    r"s3(?P<secure>s)?://(?P<endpoint>[^:]*):(?P<bucket>[-_a-zA-Z0-9.]+)(?P<query>\?.*)?"
)
_SECRET_RE = re.compile(r"\b(access|secret)=[^&]*")
_SIZE_RE = re.compile(r"\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]I?B|[KMGT]|B)?\s*", re.I)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_S3_KEYS = frozenset(
    {
        "port",
        "path_prefix",
        "region",
        "use_virtual_addressing",
        "ssl",
        "aws_auth",
        "aws_profile",
        "CA_cert_path",
        "connect_timeout",
        "read_timeout",
        "access",
        "secret",
    }
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MemoryUri:
    """``mem://…``: every open gives a new, empty :class:`MemoryStore`."""

    uri: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LmdbUri:
    """``lmdb://<path>[?map_size=…]``.

    Attributes
    ----------
    uri : str
        The URI as given.
    path : str
        Absolute path of the environment directory (the root of every library in it).
    map_size : int or None
        Initial map size in bytes; ``None`` for the default. The map grows by itself.
    """

    uri: str
    path: str
    map_size: int | None = None

    def __post_init__(self) -> None:
        if not os.path.isabs(self.path):
            raise LmdbOptionsError(f"LMDB path {self.path!r} must be absolute")
        if self.map_size is not None and self.map_size <= 0:
            raise LmdbOptionsError(f"map_size must be positive, got {self.map_size}")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class S3Uri:
    """``s3://<endpoint>:<bucket>[?…]`` / ``s3s://…`` (ArcticDB's form).

    Credentials given in the URI (``access=…&secret=…``, as ArcticDB takes them) are kept out
    of ``repr``, of :attr:`uri` and of every message; without them boto3's default chain is used.

    Attributes
    ----------
    uri : str
        The URI as given, ``access`` / ``secret`` values masked.
    endpoint : str
        Host name (``""`` means AWS's default endpoint for the region).
    bucket : str
        Bucket name.
    port : int or None
        Port of the endpoint.
    path_prefix : str
        Every key is stored under this prefix inside the bucket.
    region : str or None
        Region; ``None`` uses boto3's default chain.
    use_virtual_addressing : bool
        Virtual-hosted-style addressing (``bucket.host``) instead of path style.
    https : bool
        ``s3s://`` or ``ssl=true``.
    aws_profile : str or None
        Named profile of boto3's configuration files.
    ca_cert_path : str or None
        CA bundle to verify the endpoint's certificate with.
    connect_timeout, read_timeout : float or None
        Seconds to wait for a connection, and for each read from the socket (a response that
        stalls longer is retried, within the store's bounded retries); ``None``: the
        ``S3Storage.ConnectTimeoutMs`` / ``RequestTimeoutMs`` settings, else 10 and 60.
    """

    uri: str
    endpoint: str
    bucket: str
    port: int | None = None
    path_prefix: str = ""
    region: str | None = None
    use_virtual_addressing: bool = False
    https: bool = False
    aws_profile: str | None = None
    ca_cert_path: str | None = None
    connect_timeout: float | None = None
    read_timeout: float | None = None
    access: str | None = dataclasses.field(default=None, repr=False)
    secret: str | None = dataclasses.field(default=None, repr=False)

    @property
    def endpoint_url(self) -> str | None:
        """``http(s)://endpoint[:port]``, or ``None`` for AWS's default endpoint."""
        if not self.endpoint:
            return None
        scheme = "https" if self.https else "http"
        port = f":{self.port}" if self.port is not None else ""
        return f"{scheme}://{self.endpoint}{port}"


StoreUri = MemoryUri | LmdbUri | S3Uri


def parse_size(text: str) -> int:
    """Parse ``"500MB"``, ``"2GB"``, ``"1.5GiB"``, ``"1048576"`` into bytes (1 KB = 1024 B).

    Raises
    ------
    ValueError
        If ``text`` is not a positive size.
    """
    m = _SIZE_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a size (examples: 500MB, 2GB, 1073741824)")
    unit = (m.group("unit") or "").upper().replace("IB", "B")
    unit = unit[0] if unit not in ("", "B") else unit
    value = int(float(m.group("num")) * _UNITS[unit])
    if value <= 0:
        raise ValueError(f"{text!r} is not a positive size")
    return value


def _query(uri: str, query: str, error: type[Exception]) -> dict[str, str]:
    # ArcticDB's parsing: pairs split on & or ;, values taken as written (no %- or +-decoding,
    # so an AWS secret holding '+' or '/' works as it does there)
    pairs = [p.partition("=") for p in re.split("[;&]", query)] if query else []
    if any(not k or not eq for k, eq, _ in pairs):
        raise error(f"Invalid URI specified {uri!r}: bad query string {query!r}")
    out: dict[str, str] = {}
    for k, _, v in pairs:
        if k in out:
            raise error(f"Invalid URI specified {uri!r}: parameter {k!r} given twice")
        out[k] = v
    return out


def _bool(uri: str, name: str, value: str) -> bool:
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise StorageUriError(f"Invalid URI specified {uri!r}: {name}={value!r} is not true/false")


def _parse_lmdb(uri: str) -> LmdbUri:
    rest = uri[len("lmdb://") :]
    path, _, query = rest.partition("?")
    if not path:
        raise LmdbOptionsError(f"Invalid URI specified {uri!r}: no path (lmdb:///abs/path)")
    params = _query(uri, query, LmdbOptionsError)
    map_size: int | None = None
    for k, v in params.items():
        if k != "map_size":
            raise LmdbOptionsError(
                f"Invalid LMDB URI {uri!r}: unknown parameter {k!r} (only map_size is accepted)"
            )
        try:
            map_size = parse_size(v)
        except ValueError as exc:
            raise LmdbOptionsError(f"Invalid LMDB URI {uri!r}: map_size: {exc}") from exc
    return LmdbUri(uri=uri, path=os.path.abspath(os.path.expanduser(path)), map_size=map_size)


def redact(uri: str) -> str:
    """The URI with any ``access`` / ``secret`` value masked, for error messages."""
    return _SECRET_RE.sub(lambda m: m.group(1) + "=***", uri)


def _parse_s3(given: str) -> S3Uri:
    uri = redact(given)  # only ever shown in messages
    m = _S3_RE.fullmatch(given)
    if m is None:
        raise StorageUriError(
            f"Invalid URI specified {uri!r}: expected s3://<endpoint>:<bucket>[?options] "
            "(ArcticDB's form, e.g. s3://s3.eu-west-2.amazonaws.com:my-bucket?aws_auth=true)"
        )
    params = _query(uri, (m.group("query") or "")[1:], StorageUriError)
    if ("access" in params) != ("secret" in params):
        raise StorageUriError(
            f"Invalid URI specified {uri!r}: give both access= and secret= (or neither, to use "
            "boto3's default chain: AWS_ACCESS_KEY_ID, ~/.aws, instance roles)"
        )
    unknown = sorted(set(params) - _S3_KEYS)
    if unknown:
        raise StorageUriError(
            f"Invalid URI specified {uri!r}: unknown parameter(s) {', '.join(unknown)} "
            f"(accepted: {', '.join(sorted(_S3_KEYS))})"
        )
    port: int | None = None
    if "port" in params:
        try:
            port = int(params["port"])
            if not 0 < port < 65536:
                raise ValueError
        except ValueError:
            raise StorageUriError(
                f"Invalid URI specified {uri!r}: port={params['port']!r} is not a port number"
            ) from None
    if "aws_auth" in params:
        auth = params["aws_auth"].strip().lower()
        if auth not in _TRUE | _FALSE | {"default"}:
            raise StorageUriError(
                f"Invalid URI specified {uri!r}: aws_auth={params['aws_auth']!r} is not "
                "supported (credentials always come from boto3's default chain)"
            )
    timeouts: dict[str, float] = {}
    for name in ("connect_timeout", "read_timeout"):
        if name in params:
            try:
                timeouts[name] = float(params[name])
                if not 0 < timeouts[name] < float("inf"):
                    raise ValueError
            except ValueError:
                raise StorageUriError(
                    f"Invalid URI specified {uri!r}: {name}={params[name]!r} is not a number of seconds "
                    f"above 0 (e.g. {name}=30)"
                ) from None
    https = bool(m.group("secure"))
    if "ssl" in params:
        https = https or _bool(uri, "ssl", params["ssl"])
    return S3Uri(
        uri=uri,
        endpoint=m.group("endpoint"),
        bucket=m.group("bucket"),
        port=port,
        path_prefix=params.get("path_prefix", "").strip("/"),
        region=params.get("region") or None,
        use_virtual_addressing=_bool(
            uri, "use_virtual_addressing", params["use_virtual_addressing"]
        )
        if "use_virtual_addressing" in params
        else False,
        https=https,
        aws_profile=params.get("aws_profile") or None,
        ca_cert_path=params.get("CA_cert_path") or None,
        connect_timeout=timeouts.get("connect_timeout"),
        read_timeout=timeouts.get("read_timeout"),
        access=params.get("access") or None,
        secret=params.get("secret") or None,
    )


def parse_uri(uri: str) -> StoreUri:
    """Parse a connection string into a :class:`MemoryUri`, :class:`LmdbUri` or :class:`S3Uri`.

    Raises
    ------
    LmdbOptionsError
        Bad ``lmdb://`` URI (unknown parameter, bad ``map_size``).
    StorageUriError
        Unknown scheme, malformed S3 URI, unknown parameter, or credentials in the URI.
    """
    if not isinstance(uri, str):
        raise StorageUriError(f"Invalid URI specified: expected a str, got {type(uri).__name__}")
    if uri.startswith("mem://"):
        return MemoryUri(uri=uri)
    if uri.startswith("lmdb://"):
        return _parse_lmdb(uri)
    if uri.startswith(("s3://", "s3s://")):
        return _parse_s3(uri)
    scheme = uri.split("://", 1)[0] if "://" in uri else uri
    raise StorageUriError(
        f"Invalid URI specified {scheme + '://…' if '://' in uri else uri!r}: "
        "expected mem://, lmdb://<path>, s3://<endpoint>:<bucket> or s3s://<endpoint>:<bucket>"
    )
