#!/usr/bin/python3
"""Integration tests of `record --shm-path` and `ringtrace recover`: a
program killed with SIGKILL loses none of its events between what its
consumer wrote and what recover finds (read back event by event with
babeltrace2 and our reader); bad buffer files are refused with a clear
message.

usage: test_recover.py BUILD_DIR
"""
import glob
import os
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
BURST = os.path.join(BUILD, "tests/integration/burst")
N = 50000


def bt2_seqs(path):
    """burst:ev's seq values under `path` in trace order, whether burst:done
    is there, and the discarded events babeltrace2 reports. A consumer
    killed before it wrote anything left no trace: nothing."""
    if not glob.glob(os.path.join(path, "**", "metadata"), recursive=True):
        return [], [], 0, 0
    events, discarded, lost_packets = rtfixtures.bt2_read(path)
    seqs = [int(m.event.payload_field["seq"]) for m in events if m.event.name == "burst:ev"]
    done = [int(m.event.payload_field["count"]) for m in events if m.event.name == "burst:done"]
    return seqs, done, discarded, lost_packets


def rtr_seqs(path):
    if not glob.glob(os.path.join(path, "**", "metadata"), recursive=True):
        return []
    evs = rtfixtures.rtr_dump(BUILD, path)
    return [e["payload"]["seq"] for e in evs if e["name"] == "burst:ev"]


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-recover-")
        self.shm = os.path.join(self.tmp.name, "shm")
        self.out = os.path.join(self.tmp.name, "out")
        self.rec = os.path.join(self.tmp.name, "rec")
        self.env = rtfixtures.private_env(self.tmp.name, RINGTRACE_NO_DAEMON="1")

    def tearDown(self):
        self.tmp.cleanup()

    def recover(self, *args):
        return subprocess.run([RINGTRACE, "recover", *args], capture_output=True, text=True,
                              env=self.env, timeout=120)

    def record_killed(self, *opts):
        """record --shm-path burst N pause, then burst killed with SIGKILL
        once it recorded everything. Returns record's CompletedProcess
        fields (returncode, stderr)."""
        rec = subprocess.Popen([RINGTRACE, "record", "--shm-path", self.shm, "-o", self.out,
                                "-t", "none", *opts, "--", BURST, str(N), "pause"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=self.env)
        try:
            self.assertEqual(rec.stdout.readline(), "recorded\n")
            rings = glob.glob(os.path.join(self.shm, "*.ring"))
            self.assertEqual(len(rings), 1, rings)
            pid = int(os.path.basename(rings[0])[len("ust-"):-len(".ring")])
            os.kill(pid, signal.SIGKILL)
            _, err = rec.communicate(timeout=60)
        finally:
            if rec.poll() is None:
                rec.kill()
                rec.wait()
        return rec.returncode, err


class SigKill(Base):
    def check_union(self, overwrite):
        out_seqs, out_done, out_disc, _ = bt2_seqs(self.out)
        rec_seqs, rec_done, rec_disc, _ = bt2_seqs(self.rec)
        # Event by event: the consumer's trace, then what recover found,
        # is every event once, in order.
        self.assertEqual(out_seqs + rec_seqs, list(range(N)),
                         (sorted(os.walk(self.tmp.name)), len(out_seqs), len(rec_seqs)))
        self.assertEqual(out_done + rec_done, [N])
        self.assertEqual(rtr_seqs(self.out) + rtr_seqs(self.rec), list(range(N)))
        self.assertEqual((out_disc, rec_disc), (0, 0))
        return out_seqs, rec_seqs

    def test_sigkill_loses_nothing(self):
        code, err = self.record_killed("--subbuf-size", "64k", "--num-subbuf", "64")
        self.assertNotEqual(code, 0)
        self.assertIn("ringtrace recover " + os.path.realpath(self.shm), err)
        r = self.recover(self.shm, "-o", self.rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"ust-\d+: \d+ events in \d+ packets recovered into ")
        out_seqs, rec_seqs = self.check_union(False)
        # What recover found includes the last, partly filled packet.
        self.assertGreater(len(rec_seqs), 0)
        # The buffer files are read, never changed: recovering again gives
        # the same trace.
        again = os.path.join(self.tmp.name, "again")
        r = self.recover(self.shm, "-o", again)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(bt2_seqs(again)[0], rec_seqs)

    def test_sigkill_with_a_slow_consumer(self):
        # A read timer longer than the run: the consumer wrote nothing
        # but its metadata, everything is in the buffers.
        code, _ = self.record_killed("--subbuf-size", "64k", "--num-subbuf", "64",
                                     "--read-timer", "60000")
        self.assertNotEqual(code, 0)
        r = self.recover(self.shm, "-o", self.rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        out_seqs, rec_seqs = self.check_union(False)
        self.assertEqual(rec_seqs, list(range(N)))

    def test_writer_died_in_an_event(self):
        # As if burst had died between reserving and committing an event
        # on CPU 0 (its announced work one event more than its committed
        # work): the sub-buffers that waited for it are given up, never
        # read with a torn event; the complete ones before are recovered.
        self.record_killed("--subbuf-size", "64k", "--num-subbuf", "64",
                           "--read-timer", "60000")
        ring = glob.glob(os.path.join(self.shm, "*.ring"))[0]
        with open(ring, "r+b") as f:
            hdr = f.read(96)
            ctl_off = struct.unpack_from("<Q", hdr, 56)[0]
            f.seek(ctl_off + 8)
            announced = struct.unpack("<Q", f.read(8))[0]
            f.seek(ctl_off + 8)
            f.write(struct.pack("<Q", announced + 24))
        r = self.recover(self.shm, "-o", self.rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("a writer died in the middle of an event on 1 CPU(s)", r.stderr)
        seqs = bt2_seqs(self.out)[0] + bt2_seqs(self.rec)[0]
        self.assertGreater(len(seqs), 0)
        self.assertLess(len(seqs), N)
        self.assertEqual(seqs, list(range(len(seqs))))


class CleanEnd(Base):
    def test_files_removed_after_a_clean_exit(self):
        r = subprocess.run([RINGTRACE, "record", "--shm-path", self.shm, "-o", self.out, "--",
                            BURST, "100", "return"], capture_output=True, text=True,
                           env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(self.shm), [])
        self.assertEqual(os.stat(self.shm).st_mode & 0o777, 0o700)
        self.assertEqual(bt2_seqs(self.out)[0], list(range(100)))

    def test_shared_directory_refused(self):
        os.mkdir(self.shm)
        os.chmod(self.shm, 0o777)
        r = subprocess.run([RINGTRACE, "record", "--shm-path", self.shm, "-o", self.out, "--",
                            BURST, "1", "return"], capture_output=True, text=True,
                           env=self.env, timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot use --shm-path", r.stderr)


class BadFiles(Base):
    def setUp(self):
        super().setUp()
        code, _ = self.record_killed("--subbuf-size", "64k", "--num-subbuf", "64")
        self.ring = glob.glob(os.path.join(self.shm, "*.ring"))[0]
        self.desc = self.ring[:-len(".ring")] + ".desc"

    def refused(self, what):
        r = self.recover(self.shm, "-o", self.rec)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot recover ust-", r.stderr)
        self.assertIn(what, r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def patch(self, path, off, data):
        with open(path, "r+b") as f:
            f.seek(off)
            f.write(data)

    def test_truncated_ring(self):
        os.truncate(self.ring, 8192)
        self.refused("not a ringtrace buffer file, or damaged")

    def test_bad_magic(self):
        self.patch(self.ring, 0, b"XXXXXXXX")
        self.refused("not a ringtrace buffer file, or damaged")

    def test_other_version(self):
        self.patch(self.ring, 8, struct.pack("<I", 99))
        self.refused("another ringtrace version")

    def test_damaged_description(self):
        size = os.path.getsize(self.desc)
        for off, data, what in [(0, b"nope", "not a ringtrace buffer description"),
                                (8, struct.pack("<I", 7), "description version 7"),
                                (12, struct.pack("<I", size + 1), "the description says"),
                                (80, struct.pack("<I", 1 << 30), "damaged description")]:
            with open(self.desc, "rb") as f:
                good = f.read()
            self.patch(self.desc, off, data)
            self.refused(what)
            with open(self.desc, "wb") as f:
                f.write(good)
            self.tearDown_rec()

    def tearDown_rec(self):
        for root, dirs, files in os.walk(self.rec, topdown=False):
            for f in files:
                os.unlink(os.path.join(root, f))
            for d in dirs:
                os.rmdir(os.path.join(root, d))
        if os.path.isdir(self.rec):
            os.rmdir(self.rec)

    def test_description_of_another_buffer_set(self):
        # The overwrite flag of the description does not match the file.
        self.patch(self.desc, 84, struct.pack("<I", 1))
        self.refused("its description is another buffer set's")

    def test_missing_description(self):
        os.unlink(self.desc)
        self.refused("No such file or directory")

    def test_damaged_counters_never_crash(self):
        # Every per-CPU control word set to garbage: recover checks every
        # packet and writes what checks, never crashes.
        with open(self.ring, "rb") as f:
            hdr = f.read(96)
        ctl_off, ctl_stride = struct.unpack_from("<QQ", hdr, 56)
        nr_cpus = struct.unpack_from("<I", hdr, 36)[0]
        for cpu in range(nr_cpus):
            self.patch(self.ring, ctl_off + cpu * ctl_stride,
                       struct.pack("<8Q", *([0x123456789ABCDEF] * 8)))
        r = self.recover(self.shm, "-o", self.rec)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_usage(self):
        r = self.recover(self.shm)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no output directory", r.stderr)
        r = self.recover("-o", self.rec)
        self.assertEqual(r.returncode, 2)
        empty = os.path.join(self.tmp.name, "empty")
        os.mkdir(empty)
        r = self.recover(empty, "-o", self.rec)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no buffer files", r.stderr)
        # Never into a directory that holds something.
        r = self.recover(self.shm, "-o", self.out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not empty", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
