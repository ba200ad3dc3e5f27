"""Connection strings: ArcticDB's forms parse into typed values; mistakes fail clearly."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import arcticlite.storage
from arcticlite.exceptions import ArcticException, LmdbOptionsError, StorageUriError
from arcticlite.storage import (
    LmdbStore,
    LmdbUri,
    MemoryStore,
    MemoryUri,
    S3Uri,
    open_store,
    parse_size,
    parse_uri,
)


def test_public_api_of_the_storage_package() -> None:
    assert arcticlite.storage.__all__ == sorted(arcticlite.storage.__all__)
    assert set(arcticlite.storage.__all__) == {
        "Buffer",
        "FaultInjectingStore",
        "KVStore",
        "LatencyStore",
        "LmdbStore",
        "LmdbUri",
        "LoggingStore",
        "MemoryStore",
        "MemoryUri",
        "RetryPolicy",
        "RetryingStore",
        "S3Store",
        "S3Uri",
        "StoreUri",
        "WrappingStore",
        "open_store",
        "parse_size",
        "parse_uri",
        "redact",
    }


# -- lmdb:// -------------------------------------------------------------------------------------
def test_lmdb_uri_absolute_path(tmp_path: Path) -> None:
    uri = f"lmdb://{tmp_path}/arctic"
    parsed = parse_uri(uri)
    assert parsed == LmdbUri(uri=uri, path=f"{tmp_path}/arctic", map_size=None)


def test_lmdb_uri_relative_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    parsed = parse_uri("lmdb://data/arctic")
    assert isinstance(parsed, LmdbUri)
    assert parsed.path == os.path.join(str(tmp_path), "data", "arctic")
    assert parsed.uri == "lmdb://data/arctic"  # kept verbatim (Arctic.get_uri returns it)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500MB", 500 << 20),
        ("2GB", 2 << 30),
        ("2gb", 2 << 30),
        ("1TB", 1 << 40),
        ("64KB", 64 << 10),
        ("64KiB", 64 << 10),
        ("1.5GB", 3 << 29),
        ("1048576", 1 << 20),
        ("10G", 10 << 30),
    ],
)
def test_map_size_formats(text: str, expected: int, tmp_path: Path) -> None:
    assert parse_size(text) == expected
    parsed = parse_uri(f"lmdb://{tmp_path}?map_size={text}")
    assert isinstance(parsed, LmdbUri) and parsed.map_size == expected


@pytest.mark.parametrize("bad", ["lots", "-5MB", "0", "5XB", "", "1e9"])
def test_bad_map_size_is_an_lmdb_options_error(bad: str, tmp_path: Path) -> None:
    with pytest.raises(LmdbOptionsError, match="map_size"):
        parse_uri(f"lmdb://{tmp_path}?map_size={bad}")


def test_unknown_lmdb_parameter_is_named(tmp_path: Path) -> None:
    with pytest.raises(LmdbOptionsError, match="'mapsize'"):
        parse_uri(f"lmdb://{tmp_path}?mapsize=1GB")


def test_lmdb_uri_needs_a_path() -> None:
    with pytest.raises(LmdbOptionsError, match="no path"):
        parse_uri("lmdb://")


def test_open_store_lmdb_creates_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    with open_store(f"lmdb://{target}?map_size=1MB") as s:
        assert isinstance(s, LmdbStore)
        assert target.is_dir()
        assert s.map_size == 1 << 20
        s.write("k", b"v")
    with open_store(f"lmdb://{target}") as s:
        assert bytes(s.read("k")) == b"v"


# -- mem:// --------------------------------------------------------------------------------------
def test_mem_uri_opens_a_new_empty_store_each_time() -> None:
    assert parse_uri("mem://anything/here?x=1") == MemoryUri(uri="mem://anything/here?x=1")
    a, b = open_store("mem://"), open_store("mem://")
    assert isinstance(a, MemoryStore)
    a.write("k", b"v")
    assert not b.exists("k")


# -- s3:// ---------------------------------------------------------------------------------------
def test_arcticdb_s3_uri() -> None:
    uri = "s3://s3.eu-west-2.amazonaws.com:arctic-bucket?path_prefix=team/prod&aws_auth=true&region=eu-west-2"
    parsed = parse_uri(uri)
    assert parsed == S3Uri(
        uri=uri,
        endpoint="s3.eu-west-2.amazonaws.com",
        bucket="arctic-bucket",
        path_prefix="team/prod",
        region="eu-west-2",
    )
    assert parsed.endpoint_url == "http://s3.eu-west-2.amazonaws.com"  # ArcticDB: s3:// is HTTP


def test_s3s_and_ssl_mean_https() -> None:
    a = parse_uri("s3s://minio.local:data?port=9000")
    b = parse_uri("s3://minio.local:data?port=9000&ssl=true")
    assert isinstance(a, S3Uri) and isinstance(b, S3Uri)
    assert a.endpoint_url == b.endpoint_url == "https://minio.local:9000"


def test_test_server_uri_form() -> None:
    parsed = parse_uri(
        "s3://127.0.0.1:my_bucket.v2?port=5123&region=us-east-1&use_virtual_addressing=false"
    )
    assert isinstance(parsed, S3Uri)
    assert (parsed.bucket, parsed.port, parsed.region) == ("my_bucket.v2", 5123, "us-east-1")
    assert parsed.endpoint_url == "http://127.0.0.1:5123"
    assert parsed.use_virtual_addressing is False


def test_empty_endpoint_means_aws_default() -> None:
    parsed = parse_uri("s3://:bucket")
    assert isinstance(parsed, S3Uri) and parsed.endpoint_url is None


@pytest.mark.parametrize("param", ["access=AKIAEXAMPLE", "secret=hunter2"])
def test_half_a_credential_pair_is_refused_without_echoing_it(param: str) -> None:
    with pytest.raises(StorageUriError, match="both access= and secret=") as info:
        parse_uri(f"s3://host:bucket?{param}&region=us-east-1")
    value = param.split("=")[1]
    assert value not in str(info.value)


def test_credentials_in_an_s3_uri_are_taken_as_arcticdb_takes_them_and_never_shown() -> None:
    parsed = parse_uri("s3://host:bucket?port=9000&access=AKIAEXAMPLE&secret=hunter2")
    assert isinstance(parsed, S3Uri)
    assert (parsed.access, parsed.secret) == ("AKIAEXAMPLE", "hunter2")
    for shown in (repr(parsed), parsed.uri, str(parsed)):
        assert "hunter2" not in shown and "AKIAEXAMPLE" not in shown


def test_malformed_s3_uri_with_credentials_does_not_echo_them() -> None:
    with pytest.raises(StorageUriError) as info:
        parse_uri("s3://host:bad:bucket?secret=hunter2")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("s3://host:bucket?colour=blue", "colour"),
        ("s3://host:bucket?port=http", "port"),
        ("s3://host:bucket?port=70000", "port"),
        ("s3://host:bucket?ssl=maybe", "ssl"),
        ("s3://host:bucket?aws_auth=sts", "aws_auth"),
        ("s3://host:bucket?port=1&port=2", "port"),
        ("s3://host-only", "s3://<endpoint>:<bucket>"),
    ],
)
def test_bad_s3_uris_name_the_problem(uri: str, named: str) -> None:
    with pytest.raises(StorageUriError, match=named.replace("?", r"\?")):
        parse_uri(uri)


# -- everything ----------------------------------------------------------------------------------
@pytest.mark.parametrize("uri", ["ftp://host/x", "azure://x", "mongodb://x", "/just/a/path", ""])
def test_unknown_scheme(uri: str) -> None:
    with pytest.raises(StorageUriError, match="Invalid URI specified") as info:
        parse_uri(uri)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ArcticException)


def test_parsed_uris_are_frozen_keyword_only_dataclasses(tmp_path: Path) -> None:
    parsed = parse_uri(f"lmdb://{tmp_path}")
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.path = "/elsewhere"  # type: ignore[misc]
    with pytest.raises(TypeError):
        LmdbUri("lmdb:///x", "/x")  # type: ignore[misc]
    assert not hasattr(parsed, "__dict__")  # slots
    assert dataclasses.replace(parsed, map_size=5).map_size == 5  # type: ignore[type-var]
