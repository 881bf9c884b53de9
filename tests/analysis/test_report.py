#!/usr/bin/python3
"""Tests of `ringtrace report`: the page is self-contained, its embedded
data matches babeltrace2, and headless Chromium renders it (non-blank
screenshot) without a single console message. The console check is shown
to catch errors by running it on deliberately broken copies of the page.
On a constructed kernel trace (kgen.py), the kernel lanes hold exactly the
spans of the trace: what each CPU ran, each thread's states with syscall
and waker, the block requests; downsampled ones keep one span in step.

Without chromium the checks that need no browser run, then the test exits
with status 77 (ctest SKIP_RETURN_CODE) and says why.

usage: test_report.py BUILD_DIR
"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import kgen  # noqa: E402

P = common.Paths(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
N = common.N_ITER
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CONSOLE_LINE = re.compile(r":CONSOLE[:(]|Uncaught")


def chromium(page, tmp, *mode):
    """Run headless Chromium on page; return (stdout, console lines)."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp)
    r = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--user-data-dir=" + profile, "--window-size=1280,900",
                        "--enable-logging=stderr", "--v=0", *mode,
                        "file://" + os.path.abspath(page)],
                       capture_output=True, text=True, timeout=90)
    return r.stdout, [x for x in r.stderr.splitlines() if CONSOLE_LINE.search(x)]


def png_colours(path):
    """The set of distinct pixel values of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and ctype in (2, 6), (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(h):
        off = y * (stride + 1)
        ftype, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        if y % 4 == 0:
            for x in range(0, stride, bpp * 2):
                colours.add(bytes(line[x:x + bpp]))
        prev = line
    return colours


def driven(test, html, tmp, drive):
    """Render html with the script `drive` appended (after the page's own);
    return (dom, the tooltip it left in body's data-tip) and check that
    the console stayed silent."""
    text = html.replace("\nthreads();\n", "\nthreads();\n" + drive +
                        'document.body.setAttribute("data-tip", tip.style.display + "|" + '
                        'tip.textContent);\n')
    test.assertNotEqual(text, html)
    page = os.path.join(tmp, "driven.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(text)
    dom, console = chromium(page, tmp, "--dump-dom")
    test.assertEqual(console, [])
    m = re.search(r'data-tip="([^"]*)"', dom)
    test.assertIsNotNone(m, dom[:500])
    return dom, m.group(1)


def embedded_data(html):
    m = re.search(r'<script id="rt-data" type="application/json">(.*?)</script>',
                  html, re.S)
    return json.loads(m.group(1))


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rt-report-")
        cls.trace = os.path.join(cls.tmp.name, "trace")
        cls.outlier, cls.workers = common.record_workload(P, cls.trace)
        cls.events = common.read_events(cls.trace)
        # The thread of the longest pair, the report's first outlier.
        cls.outlier = common.longest_pair_tid(cls.events, cls.outlier)
        cls.page = os.path.join(cls.tmp.name, "report.html")
        r = common.run(P, "report", cls.trace, "-o", cls.page)
        assert r.returncode == 0, r.stderr
        with open(cls.page, encoding="utf-8") as f:
            cls.html = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_self_contained(self):
        self.assertNotRegex(self.html, r'\ssrc\s*=')
        self.assertNotRegex(self.html, r'href="(?!data:)')
        self.assertNotRegex(self.html, r'@import|url\(|fetch\(|XMLHttpRequest')
        self.assertEqual(self.html.count("</script>"), 2)

    def test_embedded_data(self):
        d = embedded_data(self.html)
        a = d["analysis"]
        self.assertEqual(a["events"], len(self.events))
        self.assertEqual(d["lane_cap"], 200000)
        lanes = {l["label"]: l for l in d["lanes"]}
        cpus = {l["label"] for l in d["lanes"] if l["kind"] == "cpu"}
        self.assertEqual(sum(lanes[c]["events"] for c in cpus), len(self.events))
        names = collections.Counter(e[1] for e in self.events)
        for w in self.workers:
            lane = lanes["tid %s (workload)" % w]
            self.assertEqual((lane["events"], lane["pairs"], lane["step"]), (3 * N, N, 1))
            self.assertEqual(len(lane["t"]), 3 * N)
            self.assertEqual(len(lane["bars"]), N)
            self.assertEqual(lane["t"], sorted(lane["t"]))
            got = collections.Counter(d["names"][i] for i in lane["n"])
            self.assertEqual(got, {"app:work_begin": N, "app:tick": N, "app:work_end": N})
        self.assertEqual(sum(names.values()), a["events"])
        self.assertNotIn("klanes", d)   # a user-space trace: no kernel lanes
        (dur,) = a["durations"]
        self.assertEqual(dur["outliers"][0]["key"], self.outlier)
        longest = max((b for l in d["lanes"] for b in l["bars"]), key=lambda b: b[1])
        self.assertEqual(longest[1], dur["max_ns"])

    def test_downsampled_lanes(self):
        page = os.path.join(self.tmp.name, "small.html")
        r = common.run(P, "report", "--lane-cap", "10", self.trace, "-o", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page, encoding="utf-8") as f:
            d = embedded_data(f.read())
        for l in d["lanes"]:
            self.assertLessEqual(len(l["t"]), 10)
            self.assertLessEqual(len(l["bars"]), 10)
            self.assertEqual(len(l["t"]), len(l["n"]))
        lane = next(l for l in d["lanes"] if l["label"] == "tid %s (workload)" % self.workers[0])
        self.assertEqual(lane["step"], -(-3 * N // 10))
        if CHROMIUM:
            dom, console = chromium(page, self.tmp.name, "--dump-dom")
            self.assertEqual(console, [])
            self.assertIn("Downsampled: at most 10 events", dom)

    def test_errors(self):
        self.assertEqual(common.run(P, "report", self.trace).returncode, 2)
        r = common.run(P, "report", "--lane-cap", "0", self.trace, "-o", "x.html")
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad --lane-cap", r.stderr)
        r = common.run(P, "report", self.trace, "-o",
                       os.path.join(self.tmp.name, "no/such/dir/r.html"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot create", r.stderr)

    @unittest.skipUnless(CHROMIUM, "chromium is not installed")
    def test_renders_in_chromium(self):
        png = os.path.join(self.tmp.name, "shot.png")
        _, console = chromium(self.page, self.tmp.name, "--screenshot=" + png)
        self.assertEqual(console, [])
        colours = png_colours(png)
        self.assertGreater(len(colours), 16)
        dom, console = chromium(self.page, self.tmp.name, "--dump-dom")
        self.assertEqual(console, [])
        self.assertIn("ringtrace report: " + self.trace, dom)
        self.assertIn("app:work (app:work_begin .. app:work_end)", dom)
        self.assertIn(">" + self.outlier + "<", dom)

    @unittest.skipUnless(CHROMIUM, "chromium is not installed")
    def test_zoom_pan_tooltip(self):
        """Drive the timeline's controls from a script appended to the page;
        the tooltip over a pair's bar must name it, without console errors."""
        drive = """
document.getElementById("zin").click();
document.getElementById("right").click();
document.getElementById("reset").click();
zoom(0.5, span0 / 4);
pan(-0.1);
document.getElementById("reset").click();
let li = -1, bar = null;
D.lanes.forEach((l, i) => l.bars.forEach(b => {
  if (!bar || b[1] > bar[1]) { bar = b; li = i; }
}));
const r = canvas.getBoundingClientRect();
canvas.dispatchEvent(new WheelEvent("wheel", { deltaY: -100, clientX: r.left + xOf(bar[0]), clientY: r.top + 30, cancelable: true }));
document.getElementById("reset").click();
hover({ clientX: r.left + xOf(bar[0] + bar[1] / 2), clientY: r.top + AXIS_H + li * LANE_H + 10 });
"""
        _, tipped = driven(self, self.html, self.tmp.name, drive)
        self.assertTrue(tipped.startswith("block|app:work"), tipped)
        self.assertIn("duration", tipped)
        self.assertIn("tid " + self.outlier, tipped)

    @unittest.skipUnless(CHROMIUM, "chromium is not installed")
    def test_console_check_catches_errors(self):
        broken = {
            "exception": self.html.replace("\nheader();", "\nheader(); noSuchFunction();"),
            "console-error": self.html.replace("\nheader();", '\nheader(); console.error("bad");'),
            "bad-data": self.html.replace('"analysis":', '"analysis":,', 1),
        }
        for what, text in broken.items():
            self.assertNotEqual(text, self.html, what)
            page = os.path.join(self.tmp.name, what + ".html")
            with open(page, "w", encoding="utf-8") as f:
                f.write(text)
            _, console = chromium(page, self.tmp.name,
                                  "--screenshot=" + page + ".png")
            self.assertNotEqual(console, [], what)


MS = 1000000


def switch(ns, cpu, prev, prev_comm, state, nxt, next_comm):
    return (ns, cpu, prev, "sched_switch",
            {"prev_comm": prev_comm, "prev_tid": prev, "prev_prio": 20, "prev_state": state,
             "next_comm": next_comm, "next_tid": nxt, "next_prio": 20})


def kernel_trace(path, events, pids):
    out = []
    for ns, cpu, tid, name, fields in events:
        fields = dict(fields, __pid=pids.get(tid, tid))
        out.append((int(ns), cpu, tid, name, fields))
    kgen.write_trace(path, sorted(out, key=lambda e: e[0]), contexts=("tid", "pid"))


# victim 100 runs on CPU 1, is preempted (R+) by hog's threads 200 and 201
# (pid 200), runs again, blocks in fsync (D) until dd's (400) write
# request completes in an interrupt on CPU 0, which wakes it.
PREEMPTED = [
    switch(1 * MS, 1, 0, "swapper/1", 0, 100, "victim"),
    switch(1 * MS, 0, 0, "swapper/0", 0, 400, "dd"),
    switch(3 * MS, 1, 100, "victim", 256, 200, "hog"),
    switch(4 * MS, 1, 200, "hog", 0, 201, "hog"),
    switch(6 * MS, 1, 201, "hog", 0, 100, "victim"),
    (7 * MS, 1, 100, "syscall_entry_fsync", {"fd": 3}),
    (7.2 * MS, 0, 400, "block_rq_issue",
     {"dev": 8 << 20, "sector": 64, "nr_sector": 2048, "bytes": 1 << 20, "rwbs": "WS",
      "comm": "dd"}),
    switch(7.5 * MS, 1, 100, "victim", 2, 0, "swapper/1"),
    (9 * MS, 0, 400, "irq_handler_entry", {"irq": 36, "name": "virtio"}),
    (9 * MS, 0, 400, "block_rq_complete",
     {"dev": 8 << 20, "sector": 64, "nr_sector": 2048, "error": 0, "rwbs": "WS"}),
    (9.1 * MS, 0, 400, "sched_waking", {"comm": "victim", "tid": 100, "prio": 20,
                                        "target_cpu": 1}),
    (9.2 * MS, 0, 400, "irq_handler_exit", {"irq": 36, "ret": 1}),
    switch(9.5 * MS, 1, 0, "swapper/1", 0, 100, "victim"),
    (9.6 * MS, 1, 100, "syscall_exit_fsync", {"ret": 0}),
    switch(11 * MS, 0, 400, "dd", 1, 0, "swapper/0"),
]


class KernelLanes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rt-klanes-")
        cls.trace = os.path.join(cls.tmp.name, "preempted")
        kernel_trace(cls.trace, PREEMPTED, {201: 200})
        cls.page = os.path.join(cls.tmp.name, "k.html")
        r = common.run(P, "report", cls.trace, "-o", cls.page)
        assert r.returncode == 0, r.stderr
        with open(cls.page, encoding="utf-8") as f:
            cls.html = f.read()
        cls.k = embedded_data(cls.html)["klanes"]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_exact_spans(self):
        k = self.k
        st = {s: i for i, s in enumerate(k["states"])}
        # times in ns after the first event (1 ms)
        self.assertEqual([(c["cpu"], c["spans"], c["step"], c["bars"]) for c in k["cpus"]], [
            (0, 1, 1, [[0, 10 * MS, 400, 0]]),
            (1, 5, 1, [[0, 2 * MS, 100, 0], [2 * MS, 1 * MS, 200, 0], [3 * MS, 2 * MS, 201, 0],
                       [5 * MS, 1.5 * MS, 100, 0], [8.5 * MS, 1.5 * MS, 100, 1]])])
        th = {t["tid"]: t for t in k["threads"]}
        self.assertEqual(sorted(th), [100, 200, 201, 400])
        self.assertNotIn(0, th)         # the idle task: the CPU lanes' gaps
        v = th[100]
        self.assertEqual((v["name"], v["pid"], v["spans"], v["step"]), ("victim", 100, 6, 1))
        fsync = k["syscalls"].index("fsync")
        io = k["wakers"].index("I/O completion on device 8:0")
        # [start, duration, CPU, state, syscall, waker, preempted, open]
        self.assertEqual(v["bars"], [
            [0, 2 * MS, 1, st["RUNNING"], -1, -1, 0, 0],
            [2 * MS, 3 * MS, 1, st["RUNNABLE"], -1, -1, 1, 0],
            [5 * MS, 1.5 * MS, 1, st["RUNNING"], -1, -1, 0, 0],
            [6.5 * MS, 1.6 * MS, 1, st["IOWAIT"], fsync, io, 0, 0],
            [8.1 * MS, 0.4 * MS, 1, st["RUNNABLE"], -1, io, 0, 0],
            [8.5 * MS, 1.5 * MS, 1, st["RUNNING"], -1, -1, 0, 1]])
        self.assertEqual(th[201]["bars"], [
            [3 * MS, 2 * MS, 1, st["RUNNING"], -1, -1, 0, 0],
            [5 * MS, 5 * MS, -1, st["RUNNABLE"], -1, -1, 1, 1]])  # R: preempted
        # [issue, issue to completion, issuer, write, bytes, open]
        self.assertEqual([(d["device"], d["bars"]) for d in k["io"]],
                         [("8:0", [[6.2 * MS, 1.8 * MS, 400, 1, 1 << 20, 0]])])

    def test_downsampled(self):
        # 101 and 102 take turns on CPU 0, 40 times each
        ev = [switch(1 * MS + i * 10000, 0, 101 + i % 2, "a", 0, 102 - i % 2, "b")
              for i in range(80)]
        path = os.path.join(self.tmp.name, "turns")
        kernel_trace(path, ev, {})
        page = os.path.join(self.tmp.name, "turns.html")
        r = common.run(P, "report", "--lane-cap", "7", path, "-o", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page, encoding="utf-8") as f:
            k = embedded_data(f.read())["klanes"]
        (cpu,) = k["cpus"]
        # 80 running spans (79 switched out, the last one open); kept
        # while streaming: at most 14, one in a doubling step (8 at the
        # end: 10 kept); written: at most 7, so one in 16
        self.assertEqual(cpu["spans"], 80)
        self.assertEqual(cpu["step"], 16)
        self.assertEqual(cpu["bars"], [[j * 10000, 10000, 102 - j % 2, 0]
                                       for j in range(0, 80, 16)])
        for t in k["threads"]:
            self.assertLessEqual(len(t["bars"]), 7)
            self.assertEqual(t["bars"], sorted(t["bars"]))

    def test_explained_interval(self):
        page = os.path.join(self.tmp.name, "x.html")
        r = common.run(P, "report", "--explain-interval", "%d,%d" % (7 * MS, 9.6 * MS),
                       "--tid", "100", self.trace, "-o", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        x = embedded_data(html)["explain"]
        self.assertEqual((x["begin"], x["end"], x["tid"], x["how"]),
                         (6 * MS, 8.6 * MS, 100, "the interval given"))
        # explain's own output for that interval, text and data
        e = subprocess.run([P.ringtrace, "explain", "--interval", "%d,%d" % (7 * MS, 9.6 * MS),
                            "--tid", "100", self.trace], capture_output=True, text=True)
        self.assertEqual(x["text"], e.stdout)
        self.assertTrue(x["text"].startswith("culprit: process dd (pid 400)"), x["text"])
        self.assertEqual((x["data"]["culprit"]["kind"], x["data"]["culprit"]["pid"]),
                         ("io-process", 400))
        if CHROMIUM:
            dom, console = chromium(page, self.tmp.name, "--dump-dom")
            self.assertEqual(console, [])
            self.assertIn("Explained interval", dom)
            self.assertIn("culprit: process dd (pid 400)", dom)
        for bad in (["--explain-interval", "1,2"], ["--tid", "100"],
                    ["--explain-interval", "5,x", "--tid", "100"],
                    ["--explain-interval", "%d,%d" % (9 * MS, 7 * MS), "--tid", "100"]):
            r = common.run(P, "report", *bad, self.trace, "-o", page + ".bad")
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertFalse(os.path.exists(page + ".bad"))

    @unittest.skipUnless(CHROMIUM, "chromium is not installed")
    def test_legend_and_tooltip(self):
        """Hover over victim's I/O wait: the tooltip says the state, the
        syscall, the waker and the duration."""
        drive = """
const li = LANES.findIndex(l => l.kind === "kthread" && l.tid === 100);
const bar = LANES[li].bars[3];
const r = canvas.getBoundingClientRect();
hover({ clientX: r.left + xOf(bar[0] + bar[1] / 2), clientY: r.top + AXIS_H + li * LANE_H + 10 });
"""
        dom, tipped = driven(self, self.html, self.tmp.name, drive)
        self.assertIn("runnable (waiting for a CPU)", dom)
        self.assertEqual(tipped, "block|uninterruptible (I/O wait)\nvictim (tid 100)\n"
                         "in syscall fsync\nwoken by I/O completion on device 8:0\non CPU 1\n"
                         "duration 1.6 ms\nbegins at +6.5 ms")


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if not CHROMIUM:
        print("skipped: chromium is not installed, so the page was not rendered "
              "(the other checks passed; 'make check' or "
              "'scripts/install-deps.sh check' installs it)")
        sys.exit(77)
