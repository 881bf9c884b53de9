#!/usr/bin/env python3
"""Session daemons streaming to ringtrace-relayd (`create --set-url`):
several daemons on this machine, each with its own run directory and
RINGTRACE_HOSTNAME, one relay on loopback. The traces stored per host are
read back by babeltrace2 and our reader event by event; a relay killed
and restarted in the middle of a session costs counted events only (the
events read plus those the trace says were discarded are every event the
program wrote, and the daemon's count of lost events is the trace's),
and the program does its work while the relay is away; a daemon without
the relay's secret is refused at create, and nothing is stored."""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../support"))
sys.path.insert(0, HERE)
import rtfixtures  # noqa: E402
import relay_client as rc  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
RELAYD = os.path.join(BUILD, "src/relay/ringtrace-relayd")
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
BURST = os.path.join(BUILD, "tests/integration/burst")
APP = os.path.join(BUILD, "tests/daemon/app_prog")


def unread_bytes(port):
    """Bytes received and not yet read on the TCP connections whose local
    port is `port` (/proc/net/tcp's rx_queue)."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                n += int(fields[4].split(":")[1], 16)
    return n


class Host:
    """A daemon of its own (run directory, HOME, host name)."""

    def __init__(self, test, name, secret):
        self.test, self.name = test, name
        base = os.path.join(test.tmp, "host-%d" % len(test.hosts))
        os.makedirs(base)
        self.env = rtfixtures.private_env(base, RINGTRACE_HOSTNAME=name,
                                          RINGTRACE_RELAY_SECRET=secret)
        self.log = open(os.path.join(base, "daemon.log"), "a")
        self.daemon = rtfixtures.start_daemon(RINGTRACED, self.env, self.log)

    def rt(self, *args, check=True):
        r = subprocess.run([RINGTRACE, *args], env=self.env, capture_output=True, text=True,
                           timeout=120)
        if check and r.returncode != 0:
            raise AssertionError("ringtrace %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def stop(self):
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=30)
        self.log.close()


class Streaming(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-stream-")
        self.secret = os.path.join(self.tmp, "secret")
        self.out = os.path.join(self.tmp, "out")
        self.relay_log = os.path.join(self.tmp, "relay.log")
        env = rtfixtures.private_env(os.path.join(self.tmp, "relay"),
                                     RINGTRACE_RELAY_SECRET=self.secret)
        self.relay_env = env
        self.relay, self.ctrl, self.data = rc.start_relay(RELAYD, env, self.out, self.relay_log)
        self.hosts = []
        self.url = "net://127.0.0.1:%d:%d" % (self.ctrl, self.data)

    def tearDown(self):
        for h in self.hosts:
            h.stop()
        if self.relay.poll() is None:
            self.relay.send_signal(signal.SIGTERM)
            self.relay.wait(timeout=10)
        if not os.environ.get("RT_KEEP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def host(self, name, secret=None):
        h = Host(self, name, secret or self.secret)
        self.hosts.append(h)
        return h

    def stored(self, host, session):
        dirs = glob.glob(os.path.join(self.out, host, session + "-*"))
        self.assertEqual(len(dirs), 1, dirs)
        return dirs[0]

    def test_hosts_stream_every_event(self):
        a, b = self.host("hostA"), self.host("hostB")
        n = {"hostA": 20000, "hostB": 7000}
        for h in (a, b):
            r = h.rt("create", "web", "--set-url=" + self.url)
            self.assertIn("streamed to the relay at " + self.url, r.stdout)
            h.rt("enable-channel", "-u", "small", "--subbuf-size", "16k")
            h.rt("enable-event", "-u", "-a", "-c", "small")
            h.rt("start")
        for h in (a, b):
            r = subprocess.run([BURST, str(n[h.name]), "return"], env=h.env, timeout=120)
            self.assertEqual(r.returncode, 0)
        for h in (a, b):
            h.rt("stop")
            status = h.rt("status").stdout
            self.assertRegex(status, r"Relay: connected as host %s " % h.name)
            lost = int(re.search(r"small: .*, events \d+, lost (\d+),", status).group(1))
            h.rt("destroy")
            trace = self.stored(h.name, "web")
            events, discarded, lost_packets = rtfixtures.bt2_read(trace)
            seqs = [int(e.event.payload_field["seq"]) for e in events
                    if e.event.name == "burst:ev"]
            # Every event is there or counted: by the buffer (discard mode
            # on a busy machine) in the trace's events_discarded.
            # burst:ev N times, then burst:done.
            self.assertEqual(len(events) + discarded, n[h.name] + 1, h.name)
            self.assertEqual(discarded, lost)
            self.assertEqual(seqs, sorted(seqs))
            ours = [e for e in rtfixtures.rtr_dump(BUILD, trace) if e["name"] == "burst:ev"]
            self.assertEqual([e["payload"]["seq"] for e in ours], seqs)
            self.assertGreater(len(seqs), 0)
            # The host's name and its clock, put on the relay's: on one
            # machine the true offset is 0, so the estimate is within its
            # error (NTP's bound: half the round trip).
            tenv = events[0].event.stream.trace.environment
            self.assertEqual(str(tenv["hostname"]), h.name)
            off, err = int(tenv["relay_clock_offset_ns"]), int(tenv["relay_clock_error_ns"])
            self.assertGreater(err, 0)
            self.assertLessEqual(abs(off), err)
            stats = subprocess.run([RINGTRACE, "view", "--stats", trace], capture_output=True,
                                   text=True, timeout=60).stdout
            self.assertIn("host %s: clock put on the relay's by %+d ns, estimated error +-%d ns"
                          % (h.name, off, err), stats)
        self.assertEqual(sorted(os.listdir(self.out)), ["hostA", "hostB"])

    def test_rotation_on_the_relay(self):
        """`rotate` on a streamed session, as LTTng 2.11+ with its relay:
        the relay archives each ended chunk under HOST/SESSION-DATE/
        archives/BEGIN-END-N; destroy archives the last one. Every event
        is in exactly one archive, each archive read alone by babeltrace2
        and our reader. A live session does not rotate (as in LTTng)."""
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url)
        a.rt("enable-channel", "-u", "small", "--subbuf-size", "16k")
        a.rt("enable-event", "-u", "-a", "-c", "small")
        a.rt("start")
        app = subprocess.Popen([APP], env=a.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)

        def cmd(line):
            app.stdin.write(line + "\n")
            app.stdin.flush()
            return app.stdout.readline().strip()

        self.assertTrue(app.stdout.readline().startswith("ready"))
        printed = []
        counts = {"a": 3000, "b": 2000, "c": 500}
        for tag in ("a", "b"):
            self.assertEqual(cmd("emit %d %s" % (counts[tag], tag)), "ok")
            r = a.rt("rotate")
            m = re.search(r"Trace chunk archive for session web is now readable at "
                          r"net://127\.0\.0\.1:%d:%d/(hostA/web-\d{8}-\d{6}/archives/"
                          r"\d{8}T\d{6}[+-]\d{4}-\d{8}T\d{6}[+-]\d{4}-\d+)$"
                          % (self.ctrl, self.data), r.stdout.strip())
            self.assertIsNotNone(m, r.stdout)
            printed.append(m.group(1))
            # Archived: whole on the relay once rotate returns.
            events, discarded, _ = rtfixtures.bt2_read(os.path.join(self.out, m.group(1)))
            self.assertEqual(discarded, 0)
            self.assertEqual([int(e.event.payload_field["seq"]) for e in events],
                             list(range(counts[tag])))
        self.assertEqual(cmd("emit %d c" % counts["c"]), "ok")
        self.assertEqual(cmd("exit"), "")
        app.wait(timeout=30)
        a.rt("stop")
        status = a.rt("status").stdout
        self.assertRegex(status, r"small: .*, lost 0,")
        a.rt("destroy")
        session = self.stored("hostA", "web")
        self.assertEqual(os.listdir(session), ["archives"])
        archives = sorted(os.listdir(os.path.join(session, "archives")),
                          key=lambda n: int(n.rsplit("-", 1)[1]))
        self.assertEqual([n.rsplit("-", 1)[1] for n in archives], ["0", "1", "2"])
        self.assertEqual([os.path.join("hostA", os.path.basename(session), "archives", n)
                          for n in archives[:2]], printed)
        seen = []
        for n, tag in zip(archives, ("a", "b", "c")):
            path = os.path.join(session, "archives", n)
            self.assertEqual(os.listdir(path), ["ust"])
            events, discarded, _ = rtfixtures.bt2_read(path)
            self.assertEqual(discarded, 0)
            ticks = [(str(e.event.payload_field["tag"]), int(e.event.payload_field["seq"]))
                     for e in events if e.event.name == "app:tick"]
            self.assertEqual(ticks, [(tag, i) for i in range(counts[tag])], n)
            ours = [(e["payload"]["tag"], e["payload"]["seq"])
                    for e in rtfixtures.rtr_dump(BUILD, path) if e["name"] == "app:tick"]
            self.assertEqual(ours, ticks)
            seen += ticks
        self.assertEqual(sorted(seen), sorted((t, i) for t in counts for i in range(counts[t])))
        # A live session does not rotate: its viewers follow one trace.
        a.rt("create", "lv", "--set-url=" + self.url, "--live")
        a.rt("enable-event", "-u", "-a")
        a.rt("start")
        for args in (["rotate"], ["enable-rotation", "--size=1M"]):
            r = a.rt(*args, check=False)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("is a live session", r.stderr)
        self.assertNotIn("Automatic rotation", a.rt("list", "lv").stdout)
        a.rt("destroy")

    def test_wrong_secret_refused_at_create(self):
        other = os.path.join(self.tmp, "other-secret")
        with open(os.open(other, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        c = self.host("hostC", other)
        r = c.rt("create", "web", "--set-url=" + self.url, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("authentication failed", r.stderr)
        self.assertNotIn("web", c.rt("list").stdout)
        self.assertEqual(os.listdir(self.out), [])
        # No secret at all: said so.
        os.unlink(other)
        r = c.rt("create", "web", "--set-url=" + self.url, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no relay secret", r.stderr)
        # The relay keeps serving the others.
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url)

    def test_bad_urls(self):
        a = self.host("hostA")
        # What a streamed session cannot do yet is said, not attempted.
        a.rt("create", "net", "--set-url=" + self.url)
        r = a.rt("rotate", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("never been started", r.stderr)
        a.rt("destroy", "net")
        for args in (["--set-url=file:///tmp"], ["--set-url=net://"],
                     ["--set-url=net://h:0"], ["--set-url=net://h:1:2:3"],
                     ["--ctrl-url=tcp://h:1"], ["--set-url=" + self.url, "-o", "/tmp/x"],
                     ["--set-url=" + self.url, "--live=0"],
                     ["--ctrl-url=tcp://a:1", "--data-url=tcp://b:2"]):
            r = a.rt("create", "x", *args, check=False)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertNotIn("x", a.rt("list").stdout.split())
        bad_host = self.host("..")
        r = bad_host.rt("create", "x", "--set-url=" + self.url, check=False)
        self.assertEqual(r.returncode, 2)    # an invalid value
        self.assertIn("host name '..'", r.stderr)
        self.assertEqual(os.listdir(self.out), ["hostA"])

    def test_save_and_load(self):
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url, "--live=200000")
        a.rt("enable-event", "-u", "-a")
        saved = os.path.join(self.tmp, "web.session")
        a.rt("save", "web", "-o", saved)
        with open(saved) as f:
            text = f.read()
        self.assertIn("set-url=" + self.url, text)
        self.assertIn("live=200000", text)
        a.rt("destroy", "web")
        a.rt("load", saved)
        status = a.rt("status", "web").stdout
        self.assertIn("Trace output: " + self.url, status)
        self.assertRegex(status, r"Relay: connected as host hostA")
        a.rt("start", "web")
        self.assertEqual(subprocess.run([BURST, "100", "return"], env=a.env,
                                        timeout=60).returncode, 0)
        a.rt("destroy", "web")
        events, _, _ = rtfixtures.bt2_read(self.out)
        self.assertEqual(len(events), 101)

    def test_snapshots_sent_to_the_relay(self):
        a = self.host("hostA")
        r = a.rt("create", "fl", "--snapshot", "--set-url=" + self.url)
        self.assertIn("Snapshots will be sent to the relay at " + self.url, r.stdout)
        a.rt("enable-event", "-u", "-a")
        a.rt("start")
        self.assertEqual(subprocess.run([BURST, "1000", "return"], env=a.env,
                                        timeout=60).returncode, 0)
        r = a.rt("snapshot", "record")
        first = re.search(r"Snapshot recorded in (snapshot-0-\d{8}-\d{6}) \(on the relay",
                          r.stdout).group(1)
        self.assertEqual(subprocess.run([BURST, "500", "return"], env=a.env,
                                        timeout=60).returncode, 0)
        r = a.rt("snapshot", "record")
        second = re.search(r"(snapshot-1-\d{8}-\d{6})", r.stdout).group(1)
        session = self.stored("hostA", "fl")
        self.assertEqual(sorted(os.listdir(session)), [first, second])
        # A flight recorder: the first holds the first run, the second both.
        for snap, want in ((first, [1000]), (second, [1000, 500])):
            events, discarded, _ = rtfixtures.bt2_read(os.path.join(session, snap))
            self.assertEqual(discarded, 0)
            runs, seqs = [], []
            for e in events:
                if e.event.name == "burst:done":
                    runs.append(int(e.event.payload_field["count"]))
                    self.assertEqual(seqs, list(range(runs[-1])))
                    seqs = []
                else:
                    seqs.append(int(e.event.payload_field["seq"]))
            self.assertEqual(runs, want)
            ours = rtfixtures.rtr_dump(BUILD, os.path.join(session, snap))
            self.assertEqual(len(ours), len(events))
        # Nothing stays here: the copy was in the private run directory.
        staging = os.path.join(a.env["RINGTRACE_RUNDIR"], "snapshots")
        self.assertEqual(os.listdir(staging), [])
        # Relay gone: the snapshot is refused with the reason, the
        # session goes on.
        self.relay.kill()
        self.relay.wait()
        r = a.rt("snapshot", "record", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("relay", r.stderr)
        self.assertEqual(os.listdir(staging), [])

    def wait_status(self, h, pattern, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = h.rt("status").stdout
            if re.search(pattern, s):
                return s
            time.sleep(0.1)
        self.fail("status never matched %r: %s" % (pattern, s))

    def test_live_event_seen_while_the_program_runs(self):
        """A live session of a program that writes one event and then
        waits: the live timer closes its packet and the idle streams'
        relay stores it while the program still runs (no sub-buffer ever
        fills)."""
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url, "--live=100000")
        a.rt("enable-event", "-u", "-a")
        a.rt("start")
        app = subprocess.Popen([APP], env=a.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
        try:
            self.assertTrue(app.stdout.readline().startswith("ready"))
            app.stdin.write("emit 1 live-one\n")
            app.stdin.flush()
            self.assertEqual(app.stdout.readline().strip(), "ok")
            # The live timer's flush sends the packet: the relay stores it
            # while the program still runs (a bounded wait).
            trace, tags = None, []
            deadline = time.monotonic() + 60
            while not tags and time.monotonic() < deadline:
                time.sleep(0.1)
                dirs = glob.glob(os.path.join(self.out, "hostA", "web-*"))
                if not dirs:
                    continue
                trace = dirs[0]
                # babeltrace2 in a process of its own: the trace may not
                # be whole yet (stream files before their metadata), and
                # python3-bt2 aborts the test's process on a call after
                # one that failed.
                r = subprocess.run(["babeltrace2", trace], capture_output=True, text=True,
                                   timeout=60)
                if r.returncode != 0:
                    continue
                tags = re.findall(r' app:tick: .*tag = "([^"]*)"', r.stdout)
            self.assertEqual(tags, ["live-one"])
            self.assertIsNone(app.poll())
        finally:
            app.stdin.close()
            app.wait(timeout=30)
            app.stdout.close()
        a.rt("stop")
        a.rt("destroy")

    def test_rotation_with_the_relay_away(self):
        """Packets sent but never stored (the relay stopped, then killed
        with them unread), then a rotation while the relay is away: at
        the next connection the ended chunk's stream is added again, the
        relay says which packets it has, and the others are counted lost,
        in the next chunk's trace (babeltrace2's discarded events) and in
        status: what both chunks hold plus what is counted lost is what
        was written. Before, those packets were dropped uncounted."""
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url)
        a.rt("enable-channel", "-u", "small", "--subbuf-size", "16k", "--num-subbuf", "8")
        a.rt("enable-event", "-u", "-a", "-c", "small")
        a.rt("start")
        # One CPU, one stream (see test_relay_killed_and_restarted).
        cpu = sorted(os.sched_getaffinity(0))[0]
        app = subprocess.Popen([APP], env=a.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))

        def cmd(line):
            app.stdin.write(line + "\n")
            app.stdin.flush()
            return app.stdout.readline().strip()

        self.assertTrue(app.stdout.readline().startswith("ready"))
        self.assertEqual(cmd("emit 3000 before"), "ok")
        a.rt("status")      # stored on the relay
        self.relay.send_signal(signal.SIGSTOP)
        self.assertEqual(cmd("emit 1500 inflight"), "ok")
        # Sent: the relay's data connection holds a packet's bytes unread.
        deadline = time.monotonic() + 60
        while unread_bytes(self.data) < 16384:
            self.assertLess(time.monotonic(), deadline, "no packet sent to the relay")
            time.sleep(0.05)
        self.relay.kill()
        self.relay.wait()
        r = a.rt("rotate", check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.relay = rc.restart_relay_on(RELAYD, self.relay_env, self.out, self.relay_log,
                                         self.ctrl, self.data)
        # Packets make the consumer connect again (at most once a second).
        spun, deadline = 0, time.monotonic() + 60
        while not re.search(r"Relay: connected as host hostA \(connection 2\)",
                            a.rt("status").stdout):
            self.assertLess(time.monotonic(), deadline, "never connected again")
            spun += int(cmd("spin 200").split()[1])
        self.assertEqual(cmd("emit 3000 after"), "ok")
        self.assertEqual(cmd("exit"), "")
        app.wait(timeout=30)
        a.rt("stop", check=False)
        status = a.rt("status").stdout
        lost = int(re.search(r"small: .*, events \d+, lost (\d+),", status).group(1))
        a.rt("destroy", check=False)
        session = self.stored("hostA", "web")
        # The first chunk stays in place (its archive failed with the
        # relay away); the second is archived at destroy.
        archives = os.listdir(os.path.join(session, "archives"))
        self.assertEqual(len(archives), 1, archives)
        chunks = [os.path.join(session, "ust"), os.path.join(session, "archives", archives[0])]
        tags, discarded = {}, []
        for path in chunks:
            events, d, _ = rtfixtures.bt2_read(path)
            discarded.append(d)
            for e in events:
                if e.event.name == "app:tick":
                    tags.setdefault(str(e.event.payload_field["tag"]), []).append(
                        int(e.event.payload_field["seq"]))
            ours = [e for e in rtfixtures.rtr_dump(BUILD, path) if e["name"] == "app:tick"]
            self.assertEqual(len(ours), sum(1 for e in events if e.event.name == "app:tick"))
        self.assertEqual(tags["before"], list(range(3000)))
        self.assertEqual(tags["after"], list(range(3000)))
        self.assertNotIn("inflight", tags)
        # The first chunk read alone tells of every event it lost: those
        # in flight when the relay went away, and the rest of its last
        # packet (lost when the rotation flushed it).
        self.assertEqual(discarded[0], 1500)
        r = subprocess.run([RINGTRACE, "view", "--stats", chunks[0]], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        row = re.search(r"^\d+\s+small_%d\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$" % cpu, r.stdout,
                        re.M)
        self.assertIsNotNone(row, r.stdout)
        self.assertEqual((int(row.group(2)), int(row.group(3))), (3000, 1500))
        self.assertGreater(int(row.group(4)), 0)
        # Status counted them, with every other event lost while the
        # relay was away: stored plus lost is what was written.
        stored = sum(map(len, tags.values()))
        self.assertEqual(stored + lost, 3000 + 1500 + spun + 3000)
        self.assertGreater(lost, 0)

    def test_relay_killed_and_restarted(self):
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url)
        a.rt("enable-channel", "-u", "small", "--subbuf-size", "16k", "--num-subbuf", "8")
        a.rt("enable-event", "-u", "-a", "-c", "small")
        a.rt("start")
        # One CPU, so one stream: what is lost is between packets the
        # relay has (CTF tells a reader of lost events by the difference
        # between a stream's packets; a stream whose first packets were
        # lost says nothing of them).
        cpu = sorted(os.sched_getaffinity(0))[0]
        app = subprocess.Popen([APP], env=a.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))

        def cmd(line):
            app.stdin.write(line + "\n")
            app.stdin.flush()
            return app.stdout.readline().strip()

        self.assertTrue(app.stdout.readline().startswith("ready"))
        cmd("emit 3000 before")
        # status writes what the buffers hold: on a relay, stored there.
        a.rt("status")
        trace = self.stored("hostA", "web")
        # In a process of its own: the session still streams (see
        # test_live_event_seen_while_the_program_runs).
        r = subprocess.run(["babeltrace2", trace], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(re.findall(r' app:tick: .*tag = "before"', r.stdout)), 3000)
        self.relay.kill()
        self.relay.wait()
        # The program works while the relay is away: it is never waited
        # for (the test would hang here otherwise).
        spun = int(cmd("spin 300").split()[1])
        self.assertGreater(spun, 0)
        self.wait_status(a, r"Relay: not connected")
        self.relay = rc.restart_relay_on(RELAYD, self.relay_env, self.out, self.relay_log,
                                         self.ctrl, self.data)
        self.wait_status(a, r"Relay: connected as host hostA \(connection 2\)")
        cmd("emit 3000 after")
        self.assertEqual(cmd("exit"), "")
        app.wait(timeout=30)
        # The stop says once that the trace is incomplete, and why.
        r = a.rt("stop", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"session web stopped, but its trace is incomplete: cannot "
                         r"write .* (to the relay )?in net://127\.0\.0\.1:%d:%d/ust/uid/\d+/64-bit: "
                         r".*; \d+ events in \d+ packets could not be written \(written again "
                         r"since\)" % (self.ctrl, self.data))
        status = a.rt("status").stdout
        lost = int(re.search(r"small: .*, events \d+, lost (\d+),", status).group(1))
        a.rt("destroy")
        self.assertEqual(self.stored("hostA", "web"), trace)
        events, discarded, lost_packets = rtfixtures.bt2_read(trace)
        tags = {}
        for e in events:
            if e.event.name == "app:tick":
                tags.setdefault(str(e.event.payload_field["tag"]), []).append(
                    int(e.event.payload_field["seq"]))
        written = 3000 + spun + 3000
        self.assertEqual(sum(map(len, tags.values())) + discarded, written)
        self.assertEqual(discarded, lost)
        self.assertGreater(discarded, 0)
        self.assertEqual(tags["after"], list(range(3000)))
        ours = [e for e in rtfixtures.rtr_dump(BUILD, trace) if e["name"] == "app:tick"]
        self.assertEqual(len(ours), sum(map(len, tags.values())))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)
