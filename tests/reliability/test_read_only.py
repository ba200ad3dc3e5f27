"""Read-only access: ``Arctic(uri, read_only=True)`` and ``get_library(name, read_only=True)``
refuse every change before touching storage, and an LMDB store on a read-only file system
can be read (docs/reliability.md, "Controls")."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from storeimage import StoreImage

from arcticlite import Arctic, Library, ModifiableLibraryOption, WritePayload
from arcticlite.exceptions import (
    ArcticInvalidApiUsageException,
    PermissionException,
    StorageException,
)


def frame(n: int = 4, start: str = "2024-01-01") -> pd.DataFrame:
    return pd.DataFrame({"x": range(n)}, index=pd.date_range(start, periods=n))


def populate(ac: Arctic) -> Library:
    lib = ac.create_library("lib")
    lib.write("s", frame())
    lib.append("s", frame(2, "2024-02-01"), metadata={"m": 1})
    lib.write("t", frame())
    lib.snapshot("snap")
    lib.stage("staged", frame())
    return lib


#: Every public Library method that changes the store, called with arguments that would succeed.
MUTATIONS: dict[str, Callable[[Library], Any]] = {
    "write": lambda lib: lib.write("s", frame()),
    "write_pickle": lambda lib: lib.write_pickle("p", {"a": 1}),
    "append": lambda lib: lib.append("s", frame(1, "2025-01-01")),
    "update": lambda lib: lib.update("s", frame(1, "2024-01-02")),
    "delete_data_in_range": lambda lib: lib.delete_data_in_range("s", (pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-02"))),
    "write_metadata": lambda lib: lib.write_metadata("s", {"m": 2}),
    "delete": lambda lib: lib.delete("t"),
    "prune_previous_versions": lambda lib: lib.prune_previous_versions("s"),
    "stage": lambda lib: lib.stage("s2", frame()),
    "delete_staged_data": lambda lib: lib.delete_staged_data("staged"),
    "finalize_staged_data": lambda lib: lib.finalize_staged_data("staged"),
    "sort_and_finalize_staged_data": lambda lib: lib.sort_and_finalize_staged_data("staged"),
    "compact_data": lambda lib: lib.compact_data("s"),
    "defragment_symbol_data": lambda lib: lib.defragment_symbol_data("s"),
    "compact_data_tasks": lambda lib: lib.compact_data_tasks("s"),
    "compact_deltas": lambda lib: lib.compact_deltas("s"),
    "commit_compaction": lambda lib: lib.commit_compaction(None, []),  # type: ignore[arg-type]
    "gc": lambda lib: lib.gc(grace_period=0),
    "reload_symbol_list": lambda lib: lib.reload_symbol_list(),
    "compact_symbol_list": lambda lib: lib.compact_symbol_list(),
    "snapshot": lambda lib: lib.snapshot("snap2"),
    "delete_snapshot": lambda lib: lib.delete_snapshot("snap"),
    "write_batch": lambda lib: lib.write_batch([WritePayload("b", frame())]),
    "write_pickle_batch": lambda lib: lib.write_pickle_batch([WritePayload("b", {"a": 1})]),
    "append_batch": lambda lib: lib.append_batch([WritePayload("s", frame(1, "2025-01-01"))]),
    "update_batch": lambda lib: lib.update_batch([]),
    "write_metadata_batch": lambda lib: lib.write_metadata_batch([]),
    "delete_batch": lambda lib: lib.delete_batch(["t"]),
    "compact_data_batch": lambda lib: lib.compact_data_batch(["s"]),
}

for _name in ("merge", "merge_experimental", "delete_rows"):  # added by the merge work
    if hasattr(Library, _name):
        MUTATIONS[_name] = lambda lib, n=_name: getattr(lib, n)("s", frame())

#: Every public Library method that only reads, with a call that succeeds on a read-only library.
READS: dict[str, Callable[[Library], Any]] = {
    "read": lambda lib: lib.read("s").data,
    "head": lambda lib: lib.head("s", 2).data,
    "tail": lambda lib: lib.tail("s", 2).data,
    "read_batch": lambda lib: lib.read_batch(["s", "t"]),
    "read_batch_and_join": lambda lib: None,  # a read of read_batch's kind; needs a QueryBuilder
    "read_metadata": lambda lib: lib.read_metadata("s").metadata,
    "read_metadata_batch": lambda lib: lib.read_metadata_batch(["s"]),
    "get_description": lambda lib: lib.get_description("s"),
    "get_description_batch": lambda lib: lib.get_description_batch(["s"]),
    "has_symbol": lambda lib: lib.has_symbol("s"),
    "list_symbols": lambda lib: lib.list_symbols(),
    "list_versions": lambda lib: lib.list_versions("s"),
    "list_snapshots": lambda lib: lib.list_snapshots(),
    "get_staged_symbols": lambda lib: lib.get_staged_symbols(),
    "inspect_index": lambda lib: lib.inspect_index("s"),
    "inspect_segments": lambda lib: lib.inspect_segments("s"),
    "inspect_versions": lambda lib: lib.inspect_versions("s"),
    "compact_data_explain_plan": lambda lib: lib.compact_data_explain_plan("s"),
    "compaction_plan": lambda lib: lib.compaction_plan("s"),
    "verify": lambda lib: lib.verify(),
    "is_symbol_fragmented": lambda lib: lib.is_symbol_fragmented("s"),
    "admin_tools": lambda lib: lib.admin_tools().get_sizes(),
    "scan": lambda lib: lib.scan("s").to_table(),
    "options": lambda lib: lib.options(),
    "enterprise_options": lambda lib: lib.enterprise_options(),
    "parse_list_of_symbols": lambda lib: lib.parse_list_of_symbols(["s"]),
}


def test_every_public_library_method_is_classified() -> None:
    """A new public method must be listed as a mutation (refused read-only) or a read."""
    public = {n for n, v in vars(Library).items() if not n.startswith("_") and callable(v)}
    assert public == MUTATIONS.keys() | READS.keys()
    assert not MUTATIONS.keys() & READS.keys()


@pytest.mark.parametrize("how", ["arctic", "library"])
def test_read_only_refuses_every_change_and_writes_nothing(ac: Arctic, uri: str, how: str) -> None:
    populate(ac)
    before = StoreImage.of(uri)
    ro = Arctic(uri, read_only=True)["lib"] if how == "arctic" else ac.get_library("lib", read_only=True)
    assert ro.read_only
    for name, call in MUTATIONS.items():
        with pytest.raises(PermissionException, match=rf"^{name} refused: .*read_only=True"):
            call(ro)
    StoreImage.of(uri).assert_same(before, untouched=True)
    # and everything that reads still works, writing nothing
    for call in READS.values():
        call(ro)
    pd.testing.assert_frame_equal(ro.read("s").data, pd.concat([frame(), frame(2, "2024-02-01")]), check_freq=False)
    assert ro.list_symbols() == ["s", "t"]
    assert ro.read_metadata("s").metadata == {"m": 1}
    StoreImage.of(uri).assert_same(before, untouched=True)


def test_read_only_connection_refuses_library_changes(ac: Arctic, uri: str) -> None:
    lib = populate(ac)
    before = StoreImage.of(uri)
    ro = Arctic(uri, read_only=True)
    assert ro.list_libraries() == ["lib"]
    for name, call in {
        "create_library": lambda: ro.create_library("new"),
        "get_library": lambda: ro.get_library("new", create_if_missing=True),
        "delete_library": lambda: ro.delete_library("lib"),
        "modify_library_option": lambda: ro.modify_library_option(lib, ModifiableLibraryOption.DEDUP, True),
    }.items():
        with pytest.raises(PermissionException, match=rf"^{name}.* refused: .*read_only=True"):
            call()
    # a library cannot be looser than its connection
    with pytest.raises(ArcticInvalidApiUsageException, match="read-only"):
        ro.get_library("lib", read_only=False)
    # a read-only library cannot have its options changed through a writable connection either
    with pytest.raises(PermissionException, match="modify_library_option refused"):
        ac.modify_library_option(ac.get_library("lib", read_only=True), ModifiableLibraryOption.DEDUP, True)
    StoreImage.of(uri).assert_same(before, untouched=True)


def test_list_symbols_on_a_read_only_library_does_not_compact_the_journal(ac: Arctic, uri: str) -> None:
    lib = ac.create_library("lib")
    lib._symbol_list.threshold = 3  # a writable library would compact the journal on listing
    for i in range(5):
        lib.write(f"s{i}", frame(1))
    before = StoreImage.of(uri)
    ro = Arctic(uri, read_only=True)["lib"]
    ro._symbol_list.threshold = 3
    assert ro.list_symbols() == [f"s{i}" for i in range(5)]
    StoreImage.of(uri).assert_same(before, untouched=True)


@pytest.mark.lmdb
def test_read_only_of_a_missing_lmdb_store_creates_nothing(tmp_path: Any) -> None:
    path = tmp_path / "nope"
    with pytest.raises(StorageException, match="no LMDB store .* never created"):
        Arctic(f"lmdb://{path}", read_only=True)
    assert not path.exists()


_READER = textwrap.dedent("""
    import sys
    import arcticlite as adb
    from arcticlite.exceptions import PermissionException
    ac = adb.Arctic(sys.argv[1], read_only=True)
    lib = ac["lib"]
    assert lib.read("s").data["x"].tolist() == [0, 1, 2, 3, 0, 1], lib.read("s").data
    assert lib.list_symbols() == ["s", "t"]
    import pickle  # a scan task, as a worker process runs it: it opens the store read-only too
    task = pickle.loads(pickle.dumps(lib.scan("s").tasks()[0]))
    assert task.read_only and task.to_table().column("x").to_pylist() == [0, 1, 2, 3, 0, 1]
    try:
        lib.write("s", lib.read("s").data)
    except PermissionException as exc:
        print("refused:", exc)
""")


def _digests(path: str) -> dict[str, str]:
    return {n: hashlib.sha256(open(os.path.join(path, n), "rb").read()).hexdigest() for n in sorted(os.listdir(path))}


@pytest.mark.lmdb
def test_lmdb_store_in_a_read_only_directory_can_be_read(tmp_path: Any) -> None:
    """chmod -R a-w, then read in another process. As root (where chmod does not stop writes)
    the reader runs in its own mount namespace with the directory bind-mounted read-only, when
    the system allows it; either way the store's files must be byte-identical afterwards."""
    path = str(tmp_path / "store")
    populate(Arctic(f"lmdb://{path}"))
    before = _digests(path)
    cmd = [sys.executable, "-c", _READER, f"lmdb://{path}"]
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("mount") and \
            subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', path, *cmd]
    os.chmod(path, 0o555)
    for name in os.listdir(path):
        os.chmod(os.path.join(path, name), 0o444)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(path, 0o755)
        for name in os.listdir(path):
            os.chmod(os.path.join(path, name), 0o644)
    assert out.returncode == 0, out.stderr
    assert "refused: write refused: library 'lib' was opened with read_only=True" in out.stdout
    assert _digests(path) == before
