"""What ArcticDB does on arcticlite's reliability harnesses, side by side (docs/reliability.md).

Each harness runs the same code on ``arcticlite`` and on ``arcticdb`` (the same public API),
on LMDB in a temporary directory (the S3 harness on moto on 127.0.0.1), and prints one line
per engine:

* ``appends``: P processes x N one-row appends to one symbol; rows lost / duplicated.
* ``kill9``: a process appending to one symbol and rewriting others is SIGKILLed at K seeded
  random instants; after each kill: reads that fail, acknowledged appends missing.
* ``symbols``: P processes writing and deleting their own symbols, each checking
  ``list_symbols()`` after every operation; wrong answers (a live symbol missing or a deleted
  one listed).
* ``s3-faults``: one process x N appends to one S3 symbol while the server answers 20 % of
  requests with a 500 after applying them (lost answers); rows lost / duplicated.

Run::

    python -m benchmarks.reliability_arcticdb            # every harness, default sizes
    python -m benchmarks.reliability_arcticdb appends kill9 --procs 4 --appends 50 --kills 10
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing as mp
import os
import random
import signal
import tempfile
import time
from typing import Any

import numpy as np
import pandas as pd

ENGINES = ("arcticlite", "arcticdb")
TS = pd.Timestamp("2024-01-01")


def _lib(engine: str, uri: str, create: bool = False) -> Any:
    adb = importlib.import_module(engine)
    ac = adb.Arctic(uri)
    return ac.create_library("lib") if create else ac["lib"]


def _row(tag: int, k: int) -> pd.DataFrame:
    return pd.DataFrame({"tag": np.array([tag], dtype=np.int64), "k": np.array([k], dtype=np.int64)},
                        index=pd.DatetimeIndex([TS]))


# -- workers (module level: spawn imports them) ---------------------------------------------------
def append_worker(engine: str, uri: str, tag: int, n: int, barrier: Any, acked: Any, raised: Any,
                  first: Any) -> None:
    lib = _lib(engine, uri)
    barrier.wait()
    for k in range(n):
        try:
            lib.append("sym", _row(tag, k))
        except Exception as exc:  # counted, and the first message kept
            raised[tag] += 1
            if not first.value:
                first.value = f"{type(exc).__name__}: {exc}"[:200].encode()
            continue
        acked[tag] += 1


def kill_worker(engine: str, uri: str, run: int, ack_path: str) -> None:
    lib = _lib(engine, uri)
    rng = random.Random(run)
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"R {run}\n".encode())
    base = TS + pd.Timedelta(hours=run)
    k = 0
    while True:
        if rng.random() < 0.6:
            df = pd.DataFrame({"run": np.array([run], dtype=np.int64), "k": np.array([k], dtype=np.int64)},
                              index=pd.DatetimeIndex([base + pd.Timedelta(seconds=k)]))
            lib.append("log", df)
            os.write(fd, f"A {run} {k}\n".encode())
            k += 1
        else:
            n = rng.randrange(1, 2000)
            lib.write(f"w{rng.randrange(3)}", pd.DataFrame({"x": np.arange(n)}, index=pd.date_range(TS, periods=n)))


def symbols_worker(engine: str, uri: str, tag: int, steps: int, barrier: Any, queue: Any) -> None:
    lib = _lib(engine, uri)
    rng = random.Random(tag)
    own = [f"p{tag}_{i}" for i in range(8)]
    live: set[str] = set()
    wrong = checks = 0
    barrier.wait()
    for step in range(steps):
        sym = rng.choice(own)
        if rng.random() < 0.6:
            lib.write(sym, _row(tag, step))
            live.add(sym)
        else:
            lib.delete(sym)
            live.discard(sym)
        checks += 1
        wrong += {s for s in lib.list_symbols() if s.startswith(f"p{tag}_")} != live
    queue.put((checks, wrong))


# -- harnesses --------------------------------------------------------------------------------
def appends(engine: str, procs: int, n: int) -> str:
    with tempfile.TemporaryDirectory() as d:
        uri = f"lmdb://{d}/db"
        _lib(engine, uri, create=True)
        ctx = mp.get_context("spawn")
        barrier, acked, raised = ctx.Barrier(procs), ctx.Array("q", procs), ctx.Array("q", procs)
        first = ctx.Array("c", 256)
        ps = [ctx.Process(target=append_worker, args=(engine, uri, t, n, barrier, acked, raised, first))
              for t in range(procs)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        data = _lib(engine, uri).read("sym").data
        pairs = set(zip(data["tag"].tolist(), data["k"].tolist(), strict=True))
        missing = procs * n - len(pairs)
        why = f" (first error: {first.value.decode()})" if sum(raised[:]) else ""
        return (f"{procs} x {n} appends, {sum(acked[:])} acknowledged, {sum(raised[:])} raised: "
                f"{missing} rows missing, at least {max(0, missing - sum(raised[:]))} of them acknowledged; "
                f"{len(data) - len(pairs)} duplicated{why}")


def kill9(engine: str, kills: int) -> str:
    with tempfile.TemporaryDirectory() as d:
        uri = f"lmdb://{d}/db"
        lib = _lib(engine, uri, create=True)
        lib.write("log", pd.DataFrame({"run": np.array([-1], dtype=np.int64), "k": np.array([0], dtype=np.int64)},
                                      index=pd.DatetimeIndex([TS - pd.Timedelta(days=1)])))
        ack_path = os.path.join(d, "acks")
        ctx = mp.get_context("spawn")
        rng = random.Random(16)
        failed_reads = missing = 0
        for run in range(kills):
            p = ctx.Process(target=kill_worker, args=(engine, uri, run, ack_path))
            p.start()
            while f"R {run}\n" not in (open(ack_path).read() if os.path.exists(ack_path) else ""):
                time.sleep(0.02)
            time.sleep(rng.uniform(0.2, 1.2))
            os.kill(p.pid, signal.SIGKILL)  # type: ignore[arg-type]
            p.join()
            lib = _lib(engine, uri)
            try:
                data = lib.read("log").data
                for s in lib.list_symbols():
                    lib.read(s)
            except Exception:
                failed_reads += 1
                continue
            present = set(zip(data["run"].tolist(), data["k"].tolist(), strict=True))
            acked = {(int(a), int(b)) for t, a, b in (line.split() for line in open(ack_path) if line[0] == "A")}
            missing = max(missing, len(acked - present))
        return f"{kills} kills: {failed_reads} with a failed read, at most {missing} acknowledged appends missing"


def symbols(engine: str, procs: int, steps: int) -> str:
    with tempfile.TemporaryDirectory() as d:
        uri = f"lmdb://{d}/db"
        _lib(engine, uri, create=True)
        ctx = mp.get_context("spawn")
        barrier, queue = ctx.Barrier(procs), ctx.Queue()
        ps = [ctx.Process(target=symbols_worker, args=(engine, uri, t, steps, barrier, queue)) for t in range(procs)]
        for p in ps:
            p.start()
        out = [queue.get() for _ in ps]
        for p in ps:
            p.join()
        return f"{procs} x {steps} writes/deletes: {sum(o[1] for o in out)} wrong list_symbols of {sum(o[0] for o in out)}"


def s3_faults(engine: str, n: int) -> str:
    from arcticlite.testing.s3server import S3TestServer

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    server = S3TestServer().start()
    try:
        uri = server.new_bucket_uri()
        if engine == "arcticdb":
            uri += "&access=testing&secret=testing"
        lib = _lib(engine, uri, create=True)
        server.set_fault_rates(after=0.2, seed=16)
        errors = 0
        for k in range(n):
            try:
                lib.append("sym", _row(0, k))
            except Exception:
                errors += 1
        server.clear_faults()
        data = _lib(engine, uri).read("sym").data
        ks = data["k"].tolist()
        return (f"{n} appends, {server.injected['after']} lost answers, {errors} raised: "
                f"{n - len(set(ks))} rows missing, {len(ks) - len(set(ks))} duplicated")
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("harness", nargs="*", default=["appends", "kill9", "symbols", "s3-faults"])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--appends", type=int, default=50)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    for h in args.harness:
        for engine in ENGINES:
            if h == "appends":
                line = appends(engine, args.procs, args.appends)
            elif h == "kill9":
                line = kill9(engine, args.kills)
            elif h == "symbols":
                line = symbols(engine, args.procs, args.steps)
            else:
                line = s3_faults(engine, args.appends)
            print(f"{h:10s} {engine:10s} {line}", flush=True)


if __name__ == "__main__":
    main()
