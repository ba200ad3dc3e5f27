"""Credentials never leak, and credentials that may only read can open and read a store
(docs/reliability.md, "Controls"). A real moto server on 127.0.0.1 (the session's
``s3_server``), with moto's IAM checks switched on inside ``read_only_credentials``."""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest
from storeimage import StoreImage

from arcticlite import Arctic
from arcticlite.exceptions import ArcticException, PermissionException
from arcticlite.storage import parse_uri

pytestmark = pytest.mark.s3

ACCESS = "AKIAEXAMPLELEAKCHECK"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYLEAKCHECK"  # '/' and '+', as AWS secrets have


def frame(n: int = 3, start: str = "2024-01-01") -> pd.DataFrame:
    return pd.DataFrame({"x": range(n)}, index=pd.date_range(start, periods=n))


@contextlib.contextmanager
def read_only_credentials(uri: str) -> Iterator[tuple[str, str]]:
    """Credentials of a moto IAM user allowed only s3:GetObject and s3:ListBucket on the
    bucket of ``uri``; moto checks every request against IAM inside the block."""
    from moto import settings
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.models import iam_backends

    bucket = parse_uri(uri).bucket  # type: ignore[union-attr]
    iam = iam_backends[DEFAULT_ACCOUNT_ID]["global"]
    user = f"reader-{uuid.uuid4().hex[:8]}"
    iam.create_user("us-east-1", user)
    iam.put_user_policy(user, "read-only", json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}))
    key = iam.create_access_key(user)
    previous = settings.INITIAL_NO_AUTH_ACTION_COUNT
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
    try:
        yield key.access_key_id, key.secret_access_key
    finally:
        settings.INITIAL_NO_AUTH_ACTION_COUNT = previous


def with_credentials(uri: str, access: str, secret: str) -> str:
    return f"{uri}&access={access}&secret={secret}"


def refusals(ac: Arctic) -> list[Callable[[], Any]]:
    lib = ac["lib"]
    return [lambda: lib.write("s", frame(5)), lambda: lib.append("s", frame(1, "2025-01-01")),
            lambda: lib.delete("s"), lambda: lib.snapshot("snap2"), lambda: ac.create_library("lib2")]


def check_reads(ac: Arctic) -> None:
    lib = ac["lib"]
    pd.testing.assert_frame_equal(lib.read("s").data, frame(), check_freq=False)
    assert lib.read_metadata("s").metadata == {"m": 1}
    assert ac.list_libraries() == ["lib"] and lib.list_symbols() == ["s"]
    assert lib.list_snapshots() == {"snap": None}
    assert len(lib.list_versions("s")) == 1 and lib.get_description("s").row_count == 3


def test_read_only_policy_opens_reads_and_fails_cleanly_on_writes(s3_uri: str) -> None:
    lib = Arctic(s3_uri).create_library("lib")
    lib.write("s", frame(), metadata={"m": 1})
    lib.snapshot("snap")
    before = StoreImage.of(s3_uri)
    bucket = parse_uri(s3_uri).bucket  # type: ignore[union-attr]
    with read_only_credentials(s3_uri) as creds:
        with pytest.raises(PermissionException):  # the policy is enforced: full credentials are refused
            Arctic(s3_uri).list_libraries()
        ac = Arctic(with_credentials(s3_uri, *creds))  # opening only reads: a write would be denied
        check_reads(ac)
        for call in refusals(ac):  # S3 refuses: the error says so, names the bucket, says what to do
            with pytest.raises(PermissionException, match=rf"access denied by S3 .* bucket '{bucket}'.*read_only=True"):
                call()
        ro = Arctic(with_credentials(s3_uri, *creds), read_only=True)
        check_reads(ro)
        for call in refusals(ro):  # refused before any request
            with pytest.raises(PermissionException, match=r"refused: .*read_only=True"):
                call()
    StoreImage.of(s3_uri).assert_same(before)


def test_credentials_never_leak(s3_uri: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    uri = with_credentials(s3_uri, ACCESS, SECRET)
    shown: list[str] = []
    ac = Arctic(uri)
    lib = ac.create_library("lib")
    item = lib.write("s", frame(), metadata={"m": 1})
    shown += [repr(ac), str(ac), ac.get_uri(), repr(lib), repr(item), repr(lib.read("s")),
              repr(lib.read("s", lazy=True)), repr(lib.scan("s")), repr(lib.scan("s").tasks()),
              repr(lib.compact_data_tasks("s")), repr(parse_uri(uri))]
    failures: list[Callable[[], Any]] = [
        lambda: Arctic(uri, read_only=True)["lib"].write("s", frame()),
        lambda: lib.read("missing"), lambda: ac.get_library("missing"),
        lambda: Arctic(uri + "&bogus=1"),  # a bad URI: the message quotes it
        lambda: Arctic(uri.replace(parse_uri(s3_uri).bucket, "no-such-bucket")).list_libraries(),  # type: ignore[union-attr]
    ]
    for call in failures:
        with pytest.raises(ArcticException) as err:
            call()
        shown += [str(err.value), repr(err.value)]
    assert "access=***" in ac.get_uri() and "secret=***" in ac.get_uri()
    assert "no-such-bucket" in shown[-2]  # the error says what S3 said
    for text in shown:
        assert SECRET not in text and ACCESS not in text, text
    # no log line, arcticlite's or boto's, holds the secret; arcticlite's hold neither
    assert SECRET not in caplog.text
    assert not [r for r in caplog.records if r.name.startswith("arcticlite") and ACCESS in r.getMessage()]


def test_secret_is_taken_as_written(s3_uri: str) -> None:
    """As in ArcticDB, URI values are not %- or +-decoded: a secret holding '+' or '/' works."""
    parsed = parse_uri(with_credentials(s3_uri, ACCESS, SECRET))
    assert (parsed.access, parsed.secret) == (ACCESS, SECRET)  # type: ignore[union-attr]
    with read_only_credentials(s3_uri) as (access, secret):
        uri = with_credentials(s3_uri, access, secret + "+")  # a wrong secret is refused ...
        with pytest.raises(PermissionException, match="access denied"):
            Arctic(uri).list_libraries()
        Arctic(with_credentials(s3_uri, access, secret)).list_libraries()  # ... the right one works
