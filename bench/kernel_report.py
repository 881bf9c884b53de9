#!/usr/bin/env python3
"""bench/kernel_report.py - the tables of bench/kernel.sh from its runs.

usage: kernel_report.py --meta META --csv RUNS.csv --md OUT.md

Rows of RUNS.csv (one per run):
  L,tracer,kind,rep,rate,round_trips,elapsed_ns,workload_cpu_ns,tree_cpu_ns,recorded,lost
      recording: kind flat, loaded (flat out beside a CPU hog per
      CPU) or paced-FRACTION; rate: round trips per second
      per pair asked of the workload (0: flat out); tree_cpu_ns: the CPU
      time of the recorder's process tree, workload included; recorded and
      lost: kernel events (-1: no tracer); then, when there (older files
      lack them): kernel_lost (overrun + dropped in ftrace's per-CPU
      stats), backlog_pages, backlog_peak, full_waits, gap_ms (ringtrace's
      readers, summed over the CPUs; the peak and the longest time
      between two reads of a reader: the largest); -1: unknown
  S,tracer,rep,calls,ns_per_call,workload_cpu_ns,tree_cpu_ns,recorded,lost
      getppid in a loop: ns per call (the workload's median chunk)

Prints the tables (markdown) and writes them with the machine's
description to OUT.md. Ratios are medians of the ratios within each
repetition (the tracers alternate, so a repetition is one slice of the
machine's time).
"""
import argparse
import collections
import statistics
import sys

NAMES = {
    "none": "no tracing",
    "ringtrace": "ringtrace record -k",
    "ringtrace-base": "ringtrace record -k (RTBENCH_KBASE's build)",
    "ringtrace-getppid": "ringtrace record --syscall getppid",
    "ringtrace-all": "ringtrace record --syscall all",
    "trace-cmd": "trace-cmd record",
    "trace-cmd-getppid": "trace-cmd record (getppid's entry and exit)",
    "trace-cmd-raw": "trace-cmd record --compression none",
    "strace": "strace -c -f",
    "perf": "perf trace -s",
}


def med(v):
    return statistics.median(v) if v else float("nan")


def fmt(x, digits=0):
    if x != x:  # nan
        return "-"
    return "{:,.{}f}".format(x, digits)


def load(path):
    L, S = [], []
    with open(path) as f:
        for line in f:
            c = line.strip().split(",")
            if c[0] == "L":
                L.append(dict(tracer=c[1], kind=c[2], rep=int(c[3]), rate=int(c[4]),
                              trips=int(c[5]), elapsed=int(c[6]), wl_cpu=int(c[7]),
                              tree_cpu=int(c[8]), rec=int(c[9]), lost=int(c[10]),
                              klost=int(c[11]) if len(c) > 14 else -1,
                              bpages=int(c[12]) if len(c) > 14 else -1,
                              bpeak=int(c[13]) if len(c) > 14 else -1,
                              waits=int(c[14]) if len(c) > 14 else -1,
                              gap=int(c[15]) if len(c) > 15 else -1))
            elif c[0] == "S":
                S.append(dict(tracer=c[1], rep=int(c[2]), calls=int(c[3]), ns=float(c[4]),
                              wl_cpu=int(c[5]), tree_cpu=int(c[6]), rec=int(c[7]),
                              lost=int(c[8])))
    return L, S


def recording_tables(L, meta, out):
    if not L:
        return
    kinds = []
    for r in L:
        if r["kind"] not in kinds:
            kinds.append(r["kind"])
    tracers = []
    for r in L:
        if r["tracer"] not in tracers:
            tracers.append(r["tracer"])
    out.append("### Recording the kernel's events (sched_switch, sched_waking, read/write entry and exit)")
    out.append("")
    out.append("Workload: `kload pingpong`, %s pairs of threads passing a byte over pipes for %s ms "
               "(per round trip: two write(2), two read(2), their wake-ups and switches); "
               "kernel events of the workload's process tree only; %s KiB of ftrace buffer per CPU "
               "for both recorders; %s repetitions, tracers alternated; medians. "
               "Recorder CPU: the CPU time of the recorder's process tree minus the workload's own."
               % (meta.get("pairs"), meta.get("load_ms"), meta.get("buffer_kb"), meta.get("reps")))
    out.append("")
    out.append("| trial | recorder | round trips/s | events recorded/s | lost | recorder CPU ms | CPU ms per million events |")
    out.append("|---|---|---:|---:|---:|---:|---:|")
    by = collections.defaultdict(list)
    for r in L:
        by[(r["kind"], r["tracer"])].append(r)
    best = {}
    for k in kinds:
        for t in tracers:
            rs = by.get((k, t))
            if not rs:
                continue
            trips = med([r["trips"] / (r["elapsed"] / 1e9) for r in rs])
            if t == "none":
                out.append("| %s | %s | %s | - | - | - | - |" % (k, NAMES.get(t, t), fmt(trips)))
                continue
            evs = med([r["rec"] / (r["elapsed"] / 1e9) for r in rs])
            losses = [100.0 * r["lost"] / max(1, r["rec"] + r["lost"]) for r in rs]
            lossy = sum(1 for r in rs if r["lost"] > 0)
            lost = "%s %%" % fmt(med(losses), 2)
            if lossy:
                lost += " (%d of %d runs lost events, at most %s %%)" % (lossy, len(rs),
                                                                       fmt(max(losses), 1))
            cpu = med([(r["tree_cpu"] - r["wl_cpu"]) / 1e6 for r in rs])
            per_m = med([(r["tree_cpu"] - r["wl_cpu"]) / 1e6 / (r["rec"] / 1e6)
                         for r in rs if r["rec"] > 0])
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                k, NAMES.get(t, t), fmt(trips), fmt(evs), lost, fmt(cpu), fmt(per_m, 1)))
            if all(r["lost"] == 0 for r in rs):
                best[t] = max(best.get(t, 0), evs)
    out.append("")
    for t in tracers:
        if t == "none":
            continue
        if t in best:
            out.append("- %s: **%s events/s** recorded (median) in the highest trial where no "
                       "run lost an event." % (NAMES.get(t, t), fmt(best[t])))
        else:
            out.append("- %s: at least one run of every trial lost events." % NAMES.get(t, t))
    # ratios within each repetition, flat out: CPU per million events
    for other in ("trace-cmd", "trace-cmd-raw"):
        ratios = []
        for k in kinds:
            reps = collections.defaultdict(dict)
            for r in L:
                if r["kind"] == k and r["rec"] > 0:
                    reps[r["rep"]][r["tracer"]] = (r["tree_cpu"] - r["wl_cpu"]) / r["rec"]
            ratios += [v["ringtrace"] / v[other] for v in reps.values()
                       if "ringtrace" in v and other in v and v[other] > 0]
        if ratios:
            out.append("- Recorder CPU per event, ringtrace / %s: **%.2f** (median of %d "
                       "same-repetition ratios over all trials)." % (NAMES[other], med(ratios),
                                                                    len(ratios)))
    out.append("")
    where_lost(L, kinds, tracers, by, out)


def where_lost(L, kinds, tracers, by, out):
    """Per trial and recorder: the runs that lost events, the events lost
    in ftrace's buffers (its per-CPU overrun + dropped), and for ringtrace
    the pages its readers moved through the backlog (their queue full: the
    converter behind), the backlog's peak and the readers' waits on a full
    backlog."""
    if not any(r["klost"] >= 0 for r in L):
        return
    out.append("Where the events were lost, per run (ftrace's buffer: its per-CPU "
               "`overrun` + `dropped events`; ringtrace's readers: pages moved into the "
               "backlog because the queue was full, the backlog's largest size in pages, "
               "the waits of a reader whose backlog was full, the longest time between two "
               "reads of a reader; sums over the CPUs and runs, the peak and the time the "
               "largest):")
    out.append("")
    out.append("| trial | recorder | runs with losses | lost in ftrace's buffer (max of a run) "
               "| pages through the backlog (max of a run) | backlog peak (pages) "
               "| waits on a full backlog | longest between reads (ms) |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for k in kinds:
        for t in tracers:
            rs = [r for r in by.get((k, t), []) if r["klost"] >= 0]
            if not rs:
                continue
            lossy = sum(1 for r in rs if r["lost"] > 0)
            kl = "%s (%s)" % (fmt(sum(r["klost"] for r in rs)), fmt(max(r["klost"] for r in rs)))
            rb = [r for r in rs if r["bpages"] >= 0]
            bp = ("%s (%s)" % (fmt(sum(r["bpages"] for r in rb)), fmt(max(r["bpages"] for r in rb)))
                  if rb else "-")
            pk = fmt(max(r["bpeak"] for r in rb)) if rb else "-"
            w = fmt(sum(r["waits"] for r in rb)) if rb else "-"
            g = fmt(max(r["gap"] for r in rb)) if rb and max(r["gap"] for r in rb) >= 0 else "-"
            out.append("| %s | %s | %d of %d | %s | %s | %s | %s | %s |" % (
                k, NAMES.get(t, t), lossy, len(rs), kl, bp, pk, w, g))
    out.append("")


def syscall_table(S, meta, out):
    if not S:
        return
    tracers = []
    for r in S:
        if r["tracer"] not in tracers:
            tracers.append(r["tracer"])
    out.append("### Cost of a traced system call (getppid)")
    out.append("")
    out.append("`syscall(SYS_getppid)` in a loop for %s ms, in chunks of about 0.2 ms timed with "
               "CLOCK_MONOTONIC (wall time, so work a tracer does in another process on the caller's "
               "behalf counts; short, so that most chunks run within one time slice on a loaded "
               "machine), median chunk's ns per call; %s repetitions, tracers alternated. ringtrace in "
               "overwrite mode (every event written even when the buffer is full). Added: ns per "
               "call minus the untraced ns per call of the same repetition; ratio: to the untraced "
               "call of the same repetition; events recorded per call: 2 when each call's entry and exit "
               "are there (more with every system call recorded: the program's start and end); "
               "events/s: the two events of each call at the loop's "
               "rate; recorder CPU: the CPU time of the recorder's process tree minus the "
               "workload's own; medians." % (meta.get("sys_ms"), meta.get("reps")))
    out.append("")
    out.append("| tracer | ns per call | added ns | / untraced | events recorded per call | lost | events/s | recorder CPU ms per million events |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    base = {r["rep"]: r["ns"] for r in S if r["tracer"] == "none"}
    for t in tracers:
        rs = [r for r in S if r["tracer"] == t]
        ns = med([r["ns"] for r in rs])
        added = med([r["ns"] - base[r["rep"]] for r in rs if r["rep"] in base])
        ratio = med([r["ns"] / base[r["rep"]] for r in rs if base.get(r["rep"])])
        rec = med([r["rec"] / r["calls"] for r in rs if r["rec"] >= 0])
        lost = med([r["lost"] for r in rs if r["lost"] >= 0])
        # events per second of the loop, and the recorder's CPU for them
        evs = med([2e9 / r["ns"] for r in rs if r["rec"] >= 0])
        per_m = med([(r["tree_cpu"] - r["wl_cpu"]) / 1e6 / (r["rec"] / 1e6)
                     for r in rs if r["rec"] > 0])
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            NAMES.get(t, t), fmt(ns, 1), fmt(added, 1) if t != "none" else "-",
            fmt(ratio, 2), fmt(rec, 3), fmt(lost), fmt(evs), fmt(per_m, 1)))
    out.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meta", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()
    meta, notes = {}, []
    with open(a.meta) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            if k == "note":
                notes.append(v)
            else:
                meta[k] = v
    L, S = load(a.csv)
    body = []
    recording_tables(L, meta, body)
    syscall_table(S, meta, body)
    if not body:
        print("kernel_report: no runs in %s" % a.csv, file=sys.stderr)
        return 1
    head = ["# Kernel domain benchmark, %s, commit %s (%s)" % (meta.get("date"), meta.get("commit"),
                                                            meta.get("mode")),
            "",
            "Machine: %s, %s CPUs, kernel %s, load average at the end %s; trace-cmd %s, strace %s, "
            "perf %s. Command: `bench/kernel.sh BUILD%s` (run by `make bench`)."
            % (meta.get("cpu"), meta.get("cpus"), meta.get("kernel"), meta.get("loadavg"),
               meta.get("trace_cmd") or "-", meta.get("strace") or "-", meta.get("perf") or "-",
               " --quick" if meta.get("mode") == "quick" else ""),
            ""]
    head += ["Note: %s" % n for n in notes]
    if notes:
        head.append("")
    text = "\n".join(head + body)
    with open(a.md, "w") as f:
        f.write(text)
    print("\n".join(body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
