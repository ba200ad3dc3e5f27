"""Helpers shared by the engine tests (import as ``from enginehelpers import ...``)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import EncodingVersion, Library, LibraryOptions

ALL_OPTIONS = [
    pytest.param(LibraryOptions(), id="static"),
    pytest.param(LibraryOptions(dynamic_schema=True), id="dynamic"),
    pytest.param(LibraryOptions(rows_per_segment=2, columns_per_segment=2), id="tiles2x2"),
]

#: Parametrise a test over :data:`ALL_OPTIONS` (through the ``library_options`` fixture).
all_options = pytest.mark.parametrize("library_options", ALL_OPTIONS, indirect=True)


def frame(n: int = 5, start: Any = "2024-01-01", freq: str = "D", cols: tuple[str, ...] = ("a", "b"),
          seed: int = 0, base: int = 0) -> pd.DataFrame:
    """A small DatetimeIndex frame: int column ``a`` (base, base+1, ...), float ``b``, ..."""
    rng = np.random.default_rng(seed)
    idx = pd.date_range(start, periods=n, freq=freq)
    data: dict[str, Any] = {}
    for i, c in enumerate(cols):
        if i % 2 == 0:
            data[c] = np.arange(base, base + n, dtype=np.int64)
        else:
            data[c] = rng.random(n)
    return pd.DataFrame(data, index=idx)


def assert_frame_equal(a: pd.DataFrame, b: pd.DataFrame, **kw: Any) -> None:
    kw.setdefault("check_freq", False)
    pd.testing.assert_frame_equal(a, b, **kw)


def versions_of(lib: Library, sym: str) -> list[int]:
    """Live (and snapshot-held) version ids of ``sym``, ascending."""
    return sorted(v.version for v in lib.list_versions(sym))


# -- multiprocessing workers (importable by spawned children) ---------------------------------------
APPEND_TS = pd.Timestamp("2024-01-01")


def append_worker(uri: str, lib_name: str, sym: str, tag: int, n: int, barrier: Any) -> None:
    """Append ``n`` one-row batches (column ``tag`` = this worker, ``seq`` = 0..n-1), all at the
    same timestamp so that no append depends on the order of the others."""
    from arcticlite import Arctic

    lib = Arctic(uri)[lib_name]
    barrier.wait()
    for k in range(n):
        df = pd.DataFrame({"tag": np.array([tag], dtype=np.int64), "seq": np.array([k], dtype=np.int64)},
                          index=pd.DatetimeIndex([APPEND_TS]))
        lib.append(sym, df)


def endless_append_worker(uri: str, lib_name: str, sym: str, started: Any) -> None:
    """Append one-row batches (``seq`` = 0, 1, ...) until killed."""
    from arcticlite import Arctic

    lib = Arctic(uri)[lib_name]
    k = 0
    while True:
        df = pd.DataFrame({"seq": np.array([k], dtype=np.int64)}, index=pd.DatetimeIndex([APPEND_TS]))
        lib.append(sym, df)
        k += 1
        if k == 3:
            started.set()


def effective_options(options: LibraryOptions) -> LibraryOptions:
    """``options`` as a library reports them: the encoding version filled in (V1), as ArcticDB does."""
    if options.encoding_version is not None:
        return options
    return dataclasses.replace(options, encoding_version=EncodingVersion.V1)


def acked_append_worker(uri: str, lib_name: str, sym: str, tag: int, n: int, barrier: Any, acked: Any,
                        conditional: bool = True, faults: dict[str, Any] | None = None,
                        outcomes: Any = None) -> None:
    """:func:`append_worker` that counts its acknowledged appends in ``acked[tag]`` (after each
    call returns). ``conditional=False`` writes through :class:`arcticlite.testing.UnconditionalStore`
    (the control: conditional writes switched off).

    ``faults`` (keyword arguments of :class:`arcticlite.storage.FaultInjectingStore` but the
    seed, which is ``faults["seed"] + tag``) writes through that wrapper. An append that fails
    is then handled as a user would: a ``StorageUnavailableError`` means nothing landed, so it is
    made again; after a ``CommitStateUnknownError`` the worker reads the symbol to learn whether
    its row is there. ``outcomes[3 * tag + i]`` counts (0) clean failures retried, (1) unknown
    outcomes found landed, (2) unknown outcomes found absent and made again."""
    from arcticlite import Arctic
    from arcticlite.exceptions import CommitStateUnknownError, StorageUnavailableError

    if not conditional:
        from arcticlite.storage import open_store
        from arcticlite.testing import UnconditionalStore

        ac = Arctic(uri, store=UnconditionalStore(open_store(uri)))
    elif faults is not None:
        from arcticlite.storage import FaultInjectingStore, open_store

        kw = dict(faults)
        kw["seed"] = int(kw.get("seed", 0)) + tag
        ac = Arctic(uri, store=FaultInjectingStore(open_store(uri), **kw))
    else:
        ac = Arctic(uri)
    lib = ac[lib_name]
    barrier.wait()

    def landed(k: int) -> bool:
        while True:
            try:
                data = lib.read(sym).data
            except StorageUnavailableError:
                continue
            return bool(((data["tag"] == tag) & (data["seq"] == k)).any())

    for k in range(n):
        df = pd.DataFrame({"tag": np.array([tag], dtype=np.int64), "seq": np.array([k], dtype=np.int64)},
                          index=pd.DatetimeIndex([APPEND_TS]))
        while True:
            try:
                lib.append(sym, df)
            except CommitStateUnknownError:
                if landed(k):
                    outcomes[3 * tag + 1] += 1
                    break
                outcomes[3 * tag + 2] += 1
            except StorageUnavailableError:
                if outcomes is None:
                    raise
                outcomes[3 * tag] += 1
            else:
                break
        acked[tag] += 1  # one writer per slot: no lock needed


def check_appended(data: pd.DataFrame, writers: int) -> tuple[list[int], list[str]]:
    """Rows per writer of a frame of :func:`acked_append_worker` appends, and what is wrong with
    it: each writer's ``seq`` must be 0, 1, ... in order (no gap, no duplicate, no stray value)."""
    counts, problems = [], []
    tags = data["tag"].to_numpy()
    seqs = data["seq"].to_numpy()
    if set(np.unique(tags).tolist()) - set(range(writers)):
        problems.append(f"unknown tags {sorted(set(np.unique(tags).tolist()) - set(range(writers)))}")
    if not (data.index == APPEND_TS).all():
        problems.append("index values changed")
    for t in range(writers):
        mine = seqs[tags == t].tolist()
        counts.append(len(mine))
        if mine != list(range(len(mine))):
            problems.append(f"writer {t}: seq {mine[:10]}... is not 0, 1, 2, ...")
    return counts, problems


def reader_worker(uri: str, lib_name: str, sym: str, writers: int, acked: Any, stop: Any, queue: Any) -> None:
    """Read the latest version of ``sym`` until ``stop`` is set (and once more after), checking
    each version seen: its rows are exactly one per version (``version + 1``), hold every append
    acknowledged before the read began, hold each writer's appends intact and in order, and
    neither the version nor any writer's rows go backwards from the previous read. Puts
    ``(reads, versions seen, [violations])`` on ``queue``."""
    import traceback

    from arcticlite import Arctic
    from arcticlite.exceptions import NoDataFoundException

    try:
        lib = Arctic(uri)[lib_name]
        reads, seen, violations = 0, set(), []
        last_version, last_counts = -1, [0] * writers
        while True:
            final = stop.is_set()
            before = list(acked[:])
            try:
                item = lib.read(sym)
            except NoDataFoundException:
                if sum(before):
                    violations.append(f"symbol missing after {sum(before)} acknowledged appends")
                if final:
                    break
                continue
            reads += 1
            seen.add(item.version)
            counts, problems = check_appended(item.data, writers)
            violations += [f"v{item.version}: {p}" for p in problems]
            if len(item.data) != item.version + 1:
                violations.append(f"v{item.version}: {len(item.data)} rows, expected {item.version + 1}")
            lost = [t for t in range(writers) if counts[t] < before[t]]
            if lost:
                violations.append(f"v{item.version}: acknowledged appends missing for writers {lost}")
            if item.version < last_version or any(c < p for c, p in zip(counts, last_counts, strict=True)):
                violations.append(f"went backwards: v{last_version} -> v{item.version}")
            last_version, last_counts = item.version, counts
            if final:
                break
        queue.put((reads, len(seen), violations))
    except BaseException:
        queue.put(traceback.format_exc())


def symbol_list_worker(uri: str, lib_name: str, tag: int, steps: int, shared: list[str], barrier: Any,
                       queue: Any) -> None:
    """Write and delete symbols ``p{tag}_0 .. p{tag}_7`` (this process's own) and ``shared``
    ones (everyone's), at random (seeded by ``tag``), with a journal threshold of 8 so that
    listing compacts often. After every operation on an own symbol, ``list_symbols()`` must
    show exactly the own symbols this process knows are live. Puts ``(checks, [violations])``."""
    import random
    import traceback

    from arcticlite import Arctic

    try:
        lib = Arctic(uri)[lib_name]
        lib._symbol_list.threshold = 8
        rng = random.Random(tag)
        own = [f"p{tag}_{i}" for i in range(8)]
        live: set[str] = set()
        checks, violations = 0, []
        barrier.wait()
        for step in range(steps):
            one = pd.DataFrame({"v": np.array([step], dtype=np.int64)}, index=pd.DatetimeIndex([APPEND_TS]))
            if rng.random() < 0.3:
                sym = rng.choice(shared)
                lib.write(sym, one) if rng.random() < 0.6 else lib.delete(sym)
                continue
            sym = rng.choice(own)
            if rng.random() < 0.6:
                lib.write(sym, one)
                live.add(sym)
            else:
                lib.delete(sym)
                live.discard(sym)
            listed = {s for s in lib.list_symbols() if s.startswith(f"p{tag}_")}
            checks += 1
            if listed != live:
                violations.append(f"step {step}: missing {sorted(live - listed)}, deleted but listed {sorted(listed - live)}")
        queue.put((checks, violations))
    except BaseException:
        queue.put(traceback.format_exc())


def symbol_list_compactor(uri: str, lib_name: str, seed: int, stop: Any, queue: Any) -> None:
    """Compact the symbol list, rebuild it from the refs now and then, and list, until ``stop``.
    Puts the number of compactions and rebuilds made."""
    import random
    import traceback

    from arcticlite import Arctic

    try:
        lib = Arctic(uri)[lib_name]
        rng = random.Random(seed)
        done = 0
        while not stop.is_set():
            r = rng.random()
            if r < 0.2:
                lib.reload_symbol_list()
            elif r < 0.7:
                lib.compact_symbol_list()
            else:
                lib.list_symbols()
            done += 1
        queue.put(done)
    except BaseException:
        queue.put(traceback.format_exc())


# -- kill -9 at random instants -------------------------------------------------------------------
def frame_digest(df: pd.DataFrame) -> str:
    """A digest of a frame's index and values (what a reader must get back)."""
    import hashlib

    h = hashlib.sha256(df.index.asi8.tobytes())
    for c in df.columns:
        h.update(str(c).encode())
        h.update(np.ascontiguousarray(df[c].to_numpy()).tobytes())
    return h.hexdigest()


def merge_rows_for(rng: Any, cur: pd.DataFrame, value: float, on: list[str]) -> pd.DataFrame:
    """1-6 rows keyed like ``mk`` (DatetimeIndex, int ``k``, float ``v``): some copy stored keys,
    the others are new; one row per key (the index and ``on``), sorted by the index."""
    rows = []
    for _ in range(rng.randrange(1, 7)):
        if len(cur) and rng.random() < 0.6:
            i = rng.randrange(len(cur))
            ts, kk = cur.index[i], int(cur["k"].iloc[i])
            if not on and rng.random() < 0.3:
                kk = rng.randrange(4)  # k is not a key here: a new value
        else:
            ts, kk = pd.Timestamp("2024-01-01") + pd.Timedelta(days=rng.randrange(30)), rng.randrange(4)
        rows.append((ts, kk, value + rng.randrange(100) / 4))
    df = pd.DataFrame({"k": np.array([r[1] for r in rows], dtype=np.int64),
                       "v": np.array([r[2] for r in rows], dtype=np.float64)},
                      index=pd.DatetimeIndex([r[0] for r in rows]))
    df = df[~pd.DataFrame({"ix": df.index, **{c: df[c] for c in on}}).duplicated().to_numpy()]
    return df.sort_index(kind="stable")


def commit_loop_worker(uri: str, lib_name: str, ready_path: str) -> None:
    """Write a small version of ``s`` after another until killed; ``ready_path`` is created
    once the first one is committed."""
    from arcticlite import Arctic

    lib = Arctic(uri)[lib_name]
    i = 0
    while True:
        lib.write("s", pd.DataFrame({"x": np.arange(i, i + 50, dtype=np.int64)},
                                    index=pd.date_range("2024-01-01", periods=50)))
        if i == 0:
            open(ready_path, "w").close()
        i += 1


def kill_worker(uri: str, lib_name: str, run: int, ack_path: str) -> None:
    """Make random operations (seeded by ``run``) until killed: appends to ``log`` (columns
    ``run``, ``k``), writes / updates / version deletes of ``w0 .. w3``, snapshots,
    ``compact_data("log")``, stage + finalize of ``st{run}``, and, interleaved by a second seeded
    generator (about one call in six, so that the other calls come in the same order as
    without them), keyed merges (random strategy, on the index or the index and column ``k``),
    ``delete_rows`` and ``compact_deltas`` of ``mk``, whose frame the worker models in pandas
    (:func:`model_merge`) from the state it reads at its start. After each returns, one line is appended to ``ack_path`` (``os.write``
    on an ``O_APPEND`` file: whole lines survive a kill): ``A run k`` / ``W sym version digest``
    / ``D sym version`` (``d``: before the delete) / ``S name`` / ``F sym digest`` /
    ``M version digest call`` (of ``mk``; ``m digest``: before the call, the model after it)."""
    import random

    from arcticlite import Arctic
    from arcticlite.library import MergeStrategy

    lib = Arctic(uri)[lib_name]
    rng = random.Random(run)
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def ack(line: str) -> None:
        os.write(fd, (line + "\n").encode())

    base = pd.Timestamp("2024-01-01") + pd.Timedelta(hours=run)  # each run appends after the last
    merged = lib.read("mk").data  # the model of mk: what an earlier run's last call left
    mrng = random.Random(10**6 + run)  # keyed calls interleave; the other calls come as before
    ack(f"R {run}")

    def keyed(k: int) -> None:
        nonlocal merged
        on = mrng.choice([[], ["k"]])
        r = mrng.random()
        if r < 0.6:
            strategy = mrng.choice([("update", "do_nothing"), ("do_nothing", "insert"), ("update", "insert")])
            src = merge_rows_for(mrng, merged, run * 1000 + k, on)
            after = model_merge(merged, src, strategy, on)
            ack(f"m {frame_digest(after)}")
            v = lib.merge("mk", src, strategy=MergeStrategy(*strategy), on=on, upsert=mrng.random() < 0.3).version
            what = "merge-" + {"update": "U", "do_nothing": "-"}[strategy[0]] + \
                {"insert": "I", "do_nothing": "-"}[strategy[1]]
        elif r < 0.85:
            keys = merge_rows_for(mrng, merged, 0, on)
            after = model_delete_rows(merged, keys, on)
            ack(f"m {frame_digest(after)}")
            v = lib.delete_rows("mk", keys[on] if mrng.random() < 0.5 else keys, on=on).version
            what = "delete_rows"
        else:
            after = merged
            ack(f"m {frame_digest(after)}")
            v = lib.compact_deltas("mk").version
            what, on = "compact_deltas", []
        merged = after
        ack(f"M {v} {frame_digest(after)} {what}{'-on_k' if on else ''}")

    k = 0
    while True:
        if mrng.random() < 0.16:
            keyed(k)
            continue
        r = rng.random()
        if r < 0.4:
            df = pd.DataFrame({"run": np.array([run], dtype=np.int64), "k": np.array([k], dtype=np.int64)},
                              index=pd.DatetimeIndex([base + pd.Timedelta(seconds=k)]))
            lib.append("log", df)
            ack(f"A {run} {k}")
            k += 1
        elif r < 0.6:
            sym = f"w{rng.randrange(4)}"
            n = rng.randrange(1, 40)
            df = pd.DataFrame({"x": np.arange(n, dtype=np.int64) + run * 1000, "y": np.full(n, r)},
                              index=pd.date_range("2024-01-01", periods=n))
            v = lib.write(sym, df).version
            ack(f"W {sym} {v} {frame_digest(df)}")
        elif r < 0.7:
            sym = f"w{rng.randrange(4)}"
            if lib.has_symbol(sym):
                upd = pd.DataFrame({"x": np.array([-run], dtype=np.int64), "y": np.array([r])},
                                   index=pd.DatetimeIndex([pd.Timestamp("2024-01-01") + pd.Timedelta(days=rng.randrange(5))]))
                lib.update(sym, upd)
        elif r < 0.78:
            sym = f"w{rng.randrange(4)}"
            live = sorted(k.version for k, info in lib.list_versions(sym).items() if not info.deleted)
            if len(live) > 1:
                v = live[0]
                ack(f"d {sym} {v}")  # about to delete: the write may be gone without the ack below
                lib.delete(sym, versions=[v])
                ack(f"D {sym} {v}")
        elif r < 0.86:
            name = f"snap{run}_{k}_{rng.randrange(10**6)}"
            lib.snapshot(name)
            ack(f"S {name}")
        elif r < 0.93:
            lib.compact_data("log", rows_per_segment=16)
        else:
            sym = f"st{run}"
            n = rng.randrange(1, 5)
            df = pd.DataFrame({"x": np.arange(n, dtype=np.int64)},
                              index=pd.date_range("2024-01-01", periods=n) + pd.Timedelta(days=10 * k))
            if not lib.has_symbol(sym) and sym not in lib.get_staged_symbols():
                lib.stage(sym, df)
                lib.finalize_staged_data(sym)
                ack(f"F {sym} {frame_digest(df)}")

# -- a pandas model of keyed merge (ArcticDB's merge_experimental semantics) -----------------------
class AmbiguousMerge(Exception):
    """The model's refusal: under matched="update", a stored row matched by several source rows."""


def _matches(cur: pd.DataFrame, src: pd.DataFrame, on: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(stored positions, source positions)`` of every matching pair: equal index and ``on``
    values (the model's keys never hold missing values)."""
    keys = ["__ix", *on]
    t = pd.DataFrame({"__ix": cur.index.asi8, **{c: cur[c].to_numpy() for c in on}, "__t": np.arange(len(cur))})
    s = pd.DataFrame({"__ix": src.index.asi8, **{c: src[c].to_numpy() for c in on}, "__s": np.arange(len(src))})
    m = t.merge(s, on=keys, how="inner")
    return m["__t"].to_numpy(np.int64), m["__s"].to_numpy(np.int64)


def model_merge(cur: pd.DataFrame, src: pd.DataFrame, strategy: tuple[str, str], on: list[str]) -> pd.DataFrame:
    """``cur`` after ``merge(src, strategy=MergeStrategy(*strategy), on=on)``: matched stored rows
    take the source's non-key values (``"update"``); source rows matching nothing are inserted
    after the stored rows of the same index value, in source order (``"insert"``). Raises
    :class:`AmbiguousMerge` where the library must refuse the merge."""
    tpos, spos = _matches(cur, src, on)
    out = cur.copy()
    if strategy[0] == "update" and len(tpos):
        if len(np.unique(tpos)) < len(tpos):
            raise AmbiguousMerge
        for c in cur.columns:
            if c not in on:
                col = out[c].to_numpy().copy()
                col[tpos] = src[c].to_numpy()[spos]
                out[c] = col
    if strategy[1] == "insert":
        new = np.setdiff1d(np.arange(len(src)), spos)
        if len(new):
            out = pd.concat([out, src.iloc[new]]).sort_index(kind="stable")
    return out


def model_delete_rows(cur: pd.DataFrame, keys: pd.DataFrame, on: list[str]) -> pd.DataFrame:
    """``cur`` after ``delete_rows(keys, on=on)``: every stored row matching a key row removed."""
    tpos, _ = _matches(cur, keys, on)
    return cur.iloc[np.setdiff1d(np.arange(len(cur)), tpos)]
