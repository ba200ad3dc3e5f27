"""``TableEngine``: the data operations of one library's symbols, under the version layer.

The façade (:class:`arcticlite.Library`) validates arguments and normalizes user objects;
this engine turns Arrow tables into segments and versions and back. It owns its options
and thread pools; it knows nothing of ``VersionedItem`` or pandas' API beyond assembling
DataFrame blocks for the fast read path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import UserInputException
from arcticlite.index import TableIndexIO
from arcticlite.storage import KVStore
from arcticlite.table._deltas import has_deltas
from arcticlite.table._fold import fold_now
from arcticlite.table._ops import Operation
from arcticlite.table._pools import Pools, shared
from arcticlite.table._prune import PruneStats, ReadExplain
from arcticlite.table._read import ReadPlan, plan_read, read_arrow, read_pandas
from arcticlite.table._segments import BLOOM_MAX_FRACTION, BLOOM_MIN_DISTINCT, FetchStats, Layout
from arcticlite.version import Builder, LibraryKeys, VersionEngine, VersionRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class TableOptions:
    """How the engine lays out and reads segments.

    Attributes
    ----------
    rows_per_segment, columns_per_segment : int
        Tile size of new segments (``columns_per_segment`` is ignored under dynamic schema).
    dynamic_schema : bool
        Segments of one symbol may hold different columns.
    direct_reads : bool
        pandas reads fill DataFrame blocks straight from the decoders where they can
        (off: every read goes through Arrow; results are identical).
    prune_by_statistics : bool
        Queries skip row groups whose page min/max (or Bloom filters) prove no row passes
        their leading filters, and the pages of kept row groups that no row can pass.
    bloom_min_distinct : int or None
        New segments carry a Bloom filter of each integer or string column with at least this
        many distinct values in the segment (integer columns sorted in it excepted: their page
        min/max prune as well); None writes none.
    bloom_max_fraction : float
        The filters of a segment take at most this share of its data (smallest first).
    merge_on_read : bool
        Keyed merges write delta segments (applied by reads) instead of rewriting row groups.
    compaction_deltas, compaction_delta_share : int, float
        When folding a symbol's deltas is due: this many delta layers, or delta rows reaching
        this share of the base rows.
    """

    rows_per_segment: int = 100_000
    columns_per_segment: int = 127
    dynamic_schema: bool = False
    direct_reads: bool = True
    prune_by_statistics: bool = True
    bloom_min_distinct: int | None = BLOOM_MIN_DISTINCT
    bloom_max_fraction: float = BLOOM_MAX_FRACTION
    merge_on_read: bool = True
    compaction_deltas: int = 32
    compaction_delta_share: float = 0.1

    def __post_init__(self) -> None:
        if int(self.rows_per_segment) <= 0 or int(self.columns_per_segment) <= 0:
            raise UserInputException("rows_per_segment and columns_per_segment must be positive")
        b = self.bloom_min_distinct
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1):
            raise UserInputException(f"bloom_min_distinct must be a positive int or None (no Bloom filters), "
                                     f"got {b!r}")
        m = self.bloom_max_fraction
        if isinstance(m, bool) or not isinstance(m, int | float) or not 0 <= m <= 1:
            raise UserInputException(f"bloom_max_fraction must be a number between 0 and 1, got {m!r}")


class TableEngine:
    """Segments, indexes and versions of one library's symbols on one store.

    Parameters
    ----------
    store : KVStore
    keys : LibraryKeys
    options : TableOptions
    pools : Pools, optional
        Thread pools of the data path (default: the process-wide ones, as sized by the
        ``VersionStore.NumCPUThreads`` setting when each operation starts).
    """

    def __init__(self, store: KVStore, keys: LibraryKeys, options: TableOptions,
                 pools: Pools | None = None) -> None:
        self.store = store
        self.keys = keys
        self.options = options
        self._pools = pools
        self.versions = VersionEngine(store, keys)

    @property
    def pools(self) -> Pools:
        """The engine's own pools, else the process-wide ones."""
        return self._pools if self._pools is not None else shared()

    @pools.setter
    def pools(self, pools: Pools | None) -> None:
        self._pools = pools

    def with_options(self, **changes: Any) -> TableEngine:
        """This engine with some options replaced (a per-call override, e.g. one write's
        Bloom-filter threshold): same store, keys and pools."""
        if not changes:
            return self
        return TableEngine(self.store, self.keys, replace(self.options, **changes), self._pools)

    # -- index ----------------------------------------------------------------------------------
    def index(self, sym: str, sink: dict[str, bytes] | None = None) -> TableIndexIO:
        """Index IO for ``sym``; new nodes go to ``sink`` (written with the commit) if given."""
        keys = self.keys
        store = self.store

        def write_nodes(nodes: dict[str, bytes]) -> None:
            named = {keys.tindex(sym, d): b for d, b in nodes.items()}
            if sink is None:
                store.write_many(named)
            else:
                sink.update(named)

        def read_node(d: str) -> Any:
            return store.read(keys.tindex(sym, d))

        def read_nodes(ds: Any) -> Any:
            return store.read_many([keys.tindex(sym, d) for d in ds])

        return TableIndexIO(read_node=read_node, write_nodes=write_nodes, read_nodes=read_nodes,
                            key_of=lambda d: keys.tindex(sym, d))

    def layout(self, meta: norm.NormMeta) -> Layout:
        """How a table normalized as ``meta`` is cut into segments."""
        o = self.options
        return Layout(
            n_index=len(meta.index_columns),
            rows_per_segment=o.rows_per_segment,
            columns_per_segment=0 if o.dynamic_schema else o.columns_per_segment,
            bloom_min_distinct=o.bloom_min_distinct,
            bloom_max_fraction=o.bloom_max_fraction,
        )

    # -- reads ----------------------------------------------------------------------------------
    def plan(self, rec: VersionRecord, *, date_range: tuple[int, int] | None = None,
             row_range: tuple[Any, Any] | None = None, columns: list[Any] | None = None,
             query_builder: Any = None, stats: PruneStats | None = None,
             judge_when_decoding: bool = False) -> ReadPlan:
        """Plan the read of data version ``rec`` (see :func:`~arcticlite.table._read.plan_read`;
        ``judge_when_decoding`` for a plan this engine reads at once)."""
        return plan_read(
            self.index(rec.symbol), self.store, self.keys, rec, date_range=date_range,
            row_range=row_range, columns=columns, query_builder=query_builder,
            dynamic=self.options.dynamic_schema, prune_by_statistics=self.options.prune_by_statistics,
            pools=self.pools, stats=stats, judge_when_decoding=judge_when_decoding,
        )

    def explain(self, rec: VersionRecord, *, date_range: tuple[int, int] | None = None,
                row_range: tuple[Any, Any] | None = None, columns: list[Any] | None = None,
                query_builder: Any = None) -> ReadExplain:
        """Plan and run the read of ``rec`` as :meth:`plan` / :meth:`read_arrow` would, and
        report what it pruned and fetched (the result itself is dropped)."""
        pst, fst = PruneStats(), FetchStats()
        plan = self.plan(rec, date_range=date_range, row_range=row_range, columns=columns,
                         query_builder=query_builder, stats=pst)
        table, _ = self.read_arrow(plan, stats=fst)
        return ReadExplain(
            symbol=rec.symbol, version=rec.vid,
            segments_total=rec.index.segments if rec.index is not None else 0,
            segments_after_index_range=plan.segments_considered,
            row_groups_considered=pst.row_groups, row_groups_pruned_minmax=pst.pruned_minmax,
            row_groups_pruned_bloom=pst.pruned_bloom, segments_pruned_by_statistics=pst.segments_pruned,
            segments_fetched=fst.segments, pages_considered=fst.pages, pages_skipped=fst.pages_skipped,
            rows_skipped=fst.rows_skipped, bytes_fetched=fst.bytes_fetched, metadata_bytes=pst.metadata_bytes,
            rows_returned=table.num_rows, rows_filtered_first=fst.rows_considered_late,
            rows_materialised=fst.rows_taken_late, segments_ranged=fst.segments_ranged,
        )

    def read_arrow(self, plan: ReadPlan, stats: FetchStats | None = None) -> tuple[pa.Table, norm.NormMeta]:
        """Execute ``plan`` into a stored-layout Arrow table (query applied) and its meta."""
        return read_arrow(self.store, self.keys, plan, pools=self.pools, stats=stats)

    def read(self, plan: ReadPlan, output_format: Any = "pandas",
             strings: tuple[str, dict[str, str] | None] = ("UNSPECIFIED", None)) -> Any:
        """Execute ``plan`` and rebuild the user's object in ``output_format`` (``strings``:
        the Arrow string formats of Arrow / polars output, default and per column)."""
        fmt = norm.OutputFormat(output_format or "pandas")
        if fmt is norm.OutputFormat.PANDAS and self.options.direct_reads:
            df = read_pandas(self.store, self.keys, plan, pools=self.pools)
            if df is not None:
                return df
        if fmt is not norm.OutputFormat.PANDAS and plan.dynamic:
            plan = replace(plan, arrow_out=True)  # absent values are nulls there
        table, meta = self.read_arrow(plan)
        rr = plan.row_range
        return norm.denormalize(table, meta, output_format=fmt, row_offset=rr[0] if rr else 0,
                                string_format=strings[0], string_formats=strings[1])

    # -- commits --------------------------------------------------------------------------------
    def apply(self, sym: str, op: Operation, *, prune: bool = False) -> tuple[VersionRecord | None, VersionRecord]:
        """Commit the named operation ``op`` as the next version of ``sym``: the one rebase
        loop. Each attempt starts afresh on the head it sees (``op.begin``, then ``op.build``
        with the head's latest live data version); returns the head the winning attempt was
        built on, and the new record."""
        versions = self.versions

        folded: dict[int, VersionRecord] = {}

        def build(head: VersionRecord | None, seq: int) -> VersionRecord:
            op.begin()
            base = versions.live_from_head(sym, head)
            if base is not None and has_deltas(base) and not op.reads_deltas(base):
                if base.seq not in folded:  # the operation works on plain row groups: compact first
                    folded.clear()
                    folded[base.seq] = fold_now(self, sym, base, op)
                base = folded[base.seq]
            return op.build(head, base, seq)

        return self.commit(sym, build, prune=prune, extra=op.extra())

    def commit(self, sym: str, build: Builder, *, prune: bool = False,
               extra: Mapping[str, bytes] | None = None) -> tuple[VersionRecord | None, VersionRecord]:
        """Commit ``build(head, seq)`` as the next version of ``sym`` (rebuilt on every lost
        race); returns the head the winning attempt was built on, and the new record."""
        heads: list[VersionRecord | None] = []

        def tracked(head: VersionRecord | None, seq: int) -> VersionRecord:
            heads.append(head)
            return build(head, seq)

        rec = self.versions.commit(sym, tracked, prune=prune, extra=extra)
        return heads[-1], rec
