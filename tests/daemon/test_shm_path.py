#!/usr/bin/python3
"""`ringtrace create --shm-path DIR` with a real ringtraced: the session's
buffers (per-uid and per-pid) are files of DIR with their descriptions;
after the daemon and the program are killed with SIGKILL, `ringtrace
recover DIR` finds every committed event the consumer had not written:
the consumer's trace and recover's hold each of the N events once (read
back event by event by babeltrace2 and by our reader). A clean destroy
removes the files; a shared directory is refused; save and list show
the option.

usage: test_shm_path.py BUILD_DIR
"""
import glob
import os
import signal
import subprocess
import time
import unittest

from apps_common import AppCase, DlProgram, RINGTRACE, BUILD, read_events
import rtfixtures  # noqa: E402 (apps_common puts tests/support on the path)

N = 20000


def rtr_ticks(path, tag):
    if not glob.glob(os.path.join(path, "**", "metadata"), recursive=True):
        return []
    return [e["payload"]["seq"] for e in rtfixtures.rtr_dump(BUILD, path)
            if e["name"] == "app:tick" and e["payload"]["tag"] == tag]


def bt2_ticks(path, tag):
    if not glob.glob(os.path.join(path, "**", "metadata"), recursive=True):
        return []
    return [e["seq"] for e in read_events(path) if e["event"] == "app:tick" and e["tag"] == tag]


class ShmPath(AppCase):
    def setUp(self):
        super().setUp()
        self.shm = self.out("shm")
        self.trace = self.out("t")
        self.rec = self.out("rec")

    def session(self, buffers, *opts):
        self.rt("create", "s", "-o", self.trace, "--shm-path", self.shm)
        self.rt("enable-channel", "-u", "ch", buffers, "--subbuf-size", "16k",
                "--num-subbuf", "256", *opts)
        self.rt("enable-event", "-u", "-c", "ch", "app:tick")
        self.rt("start")

    def recover(self):
        r = subprocess.run([RINGTRACE, "recover", self.shm, "-o", self.rec],
                           capture_output=True, text=True, env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stderr

    def wrote_packets(self):
        return any(os.path.getsize(f) > 0 for f in
                   glob.glob(os.path.join(self.trace, "**", "ch_*"), recursive=True))

    def crash(self, buffers, name, *opts, consumed=True):
        """The session, a program that committed N events (and stays),
        then the daemon and the program killed with SIGKILL; returns the
        events the consumer wrote and those recover found. `consumed`: the
        kill waits (20 s at most) for the consumer to have written a
        packet, so that both parts usually hold events (either may be
        empty: the checks hold all the same)."""
        self.session(buffers, *opts)
        prog = self.program()
        prog.cmd(f"emit {N} victim")
        for _ in range(200 if consumed else 0):
            if self.wrote_packets():
                break
            time.sleep(0.1)
        self.assertIn(f"Buffers in files: {self.shm} (ringtrace recover)", self.rt("list", "s"))
        self.assertIn(f"Buffers in files: {self.shm}\n", self.rt("list"))
        rings = sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.shm, "*")))
        want = name.replace("PID", str(prog.pid))
        self.assertEqual(rings, [want + ".desc", want + ".ring"])
        st = os.stat(os.path.join(self.shm, want + ".ring"))
        self.assertEqual(st.st_mode & 0o077, 0)
        self.assertEqual(os.stat(self.shm).st_mode & 0o777, 0o700)
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        os.kill(prog.pid, signal.SIGKILL)
        prog.p.wait()
        err = self.recover()
        self.assertRegex(err, want + r": \d+ events in \d+ packets recovered into ")
        return ([bt2_ticks(self.trace, "victim"), rtr_ticks(self.trace, "victim")],
                [bt2_ticks(self.rec, "victim"), rtr_ticks(self.rec, "victim")])

    def check_union(self, written, recovered):
        for out, rec in zip(written, recovered):
            # Each trace in order, and together every event once.
            self.assertEqual(out, sorted(out))
            self.assertEqual(rec, sorted(rec))
            self.assertEqual(sorted(out + rec), list(range(N)), (len(out), len(rec)))
        # What recover found includes the last, partly filled packets.
        self.assertGreater(len(recovered[0]), 0)
        print(f"  {len(written[0])} events written by the consumer, {len(recovered[0])} "
              f"recovered, of {N}")

    def test_per_uid_daemon_killed(self):
        written, recovered = self.crash("--buffers-uid", f"s-uid-{os.getuid()}-ch")
        self.check_union(written, recovered)

    def test_per_pid_daemon_killed(self):
        written, recovered = self.crash("--buffers-pid", "s-pid-PID-ch")
        self.check_union(written, recovered)

    def test_consumer_wrote_nothing(self):
        # A read timer longer than the run: every event is recovered.
        written, recovered = self.crash("--buffers-uid", f"s-uid-{os.getuid()}-ch",
                                        "--read-timer", "60000000", consumed=False)
        self.check_union(written, recovered)
        self.assertEqual(recovered[0], list(range(N)))

    def test_classes_registered_later(self):
        # A library loaded after the program started registers new
        # classes: the description is rewritten before the program gets
        # their ids, so recover decodes their events (the consumer wrote
        # nothing: a 60 s read timer).
        self.rt("create", "s", "-o", self.trace, "--shm-path", self.shm)
        self.rt("enable-channel", "-u", "ch", "--buffers-uid", "--read-timer", "60000000")
        self.rt("enable-event", "-u", "-c", "ch", "plugin:*")
        self.rt("enable-event", "-u", "-c", "ch", "host:*")
        self.rt("start")
        prog = DlProgram(self.env)
        self.programs.append(prog)
        prog.cmd("load " + os.path.join(BUILD, "tests/integration/plugin.so"))
        prog.cmd("work 3")
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        os.kill(prog.pid, signal.SIGKILL)
        prog.p.wait()
        self.recover()
        got = [(e["event"], e.get("round"), e.get("i")) for e in read_events(self.rec)
               if e["event"] == "plugin:work"]
        self.assertEqual(got, [("plugin:work", 3, i) for i in range(10)])
        got = [(e["name"], e["payload"]["round"], e["payload"]["i"])
               for e in rtfixtures.rtr_dump(BUILD, self.rec) if e["name"] == "plugin:work"]
        self.assertEqual(got, [("plugin:work", 3, i) for i in range(10)])

    def test_clean_destroy_removes_files(self):
        self.session("--buffers-pid")
        prog = self.program()
        prog.cmd("emit 100 clean")
        self.assertEqual(len(glob.glob(os.path.join(self.shm, "*.ring"))), 1)
        self.assertEqual(prog.exit(), (0, ""))
        self.rt("destroy", "s")
        self.assertEqual(os.listdir(self.shm), [])
        self.assertEqual(bt2_ticks(self.trace, "clean"), list(range(100)))

    def test_truncated_file_daemon_survives(self):
        # Any process of the user (a traced program too: it holds the file
        # open for writing) can truncate a buffer file; the daemon's next
        # access to it raised SIGBUS and killed it with all its sessions.
        self.session("--buffers-pid")
        prog = self.program()
        prog.cmd("emit 100 lost")
        ring = glob.glob(os.path.join(self.shm, "*.ring"))
        self.assertEqual(len(ring), 1)
        os.truncate(ring[0], 0)
        # The program's exit makes the daemon flush and read that buffer.
        prog.p.stdin.write("exit\n")
        prog.p.stdin.flush()
        prog.p.wait(timeout=30)
        self.assertIn("Tracing session s", self.rt("list", "s"))
        self.assertIsNone(self.daemon.poll())
        # It still serves: a new program's events reach the trace.
        again = self.program()
        again.cmd("emit 100 after")
        self.assertEqual(again.exit(), (0, ""))
        self.rt("destroy", "s")
        self.assertIsNone(self.daemon.poll())
        self.assertEqual(bt2_ticks(self.trace, "after"), list(range(100)))
        self.assertEqual(rtr_ticks(self.trace, "after"), list(range(100)))
        with open(os.path.join(self.tmp, "daemon.log")) as f:
            self.assertIn("buffer file was truncated under the daemon", f.read())

    def test_save_keeps_it(self):
        self.rt("create", "s", "-o", self.trace, "--shm-path", self.shm)
        saved = self.out("saved")
        self.rt("save", "s", "-o", saved)
        with open(saved) as f:
            self.assertIn(f"shm-path={self.shm}", f.read())
        self.rt("destroy", "s")
        self.rt("load", saved, "--force")
        self.assertIn(f"Buffers in files: {self.shm}", self.rt("list", "s"))

    def test_shared_directory_refused(self):
        shared = self.out("shared")
        os.mkdir(shared, 0o755)
        os.chmod(shared, 0o755)
        r = subprocess.run([RINGTRACE, "create", "s", "-o", self.trace, "--shm-path", shared],
                           capture_output=True, text=True, env=self.env, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"cannot use --shm-path {shared}", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
