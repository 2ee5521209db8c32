"""karoo's options by name, validated, and their cd_values encoding.

The five user cd_values (see the plugin's cd_values table):
0 mode, 1 ``predictor | map << 8 | coder << 16``, 2 threads, 3 time axis, 4 lag.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import _lib

MODES = {"fast": 0, "archive": 1}

# The names and ids come from the library (one definition, in the codec); "auto" (0) is
# the options' own. They are stored in numcodecs and Zarr configs: tests pin them.
PREDICTORS = {"auto": 0, **_lib.names("predictors")}

RESIDUAL_MAPS = {"auto": 0, **_lib.names("maps")}

CODERS = {"auto": 0, **_lib.names("coders")}

MAX_THREADS = 1024
MAX_LEVEL = 9
"""Effort levels: 0 is the mode's default, 1 the fastest, 9 the smallest."""
USER_VALUES = 5


def _name(table: dict[str, int], value: str | int, what: str) -> int:
    if isinstance(value, str):
        key = value.lower().replace("_", "-")
        if key in table:
            return table[key]
        if key.replace("-", "") in table:
            return table[key.replace("-", "")]
    elif isinstance(value, int) and not isinstance(value, bool) and value in table.values():
        return value
    names = ", ".join(repr(k) for k in table)
    raise ValueError(f"karoo: unknown {what} {value!r}; expected one of {names}")


def _by_id(table: dict[str, int], value: int, what: str, index: int) -> str:
    for name, number in table.items():
        if number == value:
            return name
    if table is PREDICTORS and value == 12:
        return "auto"
    raise ValueError(f"karoo: unknown {what} {value} in cd_values[{index}]")


def _count(value, what: str, upper: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise TypeError(f"karoo: {what} must be an integer, not {type(value).__name__}")
    value = int(value)
    if value < 0 or value > (upper if upper is not None else 2**32 - 1):
        bound = upper if upper is not None else 2**32 - 1
        raise ValueError(f"karoo: {what} {value} is out of range (0 to {bound})")
    return value


@dataclass(frozen=True)
class Options:
    """Validated compression options (names as the user gives them, ids for the codec)."""

    mode: str = "fast"
    predictor: str = "auto"
    residual_map: str = "auto"
    coder: str = "auto"
    threads: int = 0
    time_axis: int = 0
    lag: int = 0
    level: int = 0

    @classmethod
    def make(cls, mode="fast", predictor="auto", residual_map="auto", coder="auto", threads=0,
             time_axis=0, lag=0, level=0) -> Options:
        """Checks every option and normalises names; raises ValueError/TypeError naming karoo.

        Options are immutable, so one checked set serves every later call with the same
        arguments (of the same types: ``threads=True`` is still an error after ``threads=1``).
        """
        args = (cls, mode, predictor, residual_map, coder, threads, time_axis, lag, level)
        try:
            return _checked(*args)
        except TypeError:
            # An unhashable argument: checked uncached (and rejected with karoo's message).
            return _check(*args)

    @property
    def ids(self) -> tuple[int, int, int, int]:
        """(mode, predictor, residual map, coder) ids."""
        return (MODES[self.mode], PREDICTORS[self.predictor], RESIDUAL_MAPS[self.residual_map],
                CODERS[self.coder])

    def cd_values(self) -> tuple[int, ...]:
        """The five user cd_values (the level in bits 8-15 of the first)."""
        mode, predictor, residual_map, coder = self.ids
        return (mode | self.level << 8, predictor | residual_map << 8 | coder << 16, self.threads,
                self.time_axis, self.lag)

    @classmethod
    def from_cd_values(cls, values) -> Options:
        """Options from stored cd_values (the first five; those set_local appends are ignored)."""
        values = tuple(int(v) for v in values)
        user = values[:USER_VALUES] + (0,) * (USER_VALUES - len(values[:USER_VALUES]))
        mode, coding, threads, time_axis, lag = user
        if coding >> 24:
            raise ValueError(f"karoo: unknown bits {coding:#x} in cd_values[1]")
        return cls.make(
            mode=_by_id(MODES, mode & 0xFF, "mode", 0),
            level=mode >> 8,
            predictor=_by_id(PREDICTORS, coding & 0xFF, "predictor", 1),
            residual_map=_by_id(RESIDUAL_MAPS, coding >> 8 & 0xFF, "residual map", 1),
            coder=_by_id(CODERS, coding >> 16 & 0xFF, "coder", 1),
            threads=threads,
            time_axis=time_axis,
            lag=lag,
        )

    def as_dict(self) -> dict:
        """The options as keyword arguments."""
        return {
            "mode": self.mode,
            "predictor": self.predictor,
            "residual_map": self.residual_map,
            "coder": self.coder,
            "threads": self.threads,
            "time_axis": self.time_axis,
            "lag": self.lag,
            "level": self.level,
        }


def _check(cls, mode, predictor, residual_map, coder, threads, time_axis, lag, level) -> Options:
    """The checks of :meth:`Options.make`."""
    ids = (
        _name(MODES, mode, "mode"),
        _name(PREDICTORS, predictor, "predictor"),
        _name(RESIDUAL_MAPS, residual_map, "residual map"),
        _name(CODERS, coder, "coder"),
    )
    names = [
        _by_id(table, i, what, 0)
        for table, i, what in zip((MODES, PREDICTORS, RESIDUAL_MAPS, CODERS), ids,
                                  ("mode", "predictor", "residual map", "coder"))
    ]
    return cls(*names, _count(threads, "threads", MAX_THREADS), _count(time_axis, "time_axis"),
               _count(lag, "lag"), _count(level, "level", MAX_LEVEL))


# Compressing a small chunk took as long to check its options as to call the codec.
_checked = functools.lru_cache(maxsize=256, typed=True)(_check)
