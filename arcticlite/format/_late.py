"""Late materialisation: the rows a filter may keep, then only those rows of other columns.

:func:`match_rows` decodes only the filter's columns (only the pages of the candidate rows) and
evaluates its terms vectorised, keeping every row it cannot rule out — nulls included, so the
rows kept are a superset of those passing the filter under either null convention (Fermion's
``decode(filter=)``, where a null matches nothing, or the query engine's, where a null differs
from every value). A page of a string column stored as a dictionary (``binary-dict``) is judged
on its dictionary and its codes: the strings of the page are never built.

:func:`plan_take` registers the page jobs that gather given rows of one column: only the pages
holding them are fetched and decoded, and a dictionary-encoded string page builds the strings
of the rows taken only (a gather of their codes), not those of the whole page.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import InvalidFileError
from arcticlite.format import _enc_binary
from arcticlite.format import _filter as F
from arcticlite.format._decode import (
    PLAIN_ID,
    Collector,
    _check_offsets,
    _fixed_kernel,
    _state,
    concat_binary,
    plan_flat,
    plan_whole,
)
from arcticlite.format._enc_gather import gather_fixed, search_fixed, take_values
from arcticlite.format._intervals import Intervals
from arcticlite.format._meta import P_FIRST, P_ITEMS, P_RAW, ColumnMeta
from arcticlite.format._types import BINARY, FIXED, FLAT_KINDS, NULL

Finish = Callable[[], pa.Array]


# ----------------------------------------------------------------------------- terms on arrays
def term_mask(arr: Any, term: F.Term) -> np.ndarray:
    """Rows of ``arr`` (an Arrow array) that may satisfy the simple ``term``: True where it
    holds, where the value is null, and everywhere when the comparison cannot be made."""
    n = len(arr)
    try:
        if term.op == "isnull":
            res = pc.is_null(arr, nan_is_null=True)
        elif term.op == "notnull":
            res = pc.is_valid(arr)
        elif term.op in ("in", "not in"):
            values = pa.array(list(term.value))
            if values.type != arr.type and not pa.types.is_dictionary(arr.type):
                values = values.cast(arr.type)
            if pa.types.is_floating(arr.type):  # -0.0 equals 0.0, but Arrow's sets hash bits
                arr, values = pc.add(arr, 0.0), pc.add(values, 0.0)
            res = pc.is_in(arr, value_set=values)
            if term.op == "not in":
                res = pc.invert(res)
        elif term.op == "between":
            res = pc.and_kleene(pc.greater_equal(arr, term.value[0]), pc.less_equal(arr, term.value[1]))
        else:
            fn = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
                  ">": pc.greater, ">=": pc.greater_equal}[term.op]
            res = fn(arr, term.value)
        if res.null_count:
            res = res.fill_null(True)
        out = np.asarray(res.to_numpy(zero_copy_only=False), dtype=bool)
        if arr.null_count and term.op not in ("isnull", "notnull"):
            out |= ~np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)
        return out
    except (pa.ArrowException, TypeError, ValueError, OverflowError, KeyError):
        return np.ones(n, dtype=bool)


#: Up to this many dictionary entries pass a term, a page's codes are compared with each as
#: integers (one vectorised comparison each); beyond, the dictionary's mask is gathered by code.
_FEW_CODES = 4


class _Page:
    """One page of a filter column without nulls, decoded for filtering: for a string column,
    ``arr`` holds its dictionary (``binary-dict`` pages, whose codes are decoded on first use)
    or its values; for a fixed-width column, ``values`` holds them (a view of a plain page's
    bytes: valid while the file's buffer is)."""

    __slots__ = ("first", "count", "arr", "offsets", "data", "values", "is_dict", "_codes_fn", "_codes")

    def __init__(self, first: int, count: int, arr: pa.Array | None, offsets: np.ndarray | None = None,
                 data: np.ndarray | None = None, codes_fn: Callable[..., np.ndarray] | None = None,
                 values: np.ndarray | None = None) -> None:
        self.first, self.count, self.arr = first, count, arr
        self.offsets, self.data, self.values = offsets, data, values
        self.is_dict = codes_fn is not None
        self._codes_fn = codes_fn
        self._codes: np.ndarray | None = None

    def codes(self) -> np.ndarray:
        """The page's codes (a dictionary page), decoded on first use."""
        if self._codes is None:
            assert self._codes_fn is not None
            self._codes = self._codes_fn()
            self._codes_fn = None  # it holds the page's bytes
        return self._codes

    def codes_at(self, rows: np.ndarray) -> np.ndarray:
        """The codes of page rows ``rows`` only (gathered from the encoded codes when they
        were not decoded whole)."""
        if self._codes is None and self._codes_fn is not None:
            return self._codes_fn(rows)
        return self.codes()[rows]

    def mask(self, term: F.Term, a: int, b: int) -> np.ndarray | None:
        """``term`` on rows ``[a, b)`` of the page (page rows); None where no row passes
        (a dictionary without a passing value: its codes are not decoded)."""
        if self.values is not None:
            v = self.values[a:b]
            got = _numpy_mask(v, term)
            return got if got is not None else term_mask(pa.array(np.ascontiguousarray(v)), term)
        assert self.arr is not None
        found = _dictionary_hits(self.offsets, self.data, self.arr.type, term) if self.is_dict else None
        if found is not None:
            hits = found
            if len(hits) > _FEW_CODES:
                m = np.zeros(len(self.arr), dtype=bool)
                m[hits] = True
        else:
            m = term_mask(self.arr, term)
            if not self.is_dict:
                return m[a:b]
            hits = np.flatnonzero(m)
        if not len(hits):
            return None
        if len(hits) == len(self.arr):
            return np.ones(b - a, dtype=bool)
        codes = self.codes()[a:b]
        if len(hits) <= _FEW_CODES:
            kind = codes.dtype.type
            out = codes == kind(hits[0])
            for h in hits[1:]:
                out |= codes == kind(h)
            return out
        return m[codes]


#: A needle found more often than this inside a dictionary's bytes (a short value, part of many
#: entries) is looked up by comparing the entries of its length instead.
_MAX_FINDS = 16


def _dictionary_hits(offsets: np.ndarray | None, data: np.ndarray | None, typ: pa.DataType,
                     term: F.Term) -> np.ndarray | None:
    """Positions (sorted) of the dictionary entries (int64 ``offsets`` from 0 into uint8
    ``data``) equal to the value of an ``==`` term or to one of an ``in`` term's, for a string
    dictionary and ``str`` values (binary: ``bytes``); None when the term is of another kind
    (then Arrow judges). Entries of one width up to 8 bytes are compared as integers; a single
    value is otherwise searched in the dictionary's bytes and kept where it spans a whole
    entry; several values of a dictionary of mixed widths are left to Arrow's ``is_in``."""
    if offsets is None or data is None or term.op not in ("==", "in"):
        return None
    values = [term.value] if term.op == "==" else list(term.value)
    text = pa.types.is_large_string(typ) or pa.types.is_string(typ)
    needles = []
    try:
        for v in values:
            if text and isinstance(v, str):
                needles.append(v.encode("utf-8"))
            elif not text and isinstance(v, bytes):
                needles.append(v)
            else:
                return None
    except UnicodeEncodeError:
        return None
    regular = _enc_binary.regular_width(offsets) is not None
    offs = np.asarray(offsets, dtype=np.int64)
    size = len(offs) - 1
    keys = _fixed_width_keys(offs, data, regular)
    if keys is not None:  # entries of one width up to 8 bytes: one integer each
        width = int(offs[1])
        at = [np.flatnonzero(keys == np.frombuffer(nd.ljust(8, b"\0"), "<u8")[0])
              for nd in set(needles) if len(nd) == width]
        return np.unique(np.concatenate(at)) if at else np.zeros(0, dtype=np.int64)
    if len(set(needles)) > 1:
        return None  # several values: Arrow's is_in scans the dictionary once for all
    hay = np.asarray(data).tobytes()
    hits: set[int] = set()
    for needle in set(needles):
        n = len(needle)
        found = 0
        p = hay.find(needle) if n else -1
        while p >= 0 and found <= _MAX_FINDS:
            k = int(np.searchsorted(offs, p, "right")) - 1  # the last entry starting at p (others are empty)
            if k < size and int(offs[k]) == p and int(offs[k + 1]) - p == n:
                hits.add(k)
            found += 1
            p = hay.find(needle, p + 1)
        if n and found <= _MAX_FINDS:
            continue
        # empty or frequent needle: compare every entry of its length
        cand = np.flatnonzero(np.diff(offs) == n)
        if n and len(cand):
            spans = offs[cand, None] + np.arange(n)
            cand = cand[(np.asarray(data)[spans] == np.frombuffer(needle, np.uint8)).all(axis=1)]
        hits.update(cand.tolist())
    return np.array(sorted(hits), dtype=np.int64)


def _fixed_width_keys(offs: np.ndarray, data: np.ndarray, regular: bool = False) -> np.ndarray | None:
    """Each entry of a dictionary whose entries all have one width of 1 to 8 bytes (tickers,
    codes) as a uint64 (its bytes, zero-padded); None for any other dictionary. ``regular``:
    the offsets are known to be ``0, w, 2w, ...`` (not compared with them again)."""
    size = len(offs) - 1
    width = int(offs[1]) if size > 0 else 0
    if not 0 < width <= 8 or int(offs[-1]) != width * size \
            or not (regular or np.array_equal(offs, np.arange(0, width * size + 1, width))):
        return None
    buf = np.zeros(width * size + 8, dtype=np.uint8)  # 8 bytes readable from every entry
    buf[: width * size] = np.asarray(data)[: width * size]
    keys = np.ndarray((size,), dtype="<u8", buffer=buf, strides=(width,))
    return keys & np.uint64((1 << (8 * width)) - 1) if width < 8 else keys.copy()


_NUMPY_OPS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
              ">": np.greater, ">=": np.greater_equal}


def _exact_operand(v: Any, dtype: np.dtype) -> Any:
    """``v`` as a numpy scalar of ``dtype`` when numpy compares it with values of ``dtype``
    exactly as Arrow does (float64 values and a real number, int64 values and an int in
    range); None otherwise."""
    if isinstance(v, bool | np.bool_):
        return None
    if dtype == np.float64 and isinstance(v, int | float | np.integer | np.floating):
        f = float(v)
        return np.float64(f) if (not isinstance(v, int | np.integer) or int(f) == int(v)) else None
    if dtype == np.int64 and isinstance(v, int | np.integer) and -(1 << 63) <= int(v) < (1 << 63):
        return np.int64(int(v))
    return None


def _numpy_mask(v: np.ndarray, term: F.Term) -> np.ndarray | None:
    """A comparison ``term`` on the numpy values ``v`` (no nulls), None when numpy might
    compare differently from Arrow (then Arrow judges)."""
    if term.op in _NUMPY_OPS:
        x = _exact_operand(term.value, v.dtype)
        return None if x is None else np.asarray(_NUMPY_OPS[term.op](v, x))
    if term.op == "between":
        lo, hi = (_exact_operand(term.value[0], v.dtype), _exact_operand(term.value[1], v.dtype))
        if lo is None or hi is None:
            return None
        return (v >= lo) & (v <= hi)
    return None


class _Column:
    """One filter column decoded over the candidate rows: either an Arrow array of the rows
    (``values``, in the order of the intervals) or, for a string column without nulls, its
    pages (``pages``: :class:`_Page`, dictionaries judged before their codes are decoded)."""

    __slots__ = ("values", "pages")

    def __init__(self) -> None:
        self.values: Any = None
        self.pages: list[_Page] = []

    def mask(self, term: F.Term, ivs: Intervals, r0: int, n: int) -> np.ndarray:
        """``term`` on this column as a mask of the hull rows ``[r0, r0 + n)``."""
        out = np.zeros(n, dtype=bool)
        if self.values is not None:
            m = term_mask(self.values, term)
            pos = 0
            for a, b in ivs:
                out[a - r0 : b - r0] = m[pos : pos + b - a]
                pos += b - a
            return out
        for pg in self.pages:
            a, b = max(pg.first, r0), min(pg.first + pg.count, r0 + n)
            if a < b:
                pm = pg.mask(term, a - pg.first, b - pg.first)
                if pm is not None:
                    out[a - r0 : b - r0] = pm
        return out


def _string_pages(cm: ColumnMeta, starts: Sequence[int], ivs: Intervals, coll: Collector,
                  col: _Column) -> bool:
    """Plan the pages of a string column holding ``ivs`` as :class:`_Page` s into
    ``col.pages``; False when the column does not qualify (nulls, not a flat string)."""
    node = cm.nodes[0]
    if node.kind != BINARY:
        return False
    ds = node.streams[1]
    atype = pa.large_binary() if pa.types.is_large_binary(node.type) or pa.types.is_binary(node.type) \
        else pa.large_string()
    plans: list[tuple[tuple[Any, ...], int]] = []
    for st in range(len(starts) - 1):
        s0, s1 = starts[st], starts[st + 1]
        if not any(a < s1 and b > s0 for a, b in ivs):
            continue
        if _state(cm, node.streams[0], st) != "valid":
            return False
        for p in cm.plist[ds][st]:
            a, b = s0 + p[P_FIRST], s0 + p[P_FIRST] + p[P_ITEMS]
            if any(x < b and a < y for x, y in ivs):
                plans.append((p, a))
    for p, first in plans:
        def fn(mv: memoryview, first: int = first, cnt: int = p[P_ITEMS]) -> None:
            codes, offs, data = _enc_binary.decode_binary_lazy(mv, cnt, 0, _fixed_kernel)
            data = np.asarray(data).view(np.uint8)
            size = cnt if codes is None else len(offs) - 1
            _check_offsets(offs, data, size)
            arr = pa.Array.from_buffers(atype, size, [None, pa.py_buffer(offs), pa.py_buffer(data)])
            col.pages.append(_Page(first, cnt, arr, offs, data, codes))
        coll.add(p, fn)
    return True


def _fixed_pages(cm: ColumnMeta, starts: Sequence[int], ivs: Intervals, coll: Collector,
                 col: _Column) -> bool:
    """Plan the pages of an int64 / float64 column without nulls holding ``ivs`` as
    :class:`_Page` s of numpy values into ``col.pages`` (a plain page: a view of its bytes, no
    copy); False when the column does not qualify."""
    node = cm.nodes[0]
    if node.kind != FIXED or node.type not in (pa.int64(), pa.float64()):
        return False
    dtype = np.dtype(node.type.to_pandas_dtype())
    plans: list[tuple[tuple[Any, ...], int]] = []
    for st in range(len(starts) - 1):
        s0, s1 = starts[st], starts[st + 1]
        if not any(a < s1 and b > s0 for a, b in ivs):
            continue
        if _state(cm, node.streams[0], st) != "valid":
            return False
        for p in cm.plist[node.streams[1]][st]:
            a, b = s0 + p[P_FIRST], s0 + p[P_FIRST] + p[P_ITEMS]
            if any(x < b and a < y for x, y in ivs):
                if p[P_RAW] != p[P_ITEMS] * dtype.itemsize:
                    raise InvalidFileError("page size does not match its item count")
                plans.append((p, a))
    for p, first in plans:
        def fn(mv: memoryview, first: int = first, cnt: int = p[P_ITEMS]) -> None:
            if len(mv) == 1 + cnt * dtype.itemsize and mv[0] == PLAIN_ID:
                values = np.frombuffer(mv, dtype=dtype, count=cnt, offset=1)
            else:
                values = np.empty(cnt, dtype=dtype)
                _fixed_kernel(mv, dtype, cnt, values, 0)
            col.pages.append(_Page(first, cnt, None, values=values))
        coll.add(p, fn)
    return True


def count_sorted(cm: ColumnMeta, starts: Sequence[int], values: np.ndarray, coll: Collector,
                 run: Callable[[Collector], None]) -> tuple[np.ndarray, np.ndarray] | None:
    """For a column sorted ascending (int64 or timestamp, no nulls): how many of its values are
    less than, and how many at most, each of ``values`` (int64; the column's
    ``searchsorted`` "left" and "right"), summed over its pages -- each page searched without
    a decode where its encoding allows (a plain page in place, a regular sequence by
    arithmetic, see :func:`search_fixed`). None when the column does not qualify."""
    node = cm.nodes[0]
    if cm.all_null or node.kind != FIXED or not (node.type == pa.int64() or pa.types.is_timestamp(node.type)) \
            or getattr(node.type, "bit_width", 64) != 64:
        return None
    dtype = np.dtype(np.int64)
    pages: list[Any] = []
    for st in range(len(starts) - 1):
        if _state(cm, node.streams[0], st) != "valid":
            return None
        pages.extend(cm.plist[node.streams[1]][st])
    lo = np.zeros(len(values), dtype=np.int64)
    hi = np.zeros(len(values), dtype=np.int64)
    for p in pages:
        def fn(mv: memoryview, cnt: int = p[P_ITEMS]) -> None:
            got = search_fixed(mv, dtype, cnt, values)
            if got is None:
                page = np.empty(cnt, dtype=dtype)
                _fixed_kernel(mv, dtype, cnt, page, 0)
                got = np.searchsorted(page, values, "left"), np.searchsorted(page, values, "right")
            np.add(lo, got[0], out=lo)
            np.add(hi, got[1], out=hi)
        coll.add(p, fn)
    run(coll)
    return lo, hi


def match_rows(terms: list[F.Term], ivs: Intervals, metas: dict[str, ColumnMeta], starts: Sequence[int],
               coll: Collector, run: Callable[[Collector], None],
               plan_column: Callable[[ColumnMeta, Intervals, Collector], Any],
               keep: dict[str, _Column] | None = None) -> np.ndarray:
    """File rows of ``ivs`` (sorted, disjoint) that may satisfy ``terms`` (ANDed), as a sorted
    int64 array; ``metas``: the CMB of each filter column. ``keep`` (a dict) receives the
    decoded filter columns, for :func:`plan_take` to take rows from without decoding again;
    it must not outlive the buffer the pages were read from."""
    if not ivs:
        return np.zeros(0, dtype=np.int64)
    cols: dict[str, _Column] = {}
    fins: dict[str, Any] = {}
    for name, cm in metas.items():
        col = cols[name] = _Column()
        if cm.all_null or not (_string_pages(cm, starts, ivs, coll, col)
                               or _fixed_pages(cm, starts, ivs, coll, col)):
            col.pages = []
            fins[name] = plan_column(cm, ivs, coll)
    run(coll)
    for name, fin in fins.items():
        parts = fin()
        cols[name].values = parts[0] if len(parts) == 1 else pa.chunked_array(parts).combine_chunks()
    r0, r1 = ivs[0][0], ivs[-1][1]
    n = r1 - r0
    if len(terms) == 1 and terms[0].op != "or" and len(ivs) == 1:  # one term on one page: no masks to combine
        col = cols[terms[0].column]
        if col.values is None and len(col.pages) == 1 and col.pages[0].first <= r0 \
                and r1 <= col.pages[0].first + col.pages[0].count:
            pg = col.pages[0]
            pm = pg.mask(terms[0], r0 - pg.first, r1 - pg.first)
            if keep is not None:
                keep.update(cols)
            return np.zeros(0, dtype=np.int64) if pm is None else np.flatnonzero(pm).astype(np.int64, copy=False) + r0

    def conj(ts: list[F.Term]) -> np.ndarray:
        m = np.ones(n, dtype=bool)
        for t in ts:
            if t.op == "or":
                alt = np.zeros(n, dtype=bool)
                for a in t.value:
                    alt |= conj(a)
                m &= alt
            else:
                m &= cols[t.column].mask(t, ivs, r0, n)
            if not m.any():
                break
        return m

    keep_rows = conj(terms)
    if len(ivs) > 1:
        inside = np.zeros(n, dtype=bool)
        for a, b in ivs:
            inside[a - r0 : b - r0] = True
        keep_rows &= inside
    if keep is not None:
        keep.update(cols)
    return np.flatnonzero(keep_rows) + r0


def dictionary_column(cm: ColumnMeta, starts: Sequence[int], rows: tuple[int, int], coll: Collector,
                      run: Callable[[Collector], None]) -> pa.ChunkedArray | None:
    """File rows ``[a, b)`` of a string column without nulls whose pages there are all
    dictionary-encoded, as dictionary arrays (one chunk per page: its int32 codes into its
    own dictionary; the strings of the rows are never built); None when the column does not
    qualify."""
    a, b = rows
    node = cm.nodes[0]
    if a >= b or cm.all_null or node.kind != BINARY:
        return None
    col = _Column()
    if not _string_pages(cm, starts, [(a, b)], coll, col):
        return None
    run(coll)
    pages = sorted(col.pages, key=lambda pg: pg.first)
    if not pages or not all(pg.is_dict for pg in pages):
        return None
    assert pages[0].arr is not None
    typ = pa.dictionary(pa.int32(), pages[0].arr.type)
    chunks = []
    for pg in pages:
        lo, hi = max(pg.first, a), min(pg.first + pg.count, b)
        assert pg.offsets is not None and pg.data is not None
        offs, data = np.array(pg.offsets, dtype=np.int64), np.array(pg.data)  # own memory: the page may be a view
        dictionary = pa.Array.from_buffers(typ.value_type, len(offs) - 1, [None, pa.py_buffer(offs), pa.py_buffer(data)])
        codes = pg.codes()[lo - pg.first : hi - pg.first].astype(np.int32)
        chunks.append(pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), dictionary))
    return pa.chunked_array(chunks, typ)


# ----------------------------------------------------------------------------- taking rows
def _page_groups(pages: Sequence[tuple[Any, ...]], local: np.ndarray) -> list[tuple[int, int, int]]:
    """``(page, start, stop)``: the positions ``[start, stop)`` of ``local`` (sorted stripe
    rows) that fall in each page holding any of them."""
    if len(pages) == 1:
        return [(0, 0, len(local))] if len(local) else []
    firsts = np.fromiter((p[P_FIRST] for p in pages), dtype=np.int64, count=len(pages))
    which = np.searchsorted(firsts, local, "right") - 1
    ks, first_pos = np.unique(which, return_index=True)
    bounds = [*first_pos.tolist(), len(local)]
    return [(int(k), bounds[j], bounds[j + 1]) for j, k in enumerate(ks.tolist())]


def _take_strings(cm: ColumnMeta, st: int, local: np.ndarray, coll: Collector) -> Finish:
    """Rows ``local`` of a flat string column without nulls in stripe ``st``: each page holding
    some is decoded to codes (or values) and only the rows taken are gathered."""
    node = cm.nodes[0]
    ds = node.streams[1]
    pages = cm.plist[ds][st]
    odt = cm.specs[ds].dtype
    groups = _page_groups(pages, local)
    parts: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(groups)
    for j, (k, s, e) in enumerate(groups):
        p = pages[k]
        rel = local[s:e] - p[P_FIRST]

        def fn(mv: memoryview, j: int = j, rel: np.ndarray = rel, cnt: int = p[P_ITEMS]) -> None:
            codes, offs, data = _enc_binary.decode_binary_lazy(mv, cnt, 0, _fixed_kernel)
            data = np.asarray(data).view(np.uint8)
            size = cnt if codes is None else len(offs) - 1
            _check_offsets(offs, data, size)
            sel = rel if codes is None else codes(rel)
            parts[j] = _enc_binary._gather(np.asarray(offs, dtype=np.int64), data, sel, np.dtype(odt))

        coll.add(p, fn)
    n = len(local)
    fin = concat_binary(parts, odt, n)
    return lambda: pa.Array.from_buffers(node.type, n, [None, *fin()])


def _take_fixed(cm: ColumnMeta, st: int, local: np.ndarray, coll: Collector) -> Finish:
    """Rows ``local`` of a fixed-width column without nulls in stripe ``st``: a plain page
    gives its rows straight from its bytes, another is decoded into a page-sized temporary."""
    node = cm.nodes[0]
    dtype = node.dtype
    assert dtype is not None
    pages = cm.plist[node.streams[1]][st]
    work = np.dtype(f"<i{dtype.itemsize}") if dtype.kind in "mMb" else dtype
    n = len(local)
    coll.reserve(n * dtype.itemsize)
    out = np.empty(n, dtype=dtype)
    for k, s, e in _page_groups(pages, local):
        p = pages[k]
        if p[P_RAW] != p[P_ITEMS] * dtype.itemsize:
            raise InvalidFileError("page size does not match its item count")

        def fn(mv: memoryview, dst: np.ndarray = out[s:e], rel: np.ndarray = local[s:e] - p[P_FIRST],
               cnt: int = p[P_ITEMS]) -> None:
            got = gather_fixed(mv, work, cnt, rel)
            if got is not None:
                dst.view(work)[:] = got
                return
            values = np.empty(cnt, dtype=dtype)
            _fixed_kernel(mv, dtype, cnt, values, 0)
            np.take(values, rel, out=dst)

        coll.add(p, fn)
    return lambda: pa.Array.from_buffers(node.type, n, [None, pa.py_buffer(out)])


def _take_pages(cm: ColumnMeta, st: int, local: np.ndarray, coll: Collector) -> Finish:
    """Rows ``local`` of a flat column in stripe ``st``: the pages holding them are decoded
    (as a row-range read would) and the rows taken."""
    node = cm.nodes[0]
    pages = cm.plist[node.streams[1]][st]
    spans: Intervals = []
    for k, _s, _e in _page_groups(pages, local):
        a, b = pages[k][P_FIRST], pages[k][P_FIRST] + pages[k][P_ITEMS]
        if spans and spans[-1][1] == a:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    fin = plan_flat(cm, 0, st, coll, spans)
    lens = np.array([b - a for a, b in spans], dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(lens)[:-1]])
    starts = np.array([a for a, _ in spans], dtype=np.int64)
    j = np.searchsorted(starts, local, "right") - 1
    pos = local - starts[j] + before[j]

    def finish() -> pa.Array:
        arrs = fin()
        arr = arrs[0] if len(arrs) == 1 else pa.concat_arrays(arrs)
        return arr.take(pa.array(pos))
    return finish


def _taken(whole: Finish, local: np.ndarray) -> Finish:
    return lambda: whole().take(pa.array(local))


def plan_take(cm: ColumnMeta, starts: Sequence[int], rows: np.ndarray, coll: Collector,
              known: _Column | None = None, ivs: Intervals | None = None) -> Finish:
    """Register the page jobs gathering file rows ``rows`` (sorted int64) of one column;
    the finisher returns them as one array (or a chunked array over several stripes).
    ``known``: the column as :func:`match_rows` decoded it over the intervals ``ivs`` (which
    hold ``rows``): the rows are taken from it, nothing is fetched or decoded again."""
    if known is not None and ivs is not None and not cm.all_null:
        got = _take_known(cm, known, ivs, rows)
        if got is not None:
            return got
    t = cm.field.type
    n = len(rows)
    if cm.all_null:
        return lambda: pa.nulls(n, t)
    node = cm.nodes[0]
    cuts = np.searchsorted(rows, np.asarray(starts, dtype=np.int64), "left")
    per: list[Finish] = []
    for st in range(len(starts) - 1):
        local = rows[cuts[st] : cuts[st + 1]] - starts[st]
        if not len(local):
            continue
        m = len(local)
        vstate = _state(cm, node.streams[0], st) if node.kind != NULL else "null"
        if node.kind not in FLAT_KINDS:
            per.append(_taken(plan_whole(cm, 0, st, coll), local))
        elif vstate == "null":
            per.append(functools.partial(pa.nulls, m, t))
        elif node.kind == BINARY and vstate == "valid":
            per.append(_take_strings(cm, st, local, coll))
        elif node.kind == FIXED and vstate == "valid":
            per.append(_take_fixed(cm, st, local, coll))
        else:
            per.append(_take_pages(cm, st, local, coll))

    def finish() -> Any:
        arrs = [f() for f in per]
        if not arrs:
            return pa.array([], t)
        return arrs[0] if len(arrs) == 1 else pa.chunked_array(arrs, type=t)
    return finish


def _take_known(cm: ColumnMeta, known: _Column, ivs: Intervals, rows: np.ndarray) -> Finish | None:
    """Rows ``rows`` of a column :func:`match_rows` decoded (None: take them from the file)."""
    t = cm.field.type
    n = len(rows)
    if known.values is not None:
        vals = known.values
        if vals.type != t:
            return None
        firsts = np.array([a for a, _ in ivs], dtype=np.int64)
        lens = np.array([b - a for a, b in ivs], dtype=np.int64)
        before = np.concatenate([[0], np.cumsum(lens)[:-1]])
        iv = np.searchsorted(firsts, rows, "right") - 1
        if n and (int(iv.min()) < 0 or bool((rows - firsts[iv] >= lens[iv]).any())):
            return None
        pos = rows - firsts[iv] + before[iv]
        return lambda: vals.take(pa.array(pos))
    node = cm.nodes[0]
    pages = sorted(known.pages, key=lambda pg: pg.first)
    if not pages or node.kind not in (BINARY, FIXED):
        return None
    if len(pages) == 1:  # one page holds them all (the common case): no search
        if n and (int(rows[0]) < pages[0].first or int(rows[-1]) >= pages[0].first + pages[0].count):
            return None
        ks_list, bounds = [0], [0, n]
    else:
        firsts = np.array([pg.first for pg in pages], dtype=np.int64)
        which = np.searchsorted(firsts, rows, "right") - 1
        if n and (int(which.min()) < 0 or bool((rows - firsts[which] >= np.array([pg.count for pg in pages])[which]).any())):
            return None
        ks, at = np.unique(which, return_index=True)
        ks_list, bounds = ks.tolist(), [*at.tolist(), n]
    if node.kind == FIXED:
        if any(pg.values is None for pg in pages):
            return None
        out = np.empty(n, dtype=pages[0].values.dtype)  # type: ignore[union-attr]
        for j, k in enumerate(ks_list):
            pg = pages[k]
            lo, hi = int(bounds[j]), int(bounds[j + 1])
            assert pg.values is not None
            out[lo:hi] = take_values(pg.values, rows[lo:hi] - pg.first)
        return lambda: pa.Array.from_buffers(node.type, n, [None, pa.py_buffer(out)])
    odt = np.dtype(cm.specs[node.streams[1]].dtype)
    parts: list[tuple[np.ndarray, np.ndarray] | None] = []
    for j, k in enumerate(ks_list):
        pg = pages[k]
        rel = rows[int(bounds[j]) : int(bounds[j + 1])] - pg.first
        sel = pg.codes_at(rel) if pg.is_dict else rel
        assert pg.offsets is not None and pg.data is not None
        parts.append(_enc_binary._gather(np.asarray(pg.offsets, dtype=np.int64), pg.data, sel, odt))
    fin = concat_binary(parts, odt, n)
    return lambda: pa.Array.from_buffers(node.type, n, [None, *fin()])
