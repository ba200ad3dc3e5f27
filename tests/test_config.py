"""``arcticlite.config`` and ``set_config_from_env_vars``: ArcticDB's named settings, honoured
where they mean something here, accepted where they tune ArcticDB's internals only, refused
(never ignored) where they change behaviour arcticlite does not offer."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite import config
from arcticlite.exceptions import UserInputException
from arcticlite.storage import S3Store


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "_VALUES", {})
    for name in ("arcticlite", "arcticlite.storage"):
        monkeypatch.setattr(logging.getLogger(name), "level", logging.getLogger(name).level)


def journal_keys(lib: adb.Library) -> int:
    return sum(1 for _ in lib._store.list_keys(lib._keys.sl_prefix + "j/"))


def write_and_list(n: int) -> tuple[adb.Library, int]:
    lib = adb.Arctic("mem://").create_library("lib")
    for k in range(n):
        lib.write(f"s{k}", pd.DataFrame({"x": [k]}))
    assert lib.list_symbols() == sorted(f"s{k}" for k in range(n))
    return lib, journal_keys(lib)


def test_symbol_list_max_delta_sets_when_listing_compacts() -> None:
    assert write_and_list(6)[1] == 6  # below the default of 500: the journal stays
    config.set_config_int("SymbolList.MaxDelta", 3)
    lib, left = write_and_list(6)
    assert left == 0
    assert lib.list_symbols() == [f"s{k}" for k in range(6)]


def test_env_vars_apply_with_arcticdb_naming() -> None:
    config.set_config_from_env_vars({
        "ARCTICDB_SymbolList_MaxDelta_int": "3",
        "ARCTICDB_Some_Name": "text",  # no type word: a string
        "ARCTICDB_S3Storage_ConnectTimeoutMs_INT": "2500",
        "ARCTICDB_Other_Ratio_float": "0.5",
        "HOME": "/nowhere",  # not a setting
    })
    assert config.get_config_int("symbollist.maxdelta") == 3
    assert config.get_config_string("Some.Name") == "text"
    assert config.get_config_double("Other.Ratio") == 0.5
    assert write_and_list(6)[1] == 0
    store = S3Store("bucket", endpoint_url="http://127.0.0.1:1")
    assert store._s3().meta.config.connect_timeout == 2.5


def test_env_vars_are_read_at_import() -> None:
    env = {**os.environ, "ARCTICDB_SymbolList_MaxDelta_int": "7", "ARCTICDB_all_loglevel": "DEBUG"}
    out = subprocess.run(
        [sys.executable, "-c", "import logging, arcticlite; "
         "print(arcticlite.config.get_config_int('SymbolList.MaxDelta'), logging.getLogger('arcticlite').level)"],
        env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["7", str(logging.DEBUG)]


def test_bad_env_values_and_refused_settings_warn_and_change_nothing() -> None:
    with pytest.warns(UserWarning, match="ARCTICDB_SymbolList_MaxDelta_int='many'"):
        config.set_config_from_env_vars({"ARCTICDB_SymbolList_MaxDelta_int": "many"})
    with pytest.warns(UserWarning, match="not supported by arcticlite"):
        config.set_config_from_env_vars({"ARCTICDB_VersionStore_NoStrictSymbolCheck_int": "1"})
    assert config.get_config_int("SymbolList.MaxDelta") is None
    assert config.get_config_int("VersionStore.NoStrictSymbolCheck") is None


def test_refused_and_mistyped_settings_raise() -> None:
    with pytest.raises(UserInputException, match="not supported by arcticlite"):
        config.set_config_int("S3Storage.STSTokenExpiryMin", 30)
    with pytest.raises(UserInputException, match="takes an int"):
        config.set_config_int("SymbolList.MaxDelta", "3")  # type: ignore[arg-type]
    assert config.get_config_int("SymbolList.MaxDelta") is None


def test_internal_only_settings_are_accepted_and_change_no_result() -> None:
    config.set_config_int("VersionMap.ReloadInterval", 10**12)
    ac = adb.Arctic("mem://")
    writer, reader = ac.create_library("lib"), ac.get_library("lib")
    writer.write("s", pd.DataFrame({"x": [1]}))
    assert reader.read("s").data["x"].tolist() == [1]
    writer.write("s", pd.DataFrame({"x": [2]}))
    assert reader.read("s").data["x"].tolist() == [2]  # no cached version map to go stale
    assert config.get_config_int("VersionMap.ReloadInterval") == 10**12


def test_log_levels() -> None:
    config.set_log_level("ERROR", {"storage": "DEBUG"})
    assert logging.getLogger("arcticlite").level == logging.ERROR
    assert logging.getLogger("arcticlite.storage").level == logging.DEBUG
    with pytest.raises(UserInputException, match="unknown log level"):
        config.set_log_level("LOUD")


def test_cpu_threads_bound_the_page_workers() -> None:
    before = [t for t in threading.enumerate() if t.name.startswith("fermion_")]  # an earlier pool's
    config.set_config_int("VersionStore.NumCPUThreads", 1)
    lib = adb.Arctic("mem://").create_library("lib")
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(400_000, 8)), columns=list("abcdefgh"))
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_index_type=False)
    for t in before:  # the earlier pool was shut down when the setting changed
        t.join(timeout=30)
    workers = [t for t in threading.enumerate() if t.name.startswith("fermion_") and t not in before]
    assert len(workers) <= 1


def test_s3_settings_configure_new_stores() -> None:
    config.set_config_int("S3Storage.VerifySSL", 0)
    config.set_config_int("S3Storage.RequestTimeoutMs", 5000)
    config.set_config_int("S3Storage.MaxConnections", 3)
    config.set_config_int("VersionStore.NumIOThreads", 2)
    store = S3Store("bucket", endpoint_url="https://127.0.0.1:1")
    client = store._s3()
    assert client.meta.config.read_timeout == 5.0
    assert client.meta.config.max_pool_connections == 3
    assert store.max_workers == 2
    assert client._endpoint.http_session._verify is False


def test_options_module_has_arcticdbs_option_types() -> None:
    from arcticlite.options import LibraryOptions, RuntimeOptions

    assert LibraryOptions is adb.LibraryOptions and RuntimeOptions is adb.RuntimeOptions
    lib = adb.Arctic("mem://").create_library("lib", LibraryOptions(rows_per_segment=10))
    assert lib.options().rows_per_segment == 10
