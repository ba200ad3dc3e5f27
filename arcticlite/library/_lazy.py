"""Lazy reads (ArcticDB's ``LazyDataFrame`` API): a read request plus query clauses, run by
``collect()``; collections of them (``read_batch(lazy=True)``) and their concatenation
(``concat`` / ``read_batch_and_join``).

A :class:`LazyDataFrame` is a :class:`~arcticlite.QueryBuilder` bound to one read request, so
every clause method (filters through ``ldf[ldf["x"] > 0]``, ``apply``, ``groupby``/``agg``,
``resample``, ``date_range``, ``head``, ``tail``, ``row_range``) adds to the query that the read
will run; nothing is read before :meth:`LazyDataFrame.collect`.

Joining: the symbols' results are concatenated row-wise in the order given (``join="outer"``:
every column of any symbol, a column missing from a symbol backfilled as a dynamic-schema read
backfills it -- 0 for integers, ``False`` for bools, NaN / NaT for floats and timestamps,
``None`` otherwise; ``"inner"``: the columns every symbol has). Row-numbered symbols (RangeIndex)
join numbered on from the first one's start by the step they all have (0, 1, 2, ... when their
steps differ), as in ArcticDB. The clauses that follow the join then run on the joined rows with
the same engine as single-symbol queries.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import pandas as pd

from arcticlite.exceptions import (
    ArcticInvalidApiUsageException,
    SchemaException,
    UserInputException,
)
from arcticlite.library._types import ReadRequest, VersionedItem
from arcticlite.query import QueryBuilder


class Reader(Protocol):
    """What lazy frames need of a library: its reads (``arcticlite.Library`` provides them)."""

    def read(self, symbol: str, *args: Any, **kwargs: Any) -> Any: ...


__all__ = [
    "LazyDataFrame",
    "LazyDataFrameAfterJoin",
    "LazyDataFrameCollection",
    "VersionedItemWithJoin",
    "concat",
    "join_items",
]

JOINS = ("outer", "inner")


class VersionedItemWithJoin(NamedTuple):
    """The result of a join: the versions read (``data`` of each is None) and the joined data.

    Attributes
    ----------
    versions : list of VersionedItem
        One per symbol joined, in order.
    data : Any
        The joined rows, after the clauses that follow the join.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
    >>> joined = adb.concat([lib.read("A", lazy=True), lib.read("B", lazy=True)]).collect()
    >>> [v.symbol for v in joined.versions], len(joined.data)
    (['A', 'B'], 4)
    """

    versions: list[VersionedItem]
    data: Any

    def __repr__(self) -> str:
        return f"VersionedItemWithJoin(versions={self.versions!r}, data={self.data!r})"


def _check_join(join: str) -> str:
    if join not in JOINS:
        raise UserInputException(f"E_INVALID_USER_ARGUMENT join must be 'outer' or 'inner', got {join!r}")
    return join


def _plain(clauses: Sequence[tuple[str, Any]]) -> QueryBuilder | None:
    if not clauses:
        return None
    q = QueryBuilder()
    q.clauses = list(clauses)
    return q


class LazyDataFrame(QueryBuilder):
    """A read of one symbol with query clauses, run by :meth:`collect` (``read(lazy=True)``).

    Nothing is read until :meth:`collect`; the clause methods of :class:`QueryBuilder` add
    to it (``lazy[cond]`` returns a new frame). Make one with ``lib.read(symbol,
    lazy=True, ...)`` rather than directly.

    Parameters
    ----------
    lib : Library
        The library to read from.
    read_request : ReadRequest
        The symbol and the read's arguments; its ``query_builder``'s clauses start the frame's.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
    >>> lazy = lib.read("A", lazy=True)
    >>> lazy = lazy[lazy["px"] > 1.5]
    >>> lazy
    LazyDataFrame(ReadRequest(symbol=A) | FILTER((> Column["px"] 1.5)))
    >>> lazy.collect().data["px"].tolist()
    [2.0]
    """

    def __init__(self, lib: Reader, read_request: ReadRequest) -> None:
        super().__init__()
        self._lib = lib
        self.read_request = read_request
        if read_request.query_builder is not None:
            self.clauses = list(read_request.query_builder.clauses)

    def _to_read_request(self) -> ReadRequest:
        """The read request with this frame's clauses as its query."""
        return self.read_request._replace(query_builder=_plain(self.clauses))

    def collect(self) -> VersionedItem:
        """Read the symbol and run the clauses (one ``Library.read``).

        Returns
        -------
        VersionedItem
            The version read, with the query's result as ``data``.

        Raises
        ------
        NoDataFoundException
            The symbol or version does not exist.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
        >>> lib.read("B", lazy=True).tail(1).collect().data["px"].tolist()
        [4.0]
        """
        return self._read(self.read_request.output_format)

    def _read(self, output_format: Any) -> VersionedItem:
        r = self._to_read_request()
        return self._lib.read(r.symbol, as_of=r.as_of, date_range=r.date_range,
                              row_range=r.row_range, columns=r.columns, query_builder=r.query_builder,
                              output_format=output_format, arrow_string_format_default=r.arrow_string_format_default,
                              arrow_string_format_per_column=r.arrow_string_format_per_column)

    def __setitem__(self, name: str, expression: Any) -> None:
        """``lazy_df["c"] = expr``: the same as ``lazy_df.apply("c", expr)``."""
        self.apply(name, expression)

    def __repr__(self) -> str:
        body = f"ReadRequest(symbol={self.read_request.symbol})"
        return f"LazyDataFrame({body}{' | ' + QueryBuilder.__repr__(self) if self.clauses else ''})"


class _Many(QueryBuilder):
    """Clause methods of a collection apply to every member frame."""

    _frames: list[LazyDataFrame]

    def _add(self, name: str, arg: Any) -> QueryBuilder:
        for f in self._frames:
            f._add(name, arg)
        return self

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return super().__getitem__(item)
        out = copy.copy(self)
        out._frames = [f[item] for f in self._frames]
        return out

    def agg(self, aggregations: dict[str, Any]) -> QueryBuilder:
        for f in self._frames:
            f.agg(aggregations)
        return self

    def then(self, other: QueryBuilder) -> QueryBuilder:
        for f in self._frames:
            f.then(other)
        return self

    def prepend(self, other: QueryBuilder) -> QueryBuilder:
        for f in self._frames:
            f.prepend(other)
        return self


class LazyDataFrameCollection(_Many):
    """Lazy reads of several symbols (``read_batch(lazy=True)``); clause methods apply to each.

    Parameters
    ----------
    lib : Library or list of LazyDataFrame
        The library (with ``frames``), or the lazy frames themselves (as ArcticDB takes them).
    frames : list of LazyDataFrame, optional
        The member frames.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
    >>> many = lib.read_batch(["A", "B"], lazy=True)
    >>> many = many[many["px"] >= 2.0]
    >>> [item.data["px"].tolist() for item in many.collect()]
    [[2.0], [3.0, 4.0]]
    """

    def __init__(self, lib: Any, frames: list[LazyDataFrame] | None = None) -> None:
        super().__init__()
        if frames is None:  # LazyDataFrameCollection(lazy_frames), as ArcticDB takes it
            frames = list(lib)
            lib = frames[0]._lib if frames else None
        self._lib = lib
        self._frames = list(frames)

    def __setitem__(self, name: str, expression: Any) -> None:
        """``collection["c"] = expr``: ``apply("c", expr)`` on every member frame."""
        for f in self._frames:
            f.apply(name, expression)

    def split(self) -> list[LazyDataFrame]:
        """The member frames, each a :class:`LazyDataFrame` (its clauses can then differ).

        Returns
        -------
        list of LazyDataFrame
            In order; changing one changes the collection's member too.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
        >>> a, b = lib.read_batch(["A", "B"], lazy=True).split()
        >>> a.head(1).collect().data["px"].tolist(), b.collect().data["px"].tolist()
        ([1.0], [3.0, 4.0])
        """
        return list(self._frames)

    def __iter__(self) -> Iterator[LazyDataFrame]:
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def collect(self) -> list[VersionedItem | Any]:
        """Read every symbol; a failed read comes back in place as a ``DataError`` (one
        ``read_batch``, in parallel where the store benefits).

        Returns
        -------
        list of VersionedItem or DataError
            In the order of the members.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
        >>> got = lib.read_batch(["A", "missing"], lazy=True).collect()
        >>> len(got[0].data), type(got[1]).__name__
        (2, 'DataError')
        """
        return self._lib.read_batch([f._to_read_request() for f in self._frames])

    def concat(self, join: str = "outer") -> LazyDataFrameAfterJoin:
        """Join the members row-wise (see :func:`concat`).

        Parameters
        ----------
        join : {"outer", "inner"}
            ``"outer"`` keeps every column, ``"inner"`` the columns all members have.

        Returns
        -------
        LazyDataFrameAfterJoin
            The join; clauses added to it run on the joined rows.

        Raises
        ------
        UserInputException
            ``join`` is neither ``"outer"`` nor ``"inner"``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
        >>> joined = lib.read_batch(["A", "B"], lazy=True).concat()
        >>> joined.collect().data["px"].tolist()
        [1.0, 2.0, 3.0, 4.0]
        """
        return LazyDataFrameAfterJoin(self._lib, self._frames, _check_join(join))

    def __repr__(self) -> str:
        return f"LazyDataFrameCollection({self._frames!r})"


class LazyDataFrameAfterJoin(QueryBuilder):
    """Lazy reads joined row-wise, and the clauses that run on the joined rows.

    Made by :func:`concat` or :meth:`LazyDataFrameCollection.concat`.

    Parameters
    ----------
    lib : Library
        The library the frames read from.
    frames : list of LazyDataFrame
        The reads joined, in order.
    join : {"outer", "inner"}
        Which columns the joined rows keep.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
    >>> joined = adb.concat([lib.read("A", lazy=True), lib.read("B", lazy=True)])
    >>> joined = joined[joined["px"] > 1.5]
    >>> joined.collect().data["px"].tolist()
    [2.0, 3.0, 4.0]
    """

    def __init__(self, lib: Reader, frames: list[LazyDataFrame], join: str) -> None:
        super().__init__()
        self._lib = lib
        self._frames = list(frames)
        self._join = join

    def collect(self) -> VersionedItemWithJoin:
        """Read every symbol (an error is raised, not returned), join and run the clauses.

        The members are read as pandas and joined in memory; the result is converted to the
        first member's output format, if any.

        Returns
        -------
        VersionedItemWithJoin
            The versions read and the joined data.

        Raises
        ------
        NoDataFoundException
            A symbol or version does not exist.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
        >>> item = adb.concat([lib.read("A", lazy=True), lib.read("B", lazy=True)]).head(3).collect()
        >>> item.data["px"].tolist()
        [1.0, 2.0, 3.0]
        """
        items = []  # joined as pandas, converted after
        for f in self._frames:  # in order: a pickled member is refused before later ones are read
            items.append(f._read("pandas"))
            if not isinstance(items[-1].data, pd.DataFrame | pd.Series):
                raise _pickled_join()
        fmt = next((f.read_request.output_format for f in self._frames if f.read_request.output_format), None)
        return join_items(self._lib, items, self._join, self.clauses, fmt)

    def __repr__(self) -> str:
        tail = " | ".join(["CONCAT", *(QueryBuilder.__repr__(self).split(" | ") if self.clauses else [])])
        return f"LazyDataFrameAfterJoin({self._frames!r} | {tail})"


def concat(lazy_dataframes: Sequence[LazyDataFrame] | LazyDataFrameCollection,
           join: str = "outer") -> LazyDataFrameAfterJoin:
    """Join lazy reads row-wise, in the order given.

    ``join="outer"`` keeps every column (those a symbol lacks are backfilled as a
    dynamic-schema read does), ``"inner"`` the columns all of them have. Clauses added to the
    result run on the joined rows. Nothing is read until ``collect()``, which reads each
    symbol whole (after its own clauses) and joins in memory.

    Parameters
    ----------
    lazy_dataframes : list of LazyDataFrame or LazyDataFrameCollection
        Lazy reads of one library (``read(..., lazy=True)`` / ``read_batch(..., lazy=True)``).
    join : {"outer", "inner"}
        Which columns the joined rows keep.

    Returns
    -------
    LazyDataFrameAfterJoin
        Call ``collect()`` for a ``VersionedItemWithJoin``.

    Raises
    ------
    ArcticInvalidApiUsageException
        No lazy frames were given, or they read different libraries.
    UserInputException
        ``join`` is neither ``"outer"`` nor ``"inner"``.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    >>> _ = lib.write("B", pd.DataFrame({"px": [3.0, 4.0]}, index=pd.date_range("2024-01-03", periods=2)))
    >>> _ = lib.write("C", pd.DataFrame({"px": [5.0], "size": [10]}, index=pd.date_range("2024-01-05", periods=1)))
    >>> outer = adb.concat([lib.read("A", lazy=True), lib.read("C", lazy=True)]).collect().data
    >>> outer.columns.tolist(), len(outer)
    (['px', 'size'], 3)
    >>> inner = adb.concat([lib.read("A", lazy=True), lib.read("C", lazy=True)], join="inner").collect().data
    >>> inner.columns.tolist()
    ['px']
    """
    frames = lazy_dataframes.split() if isinstance(lazy_dataframes, LazyDataFrameCollection) else list(lazy_dataframes)
    if not frames or not all(isinstance(f, LazyDataFrame) for f in frames):
        raise ArcticInvalidApiUsageException("concat needs a list of LazyDataFrames (read(..., lazy=True)) "
                                             "or a LazyDataFrameCollection (read_batch(..., lazy=True))")
    libs = {id(f._lib) for f in frames}
    if len(libs) != 1:
        raise ArcticInvalidApiUsageException("concat joins lazy reads of one library; read the others first")
    return LazyDataFrameAfterJoin(frames[0]._lib, frames, _check_join(join))


def _index_kind(index: pd.Index) -> str:
    if isinstance(index, pd.MultiIndex):
        return f"multi{index.nlevels}"
    if isinstance(index, pd.RangeIndex):
        return "range"
    if isinstance(index, pd.DatetimeIndex):
        return "datetime"
    return "other"


def _backfill(dtype: Any, n: int) -> Any:
    """A column of ``n`` rows missing from a symbol, as dynamic schema backfills it."""
    if isinstance(dtype, np.dtype):
        if dtype.kind in "iu":
            return np.zeros(n, dtype=dtype)
        if dtype.kind == "b":
            return np.zeros(n, dtype=bool)
        if dtype.kind in "fc":
            return np.full(n, np.nan, dtype=dtype)
        if dtype.kind in "mM":
            return np.full(n, np.datetime64("NaT") if dtype.kind == "M" else np.timedelta64("NaT"), dtype=dtype)
        return np.full(n, None, dtype=object)
    return pd.array([None] * n, dtype=dtype)  # extension dtypes hold their own missing value


def _levels(index: pd.Index) -> list[pd.Index]:
    if isinstance(index, pd.MultiIndex):
        return [index.get_level_values(i) for i in range(index.nlevels)]
    return [index]


def _common_time_zones(frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """Datetime index levels whose time zones differ between the frames (tz-aware and naive
    included) become naive UTC, as ArcticDB joins them; a level keeps its tz when every frame
    has the same one."""
    nlevels = frames[0].index.nlevels
    if len(frames) < 2 or any(f.index.nlevels != nlevels for f in frames):
        return frames
    per_frame = [_levels(f.index) for f in frames]
    mixed = []
    for lvl in range(nlevels):
        values = [levels[lvl] for levels in per_frame]
        if all(isinstance(v, pd.DatetimeIndex) for v in values) and len({str(v.tz) for v in values}) > 1:
            mixed.append(lvl)
    if not mixed:
        return frames
    out = []
    for f, levels in zip(frames, per_frame, strict=True):
        levels = list(levels)
        for lvl in mixed:
            v = levels[lvl]
            if v.tz is not None:
                levels[lvl] = v.tz_convert("UTC").tz_localize(None)
        index = (pd.MultiIndex.from_arrays(levels, names=f.index.names) if isinstance(f.index, pd.MultiIndex)
                 else pd.DatetimeIndex(levels[0], name=f.index.name))
        out.append(f.set_axis(index))
    return out


def _joined_range(frames: list[pd.DataFrame], n: int) -> pd.RangeIndex:
    """The row numbers of ``n`` rows joined from row-numbered ``frames``, as ArcticDB numbers
    them: on from the first frame's start by the step every frame shares (their starts aside),
    or 0, 1, 2, ... when the steps differ; named as the frames are when they agree."""
    indexes = [f.index for f in frames if isinstance(f.index, pd.RangeIndex)]
    steps = {ix.step for ix in indexes}
    start, step = (indexes[0].start, steps.pop()) if len(steps) == 1 else (0, 1)
    names = {ix.name for ix in indexes}
    return pd.RangeIndex(start, start + n * step, step, name=names.pop() if len(names) == 1 else None)


def _pickled_join() -> SchemaException:
    return SchemaException("E_DESCRIPTOR_MISMATCH Cannot perform multi-symbol join on pickled data: only "
                           "DataFrames and Series can be joined")


def join_items(lib: Reader, items: list[VersionedItem], join: str, clauses: Sequence[tuple[str, Any]],
               output_format: Any = None) -> VersionedItemWithJoin:
    """Join the pandas results ``items`` row-wise, run ``clauses`` on the joined rows and convert
    to ``output_format``."""
    from arcticlite import normalize as norm
    from arcticlite.query import QueryPlan, run_query

    is_series = [isinstance(it.data, pd.Series) for it in items]
    series_name: Any = None
    if any(is_series):
        if not all(is_series):
            raise SchemaException("E_DESCRIPTOR_MISMATCH Multi-symbol joins cannot join a Series to a DataFrame")
        names = {it.data.name for it in items}
        series_name = names.pop() if len(names) == 1 else None
        # Series join by position under one name (the common one; ArcticDB's result is unnamed
        # when the names differ)
        column = series_name if series_name is not None else "__series__"
        frames = [it.data.rename(column).to_frame() for it in items]
    else:
        frames = [it.data for it in items]
    if not all(isinstance(f, pd.DataFrame) for f in frames):
        raise _pickled_join()
    frames = _common_time_zones(frames)
    kinds = {_index_kind(f.index) for f in frames}
    if len(kinds) > 1:
        raise SchemaException(f"E_DESCRIPTOR_MISMATCH Mismatching IndexDescriptor in schema join: {sorted(kinds)}")
    if join == "inner":
        columns = [c for c in frames[0].columns if all(c in f.columns for f in frames[1:])]
    else:
        columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    dtypes: dict[Any, Any] = {}
    for f in frames:
        for c, t in f.dtypes.items():
            dtypes.setdefault(c, t)
    parts = []
    for f in frames:
        missing = [c for c in columns if c not in f.columns]
        if missing:
            f = f.copy(deep=False)
            for c in missing:
                f[c] = _backfill(dtypes[c], len(f))
        parts.append(f[columns])
    joined = pd.concat(parts, ignore_index=kinds == {"range"})
    if kinds == {"range"}:
        if not columns:
            joined = joined.iloc[:0]  # rows of a row-numbered join without a column: none (ArcticDB)
        joined.index = _joined_range(frames, len(joined))
    versions = [VersionedItem(symbol=it.symbol, library=it.library, data=None, version=it.version,
                              metadata=it.metadata, host=it.host, timestamp=it.timestamp) for it in items]
    fmt = norm.OutputFormat(output_format or "pandas")
    if all(is_series) and len(joined.columns) == 1:
        joined = joined.iloc[:, 0].rename(series_name)  # Series in, Series out
    if not clauses and fmt is norm.OutputFormat.PANDAS:
        return VersionedItemWithJoin(versions, joined)
    table, meta = norm.normalize(joined)
    if clauses:
        table, meta = run_query(table, meta, QueryPlan(columns=None, row_range=None, index_range=None,
                                                       clauses=list(clauses), output_columns=None))
    return VersionedItemWithJoin(versions, norm.denormalize(table, meta, output_format=fmt.value))

