"""Shared helpers of the analysis tests: record the workload, read the
trace back with babeltrace2 (bt2), run ringtrace."""
import collections
import os
import subprocess

import bt2

N_ITER = 40          # pairs per worker thread
WORKERS = 3
SHORT_NS = 200000    # the workload's sleeps (nanosleep sleeps at least this)
LONG_NS = 30000000


class Paths:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.ringtrace = os.path.join(self.build, "src/cli/ringtrace")
        self.workload = os.path.join(self.build, "tests/analysis/workload")


def record_workload(paths, trace):
    """Record the workload; return (outlier tid, [worker tids])."""
    r = subprocess.run([paths.ringtrace, "record", "-q", "-o", trace, "--",
                        paths.workload, str(N_ITER)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("record failed: %s %s" % (r.stdout, r.stderr))
    outlier, workers = None, None
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == "outlier":
            outlier = w[1]
        elif w[0] == "workers":
            workers = w[1:]
    return outlier, workers


def read_events(trace):
    """[(ns, name, {field: value})] in trace order, via bt2."""
    out = []
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is bt2._EventMessageConst:
            ev = msg.event
            fields = {}
            for k, v in ev.payload_field.items():
                if isinstance(v, bt2._StringFieldConst):
                    fields[k] = str(v)
                elif isinstance(v, bt2._IntegerFieldConst):
                    fields[k] = int(v)
                else:
                    fields[k] = v
            out.append((msg.default_clock_snapshot.ns_from_origin, ev.name, fields))
    return out


def durations(events, begin="app:work_begin"):
    """{tid: [durations]} of the begin/app:work_end pairs of read_events'
    list, paired per thread as the workload makes them."""
    open_, out = {}, collections.defaultdict(list)
    for ns, name, f in events:
        if name == begin:
            open_.setdefault(f["tid"], []).append(ns)
        elif name == "app:work_end" and open_.get(f["tid"]):
            out[str(f["tid"])].append(ns - open_[f["tid"]].pop())
    return out


def longest_pair_tid(events, outlier, begin="app:work_begin"):
    """The tid (a string) whose begin/app:work_end pair is the longest.
    The workload's outlier thread sleeps LONG_NS once (nanosleep sleeps at
    least that: a bound, checked here), but on a loaded machine one of the
    SHORT_NS sleeps may last longer still: which thread holds the longest
    pair is read from the trace, never assumed."""
    d = durations(events, begin)
    if max(d[outlier]) < LONG_NS:
        raise AssertionError("the outlier's longest pair is %d ns" % max(d[outlier]))
    return max(d, key=lambda tid: max(d[tid]))


def run(paths, *args):
    return subprocess.run([paths.ringtrace, *args], capture_output=True,
                          text=True, timeout=120)
