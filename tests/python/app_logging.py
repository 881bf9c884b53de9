"""A Python program that logs through ringtrace.LoggingHandler
(tests/python/test_python.py runs it under `ringtrace record`). A second
handler keeps each record as the trace should show it; they are printed as
one JSON list at the end, after "enabled BOOL" (whether INFO records are
recorded) and "library PATH" (the libringtrace the package loaded)."""
import json
import logging
import threading

import ringtrace

expected = []


class Keep(logging.Handler):
    """What ringtrace's handler should record for each record."""

    def __init__(self, fmt=None):
        super().__init__()
        self.fmt = fmt

    def emit(self, record):
        msg = self.fmt.format(record) if self.fmt else record.getMessage()
        expected.append({"levelno": record.levelno, "logger_name": record.name,
                         "int_loglevel": record.levelno, "msg": msg.split("\0")[0],
                         "filename": record.pathname, "lineno": record.lineno,
                         "funcName": record.funcName, "thread": record.thread,
                         "threadName": record.threadName})


root = logging.getLogger()
root.setLevel(1)
root.addHandler(ringtrace.LoggingHandler())
root.addHandler(Keep())
fmt = logging.Formatter("%(levelname)s|%(name)s|%(message)s")
formatted = logging.getLogger("formatted")
formatted.propagate = False
h = ringtrace.LoggingHandler()
h.setFormatter(fmt)
formatted.addHandler(h)
formatted.addHandler(Keep(fmt))
logging.addLevelName(25, "NOTICE")

print("enabled", ringtrace.enabled())
print("library", ringtrace._lib._name)

app = logging.getLogger("app")
db = logging.getLogger("app.db")
app.debug("debug %s", "one")
app.info("info")
db.warning("slow query: %d ms", 120)
db.error("error with a NUL\0 hidden")
app.critical("critical: é ü 漢字")
app.log(25, "custom level 25")
app.log(5, "custom level 5")
app.info("long " + "x" * 10000)
try:
    1 / 0
except ZeroDivisionError:
    app.exception("caught")
formatted.warning("formatted %s", "message")


def worker():
    db.info("from the worker")


t = threading.Thread(target=worker, name="worker-1")
t.start()
t.join()
app.info("last")
print(json.dumps(expected))
