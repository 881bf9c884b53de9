#!/usr/bin/env python3
"""Cluster-wide triggers (`--action=snapshot-session S --cluster`): three
session daemons on this machine (hosts A, B and C: their own run
directories and RINGTRACE_HOSTNAME), each with a snapshot session S sent
to one relay on loopback, and a host D with another session. A trigger
on A makes the relay ask every host with a session S for a snapshot; each
is stored under its host's directory with the name the relay gave, and
read back by babeltrace2 and our reader: every host's holds its events
before the trigger (numbered ticks, the hosts' workloads in lockstep),
and the hosts' windows (the snapshots' packets, on the relay's clock)
all hold the trigger's time. D is not asked. A cluster request that is
not authenticated, or replayed, is refused, and the relay goes on
serving the others. A relay that stops answering (its port connects,
then nothing) does not stall the daemon's commands while the cluster
listener tries to connect again."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import struct
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
APP = os.path.join(BUILD, "tests/daemon/app_prog")

CLUSTER_LISTEN, CLUSTER_TRIGGER, CLUSTER_SNAPSHOT, CLUSTER_DONE = 22, 23, 26, 27
TICKS = 60          # before the trigger, on every host
AFTER = 20          # after it


class Host:
    """A daemon of its own (run directory, HOME, host name) and a traced
    program it records, driven line by line."""

    def __init__(self, test, name):
        self.test, self.name = test, name
        self.base = os.path.join(test.tmp, "host-" + name)
        os.makedirs(self.base)
        self.env = rtfixtures.private_env(self.base, RINGTRACE_HOSTNAME=name,
                                          RINGTRACE_RELAY_SECRET=test.secret)
        self.log = open(os.path.join(self.base, "daemon.log"), "a")
        self.daemon = rtfixtures.start_daemon(RINGTRACED, self.env, self.log)
        self.app = None

    def rt(self, *args, check=True):
        r = subprocess.run([RINGTRACE, *args], env=self.env, capture_output=True, text=True,
                           timeout=120)
        if check and r.returncode != 0:
            raise AssertionError("%s: ringtrace %s: %s%s" % (self.name, " ".join(args),
                                                             r.stdout, r.stderr))
        return r

    def start_app(self):
        self.app = subprocess.Popen([APP], env=self.env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)
        line = self.app.stdout.readline()
        assert line.startswith("ready"), line

    def cmd(self, line):
        self.app.stdin.write(line + "\n")
        self.app.stdin.flush()
        return self.app.stdout.readline().strip()

    def stop(self):
        if self.app and self.app.poll() is None:
            self.app.stdin.close()
            self.app.wait(timeout=30)
            self.app.stdout.close()
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=30)
        self.log.close()

    def logged(self):
        with open(os.path.join(self.base, "daemon.log")) as f:
            return f.read()


def bt2_window(path):
    """babeltrace2's view of a trace: its events as (name, tag, seq, ns from
    origin), and the first packet's beginning and the last packet's end
    (ns from origin)."""
    import bt2
    events, begin, end = [], None, None
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._PacketBeginningMessageConst:
            t = msg.default_clock_snapshot.ns_from_origin
            begin = t if begin is None else min(begin, t)
        elif type(msg) is bt2._PacketEndMessageConst:
            t = msg.default_clock_snapshot.ns_from_origin
            end = t if end is None else max(end, t)
        elif type(msg) is bt2._EventMessageConst:
            e = msg.event
            tag = str(e.payload_field["tag"]) if e.name == "app:tick" else None
            events.append((e.name, tag, msg.default_clock_snapshot.ns_from_origin))
    return events, begin, end


class Cluster(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-cluster-")
        self.secret = os.path.join(self.tmp, "secret")
        self.out = os.path.join(self.tmp, "out")
        self.relay_log = os.path.join(self.tmp, "relay.log")
        self.relay_env = rtfixtures.private_env(os.path.join(self.tmp, "relay"),
                                                RINGTRACE_RELAY_SECRET=self.secret)
        self.relay, self.ctrl, self.data = rc.start_relay(RELAYD, self.relay_env, self.out,
                                                          self.relay_log)
        self.url = "net://127.0.0.1:%d:%d" % (self.ctrl, self.data)
        self.hosts = []

    def tearDown(self):
        for h in self.hosts:
            h.stop()
        if self.relay.poll() is None:
            self.relay.send_signal(signal.SIGTERM)
            self.relay.wait(timeout=10)
        if not os.environ.get("RT_KEEP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def relay_logged(self):
        with open(self.relay_log) as f:
            return f.read()

    def wait_relay(self, pattern, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.relay_logged())
            if m:
                return m
            time.sleep(0.05)
        self.fail("the relay never logged %r:\n%s" % (pattern, self.relay_logged()))

    def host(self, name, session):
        h = Host(self, name)
        self.hosts.append(h)
        h.rt("create", session, "--snapshot", "--set-url=" + self.url)
        h.rt("enable-event", "-u", "-a")
        h.rt("add-context", "-u", "-t", "vtid", "-t", "procname")
        h.rt("start")
        h.start_app()
        return h

    def snapshot_dir(self, host, session, name):
        dirs = glob.glob(os.path.join(self.out, host, session + "-*", name))
        self.assertEqual(len(dirs), 1, (host, dirs))
        return dirs[0]

    def test_cluster_snapshot(self):
        a, b, c = (self.host(n, "S") for n in "ABC")
        d = self.host("D", "other")
        for h in (a, b, c, d):
            self.wait_relay(r"host %s: cluster requests of session %s listened to"
                            % (h.name, "other" if h is d else "S"))
        a.rt("add-trigger", "--name=cl", "--condition=event-rule-matches", "--type=user",
             "--name=app:tick", "--filter=tag == \"fire\"",
             "--action=snapshot-session", "S", "--cluster")
        self.assertIn("snapshot session S on every host of its relay",
                      a.rt("list-triggers").stdout)
        # The hosts' workloads in lockstep: tick k on every host before
        # tick k + 1 on any; then A's event that fires the trigger; then
        # more ticks.
        for k in range(TICKS):
            for h in (a, b, c, d):
                self.assertEqual(h.cmd("emit 1 t%d" % k), "ok")
        self.assertEqual(a.cmd("emit 1 fire"), "ok")
        for k in range(TICKS, TICKS + AFTER):
            for h in (a, b, c, d):
                self.assertEqual(h.cmd("emit 1 t%d" % k), "ok")
        m = self.wait_relay(r"cluster snapshot (\d+) of session S \(trigger on host A\): "
                            r"3 of 3 hosts stored as (cluster-\d+-\d{8}-\d{6}), the last "
                            r"([\d.]+) ms after the trigger \(([^)]*)\)")
        name = m.group(2)
        self.assertEqual(sorted(re.findall(r"(\w) [\d.]+ ms", m.group(4))), ["A", "B", "C"])
        self.assertRegex(self.relay_logged(), r"cluster snapshot %s of session S: trigger on "
                         r"host A, 3 hosts asked" % m.group(1))
        # D, with no session S, was not asked, and stored nothing.
        self.assertEqual(glob.glob(os.path.join(self.out, "D", "*", "cluster-*")), [])
        self.assertNotIn("cluster snapshot", d.logged())
        fired = None
        windows = {}
        ticks = 0
        for h in (a, b, c):
            path = self.snapshot_dir(h.name, "S", name)
            events, begin, end = bt2_window(path)
            tags = [t for n, t, _ in events if n == "app:tick"]
            # Every tick the host wrote before the trigger, in order (a
            # flight recorder whose buffers are far larger than this).
            before = [t for t in tags if t != "fire"][:TICKS]
            self.assertEqual(before, ["t%d" % k for k in range(TICKS)], h.name)
            if h is a:
                self.assertEqual(tags[TICKS], "fire")
                fired = [ns for n, t, ns in events if t == "fire"][0]
            else:
                self.assertNotIn("fire", tags)
            # Ticks after the trigger, if any, come after all of those.
            rest = [t for t in tags if t != "fire"][TICKS:]
            self.assertEqual(rest, ["t%d" % k for k in range(TICKS, TICKS + len(rest))])
            windows[h.name] = (begin, end)
            ticks += len(tags)
            ours = [e for e in rtfixtures.rtr_dump(BUILD, path) if e["name"] == "app:tick"]
            self.assertEqual([e["payload"]["tag"] for e in ours], tags)
            self.assertIn("cluster snapshot %s (trigger on host A) recorded in %s"
                          % (m.group(1), name), h.logged())
        # The windows, on the relay's clock, all hold the trigger's time:
        # each host's snapshot was taken after the relay asked, so its
        # packets end after it.
        for host, (begin, end) in windows.items():
            self.assertLessEqual(begin, fired, host)
            self.assertGreaterEqual(end, fired, host)
        # view merges the hosts on that clock, and says each one's offset.
        paths = [self.snapshot_dir(h, "S", name) for h in "ABC"]
        stats = subprocess.run([RINGTRACE, "view", "--stats", *paths], capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(stats.returncode, 0, stats.stderr)
        for h in "ABC":
            self.assertRegex(stats.stdout, r"host %s: clock put on the relay's by [+-]\d+ ns, "
                             r"estimated error \+-\d+ ns" % h)
        view = subprocess.run([RINGTRACE, "view", "--format=json", "-e", "app:tick", *paths],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(view.returncode, 0, view.stderr)
        merged = [json.loads(line) for line in view.stdout.splitlines()]
        self.assertEqual(len(merged), ticks)
        times = [e["ts"] for e in merged]
        self.assertEqual(times, sorted(times))

        # analyze merges them too, each host's threads its own (on
        # several machines a tid says nothing of another host's).
        an = subprocess.run([RINGTRACE, "analyze", *paths], capture_output=True, text=True,
                            timeout=60)
        self.assertEqual(an.returncode, 0, an.stderr)
        act = an.stdout[an.stdout.index("== Activity per tid =="):]
        rows = re.findall(r"^([A-D])/(\d+) +app_prog +(\d+) ", act, re.M)
        self.assertEqual(sorted(r[0] for r in rows), ["A", "B", "C"], act)
        self.assertEqual(sum(int(r[2]) for r in rows), ticks)

        self.check_refusals(a, int(m.group(1)))

    def check_refusals(self, a, first):
        key = rc.read_secret(self.secret)
        # Not authenticated: a cluster request without the handshake
        # closes the connection; nothing is asked.
        raw = rc.Conn(self.ctrl)
        raw.send(CLUSTER_TRIGGER, struct.pack(">QQQ", 1, time.time_ns(), 1))
        self.assertTrue(raw.closed_by_peer())
        raw.close()
        # A wrong secret: refused at the handshake.
        bad = rc.Conn(self.ctrl)
        self.assertEqual(bad.handshake(os.urandom(32), rc.ROLE_CTRL, "E", check_relay=False)[0],
                         "fail")
        bad.close()
        # A host E, authenticated, with a session S of its own: its
        # request is served (the relay asks A, B and C) ...
        e = rc.Conn(self.ctrl)
        self.assertEqual(e.handshake(key, rc.ROLE_CTRL, "E"), "ok")
        st, sid, msg = e.create_session("S", 1764000000, flags=1)
        self.assertEqual(st, 0, msg)
        trigger = struct.pack(">QQQ", sid, time.time_ns(), 7)
        st, rid, msg = e.request(CLUSTER_TRIGGER, trigger)
        # (at most one request a second per session name: the relay may
        # say so, and then asks nobody)
        self.assertIn(st, (0, -16), msg)
        # ... but the same request again on its connection is refused
        # as replayed,
        st, _, msg = e.request(CLUSTER_TRIGGER, trigger)
        self.assertEqual(st, -114, msg)     # EALREADY
        self.assertIn("replayed", msg)
        # and E's whole conversation replayed on a new connection fails
        # its handshake (the relay's nonce is new).
        replay = rc.Conn(self.ctrl)
        for f in e.sent:
            try:
                replay.s.sendall(f)
            except OSError:
                break
        self.assertTrue(replay.closed_by_peer())
        replay.close()
        e.close()
        # The relay goes on serving: A's trigger fires again (after the
        # rate limit's second) and every host is asked again.
        time.sleep(1.1)
        self.assertEqual(a.cmd("emit 1 fire"), "ok")
        done = r"cluster snapshot (\d+) of session S \(trigger on host A\): 3 of 3 hosts stored"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if [i for i in re.findall(done, self.relay_logged()) if int(i) > first]:
                break
            time.sleep(0.05)
        else:
            self.fail("no second cluster snapshot:\n" + self.relay_logged())


    def test_silent_relay_does_not_stall_commands(self):
        """The relay goes away and its control port is taken by a socket
        that completes TCP connections and then answers nothing (as a
        relay that stopped serving, or a host that drops the packets after
        the connect). The daemon's cluster listener connects again every
        second and waits for the handshake's answer (RNET_CONNECT_MS, 2 s);
        that wait is off the daemon's loop, so `ringtrace list` is answered
        while an attempt is held open. Before, the loop waited in the
        handshake and answered only once the attempt was given up (the
        held connection then found closed)."""
        a = Host(self, "A")
        self.hosts.append(a)
        a.rt("create", "S", "--snapshot", "--set-url=" + self.url)
        self.wait_relay(r"host A: cluster requests of session S listened to")
        self.relay.send_signal(signal.SIGTERM)
        self.relay.wait(timeout=10)
        silent = socket.socket()
        silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        silent.bind(("127.0.0.1", self.ctrl))
        silent.listen(8)
        silent.settimeout(60)
        held = []
        try:
            for _ in range(5):
                conn, _ = silent.accept()   # the daemon's next attempt
                conn.settimeout(30)
                hello, want = b"", 12
                while len(hello) < want:    # its whole HELLO, then it waits
                    chunk = conn.recv(want - len(hello))
                    self.assertTrue(chunk, "closed before its HELLO")
                    hello += chunk
                    if len(hello) == 12:
                        magic, t, _, length = struct.unpack(">IHHI", hello)
                        self.assertEqual((magic, t), (rc.MAGIC, rc.HELLO))
                        want += length
                r = a.rt("list")
                self.assertIn("S", r.stdout)
                conn.setblocking(False)
                try:
                    still_open = conn.recv(4096) != b""
                except BlockingIOError:
                    still_open = True
                conn.close()
                held.append(still_open)
                if still_open:
                    break
        finally:
            silent.close()
        self.assertIn(True, held, "every `list` was answered only after the daemon gave "
                      "up its attempt")

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)
