"""Progress bars for long work: writes of many segments, batch operations (``write_batch``,
``read_batch``, …), garbage collection, Parquet ↔ Fermion conversion, and the command line's
``compact``, ``import-arcticdb`` and ``bench``.

A bar is drawn on stderr, and only when

* progress is on: :func:`enable` ``(True)``, else the environment variable
  ``ARCTICLITE_PROGRESS`` (``1`` on, ``0`` off), else stderr is a terminal (so never in a pipe, a
  log file or a test); the command line's ``--quiet`` turns it off and ``--progress`` on;
* and the work is still running half a second after it started (quick calls draw nothing).

tqdm draws the bar when it is installed (``pip install 'arcticlite[progress]'``); otherwise a
plain one-line counter does. Whether drawn or not, each tracked operation logs one ``INFO``
record on the ``arcticlite`` logger when it ends (what, how many, seconds).

Examples
--------
>>> from arcticlite import progress
>>> progress.enable(False)          # never draw, whatever the terminal
>>> with progress.Progress(3, "demo") as bar:
...     for _ in range(3):
...         bar.update(1)
>>> bar.done
3
>>> progress.enable(None)           # back to the default: on for terminals
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any

__all__ = ["ENV", "Progress", "enable", "enabled"]

#: The environment variable that switches progress bars on (``1``) or off (``0``).
ENV = "ARCTICLITE_PROGRESS"

log = logging.getLogger("arcticlite")
_forced: bool | None = None


def enable(on: bool | None) -> None:
    """Switch progress bars on (``True``) or off (``False``) for this process, or back to the
    default (``None``: the ``ARCTICLITE_PROGRESS`` variable, else on when stderr is a terminal).

    Parameters
    ----------
    on : bool or None
        The setting.

    Returns
    -------
    None

    Examples
    --------
    >>> from arcticlite import progress
    >>> progress.enable(False); progress.enabled()
    False
    >>> progress.enable(None)
    """
    global _forced
    _forced = on


def enabled() -> bool:
    """Whether a long operation would draw a progress bar now.

    Returns
    -------
    bool
        :func:`enable`'s setting, else ``ARCTICLITE_PROGRESS``, else whether stderr is a terminal.

    Examples
    --------
    >>> import os
    >>> from arcticlite import progress
    >>> os.environ["ARCTICLITE_PROGRESS"] = "0"; progress.enabled()
    False
    >>> del os.environ["ARCTICLITE_PROGRESS"]
    """
    if _forced is not None:
        return _forced
    env = os.environ.get(ENV, "").strip().lower()
    if env:
        return env not in ("0", "false", "no", "off")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


class Progress:
    """A progress bar over ``total`` steps of one operation, drawn on stderr (see the module).

    Parameters
    ----------
    total : int
        How many steps the operation takes.
    desc : str
        What is running, e.g. ``"write AAPL"``.
    unit : str, default "it"
        What a step is (``"segment"``, ``"symbol"``, ``"key"``).
    enabled : bool or None, default None
        Draw (``True``) or not (``False``) whatever the process setting; ``None``: :func:`enabled`.
    delay : float, default 0.5
        Seconds the work must last before a bar appears.

    Examples
    --------
    >>> with Progress(10, "copy", unit="file", enabled=False) as bar:
    ...     bar.update(4); bar.update(6)
    >>> bar.done
    10
    """

    def __init__(self, total: int, desc: str, unit: str = "it", enabled: bool | None = None,
                 delay: float = 0.5) -> None:
        self.total, self.desc, self.unit, self.done = int(total), desc, unit, 0
        self._on = self.total > 1 and (_enabled_now() if enabled is None else enabled)
        self._delay = delay
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._bar: Any = None
        self._drawn = 0.0  # when the plain counter last drew (0: never)
        if self._on:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total, desc=desc, unit=unit, file=sys.stderr, delay=delay,
                                 leave=False, dynamic_ncols=True)
            except ImportError:
                self._bar = None

    def __enter__(self) -> Progress:
        return self

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps done (thread-safe).

        Parameters
        ----------
        n : int, default 1
            Steps done since the last call.

        Returns
        -------
        None

        Examples
        --------
        >>> bar = Progress(3, "gc", unit="key", enabled=False)
        >>> bar.update(); bar.update(2)
        >>> bar.done
        3
        """
        with self._lock:
            self.done += n
            if not self._on:
                return
            if self._bar is not None:
                self._bar.update(n)
                return
            now = time.monotonic()
            if now - self._start >= self._delay and now - self._drawn >= 0.1:
                self._drawn = now
                pct = 100 * self.done // max(self.total, 1)
                sys.stderr.write(f"\r{self.desc}: {self.done:,}/{self.total:,} {self.unit}s ({pct}%) "
                                 f"{now - self._start:.0f}s")
                sys.stderr.flush()

    def close(self) -> None:
        """End the bar (erasing it) and log what was done.

        Returns
        -------
        None

        Examples
        --------
        >>> bar = Progress(2, "copy", enabled=False)
        >>> bar.update(2)
        >>> bar.close()  # a ``with`` block closes it on exit
        >>> bar.done
        2
        """
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            elif self._drawn:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
                self._drawn = 0.0
            self._on = False
        log.info("%s: %d of %d %ss in %.2fs", self.desc, self.done, self.total, self.unit,
                 time.monotonic() - self._start)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


_enabled_now = enabled
