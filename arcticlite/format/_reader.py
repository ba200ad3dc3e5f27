"""Fermion reader: footer first, then only the metadata of the columns asked for.

Opening reads the footer (and, in the same request, the tail of the file: CIT, name index
and schema entries of small files). Reading k columns reads k name-index windows, k CIT
entries, k schema entries and k CMBs — never anything proportional to the total column count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import (
    ArcticException,
    CorruptDataError,
    InvalidFileError,
    SchemaException,
    UserInputException,
)
from arcticlite.format import _codec
from arcticlite.format import _filter as F
from arcticlite.format import _layout as L
from arcticlite.format._decode import Collector, plan_flat, plan_whole
from arcticlite.format._meta import (
    ColumnMeta,
    Footer,
    lookup_names,
    parse_cmb,
    read_cit,
    read_fields,
    read_footer,
    read_schema_meta,
)
from arcticlite.format._range import DEFAULT_PREFETCH, META_GAP, RangeReader
from arcticlite.format._types import FLAT_KINDS

EAGER_CMB_THRESHOLD = 64 * 1024
MIN_DECODE_BUDGET = 4 << 30
EXPANSION_LIMIT = 4096
"""A read may decode at most max(4 GiB, 4096 × file size) bytes of buffers."""
"""CMB areas up to this size are read in one request whenever any CMB is needed."""

_INTERNAL = (ValueError, IndexError, TypeError, OverflowError, KeyError, AssertionError,
             MemoryError, UnicodeDecodeError, pa.ArrowException)

Intervals = list[tuple[int, int]]


def _guard(fn: Any) -> Any:
    """Translate any internal failure on corrupt bytes into CorruptDataError."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ArcticException:
            raise
        except _INTERNAL as exc:
            raise CorruptDataError(f"corrupt Fermion data: {type(exc).__name__}: {exc}") from exc
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _intersect(a: Intervals, b: Intervals) -> Intervals:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _merge(iv: Intervals) -> Intervals:
    out: Intervals = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        elif a < b:
            out.append((a, b))
    return out


class FermionReader:
    """Random access to a Fermion file: metadata, statistics and column reads.

    Parameters
    ----------
    source
        Bytes-like (zero-copy), a path, a binary file object, or a range callback
        ``(offset, length) -> bytes`` (then ``size=`` is required).
    size
        File size, for a callback source.
    prefetch
        Bytes read from the end of the file when opening (footer + CIT + schema of small files).
    coalesce_gap
        Data ranges closer than this are fetched in one request (default: 1 MiB for a range
        callback, 64 KiB for local files and memory).
    eager_cmb_threshold
        A CMB area up to this size is read whole on first use (else only the CMBs needed).
    parallel
        Decode pages in the shared thread pool.

    Raises
    ------
    CorruptDataError
        (``InvalidFileError``, ``FormatEOFError``, ``ChecksumError``, ``UnsupportedVersionError``)
        when the bytes are not a valid Fermion file.

    Notes
    -----
    Safe to share between threads for reads once opened (caches are filled idempotently).
    """

    @_guard
    def __init__(self, source: Any, *, size: int | None = None, prefetch: int = DEFAULT_PREFETCH,
                 coalesce_gap: int | None = None, eager_cmb_threshold: int = EAGER_CMB_THRESHOLD,
                 parallel: bool = True) -> None:
        self._rr = source if isinstance(source, RangeReader) else RangeReader(source, size=size, prefetch=prefetch)
        self.gap = coalesce_gap
        self.eager_cmb_threshold = eager_cmb_threshold
        self.parallel = parallel
        self.footer: Footer = read_footer(self._rr)
        self.max_decoded_bytes = max(MIN_DECODE_BUDGET, EXPANSION_LIMIT * self._rr.size)
        """Reads whose decoded buffers would exceed this raise InvalidFileError (no allocation)."""
        self._entries: dict[int, np.void] = {}
        self._fields: dict[int, pa.Field] = {}
        self._cmeta: dict[int, ColumnMeta] = {}
        self._cmb_area: memoryview | None = None
        self._schema: pa.Schema | None = None
        self._schema_meta: Any = False
        self._batches: tuple[np.ndarray, np.ndarray] | None = None
        self._stripe_rows: list[int] | None = None
        self._names: dict[str, int] = {}
        self._starts: list[int] | None = None

    # ------------------------------------------------------------------ properties
    @property
    def range_reader(self) -> RangeReader:
        """The underlying :class:`RangeReader` (request and byte counters)."""
        return self._rr

    @property
    def num_rows(self) -> int:
        return self.footer.num_rows

    @property
    def num_columns(self) -> int:
        return self.footer.num_columns

    @property
    def num_stripes(self) -> int:
        return self.footer.num_stripes

    @property
    def batch_mode(self) -> bool:
        return self.footer.batch_mode

    @property
    def version(self) -> tuple[int, int]:
        return self.footer.version

    @property
    def metadata(self) -> dict[bytes, bytes] | None:
        """Schema-level metadata."""
        if self._schema_meta is False:
            self._schema_meta = _guard(read_schema_meta)(self._rr, self.footer)
        return self._schema_meta

    @property
    def schema(self) -> pa.Schema:
        """The full Arrow schema (reads every schema entry: O(number of columns))."""
        if self._schema is None:
            idx = list(range(self.num_columns))
            self._load_fields(idx)
            self._schema = pa.schema([self._fields[i] for i in idx], metadata=self.metadata)
        return self._schema

    @property
    def column_names(self) -> list[str]:
        return self.schema.names

    # ------------------------------------------------------------------ metadata access
    @_guard
    def _load_entries(self, idx: Sequence[int]) -> None:
        need = sorted({i for i in idx if i not in self._entries})
        if need:
            for i, e in zip(need, read_cit(self._rr, self.footer, need), strict=True):
                self._entries[i] = e

    @_guard
    def _load_fields(self, idx: Sequence[int]) -> None:
        self._load_entries(idx)
        need = sorted({i for i in idx if i not in self._fields})
        if need:
            for i, f in zip(need, read_fields(self._rr, [self._entries[i] for i in need]), strict=True):
                self._fields[i] = f

    @_guard
    def _load_cmbs(self, idx: Sequence[int]) -> None:
        need = sorted({i for i in idx if i not in self._cmeta})
        if not need:
            return
        system = self.num_columns if self.batch_mode else -1
        self._load_fields([i for i in need if i != system])
        self._load_entries(need)
        fo = int(self.footer["cmb_area_offset"])
        flen = int(self.footer["cmb_area_length"])
        if self._cmb_area is None and flen <= self.eager_cmb_threshold:
            self._cmb_area = self._rr.read(fo, flen)
        todo = [i for i in need if not int(self._entries[i]["flags"]) & L.CIT_ALL_NULL]
        if self._cmb_area is not None:
            bufs = [self._cmb_area[int(self._entries[i]["cmb_offset"]) - fo :][: int(self._entries[i]["cmb_length"])] for i in todo]
        else:
            bufs = self._rr.read_many([(int(self._entries[i]["cmb_offset"]), int(self._entries[i]["cmb_length"])) for i in todo], gap=META_GAP)
        got = dict(zip(todo, bufs, strict=True))
        for i in need:
            fld = pa.field("__batch_meta__", pa.int64()) if i == system else self._fields[i]
            cm = parse_cmb(i, fld, self._entries[i], got.get(i, b""), self.footer, fo,
                           system=i == system)
            if not cm.all_null:
                rows = cm.stripe_rows.tolist()
                if self._stripe_rows is None:
                    self._stripe_rows = rows
                    self._starts = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)]).tolist()
                elif rows != self._stripe_rows:
                    raise InvalidFileError("columns disagree on stripe boundaries")
            self._cmeta[i] = cm

    @_guard
    def resolve(self, columns: Sequence[str | int] | None) -> list[int]:
        """Column indices of ``columns`` (names or positions; None: all)."""
        if columns is None:
            return list(range(self.num_columns))
        if isinstance(columns, str | int):
            columns = [columns]
        out: list[int | None] = [None] * len(columns)
        names: list[tuple[int, str]] = []
        for k, c in enumerate(columns):
            if isinstance(c, int | np.integer) and not isinstance(c, bool):
                if not 0 <= int(c) < self.num_columns:
                    raise SchemaException(f"column index {c} out of range (0..{self.num_columns - 1})")
                out[k] = int(c)
            elif isinstance(c, str):
                names.append((k, c))
            else:
                raise UserInputException(f"column {c!r} must be a name or an index")
        known = [(k, n) for k, n in names if n in self._names]
        for k, n in known:
            out[k] = self._names[n]
        names = [(k, n) for k, n in names if n not in self._names]
        if names:
            cands = lookup_names(self._rr, self.footer, [n for _, n in names])
            self._load_fields(sorted({c for cs in cands for c in cs}))
            for (k, name), cs in zip(names, cands, strict=True):
                for c in sorted(cs):
                    if self._fields[c].name == name:
                        out[k] = self._names[name] = c
                        break
                else:
                    raise SchemaException(f"column {name!r} is not in this segment")
        return [int(i) for i in out]  # type: ignore[arg-type]

    def field(self, column: str | int) -> pa.Field:
        """Arrow field of one column (reads one schema entry)."""
        i = self.resolve([column])[0]
        self._load_fields([i])
        return self._fields[i]

    def column_meta(self, column: str | int) -> ColumnMeta:
        """Parsed CMB of one column (reads one CIT entry and one CMB)."""
        i = self.resolve([column])[0]
        self._load_cmbs([i])
        return self._cmeta[i]

    def page_stats(self, column: str | int) -> list[dict[str, Any]]:
        """Per-page statistics of a column, without reading data.

        Returns
        -------
        list of dict
            One dict per page: ``stripe``, ``node``, ``stream``, ``page``, ``rows`` (items),
            ``nulls``, ``min``, ``max`` (None without stats; 8-byte prefixes for strings),
            ``encoding`` (id), ``compressed`` and ``raw`` sizes, ``offset``.
        """
        cm = self.column_meta(column)
        out = []
        for s, spec in enumerate(cm.specs):
            node = cm.nodes[int(cm.streams[s]["node"])] if len(cm.streams) else cm.nodes[0]
            kind = {"i": "<i8", "u": "<u8", "f": "<f8", "s": "<u8"}.get(node.stats, "")
            for st, pages in enumerate(cm.pages[s]):
                for k, p in enumerate(pages):
                    has = int(p["flags"]) & L.FLAG_HAS_STATS and kind
                    mn = np.frombuffer(p["min"].tobytes(), kind)[0].item() if has else None
                    mx = np.frombuffer(p["max"].tobytes(), kind)[0].item() if has else None
                    out.append({"stripe": st, "node": node.index, "stream": L.STREAM_NAMES[spec.stream_type],
                                "page": k, "rows": int(p["item_count"]), "nulls": int(p["null_count"]),
                                "min": mn, "max": mx, "encoding": int(p["encoding"]),
                                "compressed": int(p["length"]), "raw": int(p["raw_length"]),
                                "offset": int(p["offset"])})
        return out

    def describe_page(self, offset: int, length: int) -> str:
        """Name of the encoding cascade of the page stored at ``offset`` (reads the page)."""
        return str(_codec.describe(self._rr.read(offset, length)))

    # ------------------------------------------------------------------ reading
    def stripe_starts(self) -> list[int]:
        """First row of each stripe, then the row count (reads one CMB)."""
        for i in range(self.num_columns):
            self._load_cmbs([i])
            if self._starts is not None:
                return list(self._starts)
        return [0, self.num_rows] if self.num_rows else [0]

    def _stripe_starts(self, cm: ColumnMeta | None) -> list[int]:
        return self._starts if self._starts is not None else [0, self.num_rows]

    def _prune(self, term: F.Term, i: int) -> Intervals | None:
        """Row intervals that may match ``term`` (None: no pruning possible)."""
        cm = self._cmeta[i]
        if cm.all_null:
            return []
        node = cm.nodes[0]
        if node.kind not in FLAT_KINDS or len(node.streams) < 2:
            return None
        starts = self._stripe_starts(cm)
        ds = node.streams[1]
        kind = node.stats
        out: Intervals = []
        for st in range(self.num_stripes):
            vs = int(cm.streams[node.streams[0]]["desc_type"])
            chunks = cm.chunks[node.streams[0]]
            if vs == L.DESC_FORCE_NULL or (chunks is not None and int(chunks[st]["flags"]) & L.FLAG_ALL_NULL):
                continue
            pg = cm.pages[ds][st]
            if not len(pg):
                continue
            keep = F.may_match(term, node.type, kind, pg["min"], pg["max"],
                               pg["flags"].astype(np.int64), pg["null_count"].astype(np.int64),
                               pg["item_count"].astype(np.int64))
            base = int(starts[st])
            for k in np.flatnonzero(keep):
                a = base + int(pg[k]["first_item"])
                out.append((a, a + int(pg[k]["item_count"])))
        return _merge(out)

    @_guard
    def read(self, columns: Sequence[str | int] | None = None, filter: Any = None,
             row_range: tuple[int, int] | None = None, with_batch_ids: bool = False) -> pa.Table:
        """Read columns as an Arrow table.

        Parameters
        ----------
        columns
            Names or indices (None: all), in the order wanted.
        filter
            ``(column, op, value)`` or a list of them, ANDed (see :mod:`._filter`). Pages whose
            min/max cannot match are skipped before they are fetched or decompressed; the
            remaining rows are filtered exactly.
        row_range
            ``(start, stop)`` rows of the file (clipped), before the filter.
        with_batch_ids
            Add ``batch_id`` and ``index_in_batch`` columns (batch-mode files only).
        """
        idx = self.resolve(columns)
        terms = F.parse(filter)
        fidx = self.resolve([t.column for t in terms]) if terms else []
        extra = [c for c in dict.fromkeys(fidx) if c not in idx]
        allidx = idx + extra
        self._load_cmbs(allidx)
        ivs: Intervals = [(0, self.num_rows)] if self.num_rows else []
        if row_range is not None:
            a, b = (max(0, int(row_range[0])), min(self.num_rows, int(row_range[1])))
            ivs = _intersect(ivs, [(a, b)] if a < b else [])
        for t, i in zip(terms, fidx, strict=True):
            p = self._prune(t, i)
            if p is not None:
                ivs = _intersect(ivs, p)
        coll = Collector(self.max_decoded_bytes)
        fins = [self._plan_column(self._cmeta[i], ivs, coll) for i in allidx]
        coll.run(self._rr, gap=self.gap, parallel=self.parallel)
        arrays = [pa.chunked_array(f(), type=self._fields[i].type) for f, i in zip(fins, allidx, strict=True)]
        fields = [self._fields[i] for i in allidx]
        if with_batch_ids:
            bid, bix = self._batch_columns(ivs)
            arrays += [pa.chunked_array([bid]), pa.chunked_array([bix])]
            fields += [pa.field("batch_id", pa.int64()), pa.field("index_in_batch", pa.int64())]
        nrows = sum(b - a for a, b in ivs)
        schema = pa.schema(fields, metadata=self.metadata)
        if arrays:
            table = pa.Table.from_arrays(arrays, schema=schema)
        else:
            table = pa.table({"_": pa.nulls(nrows)}, metadata=self.metadata).select([])
        if terms:
            table = table.filter(F.expression(terms))
        if extra:
            keep = len(idx)
            names = list(range(keep)) + list(range(keep + len(extra), table.num_columns))
            table = table.select(names)
        return table

    def _plan_column(self, cm: ColumnMeta, ivs: Intervals, coll: Collector) -> Any:
        t = cm.field.type
        if cm.all_null:
            return lambda: [pa.nulls(b - a, t) for a, b in ivs]
        starts = self._stripe_starts(cm)
        per: list[Any] = []
        flat = cm.nodes[0].kind in FLAT_KINDS
        for st in range(self.num_stripes):
            s0, s1 = int(starts[st]), int(starts[st + 1])
            local = [(max(a, s0) - s0, min(b, s1) - s0) for a, b in ivs if a < s1 and b > s0]
            if not local:
                continue
            whole = local == [(0, s1 - s0)]
            if flat:
                per.append(plan_flat(cm, 0, st, coll, None if whole else local))
            else:
                fin = plan_whole(cm, 0, st, coll)
                per.append(lambda fin=fin, local=local: [fin().slice(a, b - a) for a, b in local])
        return lambda: [a for f in per for a in f()]

    # ------------------------------------------------------------------ batches
    def _batch_meta(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.batch_mode:
            raise UserInputException("this file was not written in batch mode (append_batch)")
        if self._batches is None:
            i = self.num_columns
            self._load_cmbs([i])
            cm = self._cmeta[i]
            coll = Collector()
            outs = []
            for s in (0, 1):
                for st in range(self.num_stripes):
                    pg = cm.pages[s][st]
                    n = int(cm.node_lengths[st, 0])
                    if n and not len(pg):
                        raise InvalidFileError("batch meta without pages")
                    from arcticlite.format._decode import _fixed_plan

                    outs.append(_fixed_plan(pg, coll, np.dtype(np.int64), n))
            coll.run(self._rr, parallel=False)
            k = self.num_stripes
            ids = np.concatenate(outs[:k]) if k else np.zeros(0, np.int64)
            lens = np.concatenate(outs[k:]) if k else np.zeros(0, np.int64)
            if (lens < 0).any() or int(lens.sum()) != self.num_rows:
                raise InvalidFileError("batch lengths do not add up to the file's rows")
            self._batches = (ids, lens)
        return self._batches

    def _batch_columns(self, ivs: Intervals) -> tuple[pa.Array, pa.Array]:
        ids, lens = self._batch_meta()
        starts = np.concatenate([[0], np.cumsum(lens)])
        rows = np.concatenate([np.arange(a, b) for a, b in ivs]) if ivs else np.zeros(0, np.int64)
        bi = np.searchsorted(starts, rows, side="right") - 1
        return pa.array(ids[bi]), pa.array(rows - starts[bi])

    @_guard
    def batch_ids(self) -> np.ndarray:
        """Batch ids in file order (batch-mode files)."""
        return self._batch_meta()[0].copy()

    @_guard
    def read_batch(self, batch_id: int, columns: Sequence[str | int] | None = None,
                   with_batch_ids: bool = False) -> pa.Table:
        """Rows of one batch, reading only the pages that hold it."""
        ids, lens = self._batch_meta()
        hit = np.flatnonzero(ids == batch_id)
        if not len(hit):
            raise UserInputException(f"batch {batch_id} is not in this file")
        k = int(hit[0])
        start = int(lens[:k].sum())
        return self.read(columns, row_range=(start, start + int(lens[k])), with_batch_ids=with_batch_ids)

    def close(self) -> None:
        self._rr.close()

    def __enter__(self) -> FermionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
