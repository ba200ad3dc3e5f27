"""``MergeStrategy`` / ``MergeAction`` (ArcticDB's names) and the argument rules of
``Library.merge_experimental`` / ``merge`` / ``delete_rows``."""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

from arcticlite.exceptions import UserInputException
from arcticlite.table import MergeSpec


class MergeAction(enum.Enum):
    """What a merge does with a row: ``DO_NOTHING``, ``UPDATE`` (a stored row matched by a
    source row takes its values) or ``INSERT`` (a source row matching no stored row is added).
    Wherever an action is expected, a case-insensitive string (``"update"``) works too."""

    DO_NOTHING = 0
    UPDATE = 1
    INSERT = 2


class MergeStrategy(NamedTuple):
    """What a merge does with matched stored rows and with source rows no stored row matches.

    The valid strategies: ``MergeStrategy("update", "insert")`` (the default: an upsert by
    key), ``MergeStrategy("update", "do_nothing")`` (update matched rows only) and
    ``MergeStrategy("do_nothing", "insert")`` (insert new keys only).
    """

    matched: MergeAction | str = MergeAction.UPDATE
    not_matched_by_target: MergeAction | str = MergeAction.INSERT


DEFAULT_STRATEGY = MergeStrategy()


def merge_action(action: Any) -> MergeAction:
    """``action`` as a :class:`MergeAction` (a member, ArcticDB's member, or its name in any case)."""
    name = getattr(action, "name", action)
    if isinstance(name, str) and name.upper() in MergeAction.__members__:
        return MergeAction[name.upper()]
    raise UserInputException(
        f"Invalid MergeAction: {action!r}. Must be one of: update, insert, do_nothing "
        "(a MergeAction member or its name as a string)")


VALID = {
    (MergeAction.UPDATE, MergeAction.INSERT),
    (MergeAction.UPDATE, MergeAction.DO_NOTHING),
    (MergeAction.DO_NOTHING, MergeAction.INSERT),
}


def merge_strategy(strategy: Any) -> MergeStrategy:
    """``strategy`` normalized to :class:`MergeAction` members (:func:`check_strategy` checks it is valid)."""
    if not isinstance(strategy, tuple) or len(strategy) != 2:
        raise UserInputException(
            f"strategy must be a MergeStrategy(matched=..., not_matched_by_target=...), got {strategy!r}; "
            "for example MergeStrategy('update', 'insert')")
    return MergeStrategy(merge_action(strategy[0]), merge_action(strategy[1]))


def _name(action: MergeAction | str) -> str:
    return action.name.lower() if isinstance(action, MergeAction) else str(action)


def check_strategy(s: MergeStrategy) -> MergeStrategy:
    """``s`` (normalized) if it is one of the valid strategies."""
    if (s.matched, s.not_matched_by_target) not in VALID:
        raise UserInputException(
            f"E_INVALID_USER_ARGUMENT Invalid merge strategy: MergeStrategy(matched={_name(s.matched)}, "
            f"not_matched_by_target={_name(s.not_matched_by_target)}); use one of MergeStrategy('update', "
            "'insert'), MergeStrategy('update', 'do_nothing') or MergeStrategy('do_nothing', 'insert')")
    return s


def on_columns(on: Any) -> tuple[str, ...]:
    """The ``on`` argument as a tuple of column labels (repeats dropped); a single label is
    taken as a list of one."""
    if on is None:
        return ()
    if isinstance(on, str):
        on = [on]
    if not isinstance(on, list | tuple):
        raise UserInputException(f"on must be a list of column names, got {on!r}")
    out: list[str] = []
    for label in on:
        if not isinstance(label, str):
            raise UserInputException(f"on must be a list of column names (strings), got {label!r} in {on!r}")
        if label not in out:
            out.append(label)
    return tuple(out)


def merge_spec(strategy: MergeStrategy, on: tuple[str, ...], match_na: bool) -> MergeSpec:
    return MergeSpec(on=on, matched="update" if strategy.matched is MergeAction.UPDATE else "do_nothing",
                     insert=strategy.not_matched_by_target is MergeAction.INSERT, match_na=bool(match_na))


def delete_spec(on: tuple[str, ...], match_na: bool) -> MergeSpec:
    return MergeSpec(on=on, matched="delete", insert=False, match_na=bool(match_na), full_schema=False)
