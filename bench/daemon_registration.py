#!/usr/bin/python3
"""How long ringtraced takes to register a program with many event
classes, and how long `ringtrace list` waits meanwhile.

A private daemon gets a started session recording every event
(`enable-event -u -a`); for each N, a client speaking the app protocol
(tests/daemon/raw_app.py) registers N classes raw:evK { u32 v } while
`ringtrace list` runs in a loop. Printed: the time from the REGISTER sent
to its reply (building the payload in Python included, about 0.15 s for
65,536 classes) and the slowest `list`. Report only, nothing asserted.

usage: bench/daemon_registration.py BUILD_DIR [N,N,...]   (default 16384,65536)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../tests/daemon"))
import raw_app  # noqa: E402


def main():
    build = os.path.abspath(sys.argv[1])
    sizes = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "16384,65536").split(",")]
    tmp = tempfile.mkdtemp(prefix="rt-bench-reg-")
    run = os.path.join(tmp, "run")
    env = dict(os.environ, RINGTRACE_RUNDIR=run, HOME=tmp)
    with open(os.path.join(tmp, "daemon.log"), "w") as log:
        daemon = subprocess.Popen([os.path.join(build, "src/daemon/ringtraced"), "-f"],
                                  env=env, stdout=log, stderr=log)

    def rt(*args):
        return subprocess.run([os.path.join(build, "src/cli/ringtrace"), *args], env=env,
                              capture_output=True, text=True, timeout=300)

    try:
        rt("create", "s", "-o", os.path.join(tmp, "out"))
        rt("enable-event", "-u", "-a")
        rt("start")
        for n in sizes:
            worst, stop = [0.0, 0], threading.Event()

            def lister():
                while not stop.is_set():
                    t = time.monotonic()
                    ok = rt("list").returncode == 0
                    worst[0] = max(worst[0], time.monotonic() - t)
                    worst[1] += not ok

            th = threading.Thread(target=lister)
            th.start()
            t = time.monotonic()
            app = raw_app.RawApp(run, n, procname=f"n{n}")
            status = app.wait_registered(600)
            took = time.monotonic() - t
            time.sleep(0.3)
            stop.set()
            th.join()
            app.close()
            print(f"{n} classes: registered (status {status}) in {took:.3f} s; "
                  f"slowest `list` {worst[0]:.3f} s, {worst[1]} failed", flush=True)
        rt("stop")
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
