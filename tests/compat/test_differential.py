"""Differential test: seeded random operation sequences replayed on ArcticDB and arcticlite.

Each seed drives a ``random.Random`` that generates a sequence of ``N_OPS`` operations over a
few symbols (writes, appends, updates, deletes, version deletes, prunes, metadata writes,
snapshots, range deletes, compaction, and every kind of read, including reads ``as_of`` a
version number, a snapshot name and a recorded instant). The sequence is replayed one
operation at a time on ``arcticdb`` and on ``arcticlite``, on the same backend kind, and after
every operation the outcomes are compared:

* the returned version number (``VersionedItem.version``) or ``None``;
* the exception class: arcticlite's exception must be an instance of a class with ArcticDB's
  exception class name (so ``except arcticdb.exceptions.X`` keeps working after the switch);
* read data (``assert_frame_equal``, ``check_freq=False``), metadata, symbol lists (sorted),
  ``list_versions`` keys with their ``deleted`` flags and snapshot names, snapshot lists,
  ``has_symbol`` and the ``get_description`` row count, date range and column names.

A failure reports the seed, the operation index, the operation, both outcomes and the sequence
up to that point. To reproduce one seed::

    .venv/bin/python -m pytest "tests/compat/test_differential.py::test_differential[lmdb-seed_17]"

``ARCTICLITE_DIFF_SEEDS`` (default 200) sets how many seeds run per backend.
"""

from __future__ import annotations

import os
import random
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

N_SEEDS = int(os.environ.get("ARCTICLITE_DIFF_SEEDS", "200"))
N_OPS = 60
SYMBOLS = ("sym0", "sym1", "sym2")
SNAPSHOTS = ("snap0", "snap1", "snap2")
BASE = pd.Timestamp("2024-01-01")

# ArcticDB's own reads trigger this pandas deprecation; it says nothing about arcticlite.
pytestmark = pytest.mark.filterwarnings("ignore:Passing a BlockManager:DeprecationWarning")


class SubclassedError(UserWarning):
    """arcticlite raised a subclass of ArcticDB's exception class (compatible, but not the same)."""


_subclass_notes: set[tuple[str, str, str]] = set()


# --------------------------------------------------------------------------------------------
# Data: a frame is described by a small, printable spec and built deterministically from it.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """``rows`` daily rows from ``BASE + start`` days; column layout ``schema``; values from ``seed``."""

    start: int
    rows: int
    seed: int
    schema: str = "ab"

    def build(self) -> pd.DataFrame:
        rng = np.random.default_rng(self.seed)
        index = pd.date_range(BASE + pd.Timedelta(days=self.start), periods=self.rows, freq="D")
        cols: dict[str, Any] = {}
        if "a" in self.schema:
            cols["a"] = rng.integers(-1000, 1000, self.rows).astype(np.int64)
        if "b" in self.schema:
            cols["b"] = np.round(rng.random(self.rows) * 100, 3)
        if "s" in self.schema:
            cols["s"] = [f"v{int(x)}" for x in rng.integers(0, 50, self.rows)]
        if "x" in self.schema:
            cols["x"] = rng.random(self.rows).astype(np.float32)
        return pd.DataFrame(cols, index=index)

    def __repr__(self) -> str:
        return (
            f"Frame(start={self.start}, rows={self.rows}, seed={self.seed}, schema={self.schema!r})"
        )


def day(n: int) -> pd.Timestamp:
    return BASE + pd.Timedelta(days=n)


@dataclass(frozen=True)
class TimeRef:
    """The ``index``-th instant recorded by a ``mark_time`` operation (used as ``as_of``)."""

    index: int

    def __repr__(self) -> str:
        return f"TimeRef({self.index})"


@dataclass(frozen=True)
class Op:
    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{self.name}({', '.join(parts)})"


# --------------------------------------------------------------------------------------------
# Generator: a rough model of each symbol keeps most operations meaningful (appends after the
# last row, updates around the existing range); the model need not be exact, since both
# engines see the same sequence whatever it does.
# --------------------------------------------------------------------------------------------


@dataclass
class _SymModel:
    live: bool = False
    start: int = 0
    end: int = 0  # exclusive, in days from BASE
    versions: int = 0  # how many version numbers have been handed out (roughly)
    schema: str = "ab"


@dataclass
class _Model:
    syms: dict[str, _SymModel] = field(default_factory=dict)
    snapshots: set[str] = field(default_factory=set)
    marks: int = 0


def _metadata(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.6:
        return None
    if r < 0.9:
        return {"k": rng.randint(0, 99), "tag": rng.choice(["x", "y"])}
    return [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]


def _prune(rng: random.Random) -> tuple[tuple[str, Any], ...]:
    return (("prune_previous_versions", True),) if rng.random() < 0.15 else ()


def _as_of(rng: random.Random, model: _Model, sm: _SymModel) -> Any:
    r = rng.random()
    if r < 0.45:
        return None
    if r < 0.75:
        hi = max(sm.versions, 1)
        return rng.randint(-hi - 1, hi)
    if r < 0.85:
        return rng.choice(SNAPSHOTS)
    if model.marks:
        return TimeRef(rng.randrange(model.marks))
    return None


def _as_of_kw(rng: random.Random, model: _Model, sm: _SymModel) -> tuple[tuple[str, Any], ...]:
    a = _as_of(rng, model, sm)
    return () if a is None else (("as_of", a),)


_WEIGHTS = {
    "write": 14,
    "append": 12,
    "update": 8,
    "delete": 3,
    "delete_versions": 4,
    "prune_previous_versions": 3,
    "write_metadata": 4,
    "snapshot": 4,
    "delete_snapshot": 2,
    "delete_data_in_range": 4,
    "compact_data": 1,
    "mark_time": 4,
    "read": 10,
    "read_metadata": 4,
    "head": 3,
    "tail": 3,
    "list_symbols": 3,
    "list_versions": 4,
    "list_versions_latest": 3,
    "list_versions_all": 1,
    "has_symbol": 2,
    "list_snapshots": 2,
    "get_description": 3,
}


def generate(seed: int, n_ops: int = N_OPS) -> list[Op]:
    rng = random.Random(seed)
    symbols = SYMBOLS[: rng.choice((2, 3))]
    model = _Model(syms={s: _SymModel() for s in symbols})
    names = list(_WEIGHTS)
    weights = [_WEIGHTS[n] for n in names]
    ops: list[Op] = []
    for _ in range(n_ops):
        kind = rng.choices(names, weights)[0]
        sym = rng.choice(symbols)
        sm = model.syms[sym]
        if kind == "write":
            start = rng.randint(0, 30)
            rows = rng.randint(0, 8) if rng.random() < 0.1 else rng.randint(1, 8)
            schema = sm.schema if rng.random() < 0.85 else rng.choice(["ab", "abs", "ax", "b"])
            frame = Frame(start, rows, rng.randrange(10**6), schema)
            kw: tuple[tuple[str, Any], ...] = (("metadata", _metadata(rng)),) + _prune(rng)
            ops.append(Op("write", (sym, frame), kw))
            sm.live, sm.start, sm.end, sm.schema = True, start, start + rows, schema
            sm.versions += 1
        elif kind == "append":
            start = sm.end if sm.live else rng.randint(0, 30)
            if sm.live and rng.random() < 0.2:
                start -= rng.randint(1, 3)  # overlaps the last row: ArcticDB refuses
            schema = sm.schema if rng.random() < 0.9 else rng.choice(["ab", "abs", "ax"])
            rows = rng.randint(1, 5)
            frame = Frame(start, rows, rng.randrange(10**6), schema)
            kw = (("metadata", _metadata(rng)),) + _prune(rng)
            ops.append(Op("append", (sym, frame), kw))
            if not sm.live or start >= sm.end:
                if not sm.live:
                    sm.start, sm.schema = start, schema
                sm.live, sm.end = True, start + rows
                sm.versions += 1
        elif kind == "update":
            where = rng.random()
            if where < 0.5:  # inside
                start = rng.randint(sm.start, max(sm.start, sm.end - 1))
            elif where < 0.8:  # overlapping either end
                start = rng.choice([sm.start - rng.randint(1, 3), sm.end - rng.randint(0, 2)])
            else:  # beyond
                start = sm.end + rng.randint(0, 4)
            start = max(start, 0)
            rows = rng.randint(1, 4)
            schema = sm.schema if rng.random() < 0.9 else rng.choice(["ab", "abs"])
            frame = Frame(start, rows, rng.randrange(10**6), schema)
            kw = (("metadata", _metadata(rng)),)
            if rng.random() < 0.2:
                kw += (("upsert", True),)
            if rng.random() < 0.15:
                kw += (("date_range", (day(start - 1), day(start + rows))),)
            ops.append(Op("update", (sym, frame), kw + _prune(rng)))
            if sm.live:
                sm.start, sm.end = min(sm.start, start), max(sm.end, start + rows)
                sm.versions += 1
        elif kind == "delete":
            ops.append(Op("delete", (sym,)))
            sm.live = False
        elif kind == "delete_versions":
            hi = max(sm.versions, 1)
            if rng.random() < 0.6:
                versions: Any = rng.randint(0, hi)
            else:
                versions = sorted(rng.sample(range(hi + 1), rng.randint(1, min(3, hi + 1))))
            ops.append(Op("delete", (sym,), (("versions", versions),)))
        elif kind == "prune_previous_versions":
            ops.append(Op("prune_previous_versions", (sym,)))
        elif kind == "write_metadata":
            meta = {"m": rng.randint(0, 99)}
            ops.append(Op("write_metadata", (sym, meta), _prune(rng)))
            if not sm.live:
                sm.live, sm.start, sm.end = True, 0, 0
            sm.versions += 1
        elif kind == "snapshot":
            name = rng.choice(SNAPSHOTS)
            kw = (("metadata", {"s": rng.randint(0, 9)}),) if rng.random() < 0.3 else ()
            ops.append(Op("snapshot", (name,), kw))
            model.snapshots.add(name)
        elif kind == "delete_snapshot":
            name = rng.choice(SNAPSHOTS)
            ops.append(Op("delete_snapshot", (name,)))
            model.snapshots.discard(name)
        elif kind == "delete_data_in_range":
            a = rng.randint(sm.start - 2, sm.end + 1)
            b = a + rng.randint(0, 4)
            ops.append(Op("delete_data_in_range", (sym, (day(a), day(b))), _prune(rng)))
            if sm.live:
                sm.versions += 1
        elif kind == "compact_data":
            kw = (("rows_per_segment", rng.choice([2, 4, 100])),)
            ops.append(Op("compact_data", (sym,), kw))
        elif kind == "mark_time":
            ops.append(Op("mark_time", (model.marks,)))
            model.marks += 1
        elif kind in ("read", "read_metadata", "get_description"):
            ops.append(Op(kind, (sym,), _as_of_kw(rng, model, sm)))
        elif kind in ("head", "tail"):
            kw = (("n", rng.choice([0, 1, 3, 5, 20, -2])),) + _as_of_kw(rng, model, sm)
            ops.append(Op(kind, (sym,), kw))
        elif kind == "list_symbols":
            if rng.random() < 0.25:
                ops.append(Op("list_symbols", (), (("snapshot_name", rng.choice(SNAPSHOTS)),)))
            else:
                ops.append(Op("list_symbols"))
        elif kind == "list_versions":
            ops.append(Op("list_versions", (sym,)))
        elif kind == "list_versions_latest":
            ops.append(Op("list_versions", (sym,), (("latest_only", True),)))
        elif kind == "list_versions_all":
            ops.append(Op("list_versions"))
        elif kind == "has_symbol":
            ops.append(Op("has_symbol", (sym,), _as_of_kw(rng, model, sm)))
        elif kind == "list_snapshots":
            ops.append(Op("list_snapshots"))
        else:  # pragma: no cover - every weight has a branch
            raise AssertionError(kind)
    return ops


# --------------------------------------------------------------------------------------------
# Replay and comparison
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    exc: BaseException

    def __repr__(self) -> str:
        msg = str(self.exc).strip().splitlines()[0][:200] if str(self.exc).strip() else ""
        return f"raised {type(self.exc).__module__}.{type(self.exc).__name__}: {msg}"


@dataclass(frozen=True)
class Returned:
    value: Any

    def __repr__(self) -> str:
        return f"returned {_show(self.value)}"


def _show(value: Any) -> str:
    if isinstance(value, tuple) and value and value[0] == "item":
        _, version, metadata, df = value
        return f"item(version={version}, metadata={metadata!r}, data=\n{df!r})"
    return repr(value)


def _resolve(value: Any, marks: list[pd.Timestamp]) -> Any:
    if isinstance(value, Frame):
        return value.build()
    if isinstance(value, TimeRef):
        return marks[value.index]
    return value


def _normalise(name: str, result: Any) -> Any:
    """Reduce an API result to plain, comparable values."""
    if name in ("read", "head", "tail"):
        return ("item", result.version, result.metadata, result.data)
    if name == "read_metadata":
        return ("meta", result.version, result.metadata)
    if name in ("write", "append", "update", "write_metadata", "compact_data"):
        return ("version", result.version)
    if name == "list_symbols":
        return sorted(result)
    if name == "list_versions":
        return sorted(
            (k.symbol, int(k.version), bool(v.deleted), tuple(sorted(v.snapshots)))
            for k, v in result.items()
        )
    if name == "list_snapshots":
        return sorted(result.items()) if isinstance(result, dict) else sorted(result)
    if name == "get_description":
        return (
            "description",
            result.row_count,
            tuple(result.date_range),
            tuple(c.name for c in result.columns),
        )
    if name == "has_symbol":
        return bool(result)
    return result


def run_op(lib: Any, op: Op, marks: list[pd.Timestamp]) -> Raised | Returned:
    args = [_resolve(a, marks) for a in op.args]
    kwargs = {k: _resolve(v, marks) for k, v in op.kwargs}
    try:
        result = getattr(lib, op.name)(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every error is an outcome to compare
        return Raised(exc)
    return Returned(_normalise(op.name, result))


def _equal_values(a: Any, b: Any) -> bool:
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        if not (isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame)):
            return False
        try:
            pd.testing.assert_frame_equal(a, b, check_freq=False)
        except AssertionError:
            return False
        return True
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(_equal_values(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal_values(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    try:
        if pd.isna(a) and pd.isna(b):
            return True
    except (TypeError, ValueError):
        pass
    return bool(a == b)


def compare(op: Op, expected: Raised | Returned, actual: Raised | Returned) -> str | None:
    """``None`` when arcticlite's outcome matches ArcticDB's, else why not."""
    if isinstance(expected, Raised) and isinstance(actual, Raised):
        wanted = type(expected.exc).__name__
        have = [c.__name__ for c in type(actual.exc).__mro__]
        if wanted in have:
            note = (op.name, wanted, have[0])
            if wanted != have[0] and note not in _subclass_notes:
                _subclass_notes.add(note)
                warnings.warn(
                    f"{op.name}: ArcticDB raises {wanted}, arcticlite its subclass {have[0]}",
                    SubclassedError,
                    stacklevel=2,
                )
            return None
        return f"error class differs: ArcticDB {wanted}, arcticlite {type(actual.exc).__name__} (bases {have[1:]})"
    if isinstance(expected, Returned) and isinstance(actual, Returned):
        if _equal_values(expected.value, actual.value):
            return None
        return "results differ"
    return "one raised, the other did not"


def replay(
    seed: int, lib_adb: Any, lib_lite: Any, ops: list[Op] | None = None, label: str = ""
) -> list[str]:
    """Replay ``generate(seed)`` on both libraries; return a description of the first divergence."""
    ops = generate(seed) if ops is None else ops
    marks: list[pd.Timestamp] = []
    for i, op in enumerate(ops):
        if op.name == "mark_time":
            time.sleep(0.002)
            marks.append(pd.Timestamp.now(tz="UTC"))
            time.sleep(0.002)
            continue
        expected = run_op(lib_adb, op, marks)
        actual = run_op(lib_lite, op, marks)
        why = compare(op, expected, actual)
        if why is not None:
            return report_divergence(f"seed {seed}{label}", ops[: i + 1], why, expected, actual)
    return []


def built(value: Any, mod: Any) -> Any:
    """An operation's argument for engine module ``mod``: a frame or query spec (anything with
    ``build(mod)``) built, anything else as it is."""
    return value.build(mod) if hasattr(value, "build") else value


def replay_engines(
    seed: int,
    lib_adb: Any,
    lib_lite: Any,
    ops: list[Op],
    run: Any,
    label: str = "",
    adjust: Any = None,
) -> list[str]:
    """Replay ``ops`` with ``run(lib, module, op)`` on ArcticDB's library, then arcticlite's, one
    operation at a time; the report of the first divergence, or []. ``adjust(op, expected,
    actual)`` (optional) returns the outcome to compare as arcticlite's, or None to skip the
    operation (a documented difference)."""
    import arcticdb

    import arcticlite

    for i, op in enumerate(ops):
        expected = run(lib_adb, arcticdb, op)
        actual = run(lib_lite, arcticlite, op)
        if adjust is not None:
            actual = adjust(op, expected, actual)
            if actual is None:
                continue
        why = compare(op, expected, actual)
        if why is not None:
            return report_divergence(f"seed {seed}{label}", ops[: i + 1], why, expected, actual)
    return []


def check_seed(engines: Any, test: str, seed: int, ops: list[Op], run: Any, *, dynamic: bool = False,
               kind: str | None = None, adjust: Any = None) -> None:
    """Replay ``ops`` (:func:`replay_engines`) on a fresh pair of libraries and fail the test
    ``test`` (also its module's name) with the report of the first divergence."""
    from tests.compat.conftest import paired_libraries

    where = f" on {engines.backend}" + (f", dynamic_schema={dynamic}, {kind} index" if kind else "")
    label = f"{where} (rerun: pytest 'tests/compat/{test}.py::{test}[{engines.backend}-seed_{seed}]')"
    with paired_libraries(engines, f"{test}_{seed}", dynamic_schema=dynamic) as libs:
        divergence = replay_engines(seed, *libs, ops, run, label, adjust)
    if divergence:
        pytest.fail("\n".join(divergence), pytrace=False)


def report_divergence(
    where: str, ops: list[Op], why: str, expected: Raised | Returned, actual: Raised | Returned
) -> list[str]:
    """The report of a sequence whose last operation (of ``ops``) diverged."""
    history = "\n".join(f"  [{j:2d}] {o!r}" for j, o in enumerate(ops))
    return [
        f"{where}: operation {len(ops) - 1} diverged: {why}",
        f"  operation:  {ops[-1]!r}",
        f"  ArcticDB:   {expected!r}",
        f"  arcticlite: {actual!r}",
        f"  sequence so far:\n{history}",
    ]


def test_generator_is_deterministic() -> None:
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    assert len(generate(3)) == N_OPS


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed_{s}") for s in range(N_SEEDS)])
def test_differential(seed: int, engines: Any, library_pair: tuple[Any, Any]) -> None:
    lib_adb, lib_lite = library_pair
    backend = engines.backend
    label = f" on {backend} (rerun: pytest 'tests/compat/test_differential.py::test_differential[{backend}-seed_{seed}]')"
    divergence = replay(seed, lib_adb, lib_lite, label=label)
    if divergence:
        known = known_difference(divergence)
        if known is not None:
            pytest.xfail(f"{known} -- {divergence[0]}")
        pytest.fail("\n".join(divergence), pytrace=False)


#: Divergences arcticlite does not reproduce yet, by the operation they first show at; each is
#: listed in the issue notes. Anything else fails the test.
KNOWN_DIFFERENCES: dict[str, str] = {}


def known_difference(divergence: list[str]) -> str | None:
    op = divergence[1].split("operation:", 1)[1].strip()
    for prefix, reason in KNOWN_DIFFERENCES.items():
        if op.startswith(prefix):
            return reason
    return None
