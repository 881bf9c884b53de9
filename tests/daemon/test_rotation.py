#!/usr/bin/python3
"""Tests of session rotation (docs/rotation.md): `ringtrace rotate` while
programs record, automatic schedules, the rotate-session trigger action,
save/load of the schedule and the refusals.

Every archived trace chunk is read alone by babeltrace2 and by our reader
(and `ringtrace view`); the union of the chunks holds every event the
programs emitted exactly once, and every stream's packets go on from one
chunk to the next (sequence numbers without gap or repeat, discarded
counts never decreasing). Each test runs a private daemon.

usage: test_rotation.py BUILD_DIR
"""
import json
import os
import re
import struct
import subprocess
import threading
import time
import unittest

from apps_common import BUILD, RINGTRACE, rtfixtures, trace_dirs
from test_triggers import TriggerCase

ARCHIVE = re.compile(r"^(\d{8}T\d{6}[+-]\d{4})-(\d{8}T\d{6}[+-]\d{4})-(\d+)$")
CHUNK = re.compile(r"^\d{8}T\d{6}[+-]\d{4}-\d+$")


HEADER = struct.Struct("<I16sIQQQQQQQI")     # struct ctf_packet_header (ctf_packet.h)


def packets(path):
    """{(trace dir relative to path, stream file): [(packet_seq_num,
    events_discarded)]} of the stream files under path, read from their
    packet headers."""
    out = {}
    for d in trace_dirs(path):
        for name in sorted(os.listdir(d)):
            if name == "metadata" or name.startswith("."):
                continue
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            pk, off = [], 0
            while off < len(data):
                h = HEADER.unpack_from(data, off)
                assert h[0] == 0xC1FC1FC1, f"{d}/{name}: magic at {off}"
                pk.append((h[8], h[9]))
                off += h[7] // 8
            out[(os.path.relpath(d, path), name)] = pk
    return out


class RotationCase(TriggerCase):
    def archives(self, out):
        """The archives of output `out`, in chunk order: [(index, path)]."""
        root = os.path.join(out, "archives")
        found = []
        for name in os.listdir(root):
            m = ARCHIVE.match(name)
            self.assertIsNotNone(m, f"archive name {name}")
            found.append((int(m.group(3)), os.path.join(root, name)))
        found.sort()
        self.assertEqual([i for i, _ in found], list(range(len(found))), "indices 0, 1, ...")
        return found

    def chunk_events(self, path):
        """The app:tick events of one archive, read alone by bt2, checked
        against our reader and `ringtrace view`: [(channel, tag, seq)]."""
        evs = []
        for msg in rtfixtures.bt2_read(path)[0]:
            ev = msg.event
            evs.append((ev.name, ev.stream.cls.id, str(ev.payload_field["tag"])
                        if "tag" in ev.payload_field else "", int(ev.payload_field["seq"])
                        if "seq" in ev.payload_field else -1))
        dumped = rtfixtures.rtr_dump(BUILD, path)
        self.assertEqual(sorted((e["name"], e["payload"].get("seq", -1)) for e in dumped),
                         sorted((n, s) for n, _, _, s in evs), path)
        r = subprocess.run([RINGTRACE, "view", path], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), len(evs), path)
        return evs

    def check_union(self, out, emitted, channels):
        """Every archive alone, then their union: each (channel, tag, seq)
        of `emitted` exactly once per channel; the packets of each stream
        continue across chunks."""
        arch = self.archives(out)
        self.assertFalse([n for n in os.listdir(out) if n not in ("archives",)],
                         "everything is archived after destroy")
        seen = {}
        self.events = {}
        for _, path in arch:
            self.events[path] = self.chunk_events(path)
            for name, ch, tag, seq in self.events[path]:
                if name == "app:tick":
                    key = (ch, tag, seq)
                    seen[key] = seen.get(key, 0) + 1
        dup = [k for k, n in seen.items() if n > 1]
        self.assertEqual(dup, [], "events in two chunks")
        want = {(ch, tag, seq) for ch in channels for tag, seq in emitted}
        self.assertEqual(set(seen) - want, set())
        missing = want - set(seen)
        streams = {}
        for i, path in arch:
            for key, pk in packets(path).items():
                streams.setdefault(key, []).append((i, pk))
        discarded = 0
        for key, chunks in streams.items():
            seqs = [s for _, pk in chunks for s, _ in pk]
            self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))),
                             f"{key}: packet sequence across chunks {chunks}")
            disc = [d for _, pk in chunks for _, d in pk]
            self.assertEqual(disc, sorted(disc), key)
            discarded += disc[-1]
        # Discard mode: what is missing was counted as discarded.
        self.assertEqual(len(missing), discarded, "missing events = discarded events")
        return arch

    def workload(self, prog, threads, n, prefix="t"):
        """app_prog's `threads T N PREFIX` in the background: returns the
        thread that waits for its answer, and the events it emits."""
        prog.p.stdin.write(f"threads {threads} {n} {prefix}\n")
        prog.p.stdin.flush()
        done = threading.Thread(target=prog.p.stdout.readline)
        done.start()
        return done, [(f"{prefix}{k}", s) for k in range(threads) for s in range(n)]


class TestRotate(RotationCase):
    def test_rotate_during_workload(self):
        """Per-user and per-program buffers: rotations while four threads
        record; every chunk alone and the union, event by event. The
        workload is two: one before a rotation (so that the workload
        spans several chunks however fast it runs beside the rotations),
        then one during the rotations (as many as fit in it, at least
        three)."""
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        for ch, kind in (("u", "--buffers-uid"), ("p", "--buffers-pid")):
            self.rt("enable-channel", "-u", ch, kind, "--subbuf-size", "256k",
                    "--num-subbuf", "16")
            self.rt("enable-event", "-u", "-c", ch, "app:tick")
        self.rt("start")
        prog = self.program()
        prog.cmd("emit 100 first")
        done, emitted = self.workload(prog, 4, 20000, "a")
        done.join()
        paths = []
        done = None
        while done is None or done.is_alive() or len(paths) < 3:
            if len(paths) == 1 and done is None:
                done, during = self.workload(prog, 4, 20000, "b")
                emitted += during
            r = self.run_rt("rotate")
            self.assertEqual(r.returncode, 0, r.stderr)
            m = re.match(r"Trace chunk archive for session s is now readable at (\S+)\n$",
                         r.stdout)
            self.assertIsNotNone(m, r.stdout)
            paths.append(m.group(1))
            self.assertTrue(os.path.isdir(paths[-1]))
            time.sleep(0.1)
        done.join()
        prog.cmd("emit 100 last")
        emitted += [("first", s) for s in range(100)] + [("last", s) for s in range(100)]
        listed = self.rt("list", "s")
        self.assertIn(f"Current trace chunk: {out}/", listed)
        self.rt("stop")
        self.rt("rotate")               # once after stop
        r = self.run_rt("rotate")
        self.assertEqual(r.returncode, 1)
        self.assertIn("was rotated since it stopped", r.stderr)
        self.rt("destroy")
        arch = self.check_union(out, emitted, {0, 1})
        self.assertEqual([p for _, p in arch][:len(paths)], paths)
        self.assertGreaterEqual(len(arch), 4)
        # What was recorded before the first rotation is in the first
        # chunk (the rotation point is when `rotate` runs, whatever the
        # read timer), and the workload spans several chunks.
        first = self.events[arch[0][1]]
        for ch in (0, 1):
            self.assertEqual(sorted(s for _, c, tag, s in first if c == ch and tag == "first"),
                             list(range(100)))
        spans = [p for _, p in arch if any(tag[0] in "ab" and tag[1:].isdigit()
                                           for _, _, tag, _ in self.events[p])]
        self.assertGreaterEqual(len(spans), 2, "the workload is in several chunks")
        # Each archive has the LTTng layout: ust/uid/UID/64-bit and
        # ust/pid/PROCNAME-PID-DATE (the same name in every chunk).
        pids = {tuple(sorted(os.listdir(os.path.join(p, "ust/pid"))))
                for _, p in arch if os.path.isdir(os.path.join(p, "ust/pid"))}
        self.assertEqual(len(pids), 1, pids)
        r = subprocess.run([RINGTRACE, "analyze", arch[1][1]], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_size_schedule(self):
        """--size: the daemon rotates each time the chunk holds SIZE bytes;
        the schedule is listed, and disable-rotation removes it."""
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "channel0", "--subbuf-size", "64k", "--num-subbuf", "16")
        self.rt("enable-event", "-u", "app:tick")
        r = self.rt("enable-rotation", "--size=256k")
        self.assertEqual(r, "Enabled size-based rotations every 262144 bytes written on "
                         "session s\n")
        self.assertIn("size threshold: 262144 bytes", self.rt("status"))
        self.rt("start")
        prog = self.program()
        emitted = []
        for k in range(8):
            prog.cmd(f"emit 20000 b{k}")
            emitted += [(f"b{k}", s) for s in range(20000)]
            time.sleep(0.3)
        self.wait_for(lambda: len(os.listdir(os.path.join(out, "archives"))) >= 3,
                      "three automatic rotations")
        self.rt("disable-rotation", "--size")
        self.assertNotIn("size threshold", self.rt("list", "s"))
        self.rt("destroy")
        arch = self.check_union(out, emitted, {0})
        # Every automatic rotation came once the chunk held 256 KiB.
        for _, path in arch[:-1]:
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path)
                       for f in fs if f != "metadata")
            self.assertGreaterEqual(size, 256 * 1024, path)

    def test_trigger_action(self):
        """--action=rotate-session: a user event rule rotates the session;
        the notification names the archive, which holds the triggering
        event and everything before it."""
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        r = self.run_rt("add-trigger", "--name=rot", "--condition=event-rule-matches",
                        "--type=user", "--name=app:warn", "--action=rotate-session", "s",
                        "--action=notify")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertIn("rotate session s", self.rt("list-triggers"))
        cmd = self.notifications("rot")
        prog = self.program()
        prog.cmd("emit 5000 before")
        prog.cmd("warn 1")
        n = json.loads(cmd.line())
        archive = n["archive"]
        prog.cmd("emit 5000 after")
        self.rt("destroy")
        emitted = [("before", s) for s in range(5000)] + [("after", s) for s in range(5000)]
        self.check_union(out, emitted, {0})
        names = [(name, tag, seq) for name, _, tag, seq in self.events[archive]]
        self.assertEqual([x for x in names if x[1] == "before"],
                         [("app:tick", "before", s) for s in range(5000)])
        self.assertIn(("app:warn", "", 0), names)

    def test_kernel_and_user(self):
        """A session with a kernel channel: each chunk holds its kernel/
        trace beside ust/, each read alone; the getppid calls made before
        each rotation are in that chunk, every one exactly once."""
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/instances"):
            self.skipTest("the kernel domain needs root and tracefs")
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-k", "--syscall", "getppid", "--filter",
                f"common_pid == {os.getpid()}")
        self.rt("enable-event", "-u", "app:tick")
        self.rt("start")
        prog = self.program()
        emitted, rounds = [], 3
        for k in range(rounds):
            for _ in range(300 + k):
                os.getppid()
            prog.cmd(f"emit 1000 r{k}")
            emitted += [(f"r{k}", s) for s in range(1000)]
            self.rt("rotate")
        self.rt("stop")
        self.rt("destroy")
        arch = self.check_union(out, emitted, {0})
        self.assertEqual(len(arch), rounds + 1)
        for k, (_, path) in enumerate(arch):
            kdir = os.path.join(path, "kernel")
            self.assertTrue(os.path.isfile(os.path.join(kdir, "metadata")), path)
            calls = [m for m in rtfixtures.bt2_read(kdir)[0]
                     if m.event.name == "syscall_entry_getppid" and
                     int(m.event.common_context_field["tid"]) == os.getpid()]
            self.assertEqual(len(calls), 300 + k if k < rounds else 0, path)
            user = [t for _, _, t, _ in self.events[path] if t.startswith("r")]
            self.assertEqual(user, [f"r{k}"] * (1000 if k < rounds else 0), path)

    def test_refusals(self):
        self.rt("create", "snap", "--snapshot", "-o", self.out("snap"))
        self.rt("enable-event", "-u", "app:tick")
        self.rt("start")
        self.fails(1, "snapshot session", "rotate")
        self.fails(1, "snapshot session", "enable-rotation", "--timer=1s")
        self.rt("create", "n", "-o", self.out("n"))
        self.rt("enable-event", "-u", "app:tick")
        self.fails(1, "has never been started", "rotate")
        self.fails(2, "not a duration", "enable-rotation", "--timer=5 parsecs")
        self.fails(2, "needs --timer=PERIOD", "enable-rotation")
        self.fails(1, "no periodic rotation schedule", "disable-rotation", "--timer")
        self.rt("create", "tf", "-o", self.out("tf"))
        self.rt("enable-channel", "-u", "c", "--tracefile-size", "1M")
        self.fails(1, "--tracefile-size or --tracefile-count", "enable-rotation", "--size=1M")
        self.fails(1, "not found", "rotate", "nosuch")

    def test_save_load(self):
        """The schedule is saved with the session and loaded back."""
        self.rt("create", "s", "-o", self.out("t"))
        self.rt("enable-event", "-u", "app:tick")
        self.rt("enable-rotation", "--timer=10s", "--size=2M")
        saved = self.out("s.session")
        self.rt("save", "s", "-o", saved)
        with open(saved) as f:
            self.assertIn("enable-rotation session=s timer-us=10000000 size=2097152\n",
                          f.read())
        self.rt("destroy", "s")
        self.rt("load", saved)
        listed = self.rt("list", "s")
        self.assertIn("timer period: 10000000 us", listed)
        self.assertIn("size threshold: 2097152 bytes", listed)


if __name__ == "__main__":
    unittest.main(verbosity=2)
