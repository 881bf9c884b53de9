#!/usr/bin/python3
"""Record an LTTng-UST trace (private session daemon, rtr_lttng_app's
events, vpid/vtid/procname contexts) and check that rt_reader (rtr_dump)
and babeltrace2 decode the same events: names, timestamps in ns, context
and payload values.

    test_lttng.py BUILD_DIR      (exit 77: LTTng or bt2 not available)
"""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SKIP = 77


def main():
    build = pathlib.Path(sys.argv[1]).resolve()
    app = build / "tests/reader/rtr_lttng_app"
    dump = build / "tests/reader/rtr_dump"
    for tool in ("lttng", "lttng-sessiond"):
        if not shutil.which(tool):
            print("skip: %s not installed" % tool)
            return SKIP
    if not app.exists():
        print("skip: rtr_lttng_app not built (liblttng-ust-dev missing)")
        return SKIP
    try:
        import bt2_compare
    except ImportError:
        print("skip: python3-bt2 not installed")
        return SKIP

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="rtr_lttng."))
    os.chmod(tmp, 0o755)
    prefix = []
    if os.getuid() == 0:
        # A root session daemon would use the system-wide run directory:
        # run ours, and the traced program, as "nobody" in tmp.
        if not shutil.which("setpriv"):
            print("skip: running as root without setpriv")
            return SKIP
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        os.chown(tmp, 65534, 65534)
    env = dict(os.environ, HOME=str(tmp), LTTNG_HOME=str(tmp))
    env.pop("LTTNG_UST_DEBUG", None)
    home_app = tmp / "rtr_lttng_app"
    shutil.copy(app, home_app)
    os.chmod(home_app, 0o755)
    trace = tmp / "trace"

    def lt(*args, check=True):
        r = subprocess.run(prefix + list(args), env=env, cwd=tmp, capture_output=True,
                           text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError("%s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    pid = None
    try:
        lt("lttng-sessiond", "--daemonize", "--no-kernel")
        pidfile = tmp / ".lttng/lttng-sessiond.pid"
        for _ in range(50):
            if pidfile.exists():
                break
            time.sleep(0.1)
        pid = int(pidfile.read_text()) if pidfile.exists() else None
        lt("lttng", "create", "rtr", "--output=" + str(trace))
        lt("lttng", "enable-event", "-u", "rtrtest:*")
        lt("lttng", "add-context", "-u", "-t", "vpid", "-t", "vtid", "-t", "procname")
        lt("lttng", "start")
        lt(str(home_app), "60")
        lt("lttng", "stop")
        lt("lttng", "destroy")
        n = bt2_compare.compare(dump, [trace], min_events=5 * 60)
        print("LTTng-UST trace: rtr_dump and babeltrace2 agree on %d events" % n)
        bt2_compare.compare_gaps(dump, [trace])
        # One level up: the same trace found below (uid/... layout).
        n2 = bt2_compare.compare(dump, [trace / "ust"], min_events=5 * 60)
        assert n2 == n
    finally:
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(50):
                    os.kill(pid, 0)
                    time.sleep(0.1)
            except (ProcessLookupError, PermissionError):
                pass
        if not os.environ.get("RTR_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
