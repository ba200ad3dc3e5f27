"""Fermion reader: footer first, then only the metadata of the columns asked for.

Opening reads the footer (and, in the same request, the tail of the file: CIT, name index
and schema entries of small files). Reading k columns reads k name-index windows, k CIT
entries, k schema entries and k CMBs — never anything proportional to the total column count.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import accumulate
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
from arcticlite.format import _bloom as B
from arcticlite.format import _codec
from arcticlite.format import _filter as F
from arcticlite.format import _late as LATE
from arcticlite.format import _layout as L
from arcticlite.format._decode import (
    Collector,
    _fixed_plan,
    _state,
    binary_into,
    bits_into,
    fixed_into,
    plan_flat,
    plan_whole,
)
from arcticlite.format._intervals import Intervals, intersect_intervals, merge_intervals
from arcticlite.format._meta import (
    P_ITEMS,
    CitEntry,
    ColumnMeta,
    Footer,
    lookup_names,
    parse_cmb,
    read_cit,
    read_fields,
    read_footer,
    read_schema_meta,
)
from arcticlite.format._objects import FAST as OBJECTS_BY_POINTER
from arcticlite.format._objects import Labels
from arcticlite.format._range import DEFAULT_PREFETCH, META_GAP, RangeReader
from arcticlite.format._types import BINARY, BOOL, DICT, FIXED, FLAT_KINDS, NULL, build_nodes

EAGER_CMB_THRESHOLD = 64 * 1024
MIN_DECODE_BUDGET = 4 << 30
EXPANSION_LIMIT = 4096
"""A read may decode at most max(4 GiB, 4096 × file size) bytes of buffers."""
"""CMB areas up to this size are read in one request whenever any CMB is needed."""

_INTERNAL = (ValueError, IndexError, TypeError, OverflowError, KeyError, AssertionError,
             MemoryError, UnicodeDecodeError, struct.error, pa.ArrowException)

_SCHEMAS: dict[tuple[int, ...], tuple[list[pa.Field], Any, pa.Schema]] = {}
_SYSTEM_FIELD = pa.field("__batch_meta__", pa.int64())
EAGER_FILE_BYTES = 64 * 1024
"""In-memory files up to this size decode each page as it is planned (no job list): their
reads are too small for the thread pool to pay."""


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


def _object_type(t: pa.DataType) -> pa.DataType:
    """Arrow type whose ``to_numpy`` gives ``str`` (string types) or ``bytes`` objects."""
    return pa.large_string() if pa.types.is_string(t) or pa.types.is_large_string(t) else pa.large_binary()


_read_schema_meta = _guard(read_schema_meta)


class _What:
    """``"out array for column 'x' (type)"``, formatted only when an error message uses it."""

    __slots__ = ("field",)

    def __init__(self, field: pa.Field) -> None:
        self.field = field

    def __str__(self) -> str:
        return f"out array for column {self.field.name!r} ({self.field.type})"


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
        self._entries: dict[int, CitEntry] = {}
        self._fields: dict[int, pa.Field] = {}
        self._cmeta: dict[int, ColumnMeta] = {}
        self._cmb_area: memoryview | None = None
        self._schema: pa.Schema | None = None
        self._schema_meta: Any = False
        self._batches: tuple[np.ndarray, np.ndarray] | None = None
        self._stripe_rows: list[int] | None = None
        self._names: dict[str, int] = {}
        self._starts: list[int] | None = None
        self._bloom_dir: B.Directory | None | bool = False
        self._blooms: dict[int, Any] = {}
        self._matched: tuple[Intervals, dict[int, Any]] | None = None  # see match_rows
        self.ruled_out = 0
        """Rows of the last :meth:`match_rows`'s range its statistics and Bloom filters ruled out."""

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
        m = self._meta()
        return None if m is None else dict(m)

    def _meta(self) -> dict[bytes, bytes] | None:
        """The schema metadata (shared, memoised: not to be modified)."""
        if self._schema_meta is False:
            self._schema_meta = _read_schema_meta(self._rr, self.footer)
        return self._schema_meta

    @property
    @_guard
    def schema(self) -> pa.Schema:
        """The full Arrow schema (reads every schema entry: O(number of columns))."""
        if self._schema is None:
            idx = list(range(self.num_columns))
            self._load_fields(idx)
            self._schema = pa.schema([self._fields[i] for i in idx], metadata=self._meta())
        return self._schema

    @property
    def column_names(self) -> list[str]:
        return self.schema.names

    # ------------------------------------------------------------------ metadata access
    # The loaders below run inside guarded public methods (corrupt bytes -> CorruptDataError).
    def _load_entries(self, idx: Sequence[int]) -> None:
        entries = self._entries
        need = [i for i in idx if i not in entries]
        if need:
            need = sorted(set(need))
            for i, e in zip(need, read_cit(self._rr, self.footer, need), strict=True):
                entries[i] = e

    def _load_fields(self, idx: Sequence[int]) -> None:
        fields = self._fields
        need = [i for i in idx if i not in fields]
        if need:
            need = sorted(set(need))
            self._load_entries(need)
            for i, f in zip(need, read_fields(self._rr, [self._entries[i] for i in need]), strict=True):
                fields[i] = f

    def _load_cmbs(self, idx: Sequence[int]) -> None:
        cmeta = self._cmeta
        need = [i for i in idx if i not in cmeta]
        if not need:
            return
        if len(need) > 1:
            need = sorted(set(need))
        footer = self.footer
        system = footer.num_columns if footer.batch_mode else -1
        self._load_fields(need if system < 0 else [i for i in need if i != system])
        self._load_entries(need)
        entries, fields = self._entries, self._fields
        fo = footer.cmb_area_offset
        area = self._cmb_area
        if area is None and footer.cmb_area_length <= self.eager_cmb_threshold:
            area = self._cmb_area = self._rr.read(fo, footer.cmb_area_length)
        got: dict[int, Any] = {}
        if area is None:
            todo = [i for i in need if not entries[i].flags & L.CIT_ALL_NULL]
            got = dict(zip(todo, self._rr.read_many(
                [(entries[i].cmb_offset, entries[i].cmb_length) for i in todo], gap=META_GAP),
                strict=True))
        for i in need:
            e = entries[i]
            if area is not None:
                buf = area[e.cmb_offset - fo : e.cmb_offset - fo + e.cmb_length]
            else:
                buf = got.get(i, b"")
            is_sys = i == system
            cm = parse_cmb(i, _SYSTEM_FIELD if is_sys else fields[i], e, buf, footer, fo,
                           system=is_sys)
            if not cm.all_null:
                rows = cm.srows
                if self._stripe_rows is None:
                    self._stripe_rows = rows
                    self._starts = [0, *accumulate(rows)]
                elif rows != self._stripe_rows:
                    raise InvalidFileError("columns disagree on stripe boundaries")
            cmeta[i] = cm

    @_guard
    def resolve(self, columns: Sequence[str | int] | None) -> list[int]:
        """Column indices of ``columns`` (names or positions; None: all)."""
        if columns is None:
            return list(range(self.num_columns))
        if isinstance(columns, str | int):
            columns = [columns]
        cached = self._names
        if all(isinstance(c, str) and c in cached for c in columns):
            return [cached[c] for c in columns]  # type: ignore[index]
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

    @_guard
    def field(self, column: str | int) -> pa.Field:
        """Arrow field of one column (reads one schema entry)."""
        i = self.resolve([column])[0]
        self._load_fields([i])
        return self._fields[i]

    @_guard
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
    @_guard
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
        nulls_match = term.op in ("isnull", "!=")  # a null is null, and differs from every value
        if cm.all_null:
            return [(0, self.num_rows)] if nulls_match and self.num_rows else []
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
                if nulls_match:
                    out.append((int(starts[st]), int(starts[st + 1])))
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
        return merge_intervals(out)

    # ------------------------------------------------------------------ Bloom filters
    def _bloom_directory(self) -> B.Directory | None:
        """The bloom section's directory (None when the file has none); one ranged read,
        often served by the tail prefetched with the footer."""
        if self._bloom_dir is False:
            length = self.footer["bloom_length"] if self.footer.version[1] >= L.VERSION_MINOR_BLOOM else 0
            if not length:
                self._bloom_dir = None
            else:
                start = self.footer.cmb_area_offset - length
                if start < L.HEADER_SIZE or length < B.HEADER.size:
                    raise InvalidFileError("bloom section outside the data area")
                head = self._rr.read(start, min(length, 4096))
                _, n, _ = B.HEADER.unpack_from(head)
                need = B.HEADER.size + B.ENTRY.size * n
                if need > len(head) and need <= length:
                    head = self._rr.read(start, need)
                self._bloom_dir = B.Directory(head, start, length, self.num_columns)
        return self._bloom_dir  # type: ignore[return-value]

    @_guard
    def bloom_columns(self) -> dict[str, int]:
        """Columns holding a Bloom filter, with the filter's size in bytes (reads the bloom
        section's directory only)."""
        d = self._bloom_directory()
        if d is None:
            return {}
        self._load_fields(list(d.entries))
        return {self._fields[i].name: e[3] for i, e in sorted(d.entries.items())}

    def _bloom_bits(self, i: int) -> tuple[int, Any] | None:
        d = self._bloom_directory()
        if d is None or i not in d.entries:
            return None
        got = self._blooms.get(i)
        if got is None:
            kind, _k, off, nbytes, cks = d.entries[i]
            bits = self._rr.read(off, nbytes)
            if L.checksum(bits) != cks:
                raise CorruptDataError("Bloom filter checksum mismatch; the segment is corrupt")
            got = self._blooms[i] = (kind, bits)
        return got

    @_guard
    def bloom_may_contain(self, column: str | int, values: Sequence[Any]) -> bool | None:
        """Whether any of ``values`` may be a value of ``column`` by its Bloom filter: False
        proves that none is; None when the column has no filter (or a value cannot be put in
        the column's type exactly). Reads the filter only (one ranged read)."""
        i = self.resolve([column])[0]
        got = self._bloom_bits(i)
        if got is None:
            return None
        kind, bits = got
        self._load_fields([i])
        h = B.query_hashes(list(values), self._fields[i].type, kind)
        if h is None:
            return None
        return bool(B.contains(bits, h).any()) if len(h) else False

    def _bloom_excludes(self, term: F.Term, i: int) -> bool:
        if term.op not in ("==", "in"):
            return False
        values = term.value if term.op == "in" else [term.value]
        return self.bloom_may_contain(i, values) is False

    # ------------------------------------------------------------------ candidates
    @_guard
    def may_match(self, filter: Any, row_range: tuple[int, int] | None = None, *, bloom: bool = True) -> bool:
        """Whether any row of ``row_range`` (default: all) may satisfy ``filter`` (as for
        :meth:`read`), judged by page statistics (and Bloom filters, unless ``bloom=False``)
        alone: False proves that none does. Reads only metadata."""
        return bool(self.candidate_rows(filter, row_range, bloom=bloom))

    @_guard
    def candidate_rows(self, filter: Any, row_range: tuple[int, int] | None = None, *,
                       bloom: bool = True) -> Intervals:
        """Half-open row intervals of ``row_range`` (default: all) whose pages may hold a row
        satisfying ``filter``: rows outside them provably do not. Judged by page min/max and
        null counts, and by Bloom filters for ``==`` / ``in`` terms unless ``bloom=False``.
        Reads only metadata (and the filters)."""
        terms = F.parse(filter)
        return self._candidates(terms, row_range, bloom=bloom)

    def _candidates(self, terms: list[F.Term], row_range: tuple[int, int] | None,
                    bloom: bool = False) -> Intervals:
        """Rows of ``row_range`` (clipped; default all) whose pages may match every term."""
        cols = F.columns_of(terms)
        idx = dict(zip(cols, self.resolve(cols), strict=True)) if cols else {}
        self._load_cmbs(list(idx.values()))
        ivs: Intervals = [(0, self.num_rows)] if self.num_rows else []
        if row_range is not None:
            a, b = (max(0, int(row_range[0])), min(self.num_rows, int(row_range[1])))
            ivs = intersect_intervals(ivs, [(a, b)] if a < b else [])
        return self._and(terms, idx, ivs, bloom)

    def _and(self, terms: list[F.Term], idx: dict[str, int], ivs: Intervals, bloom: bool) -> Intervals:
        for t in terms:
            if not ivs:
                break
            if t.op == "or":
                ivs = merge_intervals([iv for alt in t.value for iv in self._and(alt, idx, ivs, bloom)])
                continue
            i = idx[t.column]
            p = self._prune(t, i)
            if p is not None:
                ivs = intersect_intervals(ivs, p)
            if ivs and bloom and self._bloom_excludes(t, i):
                ivs = []
        return ivs

    @_guard
    def read(self, columns: Sequence[str | int] | None = None, filter: Any = None,
             row_range: tuple[int, int] | None = None, with_batch_ids: bool = False,
             rows: Intervals | None = None) -> pa.Table:
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
        rows
            Sorted, disjoint half-open row intervals to read (of ``row_range``): only their
            pages are fetched, and the result holds their rows in order (e.g. the intervals
            :meth:`candidate_rows` gave for another file of the same rows).
        """
        idx = self.resolve(columns)
        terms = F.parse(filter) if filter is not None else []
        fidx = self.resolve(F.columns_of(terms)) if terms else []
        extra = [c for c in dict.fromkeys(fidx) if c not in idx]
        allidx = idx + extra
        self._load_cmbs(allidx)
        ivs = self._candidates(terms, row_range, bloom=True)
        if rows is not None:
            ivs = intersect_intervals(ivs, merge_intervals([(max(0, int(a)), min(self.num_rows, int(b))) for a, b in rows]))
        coll = self._collector()
        fins = [self._plan_column(self._cmeta[i], ivs, coll) for i in allidx]
        coll.run(self._rr, gap=self.gap, parallel=self.parallel)
        arrays: list[Any] = []
        for f, i in zip(fins, allidx, strict=True):
            parts = f()
            arrays.append(parts[0] if len(parts) == 1 else
                          pa.chunked_array(parts, type=self._fields[i].type))
        meta = self._meta()
        if with_batch_ids:
            bid, bix = self._batch_columns(ivs)
            fields = [self._fields[i] for i in allidx]
            arrays += [bid, bix]
            fields += [pa.field("batch_id", pa.int64()), pa.field("index_in_batch", pa.int64())]
            schema = pa.schema(fields, metadata=meta)
        else:
            schema = self._schema_of(allidx, meta)
        if arrays:
            table = pa.Table.from_arrays(arrays, schema=schema)
        else:
            nrows = sum(b - a for a, b in ivs)
            table = pa.table({"_": pa.nulls(nrows)}, metadata=meta).select([])
        if terms:
            table = table.filter(F.expression(terms))
        if extra:
            keep = len(idx)
            names = list(range(keep)) + list(range(keep + len(extra), table.num_columns))
            table = table.select(names)
        return table

    @_guard
    def match_rows(self, filter: Any, row_range: tuple[int, int] | None = None,
                   rows: Intervals | None = None, *, prune: bool = True) -> np.ndarray:
        """File rows (sorted int64) of ``row_range`` and ``rows`` (intervals, as for
        :meth:`read`) that may satisfy ``filter``, decoding only its columns' pages of the
        candidate rows (page statistics and Bloom filters first). Conservative: rows where a
        filter column is null, or where a comparison cannot be made, are kept; every row that
        satisfies ``filter`` is. Dictionary-encoded string pages are judged on their dictionary
        and codes. With :meth:`take`: late materialisation. ``prune=False``: the caller already
        judged the statistics and Bloom filters (``rows``), they are not read again."""
        terms = F.parse(filter)
        a, b = (0, self.num_rows) if row_range is None else \
            (max(0, int(row_range[0])), min(self.num_rows, int(row_range[1])))
        if prune:
            ivs = self._candidates(terms, row_range, bloom=True)
            self.ruled_out = max(0, b - a) - sum(y - x for x, y in ivs)
        else:
            ivs = [(a, b)] if a < b else []
            self.ruled_out = 0
        if rows is not None:
            ivs = intersect_intervals(ivs, merge_intervals([(max(0, int(a)), min(self.num_rows, int(b)))
                                                            for a, b in rows]))
        cols = F.columns_of(terms)
        idx = dict(zip(cols, self.resolve(cols), strict=True))
        self._load_cmbs(list(idx.values()))
        metas = {c: self._cmeta[i] for c, i in idx.items()}
        starts = self._stripe_starts(None)
        keep: dict[str, Any] = {}
        sel = LATE.match_rows(terms, ivs, metas, starts, self._collector(),
                              lambda coll: coll.run(self._rr, gap=self.gap, parallel=self.parallel),
                              self._plan_column, keep)
        # what was decoded to judge the rows, for take() to take them from (until close)
        self._matched = (ivs, {idx[c]: col for c, col in keep.items()})
        return sel

    @_guard
    def count_sorted(self, column: str | int, values: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """For a column whose values are sorted ascending (int64 or timestamp, no nulls): the
        file rows ``np.searchsorted(column, values, "left")`` and ``"right"`` (``values``:
        int64, e.g. nanoseconds), searching each page without decoding it where its encoding
        allows (plain, a regular sequence, bit-packed values). None when the column does not
        qualify (read it and search it)."""
        i = self.resolve([column])[0]
        self._load_cmbs([i])
        vals = np.asarray(values, dtype=np.int64)
        return LATE.count_sorted(self._cmeta[i], self._stripe_starts(None), vals, self._collector(),
                                 lambda coll: coll.run(self._rr, gap=self.gap, parallel=False))

    @_guard
    def read_dictionary(self, column: str | int, row_range: tuple[int, int] | None = None) -> pa.ChunkedArray | None:
        """Rows ``row_range`` (default all) of a string / binary column without nulls whose
        pages there are all dictionary-encoded (``binary-dict``), as a chunked dictionary array:
        each page's int32 codes into its own dictionary, the strings never built. None when the
        column does not qualify (read it with :meth:`read`)."""
        i = self.resolve([column])[0]
        self._load_cmbs([i])
        a, b = (0, self.num_rows) if row_range is None else \
            (max(0, int(row_range[0])), min(self.num_rows, int(row_range[1])))
        return LATE.dictionary_column(self._cmeta[i], self._stripe_starts(None), (a, b), self._collector(),
                                      lambda coll: coll.run(self._rr, gap=self.gap, parallel=self.parallel))

    @_guard
    def take(self, columns: Sequence[str | int] | None, rows: Any) -> pa.Table:
        """Rows ``rows`` (file rows, sorted, unique) of ``columns`` (None: all) as an Arrow
        table: only the pages holding them are fetched and decoded, and a dictionary-encoded
        string page builds the strings of the rows taken only."""
        idx = self.resolve(columns)
        sel = np.asarray(rows, dtype=np.int64)
        if len(sel) and (int(sel[0]) < 0 or int(sel[-1]) >= self.num_rows):
            raise UserInputException(f"rows must lie in [0, {self.num_rows}) of the file")
        if len(sel) > 1 and not bool((np.diff(sel) > 0).all()):
            raise UserInputException("rows must be sorted and unique")
        if not len(sel):  # no row: the columns' types alone (no column metadata parsed)
            self._load_fields(idx)
            return self._schema_of(idx, self._meta()).empty_table()
        self._load_cmbs(idx)
        coll = self._collector()
        starts = self._stripe_starts(None)
        ivs, known = self._matched if self._matched is not None else ([], {})
        fins = [LATE.plan_take(self._cmeta[i], starts, sel, coll, known.get(i), ivs) for i in idx]
        coll.run(self._rr, gap=self.gap, parallel=self.parallel)
        schema = self._schema_of(idx, self._meta())
        if not idx:
            return pa.table({"_": pa.nulls(len(sel))}, metadata=schema.metadata).select([])
        return pa.Table.from_arrays([f() for f in fins], schema=schema)

    @_guard
    def read_into(self, columns: Sequence[str | int], out: Sequence[np.ndarray],
                  row_range: tuple[int, int] | None = None, *, populate: bool = False,
                  null_objects: bool = False, labels: Labels | None = None
                  ) -> list[np.ndarray | None]:
        """Decode rows of columns straight into caller-owned numpy arrays.

        Parameters
        ----------
        columns
            Names or indices.
        out
            One 1-D, C-contiguous, writable array per column, each of length ``b - a`` for the
            rows ``[a, b)`` read. What each column kind needs:

            - numbers, timestamps, durations, dates, times (fixed width): any non-object
              dtype of the column's value width (e.g. an int64 view of a datetime64[ns]
              buffer). Pages are decoded straight into ``out``; plain pages inside the range
              are one copy from the source (one ``preadv`` for local files).
            - string / binary (and large_*): dtype object, filled with ``str`` / ``bytes``.
              A dictionary-encoded page converts its dictionary once and fills its rows by
              ``numpy.take``, so equal values of a page share one object.
            - dictionary of strings / binary: dtype object, filled with the values (one
              object per dictionary entry and stripe).
            - bool: a 1-byte non-object dtype (0/1), or object (``True``/``False``).
            - decimal, fixed_size_binary, list, struct, map, fixed_size_list: dtype object,
              filled from the Arrow array (``to_numpy(zero_copy_only=False)``).
            - null type / all-null columns: any of the above.
        row_range
            ``(start, stop)`` rows of the file, clipped to it; None reads every row.
        populate
            ``out`` is fresh memory: map each page's share of it just before decoding into
            it (:func:`arcticlite.format.populate`), which costs less system time than the
            first-touch faults and leaves the zeroed pages in cache for the decoder. The
            values are the same either way.
        null_objects
            The object arrays in ``out`` come from :func:`arcticlite.format.object_array`
            with every slot NULL (only where :data:`arcticlite.format.OBJECTS_BY_POINTER`):
            dictionary-coded strings are then written as pointers outside the GIL, and pages
            with the same dictionary share its objects. Same values either way.
        labels
            With ``null_objects``: the :class:`arcticlite.format.Labels` that keeps the
            dictionary objects, so that calls on one thread (the segments of one read) share
            them; a fresh one per call by default. Never share one between threads.

        Returns
        -------
        list
            Per column: None when every row read is valid, else a bool array (True = valid)
            of length ``b - a``. Null slots of object outputs hold None; those of other
            outputs hold unspecified values.

        Raises
        ------
        UserInputException
            A wrong number, length, shape, dtype or itemsize of ``out`` arrays, or a column
            kind that cannot fill the given dtype; raised before anything is written.
        CorruptDataError
            Corrupt bytes (checksums and structure are verified as by :meth:`read`).
        """
        if isinstance(columns, str | int):
            columns = [columns]
        if isinstance(out, np.ndarray) or not isinstance(out, Sequence):
            raise UserInputException("out must be a list of numpy arrays, one per column")
        idx = self.resolve(columns)
        if len(out) != len(idx):
            raise UserInputException(f"{len(idx)} columns but {len(out)} out arrays: pass one "
                                     "array per column")
        a, b = 0, self.num_rows
        if row_range is not None:
            a, b = max(0, int(row_range[0])), min(self.num_rows, int(row_range[1]))
        n = max(0, b - a)
        self._load_fields(idx)
        modes = [self._into_mode(i, o, n) for i, o in zip(idx, out, strict=True)]
        if not n:
            return [None] * len(idx)
        self._load_cmbs(idx)
        coll = self._collector()
        coll.populate = populate
        if null_objects and OBJECTS_BY_POINTER:
            coll.labels = Labels() if labels is None else labels
        try:
            fins = [self._plan_into(self._cmeta[i], mode, o, a, b, coll)
                    for i, mode, o in zip(idx, modes, out, strict=True)]
            coll.run(self._rr, gap=self.gap, parallel=self.parallel)
        finally:
            if coll.labels is not None:  # before anything reads or overwrites the slots
                coll.labels.flush()
        return [f() for f in fins]

    def _into_mode(self, i: int, o: Any, n: int) -> str:
        """How column ``i`` fills ``o`` (see :meth:`read_into`); UserInputException if it cannot."""
        f = self._fields[i]
        what = _What(f)
        if not isinstance(o, np.ndarray):
            raise UserInputException(f"{what} is a {type(o).__name__}: pass a numpy array")
        if o.ndim != 1 or not o.flags.c_contiguous:
            raise UserInputException(f"{what} must be 1-D and C-contiguous (got shape {o.shape}, "
                                     f"strides {o.strides}): pass e.g. a row of a C-ordered block")
        if not o.flags.writeable:
            raise UserInputException(f"{what} is read-only: pass a writable array")
        if len(o) != n:
            raise UserInputException(f"{what} has {len(o)} rows but the row range holds {n}: "
                                     f"pass an array of length {n}")
        obj = o.dtype.hasobject
        if obj and o.dtype != np.dtype(object):
            raise UserInputException(f"{what} has dtype {o.dtype}: pass dtype object or a "
                                     "numeric dtype")
        if not obj and o.dtype.byteorder == ">":
            raise UserInputException(f"{what} has big-endian dtype {o.dtype}: pass a "
                                     "native (little-endian) dtype")
        nodes = build_nodes(f.type)[0]
        node = nodes[0]
        if node.kind == NULL:
            return "null"
        if node.kind == FIXED:
            assert node.dtype is not None
            w = node.dtype.itemsize
            if obj or o.dtype.itemsize != w:
                raise UserInputException(f"{what} holds {w}-byte values but has dtype {o.dtype}: "
                                         f"pass a numeric array of itemsize {w} "
                                         f"(e.g. {node.dtype.name} or a view of it)")
            return "fixed"
        if node.kind == BOOL and not obj:
            if o.dtype.itemsize != 1:
                raise UserInputException(f"{what} has dtype {o.dtype}: pass dtype bool (or "
                                         "object)")
            return "bits"
        if not obj:
            raise UserInputException(f"{what} is filled with Python objects, not {o.dtype}: "
                                     "pass an array of dtype object")
        if node.kind == BINARY:
            return "binary"
        if node.kind == DICT:
            if nodes[node.children[0]].kind != BINARY:
                raise UserInputException(f"read_into fills dictionary columns of strings or "
                                         f"binary only, not column {f.name!r} ({f.type}): "
                                         "use read()")
            return "dict"
        return "arrow"

    def _plan_into(self, cm: ColumnMeta, mode: str, dst: np.ndarray, a: int, b: int,
                   coll: Collector) -> Any:
        """Register the page jobs filling ``dst`` with rows ``[a, b)``; returns the finisher
        (which returns the validity mask or None)."""
        n = b - a
        if cm.all_null or mode == "null":
            if dst.dtype.hasobject:
                dst[:] = None
            return lambda: np.zeros(n, dtype=bool)
        if mode == "arrow":
            fin = self._plan_column(cm, [(a, b)], coll)

            def from_arrow() -> np.ndarray | None:
                valid: np.ndarray | None = None
                pos = 0
                for arr in fin():
                    m = len(arr)
                    dst[pos : pos + m] = arr.to_numpy(zero_copy_only=False)
                    if arr.null_count:
                        if valid is None:
                            valid = np.ones(n, dtype=bool)
                        valid[pos : pos + m] = arr.is_valid().to_numpy(zero_copy_only=False)
                    pos += m
                if pos != n:
                    raise InvalidFileError("decoded column has the wrong length")
                return valid
            return from_arrow
        node = cm.nodes[0]
        starts = self._stripe_starts(cm)
        mask: np.ndarray | None = None
        dicts: list[tuple[int, int, np.ndarray, Any]] = []
        ds = node.streams[1]
        for st in range(self.num_stripes):
            s0, s1 = starts[st], starts[st + 1]
            lo, hi = max(a, s0) - s0, min(b, s1) - s0
            if lo >= hi:
                continue
            d0, d1 = s0 + lo - a, s0 + hi - a
            vstate = _state(cm, node.streams[0], st)
            if vstate != "valid" and mask is None:
                mask = np.ones(n, dtype=bool)
            if vstate == "null":
                assert mask is not None
                mask[d0:d1] = False
                continue
            dpages = cm.plist[ds][st]
            if s1 > s0 and not len(dpages):
                raise InvalidFileError("a non-null node has no data pages")
            if vstate == "pages":
                assert mask is not None
                vpages = cm.plist[node.streams[0]][st]
                if [p[P_ITEMS] for p in vpages] != [p[P_ITEMS] for p in dpages]:
                    raise InvalidFileError("validity and data pages are not aligned")
                bits_into(vpages, coll, lo, hi, mask[d0:d1].view(np.uint8), validity=True)
            if mode == "fixed":
                assert node.dtype is not None
                fixed_into(dpages, coll, node.dtype, lo, hi, dst[d0:d1].view(node.dtype))
            elif mode == "bits":
                bits_into(dpages, coll, lo, hi, dst[d0:d1].view(np.uint8), validity=False)
            elif mode == "binary":
                binary_into(dpages, coll, lo, hi, dst[d0:d1], _object_type(node.type))
            else:  # dict: indices now, the dictionary after the run
                assert node.dtype is not None
                coll.reserve((hi - lo) * node.dtype.itemsize)
                codes = np.empty(hi - lo, dtype=node.dtype)
                fixed_into(dpages, coll, node.dtype, lo, hi, codes)
                dicts.append((d0, d1, codes, plan_whole(cm, node.children[0], st, coll)))

        def finish() -> np.ndarray | None:
            valid = mask
            for d0, d1, codes, child in dicts:
                d = child()
                if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= max(len(d), 1)):
                    raise InvalidFileError("dictionary index out of range")
                if not len(d):
                    if valid is None or valid[d0:d1].any():
                        raise InvalidFileError("dictionary index out of range")
                    continue
                objs = d.to_numpy(zero_copy_only=False)
                np.take(objs, codes, out=dst[d0:d1], mode="clip")
                if d.null_count:
                    if valid is None:
                        valid = np.ones(n, dtype=bool)
                    valid[d0:d1] &= d.is_valid().to_numpy(zero_copy_only=False)[codes]
            if valid is None or valid.all():
                return None
            if dst.dtype.hasobject:
                dst[~valid] = None
            return valid

        return finish

    def _collector(self) -> Collector:
        rr = self._rr
        eager = rr.in_memory and (rr.size <= EAGER_FILE_BYTES or not self.parallel)
        return Collector(self.max_decoded_bytes, rr if eager else None)

    def _schema_of(self, idx: list[int], meta: dict[bytes, bytes] | None) -> pa.Schema:
        """The schema of columns ``idx``, memoised across readers: segments of one symbol
        share the (memoised) field objects and metadata dict."""
        fields = [self._fields[i] for i in idx]
        key = (*map(id, fields), id(meta))
        hit = _SCHEMAS.get(key)
        if hit is not None and hit[1] is meta and all(a is b for a, b in zip(hit[0], fields,
                                                                             strict=True)):
            return hit[2]
        schema = pa.schema(fields, metadata=meta)
        if len(_SCHEMAS) >= 1024:
            _SCHEMAS.clear()
        _SCHEMAS[key] = (fields, meta, schema)  # holds the keyed objects: ids stay theirs
        return schema

    def _plan_column(self, cm: ColumnMeta, ivs: Intervals, coll: Collector) -> Any:
        t = cm.field.type
        if cm.all_null:
            return lambda: [pa.nulls(b - a, t) for a, b in ivs]
        starts = self._stripe_starts(cm)
        flat = cm.nodes[0].kind in FLAT_KINDS
        if len(starts) == 2 and ivs == [(0, starts[1])]:  # one stripe, every row
            if flat:
                return plan_flat(cm, 0, 0, coll, None)
            fin = plan_whole(cm, 0, 0, coll)
            return lambda: [fin()]
        per: list[Any] = []
        for st in range(self.num_stripes):
            s0, s1 = starts[st], starts[st + 1]
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
                    pg = cm.plist[s][st]
                    n = cm.nl[st][0]
                    if n and not len(pg):
                        raise InvalidFileError("batch meta without pages")
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
        self._matched = None
        self._rr.close()

    def __enter__(self) -> FermionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
