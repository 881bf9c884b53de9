#!/usr/bin/env python3
"""analyze.py - turn the rows written by bench/run.sh into the report.

    analyze.py --meta META --csv RUNS.csv --samples SAMPLES.csv \
               --md OUT.md --svg OUT.svg [--check]

Reads every run's numbers (RUNS.csv, row types below), takes medians over
the repetitions, writes the Markdown report and an SVG plot of per-call
latency against the number of threads, and prints the headline ratios on
stdout. Python 3 standard library only.

Row types of RUNS.csv (first column):
  R      section,tracer,case,threads,rep,tid,cpu,batch_n,batch_ns,
         batch_wall_ns,lat_n,lat_dropped,empty_ns,avg,std,p50,p90,p99,max,
         tsc_mhz                              (one per measuring thread)
  TP     tracer,kind,rep,rate,emitted,elapsed_ns,discarded,recorded (-1:
         not counted; else from `ringtrace summary`)
  BYTES  tracer,emitted,counted,bytes,discarded
  M      tracer,threads,rep,items,events,elapsed_ns,checksum,discarded
  CONS   tracer,rep,emitted,writer_cpu_ns,consumer_cpu_ns,bytes,recorded,
         elapsed_ns                            (bench/consumer.sh)
  PROGS  rep,programs,register_ms,daemon_rss_kb_before,daemon_rss_kb_after,
         daemon_cpu_ms_register,daemon_cpu_ms_idle_1s
  MEM    mode,rss_kb,pss_kb       (one idle traced program)

--check (the smoke test): fail unless every row holds finite numbers and
every kind of row is there.
"""
import argparse
import collections
import math
import statistics
import sys

NAMES = {
    "empty": "none (empty measurement)",
    "rt-off": "ringtrace, event disabled",
    "rt": "ringtrace (rseq), overwrite",
    "rt-atomic": "ringtrace (SMP atomics, RINGTRACE_RSEQ=0), overwrite",
    "rt-disk": "ringtrace (rseq), discard mode, to disk",
    "rt-daemon": "ringtrace (rseq) through ringtraced, overwrite",
    "lttng": "LTTng-UST, overwrite",
    "lttng-off": "LTTng-UST, no session (disabled)",
    "lw-tsc": "lower bound: rdtsc + 16-byte store (LW-UST)",
    "lw-clock": "lower bound: clock_gettime + 16-byte store",
    "printf": "fprintf to a buffered FILE (/dev/null)",
    "marker": "ftrace trace_marker (write(2))",
    "bd-inline": "control: the library's fast path inlined, private buffers, no consumer",
    "bd-floor": "control: minimal rseq per-CPU buffer (breakdown floor)",
}
MICRO_ORDER = ["empty", "rt-off", "lw-tsc", "rt", "rt-daemon", "lw-clock", "rt-disk",
               "rt-atomic", "printf", "lttng", "marker"]
PAYLOAD_NAMES = {"p4": "4 bytes (one int32)", "p32": "32-byte sequence",
                 "str64": "64-byte string", "f8": "8 int32 fields",
                 "printf1": 'printf-style "value %d" (rt_printf / tracef)'}
MACRO_NAMES = {
    "none": "not instrumented",
    "rt-off": "ringtrace, instrumented, not recording",
    "rt-ow": "ringtrace, flight recorder (overwrite)",
    "rt-disk": "ringtrace, to disk (discard)",
    "lttng-off": "LTTng-UST, instrumented, no session",
    "lttng-ow": "LTTng-UST, flight recorder (overwrite)",
    "lttng-disk": "LTTng-UST, to disk (discard)",
}
# The filter rows (run.sh's FILTERS): (section, tracer, what).
FILTER_ROWS = [
    ("micro", "rt-daemon", "ringtrace through ringtraced, no filter: recorded"),
    ("filter", "rt-filt-pass", "ringtrace, `--filter 'v >= 0'`: passed, recorded"),
    ("filter", "rt-filt-reject", "ringtrace, `--filter 'v < 0'`: rejected"),
    ("filter", "rt-filt-reject2", "ringtrace, `--filter 'v > 100 && v < 50'`: rejected"),
    ("micro", "lttng", "LTTng-UST, no filter: recorded"),
    ("filter", "lttng-filt-reject", "LTTng-UST, `--filter 'v < 0'`: rejected"),
    ("filter", "lttng-filt-reject2", "LTTng-UST, `--filter 'v > 100 && v < 50'`: rejected"),
]
BREAKDOWN_CASES = ["rseq2", "clock", "buf", "buf_clk", "inline",
                   "buf_atomic", "inline_atomic", "smp3", "calls", "lib", "floor",
                   "inline_s64", "lib_s64", "inline_q256", "lib_q256"]


def med(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


def fmt(v, nd=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.{nd}f}"


def ratio(a, b, nd=2):
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return "n/a"
    return f"{a / b:.{nd}f}"


class Runs:
    """R rows grouped by (section, tracer, case, threads) -> rep -> [rows]."""

    FIELDS = ["section", "tracer", "case", "threads", "rep", "tid", "cpu",
              "batch_n", "batch_ns", "batch_wall_ns", "lat_n", "lat_dropped",
              "empty_ns", "avg", "std", "p50", "p90", "p99", "max", "tsc_mhz"]

    def __init__(self):
        self.g = collections.defaultdict(lambda: collections.defaultdict(list))

    def add(self, cols):
        r = dict(zip(self.FIELDS, cols))
        for k in self.FIELDS[3:]:
            r[k] = float(r[k])
        key = (r["section"], r["tracer"], r["case"], int(r["threads"]))
        self.g[key][int(r["rep"])].append(r)

    def has(self, section, tracer, case="p4", threads=1):
        return (section, tracer, case, threads) in self.g

    def metric(self, section, tracer, case, threads, field):
        """Median over reps of the mean over the run's threads."""
        reps = self.g.get((section, tracer, case, threads))
        if not reps:
            return float("nan")
        return med([statistics.fmean(r[field] for r in rows)
                    for rows in reps.values()])

    def per_rep(self, section, tracer, case, threads, field):
        reps = self.g.get((section, tracer, case, threads), {})
        return {rep: statistics.fmean(r[field] for r in rows)
                for rep, rows in reps.items()}

    def nreps(self, section, tracer, case="p4", threads=1):
        return len(self.g.get((section, tracer, case, threads), {}))


def read_meta(path):
    meta, notes = {}, []
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            if k == "note":
                notes.append(v)
            else:
                meta[k] = v
    return meta, notes


def read_runs(path, check_errors):
    runs = Runs()
    tp, nbytes, macro, cons = [], [], [], []
    progs, mem = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split(",")
            kind, cols = cols[0], cols[1:]
            try:
                if kind == "R" and len(cols) == 20:
                    runs.add(cols)
                    bad = [float(c) for c in cols[7:19]]
                    if any(math.isnan(x) or math.isinf(x) for x in bad):
                        check_errors.append(f"line {n}: not a number: {line.strip()}")
                elif kind == "TP" and len(cols) == 8:
                    tp.append({"tracer": cols[0], "kind": cols[1], "rep": int(cols[2]),
                               "rate": float(cols[3]), "emitted": int(cols[4]),
                               "elapsed": int(cols[5]), "discarded": int(cols[6]),
                               "recorded": int(cols[7])})
                elif kind == "BYTES" and len(cols) == 5:
                    nbytes.append({"tracer": cols[0], "emitted": int(cols[1]),
                                   "counted": int(cols[2]), "bytes": int(cols[3]),
                                   "discarded": int(cols[4])})
                elif kind == "CONS" and len(cols) == 8:
                    cons.append({"tracer": cols[0], "rep": int(cols[1]),
                                 "emitted": int(cols[2]), "writer": int(cols[3]),
                                 "consumer": int(cols[4]), "bytes": int(cols[5]),
                                 "recorded": int(cols[6]), "elapsed": int(cols[7])})
                elif kind == "M" and len(cols) == 8:
                    macro.append({"tracer": cols[0], "threads": int(cols[1]),
                                  "rep": int(cols[2]), "items": int(cols[3]),
                                  "events": int(cols[4]), "elapsed": int(cols[5]),
                                  "discarded": int(cols[7])})
                elif kind == "PROGS" and len(cols) == 7:
                    progs.append(dict(zip(["rep", "programs", "register_ms", "rss0", "rss1",
                                           "cpu_reg", "cpu_idle"], map(float, cols))))
                elif kind == "MEM" and len(cols) == 3:
                    mem.append({"mode": cols[0], "rss": int(cols[1]), "pss": int(cols[2])})
                else:
                    check_errors.append(f"line {n}: unexpected row: {line.strip()}")
            except ValueError:
                check_errors.append(f"line {n}: not a number: {line.strip()}")
    return runs, tp, nbytes, macro, cons, progs, mem


CONS_NAMES = {
    "bound": "lower bound: rdtsc + 16-byte store, no consumer",
    "rt": "ringtrace, embedded consumer thread",
    "rt-daemon": "ringtrace through ringtraced (its consumer thread)",
    "lttng": "LTTng-UST and lttng-consumerd",
}


def cons_figures(cons):
    """Per tracer and repetition: writer ns per emitted event, consumer ns
    per recorded event, consumer ms per MB written, all the tracer's ns
    per emitted event, bytes per recorded event, the share kept."""
    out = collections.defaultdict(dict)
    for c in cons:
        rec = c["recorded"] if c["recorded"] > 0 else float("nan")
        out[c["tracer"]][c["rep"]] = {
            "writer": c["writer"] / c["emitted"] if c["emitted"] else float("nan"),
            "consumer": c["consumer"] / rec if c["tracer"] != "bound" else 0.0,
            "per_mb": c["consumer"] / (c["bytes"] / 1e6) / 1e6 if c["bytes"] else float("nan"),
            "all": (c["writer"] + c["consumer"]) / c["emitted"] if c["emitted"] else float("nan"),
            "bpe": c["bytes"] / rec if c["tracer"] != "bound" else float("nan"),
            "kept": c["recorded"] / c["emitted"] if c["emitted"] else float("nan"),
        }
    return out


def cons_report(P, cons):
    """The consumer section of the report; returns {name: (value, limit, shown)}
    for the goals table."""
    f = cons_figures(cons)
    if not f:
        return {}

    def m(t, k):
        return med([r[k] for r in f.get(t, {}).values()])

    def rr(t1, k1, t2, k2):
        a, b = f.get(t1, {}), f.get(t2, {})
        return med([a[r][k1] / b[r][k2] for r in a if r in b and b[r][k2] > 0])

    c0 = cons[0]
    P("## Consumer CPU, and all the tracer's CPU per event")
    P("")
    P(f"`bench/consumer.sh`: one thread on the last CPU emits {c0['emitted']:,} 4-byte events "
      "flat out, overwrite mode, 4 sub-buffers of 256 KiB per CPU, to disk; the consumers on "
      "CPU 0. Writer: that thread's CPU time per emitted event. Consumer: the embedded "
      "consumer (the process's CPU time less the writer's), ringtraced's or "
      "lttng-consumerd's CPU time over the run, per event on disk and per MB written. "
      "Medians over the repetitions; ratios within each repetition.")
    P("")
    P("| tracer | writer ns/event | consumer ns/event | consumer ms/MB | writer + consumer "
      "ns/event | / lower bound | bytes/event on disk | events kept |")
    P("|---|---:|---:|---:|---:|---:|---:|---:|")
    for t in CONS_NAMES:
        if t not in f:
            continue
        P(f"| {CONS_NAMES[t]} | {fmt(m(t, 'writer'), 2)} | "
          f"{'-' if t == 'bound' else fmt(m(t, 'consumer'), 2)} | "
          f"{'-' if t == 'bound' else fmt(m(t, 'per_mb'), 3)} | {fmt(m(t, 'all'), 2)} | "
          f"{fmt(rr(t, 'all', 'bound', 'all'), 2)} | "
          f"{'-' if t == 'bound' else fmt(m(t, 'bpe'), 2)} | "
          f"{'-' if t == 'bound' else fmt(m(t, 'kept') * 100, 1) + ' %'} |")
    P("")
    goals = {}
    for t in ("rt", "rt-daemon"):
        if t in f and "lttng" in f:
            ev, mb = rr(t, "consumer", "lttng", "consumer"), rr(t, "per_mb", "lttng", "per_mb")
            P(f"- {CONS_NAMES[t]} / lttng-consumerd: **{fmt(ev, 2)}** per event, "
              f"**{fmt(mb, 2)}** per MB.")
            goals[f"consumer CPU per event, {t} / lttng-consumerd <= 0.5"] = (
                ev, 0.5, f"{fmt(ev, 3)} ({fmt(m(t, 'consumer'), 2)} / {fmt(m('lttng', 'consumer'), 2)} ns)")
            goals[f"consumer CPU per MB, {t} / lttng-consumerd <= 0.5"] = (
                mb, 0.5, f"{fmt(mb, 3)} ({fmt(m(t, 'per_mb'), 3)} / {fmt(m('lttng', 'per_mb'), 3)} ms)")
    if "rt" in f and "bound" in f:
        al = rr("rt", "all", "bound", "all")
        goals["all tracer CPU per 4-byte event (embedded) <= 1.5 x lower bound"] = (
            al, 1.5, f"{fmt(al, 3)} ({fmt(m('rt', 'all'), 2)} / {fmt(m('bound', 'all'), 2)} ns)")
    P("")
    return goals


# --- SVG ---------------------------------------------------------------------

SVG_COLORS = {"rt": "#d62728", "rt-atomic": "#ff7f0e", "lttng": "#1f77b4",
              "lw-tsc": "#2ca02c", "lw-clock": "#98df8a", "printf": "#9467bd",
              "marker": "#8c564b", "rt-off": "#7f7f7f", "empty": "#c7c7c7"}


def svg_plot(series, threads, title, ylabel):
    """series: {tracer: {threads: value}}; log-scale y."""
    w, h, left, right, top, bottom = 760, 440, 70, 250, 40, 50
    pw, ph = w - left - right, h - top - bottom
    vals = [v for s in series.values() for v in s.values()
            if v is not None and not math.isnan(v) and v > 0]
    if not vals:
        vals = [1.0]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))
    if hi <= lo:
        hi = lo * 10

    def x(i):
        return left + (pw * (i + 0.5) / len(threads))

    def y(v):
        return top + ph - ph * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14">{title}</text>']
    dec = lo
    while dec <= hi * 1.0001:
        for m in range(1, 10):
            v = dec * m
            if v > hi * 1.0001:
                break
            yy = y(v)
            out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" '
                       f'stroke="{"#bbb" if m == 1 else "#eee"}"/>')
            if m == 1:
                label = f"{v:g}"
                out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{label}</text>')
        dec *= 10
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    for i, t in enumerate(threads):
        out.append(f'<text x="{x(i):.1f}" y="{top + ph + 18}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{h - 10}" text-anchor="middle">'
               f'threads (2 CPUs)</text>')
    out.append(f'<text transform="translate(16,{top + ph / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{ylabel}</text>')
    ly = top + 10
    for tracer, pts in series.items():
        color = SVG_COLORS.get(tracer, "#000")
        coords = [(x(i), y(pts[t])) for i, t in enumerate(threads)
                  if t in pts and pts[t] is not None and not math.isnan(pts[t]) and pts[t] > 0]
        if not coords:
            continue
        out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            color, " ".join(f"{a:.1f},{b:.1f}" for a, b in coords)))
        for a, b in coords:
            out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{color}"/>')
        out.append(f'<line x1="{left + pw + 15}" y1="{ly}" x2="{left + pw + 35}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        name = NAMES.get(tracer, tracer).replace("&", "&amp;").replace("<", "&lt;")
        if len(name) > 32:
            name = name[:31] + "…"
        out.append(f'<text x="{left + pw + 40}" y="{ly + 4}">{name}</text>')
        ly += 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --- report ------------------------------------------------------------------

SHAPE_ROWS = [("str16", "rt", "16-byte string"), ("str64", "rt", "64-byte string"),
              ("str256", "rt", "256-byte string"),
              ("p32", "rt", "32-byte payload (byte sequence, the library's path)"),
              ("seq256", "rt", "256-byte byte sequence"),
              ("ctx", "rt-ctx", "4-byte event with contexts vtid + procname")]


def writer_shapes(P, runs, rep_ratio, progs, mem):
    """The writer side's rows (run.sh sections shape, threads, programs):
    writes their tables, returns the goals (text, value, limit, shown)."""
    goals = []
    if not runs.has("shape", "rt", "str16"):
        return goals

    def m(t, c, f="batch_ns", sec="shape", n=1):
        return runs.metric(sec, t, c, n, f)

    P("## Event shapes against their bounds")
    P("")
    P("One thread, embedded mode (overwrite, consumer running) unless stated; each shape "
      "beside its bound (`micro_base lw_*`: the TSC and the same bytes appended to a "
      "per-thread array: strlen + copy for a string, length + copy for a sequence, the "
      "cached thread id and name for the contexts) and LTTng-UST (the same payload; the "
      "contexts added to its channel), alternated in each repetition. Ratios: median over "
      "the repetitions of the ratio within one repetition.")
    P("")
    P("| shape | bound batch ns | ringtrace batch ns | LTTng-UST batch ns | ringtrace / bound "
      "(batch) | ringtrace / bound (p50) | ringtrace / LTTng-UST (batch) | goal |")
    P("|---|---:|---:|---:|---:|---:|---:|---|")
    for c, t, what in SHAPE_ROWS:
        lt = "lttng-ctx" if c == "ctx" else "lttng"
        rb = rep_ratio(t, "bound", "batch_ns", "shape", c)
        rp = rep_ratio(t, "bound", "p50", "shape", c)
        rl = rep_ratio(t, lt, "batch_ns", "shape", c)
        P(f"| {what} | {fmt(m('bound', c), 2)} | {fmt(m(t, c), 2)} | {fmt(m(lt, c), 2)} | "
          f"{fmt(rb, 2)} | {fmt(rp, 2)} | {fmt(rl, 2)} | <= 1.3 x bound |")
        goals.append((f"{what}: batch <= 1.3 x its bound", rb, 1.3,
                      f"{fmt(rb, 2)} ({fmt(m(t, c), 2)} / {fmt(m('bound', c), 2)} ns)"))
    P("")
    at = rep_ratio("rt-atomic", "rt", "batch_ns", "shape", "p4")
    P(f"SMP-atomic fallback (`RINGTRACE_RSEQ=0`), 4-byte event: {fmt(m('rt-atomic', 'p4'), 2)} ns "
      f"against {fmt(m('rt', 'p4'), 2)} ns with rseq (batch; p50 {fmt(m('rt-atomic', 'p4', 'p50'))} "
      f"against {fmt(m('rt', 'p4', 'p50'))}): **{fmt(at, 2)} x**.")
    goals.append(("SMP-atomic fallback: batch <= 2 x rseq", at, 2.0,
                  f"{fmt(at, 2)} ({fmt(m('rt-atomic', 'p4'), 2)} / {fmt(m('rt', 'p4'), 2)} ns)"))
    if runs.has("shape", "rt-daemon2") and min(
            runs.per_rep("shape", "rt-daemon2", "p4", 1, "batch_ns").values()) < 1.0:
        # (under 1 ns: the program did not register in time, and its
        # disabled call site was measured)
        P("Two daemon sessions: not measured (the program did not register with "
          "ringtraced in time: its events were disabled).")
        goals.append(("two sessions recording the same event: batch <= 2 x one session",
                      float("nan"), 2.0, "not measured (registration timed out)"))
    elif runs.has("shape", "rt-daemon2"):
        two = rep_ratio("rt-daemon2", "rt-daemon", "batch_ns", "shape", "p4")
        P("")
        P(f"Two daemon sessions recording the same event (each its own per-user buffers): "
          f"{fmt(m('rt-daemon2', 'p4'), 2)} ns against {fmt(m('rt-daemon', 'p4'), 2)} ns for one "
          f"session (batch): **{fmt(two, 2)} x**.")
        goals.append(("two sessions recording the same event: batch <= 2 x one session", two, 2.0,
                      f"{fmt(two, 2)} ({fmt(m('rt-daemon2', 'p4'), 2)} / "
                      f"{fmt(m('rt-daemon', 'p4'), 2)} ns)"))
    P("")

    # p99 / p50
    a = runs.per_rep("micro", "rt", "p4", 1, "p99")
    b = runs.per_rep("micro", "rt", "p4", 1, "p50")
    tail = med([a[r] / b[r] for r in a if r in b and b[r] > 0])
    P(f"Per-call latency of the 4-byte event, one thread (micro table): p50 "
      f"{fmt(runs.metric('micro', 'rt', 'p4', 1, 'p50'))} ns, p99 "
      f"{fmt(runs.metric('micro', 'rt', 'p4', 1, 'p99'))} ns: p99 / p50 **{fmt(tail, 2)}**.")
    P("")
    goals.append(("per-call p99 / p50, 1 thread", tail, 2.0, fmt(tail, 2)))

    # thread scaling, 1 to 64
    ns = sorted({k[3] for k in runs.g if k[0] == "threads" and k[1] == "rt"} | {1})

    def key(t, n):
        if t.startswith("bd-"):
            return ("threads", t, "p4", n)
        return ("micro" if n == 1 else "threads", t, "p4", n)

    def worst(t):
        base = runs.per_rep(*key(t, 1), "batch_ns")
        per = []
        for r in base:
            vals = [runs.per_rep(*key(t, n), "batch_ns").get(r) for n in ns if n > 1]
            vals = [v for v in vals if v is not None]
            if vals and base[r] > 0:
                per.append(max(vals) / base[r])
        return med(per)

    if len(ns) > 1:
        P("Writer CPU per event (batch: each thread's CPU time / its calls, averaged over "
          "the threads) against the number of threads, on 2 CPUs:")
        P("")
        P("| tracer | " + " | ".join(str(n) for n in ns) + " | worst / 1 thread |")
        P("|---|" + "---:|" * (len(ns) + 1))
        for t in ["rt", "lw-tsc", "bd-inline", "bd-floor"]:
            if key(t, 1) not in runs.g:
                continue
            cells = [fmt(runs.metric(*key(t, n), "batch_ns"), 2) for n in ns]
            P(f"| {NAMES[t]} | " + " | ".join(cells) + f" | {fmt(worst(t), 2)} |")
        P("")
        w = worst("rt")
        goals.append((f"threads {', '.join(map(str, ns))}: writer CPU per event within 1.1 x "
                      "1 thread", w, 1.1,
                      f"{fmt(w, 2)} (control, bound: {fmt(worst('lw-tsc'), 2)})"))

    # many programs
    if progs:
        many = rep_ratio("rt-daemon-many", "rt-daemon", "batch_ns", "programs", "p4")
        n = med([p["programs"] for p in progs])
        others = max(n - 1, 1)
        rss = med([(p["rss1"] - p["rss0"]) / others for p in progs])
        reg = med([p["cpu_reg"] / others for p in progs])
        idle = med([p["cpu_idle"] for p in progs])
        P(f"{fmt(n, 0)} traced programs in one per-user session (the measuring program and "
          f"{fmt(others, 0)} idle ones, `bench/idle_prog`): the 4-byte event costs "
          f"{fmt(m('rt-daemon-many', 'p4', sec='programs'), 2)} ns against "
          f"{fmt(m('rt-daemon', 'p4', sec='programs'), 2)} ns with the measuring program alone "
          f"(batch, **{fmt(many, 2)} x**). ringtraced: {fmt(rss, 0)} KiB of resident memory "
          f"and {fmt(reg, 2)} ms of CPU per program registered; {fmt(idle, 0)} ms of CPU in "
          f"one second with all of them registered and idle; registering them took "
          f"{fmt(med([p['register_ms'] for p in progs]), 0)} ms.")
        P("")
        goals.append((f"{fmt(n, 0)} programs in one session: per-event cost within 1.1 x one "
                      "program", many, 1.1,
                      f"{fmt(many, 2)}; daemon {fmt(rss, 0)} KiB, {fmt(reg, 2)} ms CPU per program"))
    if mem:
        P("Memory of an idle traced program (`bench/idle_prog`: one call site, one event "
          "recorded, then waiting), from /proc/PID/smaps_rollup:")
        P("")
        P("| mode | Rss KiB | Pss KiB |")
        P("|---|---:|---:|")
        for e in mem:
            P(f"| {e['mode']} | {e['rss']} | {e['pss']} |")
        P("")
    return goals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meta", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--svg", required=True)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()

    meta, notes = read_meta(a.meta)
    errors = []
    runs, tp, nbytes, macro, cons, progs, mem = read_runs(a.csv, errors)
    md = []
    P = md.append

    def lat(tracer, field="p50", section="micro", case="p4", threads=1):
        return runs.metric(section, tracer, case, threads, field)

    def rep_ratio(t1, t2, field="p50", section="micro", case="p4"):
        """Median over reps of t1/t2 measured in the same repetition (the
        machine's speed drifts over minutes: compare neighbours)."""
        a = runs.per_rep(section, t1, case, 1, field)
        b = runs.per_rep(section, t2, case, 1, field)
        return med([a[r] / b[r] for r in a if r in b and b[r] > 0])

    def cross_ratio(s1, t1, s2, t2, field="batch_ns"):
        """rep_ratio across sections: t1 of section s1 over t2 of s2."""
        a = runs.per_rep(s1, t1, "p4", 1, field)
        b = runs.per_rep(s2, t2, "p4", 1, field)
        return med([a[r] / b[r] for r in a if r in b and b[r] > 0])

    lb = lat("lw-tsc")
    lb_batch = lat("lw-tsc", "batch_ns")
    rt50, rt_batch = lat("rt"), lat("rt", "batch_ns")
    lt50, lt_batch = lat("lttng"), lat("lttng", "batch_ns")

    P(f"# ringtrace overhead benchmark, {meta.get('date', '?')}, commit {meta.get('commit', '?')}")
    P("")
    P(f"`bench/run.sh` ({meta.get('mode')} run, {meta.get('reps')} interleaved repetitions, "
      f"{meta.get('elapsed_s')} s). Method: docs/performance.md (Gebai & Dagenais 2018, section VI, "
      "in user space). Every number is a median over the repetitions.")
    P("")
    P("## Machine")
    P("")
    P("| | |")
    P("|---|---|")
    for k, label in [("cpu", "CPU"), ("cpus", "CPUs"), ("hypervisor", "virtual machine"),
                     ("memory", "memory"), ("kernel", "kernel"),
                     ("clocksource", "clocksource"), ("glibc", "glibc"),
                     ("compiler", "compiler"), ("lttng_ust", "lttng-ust"),
                     ("lttng_tools", "lttng-tools"), ("tmpdir_fs", "trace file system")]:
        P(f"| {label} | {meta.get(k, '?')} |")
    P("")
    if notes:
        P("Notes: " + "; ".join(notes) + ".")
        P("")

    # --- Table IV -------------------------------------------------------------
    P("## Cost of one event (Gebai & Dagenais 2018 Table IV)")
    P("")
    P("One thread pinned to the last CPU, consumers on CPU 0, 4-byte integer payload, "
      "steady state (buffers filled before measuring), overwrite mode with the consumer "
      "running unless stated. *batch*: a loop of calls timed in 20 chunks with the "
      "thread's CPU time, median chunk's time / calls. *latency*: per call, TSC read "
      "before and after (lfence/rdtscp), minus the median of an empty measurement "
      f"({fmt(lat('empty', 'empty_ns'))} ns here); average and std leave out samples "
      "above 5 µs (interrupted or preempted). Ratios: to the rdtsc lower bound measured "
      "in the same repetition, median over the repetitions.")
    P("")
    P("| tracer | batch ns | avg ns | std | p50 ns | p90 ns | p99 ns | p50 / lower bound | batch / lower bound |")
    P("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in MICRO_ORDER:
        if not runs.has("micro", t):
            continue
        P(f"| {NAMES[t]} | {fmt(lat(t, 'batch_ns'), 2)} | {fmt(lat(t, 'avg'))} | "
          f"{fmt(lat(t, 'std'))} | {fmt(lat(t, 'p50'))} | {fmt(lat(t, 'p90'))} | "
          f"{fmt(lat(t, 'p99'))} | {fmt(rep_ratio(t, 'lw-tsc'), 2)} | "
          f"{fmt(rep_ratio(t, 'lw-tsc', 'batch_ns'), 2)} |")
    P("")
    disabled = float("nan")
    if runs.has("micro", "rt-off") and runs.has("micro", "empty"):
        off = runs.per_rep("micro", "rt-off", "p4", 1, "batch_ns")
        emp = runs.per_rep("micro", "empty", "p4", 1, "batch_ns")
        disabled = med([off[r] - emp[r] for r in off if r in emp])
        P(f"Disabled event: {fmt(lat('rt-off', 'batch_ns'), 2)} ns per loop iteration "
          f"against {fmt(lat('empty', 'batch_ns'), 2)} ns for the empty loop: "
          f"**{fmt(disabled, 2)} ns** per disabled call site.")
        P("")

    # --- threads ----------------------------------------------------------------
    threads = sorted({k[3] for k in runs.g if k[0] in ("micro", "threads")})
    scal = ["rt", "rt-atomic", "lttng", "lw-tsc", "lw-clock", "printf", "marker", "rt-off",
            "bd-inline", "bd-floor"]

    def tkey(t, n):
        if t.startswith("bd-"):
            return ("threads", t, "p4", n)
        return ("micro" if n == 1 else "threads", t, "p4", n)

    def tmetric(t, n, field):
        return runs.metric(*tkey(t, n), field)

    def scaling(t, n):
        """Median over reps of (per-thread cost with n threads / with 1)."""
        a = runs.per_rep(*tkey(t, n), "batch_ns")
        b = runs.per_rep(*tkey(t, 1), "batch_ns")
        return med([a[r] / b[r] for r in a if r in b and b[r] > 0])

    P("## Scalability: cost per thread")
    P("")
    P("Each thread pinned (N threads on the last N CPUs, wrapping around: with more "
      "threads than CPUs two threads share a CPU); per-thread cost = batch cost (that "
      "thread's CPU time / its calls), averaged over the threads. Latency p50 per call in "
      "parentheses.")
    P("")
    P("| tracer | " + " | ".join(f"{n} thread{'s' if n > 1 else ''}" for n in threads) +
      " | 2 threads / 1 |")
    P("|---|" + "---:|" * (len(threads) + 1))
    for t in scal:
        if tkey(t, 1) not in runs.g or (2 in threads and tkey(t, 2) not in runs.g):
            continue
        cells = [f"{fmt(tmetric(t, n, 'batch_ns'), 2)} ({fmt(tmetric(t, n, 'p50'))})"
                 for n in threads]
        P(f"| {NAMES[t]} | " + " | ".join(cells) + f" | "
          f"{fmt(scaling(t, 2), 2) if 2 in threads else 'n/a'} |")
    P("")
    P("Last column: median over the repetitions of (2-thread cost / 1-thread cost in the "
      "same repetition). The two controls run the same kind of code on per-CPU data that "
      "no other CPU touches: whatever they lose with two threads is the machine's (two "
      "busy virtual CPUs), not the tracer's.")
    P("")
    P(f"![latency against threads]({a.svg.rsplit('/', 1)[-1]})")
    P("")
    series = {t: {n: tmetric(t, n, "p50") for n in threads} for t in scal
              if runs.has("micro", t) and t != "rt-off"}
    with open(a.svg, "w") as f:
        f.write(svg_plot(series, threads, "Per-call latency (p50) against threads, 4-byte payload",
                         "ns per event (log)"))

    # --- filters ---------------------------------------------------------------------
    if runs.has("filter", "rt-filt-reject"):
        P("## Filters (enable-event -u --filter)")
        P("")
        P("A user rule's filter runs in the traced program before anything is reserved "
          "(docs/filters.md). `v` is the loop counter: each filter rejects, or passes, every "
          "event. Ratios: to the unfiltered recorded event of the same tracer in the same "
          "repetition (batch), median over the repetitions.")
        P("")
        P("| case | batch ns | p50 ns | p90 ns | batch / unfiltered recorded |")
        P("|---|---:|---:|---:|---:|")
        for sec, t, what in FILTER_ROWS:
            if not runs.has(sec, t):
                continue
            base = "lttng" if t.startswith("lttng") else "rt-daemon"
            P(f"| {what} | {fmt(lat(t, 'batch_ns', sec), 2)} | {fmt(lat(t, 'p50', sec))} | "
              f"{fmt(lat(t, 'p90', sec))} | {fmt(cross_ratio(sec, t, 'micro', base), 2)} |")
        P("")

    # --- payloads -------------------------------------------------------------------
    P("## Payload sweep")
    P("")
    P("Ratios: ringtrace / LTTng-UST in the same repetition, median over the repetitions.")
    P("")
    P("| payload | ringtrace p50 ns | LTTng-UST p50 ns | ratio | ringtrace batch ns | LTTng-UST batch ns | ratio |")
    P("|---|---:|---:|---:|---:|---:|---:|")
    for c in ["p4", "p32", "str64", "f8", "printf1"]:
        sec = "micro" if c == "p4" else "payload"
        r50, l50 = runs.metric(sec, "rt", c, 1, "p50"), runs.metric(sec, "lttng", c, 1, "p50")
        rb, lb_ = runs.metric(sec, "rt", c, 1, "batch_ns"), runs.metric(sec, "lttng", c, 1, "batch_ns")
        P(f"| {PAYLOAD_NAMES[c]} | {fmt(r50)} | {fmt(l50)} | "
          f"{fmt(rep_ratio('rt', 'lttng', 'p50', sec, c), 2)} | "
          f"{fmt(rb, 2)} | {fmt(lb_, 2)} | {fmt(rep_ratio('rt', 'lttng', 'batch_ns', sec, c), 2)} |")
    P("")
    pf, ev = runs.metric("payload", "rt", "printf1", 1, "p50"), runs.metric("micro", "rt", "p4", 1, "p50")
    P(f"rt_printf(\"value %d\", v) against rt_event with the same int32 (p4): p50 "
      f"{fmt(pf)} ns against {fmt(ev)} ns; LTTng's tracef formats the text at each call "
      f"(vasprintf), rt_printf records the int and one byte, the format is in the metadata.")
    P("")

    # --- LD_PRELOAD helpers -------------------------------------------------------------
    if runs.has("preload", "pl-none", "malloc"):
        P("## LD_PRELOAD helpers")
        P("")
        P("One program linked with no tracer (bench/preload_bench.c), bare, with ringtrace's helper "
          "preloaded (embedded mode, overwrite, no context) and with LTTng-UST's "
          "(liblttng-ust-libc-wrapper, -pthread-wrapper, -cyg-profile; a session enabling their "
          "events, overwrite, no context), alternated in each repetition. ns per iteration "
          "(malloc + free: 2 events; mutex lock + unlock: 3; an instrumented call: 2); "
          "overhead: traced - bare in the same repetition, median over the repetitions; "
          f"ratio: ringtrace's overhead / LTTng-UST's. Load average when the run ended: "
          f"{meta.get('loadavg', '?')} on {meta.get('cpus', '?')} CPUs (shared machine: "
          "other jobs ran meanwhile, so absolute numbers are noisy; the ratios compare "
          "neighbours).")
        P("")
        P("| case | bare batch ns | ringtrace batch ns | LTTng-UST batch ns | ringtrace overhead | "
          "LTTng-UST overhead | ratio | ringtrace p50 ns | LTTng-UST p50 ns |")
        P("|---|---:|---:|---:|---:|---:|---:|---:|---:|")

        def overhead(t, c):
            a = runs.per_rep("preload", t, c, 1, "batch_ns")
            b = runs.per_rep("preload", "pl-none", c, 1, "batch_ns")
            return {r: a[r] - b[r] for r in a if r in b}

        for c, what in (("malloc", "malloc + free"), ("mutex", "mutex lock + unlock"),
                        ("func", "instrumented function")):
            ort, olt = overhead("pl-rt", c), overhead("pl-lttng", c)
            rat = med([ort[r] / olt[r] for r in ort if r in olt and olt[r] > 0])
            P(f"| {what} | {fmt(runs.metric('preload', 'pl-none', c, 1, 'batch_ns'), 1)} | "
              f"{fmt(runs.metric('preload', 'pl-rt', c, 1, 'batch_ns'), 1)} | "
              f"{fmt(runs.metric('preload', 'pl-lttng', c, 1, 'batch_ns'), 1)} | "
              f"{fmt(med(list(ort.values())), 1)} | {fmt(med(list(olt.values())), 1)} | "
              f"{fmt(rat, 2)} | {fmt(runs.metric('preload', 'pl-rt', c, 1, 'p50'))} | "
              f"{fmt(runs.metric('preload', 'pl-lttng', c, 1, 'p50'))} |")
        P("")

    # --- bytes ----------------------------------------------------------------------
    P("## Bytes per event on disk")
    P("")
    P(f"{meta.get('bytes_events', '?')} events with the 4-byte payload, flat out, one thread, "
      "discard mode, 16 x 1 MiB sub-buffers per CPU (nothing lost); sum of the stream "
      "files (metadata and indexes excluded) / events recorded.")
    P("")
    P("| tracer | events recorded | lost | bytes | bytes per event |")
    P("|---|---:|---:|---:|---:|")
    bpe = {}
    for b in nbytes:
        rec = b["counted"] if b["counted"] >= 0 else b["emitted"] - b["discarded"]
        bpe[b["tracer"]] = b["bytes"] / rec if rec > 0 else float("nan")
        name = "ringtrace" if b["tracer"] == "rt" else "LTTng-UST"
        P(f"| {name} | {rec} | {b['discarded']} | {b['bytes']} | {fmt(bpe[b['tracer']], 3)} |")
    P("")

    # --- throughput ----------------------------------------------------------------------
    P("## Sustained throughput to disk (discard mode)")
    P("")
    P(f"One producer thread, 4-byte payload, default buffers (4 x 256 KiB per CPU), "
      f"{meta.get('tp_ms')} ms per trial, trace on {meta.get('tmpdir_fs', '?')}. Flat out: "
      "as fast as the producer can; paced: a target rate, as fractions of the flat-out "
      "recorded rate. Recorded: the events `ringtrace summary` decodes from the trace "
      "(emitted - the packets' `events_discarded` when the command is not built); "
      "LTTng-UST: emitted - the channel's discarded count (`lttng list`).")
    P("")
    def rec_of(r):
        return r["recorded"] if r["recorded"] >= 0 else r["emitted"] - r["discarded"]

    counted = [r for r in tp if r["recorded"] >= 0]
    if counted:
        bad = [r for r in counted if r["recorded"] + r["discarded"] != r["emitted"]]
        P(f"Check: in {len(counted)} ringtrace trials the events decoded by `ringtrace "
          f"summary` plus the discarded count {'equal' if not bad else 'do NOT equal'} the "
          f"events emitted{'' if not bad else f' ({len(bad)} mismatches)'}.")
        P("")
    P("| tracer | trial | target events/s | emitted events/s | recorded events/s | lost |")
    P("|---|---|---:|---:|---:|---:|")
    lossless = {}
    for tracer in ["rt", "lttng"]:
        rows = [r for r in tp if r["tracer"] == tracer]
        if not rows:
            continue
        name = "ringtrace" if tracer == "rt" else "LTTng-UST"
        flat = [r for r in rows if r["kind"] == "flat"]
        if flat:
            em = med([r["emitted"] / r["elapsed"] * 1e9 for r in flat])
            rec = med([rec_of(r) / r["elapsed"] * 1e9 for r in flat])
            loss = med([r["discarded"] / r["emitted"] * 100 if r["emitted"] else 0 for r in flat])
            P(f"| {name} | flat out ({len(flat)}x) | - | {em:,.0f} | {rec:,.0f} | {loss:.1f} % |")
            if all(r["discarded"] == 0 for r in flat):
                lossless[tracer] = (em, True)
        best = None
        for r in sorted((r for r in rows if r["kind"] == "paced"), key=lambda r: r["rate"]):
            em = r["emitted"] / r["elapsed"] * 1e9
            rec = rec_of(r) / r["elapsed"] * 1e9
            loss = r["discarded"] / r["emitted"] * 100 if r["emitted"] else 0
            P(f"| {name} | paced | {r['rate']:,.0f} | {em:,.0f} | {rec:,.0f} | {loss:.1f} % |")
            if r["discarded"] == 0 and (best is None or em > best):
                best = em
        if tracer not in lossless and best is not None:
            lossless[tracer] = (best, False)
    P("")
    for tracer, (v, bound) in lossless.items():
        name = "ringtrace" if tracer == "rt" else "LTTng-UST"
        P(f"- {name}: **{v:,.0f} events/s** recorded without loss"
          + (" (the producer's own limit: nothing was lost even flat out)" if bound else
             " (highest paced trial with nothing lost)") + ".")
    P("")

    cons_goals = cons_report(P, cons)

    # --- macro -------------------------------------------------------------------------
    P("## Macro benchmark (Desnoyers & Dagenais 2012, Tables 2-5)")
    P("")
    if macro:
        m0 = macro[0]
        P(f"{m0['threads']} threads (one per CPU), {m0['items']} work items each (copy 32 KiB, "
          "hash 8 KiB, getppid, write 512 B to /dev/null, read 512 B from /dev/zero; five "
          "events per item). Time of the work, median of the repetitions; overhead "
          "relative to the program built without instrumentation.")
        P("")
        P("| test | time (s) | overhead | trace output (kevents/s) | events lost |")
        P("|---|---:|---:|---:|---:|")
        base = med([m["elapsed"] for m in macro if m["tracer"] == "none"])
        for t in MACRO_NAMES:
            rows = [m for m in macro if m["tracer"] == t]
            if not rows:
                continue
            el = med([m["elapsed"] for m in rows])
            out = "-" if t in ("none", "rt-off", "lttng-off") else \
                f"{med([m['events'] / m['elapsed'] * 1e6 for m in rows]):,.0f}"
            lost = "-" if out == "-" else str(int(med([m["discarded"] for m in rows])))
            P(f"| {MACRO_NAMES[t]} | {el / 1e9:.3f} | {(el / base - 1) * 100:+.1f} % | {out} | {lost} |")
        P("")

    # --- breakdown ---------------------------------------------------------------------
    bd = {c: runs.metric("breakdown", "bd", c, 1, "p50") for c in BREAKDOWN_CASES}
    bdb = {c: runs.metric("breakdown", "bd", c, 1, "batch_ns") for c in BREAKDOWN_CASES}
    if runs.has("breakdown", "bd", "lib"):
        P("## Where the time goes (Gebai & Dagenais 2018 Figure 10)")
        P("")
        P("`bench/breakdown` measures the event one piece at a time (same method). `lib` "
          "is the real `rt_event`, whose call site records by itself in one rseq section "
          "(`rt__fast_event`) through the fast site libringtrace published, in overwrite "
          "mode; `buf` to `inline` build the library's own fast path (two sections: "
          "reserve and announce, then commit; strings, sequences, contexts) into the "
          "program, on a private buffer:")
        P("")
        P("| variant | p50 ns | batch ns |")
        P("|---|---:|---:|")
        for c in BREAKDOWN_CASES:
            P(f"| {c} | {fmt(bd[c])} | {fmt(bdb[c], 2)} |")
        P("")
        # Components: differences between variants of the same run (they
        # ran interleaved in one process), median over the repetitions.
        def comp(field, expr):
            reps = {c: runs.per_rep("breakdown", "bd", c, 1, field) for c in BREAKDOWN_CASES}
            emp = runs.per_rep("micro", "empty", "p4", 1, "batch_ns") if field == "batch_ns" else {}
            vals = []
            for r in reps["lib"]:
                v = {c: reps[c].get(r, float("nan")) for c in BREAKDOWN_CASES}
                v["empty"] = emp.get(r, 0.0)
                vals.append(expr(v))
            return med(vals)

        parts = [
            ("clock (rdtsc alone)", lambda v: v["clock"] - v["empty"]),
            ("the section around it: checks, header, payload, the store that reserves "
             "and commits (lib - clock)", lambda v: v["lib"] - v["clock"]),
        ]
        lib_parts = [
            ("buffer (reserve + commit, rseq)", lambda v: v["buf"] - v["empty"]),
            ("clock (rdtsc in the reservation)", lambda v: v["buf_clk"] - v["buf"]),
            ("serialization (4-byte header + payload)", lambda v: v["inline"] - v["buf_clk"]),
        ]
        P("Components (differences between the variants of one run, median over the "
          "repetitions; batch columns less the empty loop). The event of a fixed-size "
          "call site:")
        P("")
        P("| component | p50 ns | batch ns |")
        P("|---|---:|---:|")
        for name, expr in parts:
            P(f"| {name} | {fmt(comp('p50', expr))} | {fmt(comp('batch_ns', expr), 2)} |")
        P(f"| **total (lib)** | {fmt(bd['lib'])} | {fmt(comp('batch_ns', lambda v: v['lib'] - v['empty']), 2)} |")
        P("")
        P("The library's two-section path, for comparison:")
        P("")
        P("| component | p50 ns | batch ns |")
        P("|---|---:|---:|")
        for name, expr in lib_parts:
            P(f"| {name} | {fmt(comp('p50', expr))} | {fmt(comp('batch_ns', expr), 2)} |")
        P(f"| **total (inline)** | {fmt(bd['inline'])} | {fmt(comp('batch_ns', lambda v: v['inline'] - v['empty']), 2)} |")
        P("")
        if runs.has("breakdown", "bd", "lib_s64"):
            P("A 64-byte string and a 256-byte sequence (batch ns, less the empty loop; the "
              "shapes' bounds are in the shapes table): the library records them in one "
              "section (lib_X); the two-section path inlined into the program (inline_X) "
              "for comparison:")
            P("")
            P("| component | 64-byte string | 256-byte sequence |")
            P("|---|---:|---:|")
            for name, key in [("clock (rdtsc alone)", lambda v, x: v["clock"] - v["empty"]),
                              ("the call site's sizing, the call, the section's checks and "
                               "the copy (lib_X - clock)", lambda v, x: v["lib_" + x] - v["clock"]),
                              ("**total (lib_X)**", lambda v, x: v["lib_" + x] - v["empty"]),
                              ("two sections, clock, header, inlined (inline)",
                               lambda v, x: v["inline"] - v["empty"]),
                              ("+ sizing and copy (inline_X - inline)",
                               lambda v, x: v["inline_" + x] - v["inline"]),
                              ("**total, two sections inlined (inline_X)**",
                               lambda v, x: v["inline_" + x] - v["empty"])]:
                P(f"| {name} | {fmt(comp('batch_ns', lambda v: key(v, 's64')), 2)} | "
                  f"{fmt(comp('batch_ns', lambda v: key(v, 'q256')), 2)} |")
            P("")
        P(f"For reference: a call into a library that does nothing costs {fmt(bd['calls'])} ns "
          f"(`calls`: what the call site saves by recording inline), "
          f"rdtsc alone {fmt(bd['clock'])} ns, the two rseq sections alone "
          f"{fmt(bd['rseq2'])} ns, the buffer with SMP atomics instead of rseq "
          f"{fmt(bd['buf_atomic'])} ns (rseq saves {fmt(bd['buf_atomic'] - bd['buf'])} ns), "
          f"the library's whole fast path with atomics {fmt(bd['inline_atomic'])} ns, "
          f"of which the three locked instructions alone (`smp3`: the announcement's add, "
          f"the `lock cmpxchg16b` of {{write_count, stamp}}, the commit's add) "
          f"{fmt(bd['smp3'])} ns. "
          f"The floor of an rseq per-CPU design (`floor`: one cache line of per-CPU state, "
          f"reserve, TSC, header, payload, commit, no sub-buffers) is {fmt(bd['floor'])} ns, "
          f"{ratio(bd['floor'], lb)} x the lower bound.")
        P("")

    # --- event shapes (the writer side's goals) -----------------------------------
    shape_goals = writer_shapes(P, runs, rep_ratio, progs, mem)

    # --- goals ----------------------------------------------------------------------------
    P("## Goals")
    P("")
    P("| goal | measured | met |")
    P("|---|---|---|")

    def goal(text, value, limit, shown):
        ok = "n/a" if value is None or math.isnan(value) else ("yes" if value <= limit else "**no**")
        P(f"| {text} | {shown} | {ok} |")

    g_lb, g_lt = rep_ratio("rt", "lw-tsc"), rep_ratio("rt", "lttng")
    goal("enabled event, 1 thread, p50 <= 1.3 x rdtsc lower bound", g_lb, 1.3,
         f"{fmt(g_lb, 3)} ({fmt(rt50)} / {fmt(lb)} ns)")
    goal("enabled event, 1 thread, p50 <= 0.25 x LTTng-UST", g_lt, 0.25,
         f"{fmt(g_lt, 3)} ({fmt(rt50)} / {fmt(lt50)} ns)")
    if runs.has("micro", "rt-daemon"):
        # daemon mode: the comparison with LTTng-UST, which runs with its daemon
        gd_lt, gd_lb = rep_ratio("rt-daemon", "lttng"), rep_ratio("rt-daemon", "lw-tsc")
        goal("through ringtraced: p50 <= 1.3 x rdtsc lower bound", gd_lb, 1.3,
             f"{fmt(gd_lb, 3)} ({fmt(lat('rt-daemon'))} / {fmt(lb)} ns)")
        goal("through ringtraced: p50 <= 0.25 x LTTng-UST", gd_lt, 0.25,
             f"{fmt(gd_lt, 3)} ({fmt(lat('rt-daemon'))} / {fmt(lt50)} ns)")
    s2 = scaling("rt", 2) if 2 in threads else float("nan")
    ctl = scaling("bd-inline", 2) if 2 in threads and tkey("bd-inline", 2) in runs.g else float("nan")
    goal("2 threads: per-thread cost <= 1.1 x 1 thread", s2, 1.1,
         f"{fmt(s2, 3)} ({fmt(tmetric('rt', 2, 'batch_ns'), 2)} / {fmt(rt_batch, 2)} ns; "
         f"control {fmt(ctl, 2)})")
    goal("disabled event <= 0.5 ns", disabled, 0.5, f"{fmt(disabled, 2)} ns")
    if runs.has("filter", "rt-filt-reject"):
        fr = cross_ratio("filter", "rt-filt-reject", "micro", "rt-daemon")
        goal("event rejected by a filter <= 2 x unfiltered recorded event (batch)", fr, 2.0,
             f"{fmt(fr, 3)} ({fmt(lat('rt-filt-reject', 'batch_ns', 'filter'), 2)} / "
             f"{fmt(lat('rt-daemon', 'batch_ns'), 2)} ns)")
    goal("bytes per event (4-byte payload) <= 8", round(bpe.get("rt", float("nan")), 2), 8.0,
         f"{fmt(bpe.get('rt', float('nan')), 3)}")
    for text, (value, limit, shown) in cons_goals.items():
        goal(text, value, limit, shown)
    for text, value, limit, shown in shape_goals:
        goal(text, value, limit, shown)
    P("")
    P("Raw rows: the `.csv` next to this file (row types in bench/analyze.py); raw per-call "
      "samples: `-samples.csv`.")

    with open(a.md, "w") as f:
        f.write("\n".join(md) + "\n")

    if a.check:
        kinds = {"R": bool(runs.g), "TP": bool(tp), "BYTES": bool(nbytes), "M": bool(macro),
                 "CONS": bool(cons)}
        for k, ok in kinds.items():
            if not ok:
                errors.append(f"no {k} rows")
        # (breakdown and the thread controls need rseq: run.sh skips them
        # with a note where it is missing, and fails if they fail)
        for prog, key in [("micro_base", ("micro", "empty", "p4", 1)),
                          ("micro_rt", ("micro", "rt", "p4", 1))]:
            if key not in runs.g:
                errors.append(f"no numbers from {prog}")
        if errors:
            for e in errors:
                print("analyze: " + e, file=sys.stderr)
            return 1

    if runs.has("micro", "rt-daemon"):
        print(f"ringtrace through ringtraced / LTTng-UST, per event, one thread, median: "
              f"{fmt(rep_ratio('rt-daemon', 'lttng'), 2)} (p50 {fmt(lat('rt-daemon'))} vs "
              f"{fmt(lt50)} ns; batch {fmt(rep_ratio('rt-daemon', 'lttng', 'batch_ns'), 2)}: "
              f"{fmt(lat('rt-daemon', 'batch_ns'), 2)} vs {fmt(lt_batch, 2)} ns)")
    if runs.has("filter", "rt-filt-reject"):
        print(f"event rejected by a filter / unfiltered recorded event (through ringtraced, "
              f"batch), median: {fmt(cross_ratio('filter', 'rt-filt-reject', 'micro', 'rt-daemon'), 2)}"
              f" ({fmt(lat('rt-filt-reject', 'batch_ns', 'filter'), 2)} vs "
              f"{fmt(lat('rt-daemon', 'batch_ns'), 2)} ns)")
    print(f"ringtrace / LTTng-UST, per event, one thread, median: {fmt(g_lt, 2)} "
          f"(p50 {fmt(rt50)} vs {fmt(lt50)} ns; batch {fmt(rep_ratio('rt', 'lttng', 'batch_ns'), 2)}: "
          f"{fmt(rt_batch, 2)} vs {fmt(lt_batch, 2)} ns)")
    print(f"ringtrace / lower bound (rdtsc), per event, one thread, median: {fmt(g_lb, 2)} "
          f"(p50 {fmt(rt50)} vs {fmt(lb)} ns; batch {fmt(rep_ratio('rt', 'lw-tsc', 'batch_ns'), 2)}: "
          f"{fmt(rt_batch, 2)} vs {fmt(lb_batch, 2)} ns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
