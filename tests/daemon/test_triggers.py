#!/usr/bin/python3
"""Tests of triggers (docs/triggers.md): add-trigger's syntax and every
error, list-triggers and remove-trigger, the conditions the daemon
evaluates (channel buffer usage, consumed size), the actions
(snapshot-session read back event by event, stop-session, start-session,
notify), rate policies, the notifications command and the C API
(notify_client), triggers that outlive their session, save/load across a
daemon restart, and other users (nobody) who cannot see or remove root's
triggers. Each test runs a private daemon.

usage: test_triggers.py BUILD_DIR
"""
import json
import os
import queue
import signal
import socket
import struct
import subprocess
import threading
import time
import unittest

from apps_common import AppCase, BUILD, RINGTRACE, RINGTRACED, rtfixtures

NOTIFY_CLIENT = os.path.join(BUILD, "tests/daemon/notify_client")
NOBODY = 65534
HEADER = struct.Struct("=IHHIi")
MAGIC, CTL_REQUEST, CTL_REPLY = 0x31505452, 1, 2

CONSUMED = ["--condition=session-consumed-size-ge", "--session=s", "--threshold-size=1k"]
USAGE_LE = ["--condition=channel-buffer-usage-le", "--session=s", "--channel=channel0",
            "--domain=user", "--threshold-ratio=1"]

# (words after add-trigger, exit status, the message's words)
SYNTAX_ERRORS = [
    ([], 2, "missing --condition"),
    (["--condition=foo", "--action=notify"], 2, "unknown condition type 'foo'"),
    (["--condition"], 2, "--condition needs a value"),
    (["--action=notify"], 2, "--action=notify before --condition"),
    (CONSUMED, 2, "missing --action after the condition"),
    (CONSUMED + ["--condition=session-consumed-size-ge"], 2, "only one --condition"),
    (CONSUMED + ["--action=explode"], 2, "unknown action type 'explode'"),
    (CONSUMED + ["--action=stop-session"], 2, "--action=stop-session needs a session name"),
    (CONSUMED + ["--action=snapshot-session"], 2, "needs a session name"),
    (CONSUMED + ["--action=start-session", "a", "b"], 2, "unexpected argument 'b'"),
    (CONSUMED + ["--action=notify", "extra"], 2, "unexpected argument 'extra'"),
    (CONSUMED + ["--action=rotate-session"], 2, "--action=rotate-session needs a session name"),
    (CONSUMED + ["--action=notify", "--rate-policy=every:0"], 2, "is not a count"),
    (CONSUMED + ["--action=notify", "--rate-policy=once-after:x"], 2, "is not a count"),
    (CONSUMED + ["--action=notify", "--rate-policy=sometimes"], 2,
     "is not every:COUNT or once-after:COUNT"),
    (CONSUMED + ["--action=notify", "--rate-policy=every:1", "--rate-policy=every:2"], 2,
     "--rate-policy given twice"),
    (CONSUMED + ["--rate-policy=every:2", "--action=notify"], 2,
     "--rate-policy goes after an --action"),
    (CONSUMED + ["--action=notify", "--rate-policy"], 2, "--rate-policy needs a value"),
    (["--condition=session-consumed-size-ge", "--threshold-size=1k", "--action=notify"], 2,
     "session-consumed-size-ge needs --session"),
    (["--condition=session-consumed-size-ge", "--session=s", "--action=notify"], 2,
     "needs --threshold-size"),
    (["--condition=session-consumed-size-ge", "--session=s", "--threshold-size=1q",
      "--action=notify"], 2, "'1q' is not a size"),
    (["--condition=session-consumed-size-ge", "--session=a b", "--threshold-size=1k",
      "--action=notify"], 2, "is not a session name"),
    (["--condition=channel-buffer-usage-ge", "--session=s", "--domain=user",
      "--threshold-ratio=0.5", "--action=notify"], 2, "needs --channel"),
    (["--condition=channel-buffer-usage-ge", "--session=s", "--channel=c",
      "--threshold-ratio=0.5", "--action=notify"], 2, "needs --domain"),
    (["--condition=channel-buffer-usage-ge", "--session=s", "--channel=c", "--domain=user",
      "--action=notify"], 2, "needs --threshold-ratio"),
    (["--condition=channel-buffer-usage-le", "--session=s", "--channel=c", "--domain=both",
      "--threshold-ratio=0.5", "--action=notify"], 2, "'both' is not user or kernel"),
    (["--condition=channel-buffer-usage-le", "--session=s", "--channel=c", "--domain=user",
      "--threshold-ratio=1.5", "--action=notify"], 2, "'1.5' is not a ratio from 0 to 1"),
    (["--condition=channel-buffer-usage-le", "--session=s", "--channel=c", "--domain=user",
      "--threshold-ratio=nan", "--action=notify"], 2, "'nan' is not a ratio"),
    (["--condition=channel-buffer-usage-le", "--session=s", "--channel=c", "--domain=user",
      "--threshold-ratio=0.5", "--threshold-size=1k", "--action=notify"], 2,
     "--threshold-size is not an option of the channel-buffer-usage-le condition"),
    (["--condition=event-rule-matches", "--action=notify"], 2,
     "event-rule-matches needs --type"),
    (["--condition=event-rule-matches", "--type=kprobe", "--action=notify"], 1,
     "--type=kprobe: ringtrace traces"),
    (["--condition=event-rule-matches", "--type=bogus", "--action=notify"], 2,
     "unknown event rule type 'bogus'"),
    (["--condition=event-rule-matches", "--type=user", "--type=user", "--action=notify"], 2,
     "--type given twice"),
    (["--condition=event-rule-matches", "--type=kernel", "--log-level=INFO",
      "--action=notify"], 2, "--log-level applies to user space rules only"),
    (["--condition=event-rule-matches", "--type=user", "--log-level=LOUD..",
      "--action=notify"], 2, "--log-level:"),
    (["--condition=event-rule-matches", "--type=user", "--log-level=..INFO",
      "--action=notify"], 2, "the forms are LEVEL.."),
    (["--condition=event-rule-matches", "--type=user", "--capture=1x", "--action=notify"],
     2, "'1x' is not a field name"),
    (["--condition=event-rule-matches", "--type=user", "--capture=$ctx.nope",
      "--action=notify"], 2, "unknown context 'nope'"),
    (["--condition=event-rule-matches", "--type=user", "--capture=$app.p:x",
      "--action=notify"], 1, "no application contexts"),
    (["--condition=event-rule-matches", "--type=user", "--filter=",
      "--action=notify"], 2, "--filter: empty value"),
    (["--condition=event-rule-matches", "--type=user", "--filter=seq >", "--action=notify"],
     2, "--filter: filter:1:6:"),
    (["--condition=event-rule-matches", "--type=user", "--filter=(a", "--action=notify"],
     2, "--filter: filter:1:"),
    (["--condition=event-rule-matches", "--type=user", "--frobnicate=1",
      "--action=notify"], 2, "--frobnicate is not an option of the event-rule-matches"),
    (["--name=a b"] + CONSUMED + ["--action=notify"], 2, "is not a trigger name"),
    (["--name=x", "--name=y"] + CONSUMED + ["--action=notify"], 2, "--name given twice"),
    (["--owner-uid=-1"] + CONSUMED + ["--action=notify"], 2, "is not a user id"),
    (["-x"] + CONSUMED + ["--action=notify"], 2, "unknown option -x"),
]


def frame(payload):
    return HEADER.pack(MAGIC, 1, CTL_REQUEST, len(payload), 0) + payload


def kv(*pairs):
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in pairs)


def raw_request(sock_path, *pairs):
    """(status, {key: value}) of one request sent on the socket as it is."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(sock_path)
        s.sendall(frame(kv(*pairs)))
        data = b""
        while len(data) < HEADER.size:
            chunk = s.recv(HEADER.size - len(data))
            assert chunk, "closed without a reply"
            data += chunk
        magic, _, ftype, length, status = HEADER.unpack(data)
        assert magic == MAGIC and ftype == CTL_REPLY
        payload = b""
        while len(payload) < length:
            payload += s.recv(length - len(payload))
    out = {}
    for e in payload.split(b"\0"):
        if e:
            k, _, v = e.decode().partition("=")
            out.setdefault(k, v)
    return status, out


class Stream:
    """A subscriber running in the background (`ringtrace notifications`
    or notify_client), read line by line: a thread reads its output, so
    that a notification that never comes fails the test with a message
    (after LINE_TIMEOUT s) instead of blocking it until ctest kills it
    without a word."""

    LINE_TIMEOUT = 120

    def __init__(self, case, argv, env=None, first_line=None, first_on_stderr=False):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env or case.env, text=True)
        self.reader = None
        case.addCleanup(self.close)
        if first_line:
            line = (self.p.stderr if first_on_stderr else self.p.stdout).readline()
            assert line.strip() == first_line, (line, self.p.stderr.read())
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self.read_all, daemon=True)
        self.reader.start()

    def read_all(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put("")

    def line(self):
        try:
            line = self.lines.get(timeout=self.LINE_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no line from {self.p.args[:2]} in {self.LINE_TIMEOUT} s")
        assert line, f"subscriber ended: {self.p.wait()} {self.p.stderr.read()}"
        return line

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        if self.reader:
            self.reader.join()
        self.p.stdout.close()
        self.p.stderr.close()


class TriggerCase(AppCase):
    def run_rt(self, *args, env=None, user=None):
        argv = [RINGTRACE, *args]
        if user is not None:
            argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + argv
        return subprocess.run(argv, capture_output=True, text=True, env=env or self.env,
                              timeout=60)

    def fails(self, code, message, *args, **kw):
        r = self.run_rt(*args, **kw)
        self.assertEqual(r.returncode, code, f"{args}: {r.stdout} {r.stderr}")
        self.assertIn(message, r.stderr, args)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        return r

    def triggers(self):
        """list-triggers as {name: {field: value, "actions": [lines]}}."""
        out, cur = {}, None
        for line in self.rt("list-triggers").splitlines():
            if line.startswith("- name: "):
                cur = out[line[8:]] = {"actions": []}
            elif line.startswith("    "):
                cur["actions"].append(line.strip())
            elif line.startswith("  ") and ": " in line:
                k, _, v = line.strip().partition(": ")
                cur[k] = v
        return out

    def wait_for(self, pred, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                self.fail(f"waited {timeout} s for {what}")
            time.sleep(0.05)

    def wait_checked(self, name, satisfied):
        """Until the daemon's check saw trigger `name`'s condition so."""
        want = "yes" if satisfied else "no"
        self.wait_for(lambda: self.triggers()[name]["satisfied at the last check"] == want,
                      f"{name} satisfied={want}")

    def notifications(self, *names):
        """`ringtrace notifications`, once it is subscribed (its line on
        stderr)."""
        which = "the triggers named" if names else "every trigger you may see"
        return Stream(self, [RINGTRACE, "notifications",
                             *[a for n in names for a in ("--trigger", n)]],
                      first_line=f"Waiting for the notifications of {which}.",
                      first_on_stderr=True)


class TestSyntax(TriggerCase):
    def test_every_error(self):
        for words, code, msg in SYNTAX_ERRORS:
            with self.subTest(words=words):
                self.fails(code, msg, "add-trigger", *words)
        self.assertEqual(self.rt("list-triggers"), "No trigger.\n")

    def test_daemon_checks_too(self):
        """The daemon parses the words again: a client that skips the
        check gets the same message, and nothing is added."""
        sock = os.path.join(self.rundir, "ringtraced.sock")
        for words, _, msg in SYNTAX_ERRORS:
            with self.subTest(words=words):
                status, reply = raw_request(sock, ("cmd", "add-trigger"),
                                            *[("arg", w) for w in words])
                self.assertLess(status, 0)
                self.assertIn(msg, reply["error"])
        self.assertEqual(self.rt("list-triggers"), "No trigger.\n")

    def test_add_list_remove(self):
        out = self.rt("add-trigger", "--condition", "session-consumed-size-ge", "--session",
                      "s", "--threshold-size", "64k", "--action", "stop-session", "s",
                      "--action=notify", "--rate-policy=once-after:3")
        self.assertEqual(out, "Trigger trigger0 added.\n")
        self.rt("add-trigger", "--name=flight", *USAGE_LE[:-1], "--threshold-ratio=0.25",
                "--action=snapshot-session", "s", "--rate-policy=every:2")
        r = self.run_rt("add-trigger", "--name=er", "--condition=event-rule-matches",
                        "--type=user", "--name=app:*", "--log-level=WARNING..",
                        "--exclude-name=app:tick", "--filter=seq > 3", "--capture=seq",
                        "--capture=$ctx.vtid", "--action=notify")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("not evaluated", r.stderr)     # user rules are evaluated
        self.assertEqual(self.rt("add-trigger", *CONSUMED, "--action=notify"),
                         "Trigger trigger1 added.\n")
        r = self.run_rt("add-trigger", "--name=k", *USAGE_LE[:3], "--domain=kernel",
                        "--threshold-ratio=1", "--action=notify")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.rt("remove-trigger", "k")
        self.fails(1, "a trigger named 'flight' exists already", "add-trigger",
                   "--name=flight", *CONSUMED, "--action=notify")
        t = self.triggers()
        self.assertEqual(list(t), ["trigger0", "flight", "er", "trigger1"])
        self.assertEqual(t["trigger0"]["condition"], "session s consumed size >= 65536 bytes")
        self.assertEqual(t["trigger0"]["owner uid"], str(os.getuid()))
        self.assertEqual(t["trigger0"]["actions"], [
            "stop session s (rate policy: every 1): requested 0, run 0, failed 0",
            "notify (rate policy: once after 3): requested 0, run 0, failed 0"])
        self.assertEqual(t["flight"]["condition"],
                         "buffer usage <= 0.25 of channel channel0 (user) of session s")
        self.assertEqual(t["er"]["condition"],
                         "event rule matches: app:* (type: user, log level at least WARNING, "
                         "excluding app:tick, filter: seq > 3); captures: seq, $ctx.vtid")
        self.assertEqual(self.rt("remove-trigger", "flight"), "Trigger flight removed.\n")
        self.fails(1, "no trigger named 'flight'", "remove-trigger", "flight")
        self.assertEqual(list(self.triggers()), ["trigger0", "er", "trigger1"])
        # The first free automatic name again.
        self.rt("remove-trigger", "trigger0")
        self.assertEqual(self.rt("add-trigger", *CONSUMED, "--action=notify"),
                         "Trigger trigger0 added.\n")


class TestActions(TriggerCase):
    def test_rate_policies_and_notify(self):
        """A buffer-usage-le condition at ratio 1 holds whenever the
        session is active: each start fires it once. every:2 runs at the
        2nd and 4th firing, once-after:3 at the 3rd only; the
        notifications command and the C API both get what ran."""
        self.rt("create", "s", "-o", self.out("s"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("add-trigger", "--name=ev2", *USAGE_LE, "--action=notify",
                "--rate-policy=every:2")
        self.rt("add-trigger", "--name=once3", *USAGE_LE, "--action=notify",
                "--rate-policy=once-after:3")
        cmd = self.notifications()
        api = Stream(self, [NOTIFY_CLIENT, "3", "ev2", "once3"], first_line="subscribed")
        only = Stream(self, [NOTIFY_CLIENT, "1", "once3"], first_line="subscribed")
        self.program()          # the channel has buffers (usage) once a program is there
        for i in range(5):
            self.rt("start", "s")
            self.wait_checked("ev2", True)
            self.wait_checked("once3", True)
            self.rt("stop", "s")
            self.wait_checked("ev2", False)
            self.wait_checked("once3", False)
        t = self.triggers()
        self.assertEqual(t["ev2"]["fired"], "5")
        self.assertEqual(t["ev2"]["actions"],
                         ["notify (rate policy: every 2): requested 5, run 2, failed 0"])
        self.assertEqual(t["once3"]["actions"],
                         ["notify (rate policy: once after 3): requested 5, run 1, failed 0"])
        got = [json.loads(cmd.line()) for _ in range(3)]
        self.assertEqual([(n["trigger"], n["fired"]) for n in got],
                         [("ev2", 2), ("once3", 3), ("ev2", 4)])
        host = socket.gethostname()
        for n in got:
            self.assertEqual(n["condition"], "channel-buffer-usage-le")
            self.assertEqual((n["session"], n["channel"], n["domain"]), ("s", "channel0", "user"))
            self.assertEqual(n["host"], host)
            self.assertEqual(n["owner_uid"], os.getuid())
            self.assertIsNone(n["pid"])
            self.assertEqual(n["captures"], {})
            self.assertTrue(0 <= n["buffer_usage"] <= 1)
            self.assertLess(abs(n["time_ns"] / 1e9 - time.time()), 600)
        api_got = [dict(kv.split("=", 1) for kv in api.line().rstrip("\n").split("\t"))
                   for _ in range(3)]
        self.assertEqual([(n["trigger"], n["fired"]) for n in api_got],
                         [("ev2", "2"), ("once3", "3"), ("ev2", "4")])
        self.assertEqual(list(api_got[0])[:6],
                         ["trigger", "owner-uid", "condition", "time-ns", "host", "fired"])
        self.assertEqual(only.line().split("\t")[0], "trigger=once3")
        self.assertEqual(api.p.wait(timeout=30), 0)
        self.assertEqual(only.p.wait(timeout=30), 0)

    def test_json_escaping(self):
        """A trigger's name may hold '"' and '\\': the JSON line stays JSON
        (the one escaper) and gives the name back."""
        name = 'q"\\z<'
        self.rt("create", "s", "-o", self.out("s"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("add-trigger", f"--name={name}", *USAGE_LE, "--action=notify")
        cmd = self.notifications(name)
        self.program()
        self.rt("start", "s")
        line = cmd.line()
        self.assertIn('"trigger":"q\\"\\\\z\\u003c"', line)
        self.assertEqual(json.loads(line)["trigger"], name)

    def test_unknown_trigger_subscription(self):
        self.fails(1, "no trigger named 'nope'", "notifications", "--trigger", "nope")
        r = subprocess.run([NOTIFY_CLIENT, "1", "nope"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no trigger named 'nope'", r.stderr)

    def test_daemon_gone(self):
        """Subscribers learn that the daemon exited: the command and the C
        API end with status 1 and say why; without a daemon they say so."""
        self.rt("add-trigger", "--name=t", *USAGE_LE, "--action=notify")
        cmd = self.notifications("t")
        api = Stream(self, [NOTIFY_CLIENT, "1", "t"], first_line="subscribed")
        self.daemon.send_signal(signal.SIGTERM)
        self.assertEqual(self.daemon.wait(timeout=60), 0)
        self.assertEqual(cmd.p.wait(timeout=30), 1)
        self.assertIn("ringtraced closed the connection", cmd.p.stderr.read())
        self.assertEqual(api.p.wait(timeout=30), 1)
        self.assertIn("read: Connection reset by peer", api.p.stderr.read())
        sock = os.path.join(self.rundir, "ringtraced.sock")
        self.fails(1, f"no session daemon (nothing listens at {sock})", "notifications")
        r = subprocess.run([NOTIFY_CLIENT, "1"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"no session daemon (nothing listens at {sock})", r.stderr)
        self.fails(1, "no session daemon", "list-triggers")

    def test_stop_and_start_session(self):
        """Consumed size: once the session wrote 16 KiB, stop it (every
        event recorded before the stop is in the trace) and start
        another session."""
        self.rt("create", "s", "-o", self.out("s"))
        self.rt("enable-channel", "-u", "channel0", "--subbuf-size", "4k", "--num-subbuf", "16")
        self.rt("enable-event", "-u", "app:*")
        self.rt("create", "later", "-o", self.out("later"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("add-trigger", "--name=cut", "--condition=session-consumed-size-ge",
                "--session=s", "--threshold-size=16k", "--action=stop-session", "s",
                "--action=start-session", "later", "--action=notify")
        cmd = self.notifications("cut")
        self.rt("start", "s")
        prog = self.program()
        sent = 0
        while "[inactive]" not in self.rt("list", "s"):
            prog.cmd(f"emit 20 b{sent}")
            sent += 1
            self.assertLess(sent, 5000, "the session was never stopped")
        n = json.loads(cmd.line())
        self.assertEqual((n["trigger"], n["condition"], n["session"]),
                         ("cut", "session-consumed-size-ge", "s"))
        self.assertGreaterEqual(n["consumed_size"], 16384)
        self.assertIn("[active]", self.rt("list", "later"))
        t = self.triggers()["cut"]
        self.assertEqual(t["fired"], "1")
        self.assertEqual([a.split("): ", 1)[1] for a in t["actions"]],
                         ["requested 1, run 1, failed 0"] * 3)
        prog.cmd("emit 10 after")
        self.rt("stop", "later")
        # s: whole batches of 20 in order, the last one perhaps cut by
        # the stop; nothing lost.
        ev, discarded, _ = rtfixtures.bt2_read(self.out("s"))
        self.assertEqual(discarded, 0)
        seqs = [(str(e.event["tag"]), int(e.event["seq"])) for e in ev]
        self.assertGreater(len(seqs), 16384 // 64)
        for i, (tag, seq) in enumerate(seqs):
            self.assertEqual((tag, seq), (f"b{i // 20}", i % 20))
        self.assertEqual(seqs, [(e["payload"]["tag"], e["payload"]["seq"])
                                for e in rtfixtures.rtr_dump(BUILD, self.out("s"))])
        # later: the 10 "after" events, behind perhaps a batch the loop
        # sent before it saw s stopped (emitted once later had started):
        # only batches s does not hold all of.
        later = [str(e.event["tag"]) for e in rtfixtures.bt2_read(self.out("later"))[0]]
        self.assertEqual(later[-10:], ["after"] * 10)
        last_in_s = int(seqs[-1][0][1:])
        for tag in later[:-10]:
            self.assertTrue(tag.startswith("b") and int(tag[1:]) >= last_in_s, later)

    def test_snapshot_on_buffer_usage(self):
        """A flight recorder: when its buffers are 3/4 full, snapshot it;
        the snapshot holds the newest events, read back event by event by
        babeltrace2 and by our reader, and the notification names it."""
        self.rt("create", "s", "--snapshot", "-o", self.out("snap"))
        self.rt("enable-channel", "-u", "channel0", "--subbuf-size", "4k", "--num-subbuf", "4")
        self.rt("enable-event", "-u", "app:tick")
        self.rt("add-trigger", "--name=full", "--condition=channel-buffer-usage-ge",
                "--session=s", "--channel=channel0", "--domain=user",
                "--threshold-ratio=0.75", "--action=snapshot-session", "s", "--action=notify")
        cmd = self.notifications("full")
        self.rt("start", "s")
        prog = self.program()
        sent = 0
        while self.triggers()["full"]["fired"] == "0":
            prog.cmd(f"emit 50 b{sent}")
            sent += 1
            self.assertLess(sent, 5000, "the trigger never fired")
        n = json.loads(cmd.line())
        self.assertGreaterEqual(n["buffer_usage"], 0.75)
        snap = n["snapshot"]
        self.assertTrue(snap.startswith(self.out("snap") + "/"), snap)
        bt = [(str(e.event["tag"]), int(e.event["seq"]), int(e.event["value"]))
              for e in rtfixtures.bt2_read(snap)[0]]
        ours = [(e["payload"]["tag"], e["payload"]["seq"], e["payload"]["value"])
                for e in rtfixtures.rtr_dump(BUILD, snap)]
        self.assertEqual(bt, ours)
        self.assertGreater(len(bt), 50)
        # In emission order, each event once, values intact, ending with
        # an event of a batch sent before the trigger fired.
        order = [(int(tag[1:]), seq) for tag, seq, _ in bt]
        self.assertEqual(order, sorted(set(order)))
        self.assertTrue(all(v == 3 * s for _, s, v in bt))
        self.assertLess(order[-1][0], sent)
        self.assertEqual(self.triggers()["full"]["actions"][0],
                         "snapshot session s (rate policy: every 1): requested 1, run 1, "
                         "failed 0")

    def test_snapshot_on_kernel_buffer_usage(self):
        """A kernel flight recorder: when its ftrace buffers are 30 %
        full (per_cpu/cpuN/stats' bytes), snapshot it; the notification
        says the kernel channel's usage and the snapshot holds this
        process's write(2) calls, read back by babeltrace2. add-trigger no
        longer warns that the kernel's usage is not measured. (256 KiB per
        CPU: the state dump written at the start, every thread of the
        machine, stays well below the threshold.)"""
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/instances"):
            self.skipTest("the kernel domain needs root and tracefs")
        self.rt("create", "s", "--snapshot", "-o", self.out("snap"))
        self.rt("enable-channel", "-k", "channel0", "--subbuf-size", "64k", "--num-subbuf", "4")
        self.rt("enable-event", "-k", "--syscall", "write")
        self.rt("track", "-k", "--pid", str(os.getpid()))
        r = self.run_rt("add-trigger", "--name=kfull", "--condition=channel-buffer-usage-ge",
                        "--session=s", "--channel=channel0", "--domain=kernel",
                        "--threshold-ratio=0.3", "--action=snapshot-session", "s",
                        "--action=notify")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        cmd = self.notifications("kfull")
        self.rt("start", "s")
        fd = os.open(os.devnull, os.O_WRONLY)
        try:
            sent = 0
            while self.triggers()["kfull"]["fired"] == "0":
                for _ in range(200):
                    os.write(fd, b"x" * 7)
                sent += 1
                self.assertLess(sent, 5000, "the trigger never fired")
        finally:
            os.close(fd)
        n = json.loads(cmd.line())
        self.assertEqual((n["condition"], n["session"], n["channel"], n["domain"]),
                         ("channel-buffer-usage-ge", "s", "channel0", "kernel"))
        self.assertGreaterEqual(n["buffer_usage"], 0.3)
        snap = n["snapshot"]
        self.assertTrue(snap.startswith(self.out("snap") + "/"), snap)
        msgs, _, _ = rtfixtures.bt2_read(os.path.join(snap, "kernel"))
        writes = [m for m in msgs if m.event.name == "syscall_entry_write"
                  and int(m.event.common_context_field["tid"]) == os.getpid()
                  and int(m.event.payload_field["count"]) == 7]
        self.assertGreater(len(writes), 10)
        self.assertEqual(self.triggers()["kfull"]["actions"][0],
                         "snapshot session s (rate policy: every 1): requested 1, run 1, "
                         "failed 0")

    def test_failed_action_is_counted(self):
        """snapshot-session of a session that is not a snapshot session:
        the action fails (counted, logged) and the next action still runs."""
        self.rt("create", "s", "-o", self.out("s"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("add-trigger", "--name=t", *USAGE_LE, "--action=snapshot-session", "s",
                "--action=notify")
        cmd = self.notifications("t")
        self.program()
        self.rt("start", "s")
        n = json.loads(cmd.line())
        self.assertNotIn("snapshot", n)
        self.assertEqual([a.split("): ", 1)[1] for a in self.triggers()["t"]["actions"]],
                         ["requested 1, run 1, failed 1", "requested 1, run 1, failed 0"])
        self.daemon_log.flush()
        with open(os.path.join(self.tmp, "daemon.log")) as f:
            self.assertIn("trigger t: snapshot-session failed: session s is not a snapshot "
                          "session", f.read())


class TestPersistence(TriggerCase):
    def test_survives_session_destroy(self):
        self.rt("create", "s", "-o", self.out("s1"))
        self.rt("add-trigger", "--name=t", *USAGE_LE, "--action=notify")
        self.rt("destroy", "s")
        self.assertIn("t", self.triggers())
        cmd = self.notifications("t")
        self.rt("create", "s", "-o", self.out("s2"))
        self.rt("enable-event", "-u", "app:*")
        self.program()
        self.rt("start", "s")
        self.assertEqual(json.loads(cmd.line())["trigger"], "t")

    def test_saved_and_loaded_across_restart(self):
        self.rt("create", "s", "-o", self.out("s"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("add-trigger", "--name=t", *USAGE_LE, "--action=notify",
                "--rate-policy=every:1")
        self.rt("add-trigger", "--name=odd%name", "--condition=event-rule-matches",
                "--type=user", "--name=app:open*", "--filter=a == \"x y\"",
                "--capture=$ctx.vtid", "--action=snapshot-session", "s",
                "--rate-policy=once-after:7", "--action=notify")
        before = self.rt("list-triggers")
        saved = self.out("all.session")
        self.rt("save", "-a", "-o", saved)
        with open(saved) as f:
            text = f.read()
        self.assertIn("add-trigger arg=--name=t arg=--owner-uid=", text)
        self.assertIn("arg=--name=odd%25name", text)
        self.daemon.send_signal(signal.SIGTERM)
        self.assertEqual(self.daemon.wait(timeout=60), 0)
        self.daemon_log.close()
        self.start_daemon()
        self.assertEqual(self.rt("list-triggers"), "No trigger.\n")
        out = self.rt("load", saved)
        self.assertIn("Trigger t loaded.", out)
        self.assertIn("Trigger odd%name loaded.", out)
        self.assertEqual(self.rt("list-triggers"), before)
        # It works in the new daemon.
        cmd = self.notifications("t")
        self.program()
        self.rt("start", "s")
        self.assertEqual(json.loads(cmd.line())["trigger"], "t")
        # Loading again: the names exist; nothing of the file stays.
        self.rt("destroy", "s")
        r = self.run_rt("load", "--force", saved)
        self.assertEqual(r.returncode, 1)
        self.assertIn("a trigger named 't' exists already", r.stderr)
        self.assertEqual(self.rt("list"), "Currently no available tracing session.\n")
        self.assertEqual(list(self.triggers()), ["t", "odd%name"])

    def test_load_refuses_bad_trigger_lines(self):
        path = self.out("bad.session")
        with open(path, "w") as f:
            f.write("add-trigger arg=--name=a arg=--condition=session-consumed-size-ge "
                    "arg=--session=s arg=--threshold-size=1k arg=--action=notify\n"
                    "add-trigger arg=--condition=nope arg=--action=notify\n")
        r = self.run_rt("load", path)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"{path}:2: --condition: unknown condition type 'nope'", r.stderr)
        self.assertEqual(self.rt("list-triggers"), "No trigger.\n")


@unittest.skipUnless(os.geteuid() == 0, "needs root to act as nobody")
class TestOtherUsers(TriggerCase):
    def nobody_world(self):
        """A daemon of nobody's, in a run directory of nobody's."""
        root = os.path.join(self.tmp, "nobody")
        os.makedirs(os.path.join(root, "home"))
        os.chmod(self.tmp, 0o755)
        for d in (root, os.path.join(root, "home")):
            os.chown(d, NOBODY, NOBODY)
        env = rtfixtures.private_env(root)
        log = open(os.path.join(self.tmp, "nobody-daemon.log"), "a")
        self.addCleanup(log.close)
        d = subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                              "--clear-groups", RINGTRACED, "--foreground"], env=env,
                             stdout=log, stderr=log)
        self.addCleanup(lambda: (d.kill(), d.wait()))
        self.assertTrue(rtfixtures.wait_listening(env["RINGTRACE_RUNDIR"]))
        return env

    def test_nobody_cannot_see_or_remove_roots_triggers(self):
        env = self.nobody_world()
        sock = os.path.join(env["RINGTRACE_RUNDIR"], "ringtraced.sock")
        # Root talks to nobody's daemon (the daemon serves root too).
        status, reply = raw_request(sock, ("cmd", "add-trigger"), ("arg", "--name=roots"),
                                    *[("arg", w) for w in CONSUMED], ("arg", "--action=notify"))
        self.assertEqual(status, 0, reply)
        self.assertEqual(reply["owner"], "0")
        r = self.run_rt("add-trigger", "--name=mine", *CONSUMED, "--action=notify",
                        env=env, user=NOBODY)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_rt("list-triggers", env=env, user=NOBODY)
        self.assertIn("- name: mine\n  owner uid: 65534\n", r.stdout)
        self.assertNotIn("roots", r.stdout)
        self.fails(1, "no trigger named 'roots'", "remove-trigger", "roots", env=env,
                   user=NOBODY)
        self.fails(1, "only root may name another user's triggers", "remove-trigger",
                   "roots", "--owner-uid", "0", env=env, user=NOBODY)
        self.fails(1, "only root may add a trigger for another user", "add-trigger",
                   "--owner-uid=0", *CONSUMED, "--action=notify", env=env, user=NOBODY)
        self.fails(1, "no trigger named 'roots'", "notifications", "--trigger", "roots",
                   env=env, user=NOBODY)
        r = self.run_rt("save", "-a", env=env, user=NOBODY)
        self.assertIn("--name=mine", r.stdout)
        self.assertNotIn("roots", r.stdout)
        # Root sees both, and may add and remove for nobody.
        status, reply = raw_request(sock, ("cmd", "list-triggers"))
        self.assertIn("- name: roots\n  owner uid: 0\n", reply["out"])
        self.assertIn("- name: mine\n  owner uid: 65534\n", reply["out"])
        status, reply = raw_request(sock, ("cmd", "remove-trigger"), ("name", "mine"),
                                    ("owner-uid", "65534"))
        self.assertEqual(status, 0, reply)
        r = self.run_rt("list-triggers", env=env, user=NOBODY)
        self.assertEqual(r.stdout, "No trigger.\n")

    def test_nobody_cannot_reach_roots_daemon(self):
        self.rt("add-trigger", "--name=roots", *CONSUMED, "--action=notify")
        os.chmod(self.tmp, 0o755)
        r = self.run_rt("list-triggers", user=NOBODY)
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("roots", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
