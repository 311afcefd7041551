"""The default logger of ge's onnxruntime API: a severity, a verbosity and an optional callback.

ge.ort tells the user what onnxruntime's logger would (a setting it keeps but does not act on, a file it
does not write) through `log`: to the callback set by `set_default_logger_callback`, called as onnxruntime
calls it (severity, category, logid, code location, message), else as a Python warning when the severity
reaches the default one. Severities are onnxruntime's: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.
"""
from __future__ import annotations

import numbers
import sys
import warnings
from types import SimpleNamespace

from ..errors import UsageError

def _Unraisable(exc_type, exc_value, exc_traceback, err_msg):  # noqa: N802 - sys.unraisablehook's record
    return SimpleNamespace(exc_type=exc_type, exc_value=exc_value, exc_traceback=exc_traceback, err_msg=err_msg,
                           object=None)


def _report(record) -> None:
    """An exception of the callback, as Python reports one it cannot raise: to a hook someone installed
    (pytest's takes any record with these fields), else printed to stderr (CPython's own hook accepts only
    its UnraisableHookArgs, which Python code cannot make)."""
    if sys.unraisablehook is not sys.__unraisablehook__:
        sys.unraisablehook(record)
        return
    import traceback  # noqa: PLC0415
    print(f"Exception ignored in: {record.err_msg}", file=sys.stderr)
    traceback.print_exception(record.exc_type, record.exc_value, record.exc_traceback, file=sys.stderr)


_STATE = {"severity": 2, "verbosity": 0, "callback": None}


def _severity(level, what: str) -> int:
    if isinstance(level, bool) or not isinstance(level, numbers.Integral) or not 0 <= level <= 4:
        raise UsageError(f"{what}: severity {level!r:.20} is not 0 (verbose) to 4 (fatal)")
    return int(level)


def set_default_logger_severity(level: int) -> None:
    _STATE["severity"] = _severity(level, "set_default_logger_severity")


def set_default_logger_verbosity(level: int) -> None:
    if isinstance(level, bool) or not isinstance(level, numbers.Integral):
        raise UsageError(f"set_default_logger_verbosity: {level!r:.20} is not an int")
    _STATE["verbosity"] = int(level)


def set_default_logger_callback(callback, severity: int = 2) -> None:
    """callback(severity, category, logid, code_location, message) for every message; None: back to
    Python warnings (the severity is checked, not changed)."""
    level = _severity(severity, "set_default_logger_callback")
    if callback is not None and not callable(callback):
        raise UsageError(f"set_default_logger_callback: {type(callback).__name__} is not callable")
    _STATE["callback"] = callback
    if callback is not None:
        _STATE["severity"] = level


def log(severity: int, message: str, logid: str = "", where: str = "ge.ort") -> None:
    if severity < _STATE["severity"]:
        return
    callback = _STATE["callback"]
    if callback is not None:
        try:
            callback(severity, "ge", logid, where, message)
        except Exception as e:  # noqa: BLE001 - a raising callback must not fail the call that logged
            _report(_Unraisable(type(e), e, e.__traceback__, f"logger callback {callback!r}"))
    else:
        warnings.warn(message, stacklevel=3)
