"""Moving from ArcticDB: a store ArcticDB wrote is refused with the way out, and
``import-arcticdb`` copies it (through an installed arcticdb)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.__main__ import main
from arcticlite.exceptions import UserInputException

arcticdb = pytest.importorskip("arcticdb")


def test_an_arcticdb_store_is_refused_then_imported(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = f"lmdb://{tmp_path}/old", f"lmdb://{tmp_path}/new"
    src = arcticdb.Arctic(old).create_library("prices")
    df = pd.DataFrame({"bid": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
    src.write("AAPL", df.iloc[:2], metadata={"v": 0})
    src.write("AAPL", df, metadata={"v": 1})
    src.write_pickle("cfg", {"a": [1, 2]})
    with pytest.raises(UserInputException, match="written by ArcticDB.*import-arcticdb"):
        adb.Arctic(old)
    assert main(["import-arcticdb", old, new, "--all-versions"]) == 0
    assert "copied 3 versions of 1 libraries" in capsys.readouterr().out
    lib = adb.Arctic(new)["prices"]
    got = lib.read("AAPL")
    pd.testing.assert_frame_equal(got.data, df, check_freq=False)
    assert got.metadata == {"v": 1} and got.version == 1
    assert lib.read("AAPL", as_of=0).metadata == {"v": 0}
    assert lib.read("cfg").data == {"a": [1, 2]}


def test_an_arcticdb_bucket_is_refused() -> None:
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    # moto's own server in a subprocess: ArcticDB's S3 client hangs on the suite's in-process
    # test server (cause not investigated)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/old-store", method="PUT"))
        uri = f"s3://127.0.0.1:old-store?port={port}&access=key&secret=s3cr3t"  # ArcticDB's form
        arcticdb.Arctic(uri).create_library("prices").write("AAPL", pd.DataFrame({"bid": [1.0]}))
        with pytest.raises(UserInputException, match="written by ArcticDB.*import-arcticdb") as err:
            adb.Arctic(uri)
        assert "s3cr3t" not in str(err.value)  # the advice names the URI without its secret
    finally:
        proc.terminate()
        proc.wait(timeout=10)
