"""ringtrace - record Python log records as trace events.

    import logging
    import ringtrace

    logging.getLogger().addHandler(ringtrace.LoggingHandler())
    logging.getLogger("app.db").warning("slow query: %d ms", 120)

Run under `ringtrace record -- python3 app.py`, or with a session of the
daemon (`ringtrace enable-event -u 'python:*'`): each record becomes a
`python:log` event (docs/python.md) with the logger's name, the level, the
message, the file, line and function that logged it and the thread, like
LTTng-UST's Python agent. Not recording, a record costs the handler one
check of a flag.

The package talks to libringtrace through ctypes (no compiled module):
it describes the event the way a C call site of rt_event would (one
descriptor per log level, registered with the library) and records with
the library's rt__record_parts. libringtrace is the one installed beside
this package (make install), else the system's.
"""
import ctypes
import logging
import os

from . import _build

__all__ = ["LoggingHandler", "enabled"]

# enum rt_field_type and rt_part_kind (ringtrace_types.h).
_S32, _U64, _STRING = 5, 8, 12
_PART_FIXED, _PART_STRING = 0, 1
# LTTng's log levels (enum rt_loglevel) for Python's: a record's level
# maps to the highest standard one not above it.
_LEVELS = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4),
           (logging.INFO, 6), (logging.DEBUG, 14))
# The fields of python:log, in order (name, type).
_FIELDS = (("logger_name", _STRING), ("int_loglevel", _S32), ("msg", _STRING),
           ("filename", _STRING), ("lineno", _S32), ("funcName", _STRING),
           ("thread", _U64), ("threadName", _STRING))


class _FieldDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_uint32)]


class _EventDesc(ctypes.Structure):
    """struct rt_event_desc, byte by byte as ringtrace_types.h lays it out
    (LP64): the library reads it and writes `enabled`, `priv`, `fast`."""
    _fields_ = [("enabled", ctypes.c_int32), ("abi", ctypes.c_uint32),
                ("provider", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("loglevel", ctypes.c_int32), ("nr_fields", ctypes.c_uint32),
                ("fields", ctypes.POINTER(_FieldDesc)), ("file", ctypes.c_char_p),
                ("line", ctypes.c_uint32), ("priv", ctypes.c_void_p),
                ("fast", ctypes.c_void_p)]


class _Part(ctypes.Structure):
    """struct rt_part."""
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_uint32),
                ("kind", ctypes.c_uint32)]


def _load():
    """libringtrace: beside this package (installed together), else the
    system's. OSError when there is none."""
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.normpath(os.path.join(here, _build.LIBDIR, _build.SONAME))
    return ctypes.CDLL(beside if os.path.exists(beside) else _build.SONAME)


_lib = _load()
_lib.rt__register.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
_lib.rt__register.restype = None
_lib.rt__record_parts.argtypes = [ctypes.POINTER(_EventDesc), ctypes.POINTER(_Part),
                                  ctypes.c_uint32]
_lib.rt__record_parts.restype = None

# The descriptors live as long as the process (the library keeps
# pointers to them, and to their strings): module globals, never freed.
_strings = [n.encode() for n, _ in _FIELDS] + [__file__.encode()]
_field_array = (_FieldDesc * (len(_FIELDS) + 1))(
    *[_FieldDesc(n, t) for n, (_, t) in zip(_strings, _FIELDS)], _FieldDesc(None, 0))
_descs = {}
for _py, _rt in _LEVELS:
    _descs[_py] = _EventDesc(0, _build.ABI_VERSION, b"python", b"log", _rt, len(_FIELDS),
                             _field_array, _strings[-1], 0, None, None)
_list = (ctypes.POINTER(_EventDesc) * len(_descs))(
    *[ctypes.pointer(d) for d in _descs.values()])
_lib.rt__register(ctypes.addressof(_list),
                  ctypes.addressof(_list) + ctypes.sizeof(_list))
_desc_for = {}   # Python level -> descriptor, filled as levels are seen


def _desc(level):
    d = _desc_for.get(level)
    if d is None:
        py = next((p for p, _ in _LEVELS if level >= p), logging.DEBUG)
        d = _desc_for.setdefault(level, _descs[py])
    return d


def enabled(level=logging.INFO):
    """Whether a record of this level would be recorded now."""
    return _desc(level).enabled != 0


def _text(value):
    """A string field's bytes: UTF-8, cut at the first NUL (a CTF string
    ends there)."""
    b = str(value).encode("utf-8", "backslashreplace")
    nul = b.find(b"\0")
    return b if nul < 0 else b[:nul]


class LoggingHandler(logging.Handler):
    """A logging.Handler that records each record as a python:log event:
    logger_name, int_loglevel (the record's levelno), msg (the message with
    its arguments, record.getMessage(); with a formatter set, its output),
    filename (record.pathname), lineno, funcName, thread (record.thread),
    threadName. The event's log level is LTTng's for the record's level
    (CRITICAL: CRIT, ERROR: ERR, WARNING: WARNING, INFO: INFO, DEBUG and
    below: DEBUG), so `ringtrace record --loglevel` selects them."""

    def emit(self, record):
        d = _desc(record.levelno)
        if not d.enabled:
            return
        try:
            msg = self.format(record) if self.formatter else record.getMessage()
            strings = [ctypes.c_char_p(_text(v)) for v in
                       (record.name, msg, record.pathname, record.funcName or "",
                        record.threadName or "")]
            ints = (ctypes.c_int32(record.levelno), ctypes.c_int32(record.lineno or 0),
                    ctypes.c_uint64(record.thread or 0))
            name, msg_p, path, func, tname = strings
            level, line, thread = ints
            fields = (name, level, msg_p, path, line, func, thread, tname)
            parts = (_Part * len(fields))()
            for p, f in zip(parts, fields):
                p.ptr = ctypes.addressof(f)
                if isinstance(f, ctypes.c_char_p):
                    p.size, p.kind = len(f.value) + 1, _PART_STRING
                else:
                    p.size, p.kind = ctypes.sizeof(f), _PART_FIXED
            _lib.rt__record_parts(ctypes.byref(d), parts, len(fields))
        except Exception:
            self.handleError(record)
