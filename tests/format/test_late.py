"""Late materialisation in the reader: ``match_rows`` keeps every row a filter passes (and
the rows it cannot judge), ``take`` returns exactly the rows asked for, decoding only the pages
holding them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from arcticlite import format as fermion
from arcticlite.exceptions import UserInputException
from arcticlite.format._filter import expression, parse


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n).round(1)
    f[rng.random(n) < 0.1] = np.nan
    s = rng.choice(np.array(["a", "bb", "ccc", None], dtype=object), n)
    return pa.table({
        "i": pa.array(rng.integers(-50, 50, n)),
        "f": pa.array(f),
        "s": pa.array(s, pa.string()),
        "t": pa.array(rng.choice(np.array(["T00042", "T00043", "T00044"]), n)),  # dictionary pages
        "u": pa.array([f"u{v}" for v in rng.integers(0, 10 * n, n)], pa.large_string()),
        "b": pa.array(rng.random(n) < 0.5),
        "l": pa.array([[int(v)] * int(v % 3) for v in rng.integers(0, 9, n)], pa.list_(pa.int64())),
        "c": pa.array(rng.choice(np.array(["p", "q"]), n)).dictionary_encode(),
    })


@pytest.mark.parametrize("seed", range(6))
def test_take_returns_exactly_the_rows_asked_for(seed: int) -> None:
    n = 3000
    table = _table(n, seed)
    blob = fermion.encode(table, page_size=1024, stripe_rows=1100)
    rng = np.random.default_rng(seed)
    for k in (0, 1, 17, 400, n):
        rows = np.sort(rng.choice(n, k, replace=False))
        got = fermion.FermionReader(blob).take(None, rows)
        expected = table.take(pa.array(rows, pa.int64()))
        assert got.schema == expected.schema
        pd.testing.assert_frame_equal(got.to_pandas(), expected.to_pandas(),  # NaN equals NaN
                                      check_categorical=k > 0)
    some = fermion.FermionReader(blob).take(["t", "i"], np.array([5, 2999]))
    assert some.column_names == ["t", "i"] and some.column("t").to_pylist() == table.column("t").take([5, 2999]).to_pylist()


def test_take_refuses_rows_out_of_order_or_outside_the_file() -> None:
    blob = fermion.encode(_table(100, 0))
    reader = fermion.FermionReader(blob)
    with pytest.raises(UserInputException, match="sorted and unique"):
        reader.take(None, [3, 1])
    with pytest.raises(UserInputException, match=r"\[0, 100\)"):
        reader.take(None, [99, 100])


@pytest.mark.parametrize("term", [
    ("t", "==", "T00042"), ("t", "!=", "T00043"), ("t", "in", ["T00044", "nope"]),
    ("s", "==", "bb"), ("s", "!=", "a"), ("u", "==", "u7"), ("i", ">=", 10), ("i", "<", -45),
    ("f", ">", 0.5), ("f", "isnull", None), ("s", "notnull", None),
    ("", "or", [[("i", "==", 3)], [("t", "==", "T00043"), ("f", "<", 0)]]),
])
def test_match_rows_keeps_every_passing_row_and_only_rows_it_cannot_rule_out(term: tuple) -> None:
    n = 3000
    table = _table(n, 7)
    blob = fermion.encode(table, page_size=1024, stripe_rows=1100)
    reader = fermion.FermionReader(blob)
    got = reader.match_rows([term], (100, 2900))
    assert (np.diff(got) > 0).all() and (not len(got) or (got.min() >= 100 and got.max() < 2900))
    exact = fermion.FermionReader(blob).read(None, filter=[term], row_range=(100, 2900))
    passing = set(table.slice(100, 2800).append_column("_r", pa.array(np.arange(100, 2900)))
                  .filter(_mask(table.slice(100, 2800), term)).column("_r").to_pylist())
    assert passing <= set(got.tolist())
    assert len(exact) == len(passing)
    # a row kept that does not pass holds a null in a column the term names (nulls are kept)
    extra = sorted(set(got.tolist()) - passing)
    cols = [c for c in ("i", "f", "s", "t", "u") if c in repr(term)]
    for r in extra:
        assert any(table.column(c)[r].as_py() is None for c in cols), (r, term)


def _mask(t: pa.Table, term: tuple) -> pa.Array:
    """Rows of ``t`` that ``term`` passes under the reader's exact filter."""
    marked = t.append_column("_k", pa.array(np.arange(t.num_rows)))
    kept = marked.filter(expression(parse([term]))).column("_k").to_numpy()
    m = np.zeros(t.num_rows, dtype=bool)
    m[kept] = True
    return pa.array(m)


@pytest.mark.parametrize("term", [
    ("t", "==", "T00042"), ("t", "in", ["T00044", "T00042", "T00043", "nope", "x", "y"]),
    ("t", "==", "absent"), ("u", "==", "u7"), ("i", ">=", 10), ("f", ">", 0.5),
    ("", "or", [[("i", "==", 3)], [("t", "==", "T00043"), ("f", "<", 0)]]),
])
@pytest.mark.parametrize("prune", [True, False])
def test_rows_taken_after_matching_equal_the_stored_rows(term: tuple, prune: bool) -> None:
    # take() reuses what match_rows decoded (dictionary codes, filter values): same rows out
    n = 3000
    table = _table(n, 11)
    blob = fermion.encode(table, page_size=1024, stripe_rows=1100)
    reader = fermion.FermionReader(blob)
    rows = reader.match_rows([term], (100, 2900), rows=[(50, 1500), (1600, 2950)], prune=prune)
    assert (rows >= 100).all() and (rows < 2900).all() and not ((rows >= 1500) & (rows < 1600)).any()
    got = reader.take(None, rows)
    expected = table.take(pa.array(rows, pa.int64()))
    pd.testing.assert_frame_equal(got.to_pandas(), expected.to_pandas(), check_categorical=len(rows) > 0)
    exact = table.slice(100, 2800).filter(_mask(table.slice(100, 2800), term)).num_rows
    inside = set(range(100, 1500)) | set(range(1600, 2900))
    marked = table.append_column("_r", pa.array(np.arange(n)))
    passing = {r for r in marked.filter(_mask(table, term)).column("_r").to_pylist() if r in inside}
    assert passing <= set(rows.tolist()) and exact >= len(passing)


@pytest.mark.parametrize("term", [
    ("i", ">", 2**53), ("i", "==", 2**53 + 1), ("i", "between", (-3, 2**62)), ("i", ">=", -2),
    ("f", "==", float(2**53)), ("f", ">=", 0), ("f", "!=", 0.25), ("f", "<", float("inf")), ("f", "==", float("nan")),
    ("f", "between", (0.25, 1e300)), ("f", ">", 2**53), ("f", "in", [0.25, 1.5]),
])
def test_number_columns_keep_every_row_a_tricky_comparison_passes(term: tuple) -> None:
    # int64 / float64 pages are judged with numpy where it compares exactly as Arrow does
    rng = np.random.default_rng(3)
    n = 4000
    i = rng.integers(-5, 5, n)
    i[::7] = 2**53 + rng.integers(0, 3, len(i[::7]))
    f = rng.choice(np.array([0.25, 1.5, -0.0, np.nan, float(2**53), float(2**53 + 2), np.inf]), n)
    table = pa.table({"i": pa.array(i), "f": pa.array(f)})
    blob = fermion.encode(table, page_size=4096)
    rows = fermion.FermionReader(blob).match_rows([term])
    marked = table.append_column("_r", pa.array(np.arange(n)))
    passing = set(marked.filter(_mask(table, term)).column("_r").to_pylist())
    assert passing <= set(rows.tolist())
    assert len(rows) == len(passing) or term[1] in ("in",)  # numbers without nulls: exact


@pytest.mark.parametrize("values", [
    ["bc"], ["abc"], [""], ["a"], ["é", "ü"], ["ab", "c", "zz"], ["a" * 40], [1], ["abc", None],
])
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("fixed", [False, True])
def test_dictionary_pages_find_exactly_the_entries_equal_to_a_value(values: list, binary: bool, fixed: bool) -> None:
    # a value is looked up in the dictionary's bytes: entries next to each other spell "bc"
    # ("ab" + "c"), "a" is part of most entries, "" is an entry of its own
    words = ["ab", "c", "abc", "", "a", "ba", "aa", "é", "éü", "ü", "a" * 40, "a" * 39]
    if fixed:  # one width: entries compared as integers (a NUL byte is part of a value)
        words, values = ["ab", "cd", "a\x00", "\x00a", "ba", "é"], {"bc": ["a\x00"], "abc": ["ab", "cd"],
                                                                  "": ["é", "zz"]}.get(values[0], values)
    rng = np.random.default_rng(5)
    picked = rng.choice(np.array(words, dtype=object), 4000)
    arr = pa.array([w.encode() for w in picked] if binary else list(picked),
                   pa.large_binary() if binary else pa.large_string())
    table = pa.table({"w": arr})
    blob = fermion.encode(table, page_size=4096)
    probe = [v.encode() if binary and isinstance(v, str) else v for v in values]
    for term in ([("w", "==", probe[0])], [("w", "in", probe)]):
        rows = fermion.FermionReader(blob).match_rows(term)
        want = [i for i, w in enumerate(picked) if (w.encode() if binary else w) in probe[:1 if term[0][1] == "==" else None]]
        assert set(want) <= set(rows.tolist())
        if all(isinstance(v, bytes if binary else str) for v in probe):  # judged exactly
            assert rows.tolist() == want, term
            assert fermion.FermionReader(blob).read(None, filter=term).num_rows == len(want)
