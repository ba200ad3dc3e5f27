"""Process entry points for the race tests (importable by spawned processes)."""

from __future__ import annotations

import traceback
from typing import Any


def process_worker(uri: str, run: str, index: int, rounds: int, barrier: Any, queue: Any) -> None:
    """Open ``uri`` in this process and race on ``write_if_absent`` for ``rounds`` keys.

    Puts the list of wins (one bool per round) on ``queue``, or a traceback string.
    """
    try:
        from arcticlite.storage import open_store

        wins: list[bool] = []
        with open_store(uri) as store:
            for r in range(rounds):
                barrier.wait(timeout=120)
                wins.append(store.write_if_absent(f"prace-{run}/{r:04d}", f"p{index}".encode()))
        queue.put(wins)
    except BaseException:
        queue.put(traceback.format_exc())
