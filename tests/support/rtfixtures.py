"""rtfixtures - what the Python tests share (the C tests have
rt_test.h beside it): a private tracing world per test (its own run
directory and HOME, so that it never meets the user's daemon or another
test's), a private ringtraced started in it and waited for, and traces
read back with babeltrace2 (bt2) and with our reader (rtr_dump).

A test file imports it after putting this directory on its path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "../support"))
    import rtfixtures  # noqa: E402
"""
import json
import os
import re
import socket
import subprocess
import time


def private_env(tmp, timeout_ms=5000, **extra):
    """The environment of a tracing world under `tmp`: RINGTRACE_RUNDIR is
    tmp/run (made by whoever starts the daemon, and checked), HOME is
    tmp/home (made here), a generous registration timeout (on a loaded
    machine the 50 ms default could expire and the test would check
    timing, not tracing), and none of the caller's RINGTRACE_OUTPUT or
    RINGTRACE_NO_DAEMON. `extra` adds or replaces variables."""
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(tmp, "run"), HOME=home,
               RINGTRACE_DAEMON_TIMEOUT_MS=str(timeout_ms))
    for var in ("RINGTRACE_OUTPUT", "RINGTRACE_NO_DAEMON"):
        env.pop(var, None)
    env.update(extra)
    return env


def wait_listening(rundir, timeout=5.0):
    """True once the daemon of `rundir` accepts a connection on its socket
    (on a loaded machine its file may appear a moment before), False after
    `timeout` seconds."""
    sock = os.path.join(rundir, "ringtraced.sock")
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            try:
                c.connect(sock)
                return True
            except OSError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def start_daemon(ringtraced, env, log, **popen):
    """`ringtraced --foreground` in env's run directory, its output
    appended to the open file `log` (`popen`: more subprocess.Popen
    arguments); returned once it accepts connections. One that does not
    within 5 s is killed and RuntimeError raised."""
    d = subprocess.Popen([ringtraced, "--foreground"], env=env, stdout=log, stderr=log,
                         **popen)
    if not wait_listening(env["RINGTRACE_RUNDIR"]):
        d.kill()
        d.wait()
        raise RuntimeError("the daemon did not listen on its socket")
    return d


def bt2_read(path):
    """(event messages, discarded events, discarded packets) of the traces
    under `path`, as babeltrace2 reads them."""
    import bt2
    events, discarded, lost_packets = [], 0, 0
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            events.append(msg)
        elif type(msg) is bt2._DiscardedEventsMessageConst:
            discarded += msg.count or 0
        elif type(msg) is bt2._DiscardedPacketsMessageConst:
            lost_packets += msg.count or 0
    return events, discarded, lost_packets


def bt2_plain(f):
    """A bt2 field as plain Python: structures as dicts, arrays as lists,
    strings, booleans, reals and integers as such (variants: the selected
    option)."""
    import bt2
    if isinstance(f, bt2._VariantFieldConst):
        return bt2_plain(f.selected_option)
    if isinstance(f, bt2._StructureFieldConst):
        return {k: bt2_plain(v) for k, v in f.items()}
    if isinstance(f, bt2._ArrayFieldConst):
        return [bt2_plain(v) for v in f]
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._BoolFieldConst):
        return bool(f)
    if isinstance(f, bt2._RealFieldConst):
        return float(f)
    return int(f)


def bt2_debug_info(trace):
    """{(event name, ip): func} as babeltrace2's debug-info filter
    resolves the ip context from the trace's state dump ("" when it does
    not): the reference for our own symbols."""
    r = subprocess.run(["babeltrace2", "--debug-info", trace], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("babeltrace2 --debug-info: " + r.stderr)
    funcs = {}
    for line in r.stdout.splitlines():
        # ip in hexadecimal (ours) or decimal (LTTng-UST's).
        m = re.search(r" ([a-z_0-9]+:[a-z_0-9]+): .*ip = (0x[0-9A-F]+|[0-9]+), debug_info = "
                      r"\{ bin = \"[^\"]*\", func = \"([^\"]*)\"", line)
        if m:
            funcs[(m.group(1), int(m.group(2), 0))] = m.group(3)
    return funcs


def rtr_dump(build, path):
    """The events of the traces under `path` as our reader decodes them
    (tests/reader/rtr_dump: one dict per event, with name, ns, trace,
    stream, cpu, context and payload). Raises AssertionError when it
    fails."""
    r = subprocess.run([os.path.join(build, "tests/reader/rtr_dump"), path],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("rtr_dump %s: %s" % (path, r.stderr))
    return [json.loads(line) for line in r.stdout.splitlines()]
