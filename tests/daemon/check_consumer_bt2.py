#!/usr/bin/python3
"""Read a trace with babeltrace2 (bt2) and compare its events with a list.

usage: check_consumer_bt2.py TRACE_DIR EXPECTED_FILE [--subset]

Each event becomes one line: its name, then `name=value` for every field
of its stream event context (in order), then for every payload field.
EXPECTED_FILE has one such line per event. Without --subset the trace must
hold exactly those events; with --subset (rotated traces that lost their
oldest files) every event must be expected and none may appear twice.
In both cases the events of each writer (payload field `tid`) must come
in increasing `seq` order. Exit status 0 when everything matches.
"""
import collections
import sys

try:
    import bt2
except ImportError as e:
    print(f"cannot import bt2 (python3-bt2): {e}", file=sys.stderr)
    sys.exit(2)


def fmt(v):
    if isinstance(v, (bt2._StringFieldConst,)):
        return str(v)
    return str(int(v))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    trace, expected_path = sys.argv[1], sys.argv[2]
    subset = "--subset" in sys.argv[3:]
    lines = []
    last_seq = {}
    errors = 0
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        parts = [ev.name]
        cc = ev.common_context_field
        if cc is not None:
            parts += [f"{k}={fmt(v)}" for k, v in cc.items()]
        payload = ev.payload_field
        parts += [f"{k}={fmt(v)}" for k, v in payload.items()]
        lines.append(" ".join(parts))
        if "seq" in payload and "tid" in payload:
            key = (ev.name, int(payload["tid"]))
            seq = int(payload["seq"])
            if key in last_seq and seq <= last_seq[key]:
                errors += 1
                if errors < 10:
                    print(f"out of order: {key} seq {seq} after {last_seq[key]}",
                          file=sys.stderr)
            last_seq[key] = seq
    with open(expected_path) as f:
        expected = f.read().splitlines()
    got = collections.Counter(lines)
    want = collections.Counter(expected)
    if subset:
        dup = [l for l, n in got.items() if n > 1]
        extra = [l for l in got if l not in want]
        missing = []
    else:
        dup = []
        extra = list((got - want).elements())
        missing = list((want - got).elements())
    for what, items in (("unexpected", extra), ("missing", missing), ("duplicate", dup)):
        if items:
            errors += 1
            print(f"{len(items)} {what} events, e.g.:", file=sys.stderr)
            for l in items[:5]:
                print(f"  {l}", file=sys.stderr)
    print(f"bt2: {len(lines)} events read, {len(expected)} expected, "
          f"{'subset' if subset else 'exact'} check: {'ok' if not errors else 'FAILED'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
