"""Shared by the reader tests: dump a trace with babeltrace2's Python
bindings and with rtr_dump, and compare them event by event."""
import json
import math
import subprocess
import sys

import bt2


def conv(f):
    """A bt2 field as plain Python values (variants: the selected option)."""
    if isinstance(f, bt2._VariantFieldConst):
        return conv(f.selected_option)
    if isinstance(f, bt2._BoolFieldConst):
        return int(bool(f))
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    if isinstance(f, bt2._RealFieldConst):
        return float(f)
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._StructureFieldConst):
        return {k: conv(v) for k, v in f.items()}
    if isinstance(f, bt2._ArrayFieldConst):
        return [conv(v) for v in f]
    raise TypeError("unexpected bt2 field %r" % type(f))


def bt2_events(dirs):
    out = []
    it = bt2.TraceCollectionMessageIterator([str(d) for d in dirs])
    for msg in it:
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        ctx = {}
        for f in (ev.common_context_field, ev.specific_context_field):
            if f is not None:
                ctx.update(conv(f))
        payload = conv(ev.payload_field) if ev.payload_field is not None else {}
        try:
            ns = msg.default_clock_snapshot.ns_from_origin
        except Exception:  # no clock class: no time to compare
            ns = None
        out.append({"name": ev.name, "ns": ns,
                    "context": ctx, "payload": payload})
    return out


def rtr_events(dump, dirs):
    res = subprocess.run([str(dump)] + [str(d) for d in dirs], capture_output=True,
                         text=True, errors="surrogateescape", timeout=120)
    if res.returncode != 0:
        raise AssertionError("rtr_dump failed: %s" % res.stderr)
    evs = [json.loads(line) for line in res.stdout.splitlines()]
    for e in evs:
        for k in ("trace", "stream", "cpu"):
            e.pop(k, None)
    return evs


def same(a, b):
    if isinstance(b, dict) and MAYBE_EMPTY in b:
        return a in ("", b[MAYBE_EMPTY])
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, str) or isinstance(b, str):
            return str(a) == str(b) or (math.isnan(float(a)) and math.isnan(float(b)))
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


MAYBE_EMPTY = "__bt2_value_or_empty__"


def undo_bt2_empty_text(events):
    """babeltrace2 2.0 shows an empty string (or text array/sequence) as a
    value the same field had in an earlier event of that class (its field
    objects are recycled and not cleared): such values may also be ""."""
    seen = {}
    for e in events:
        for k, v in e["payload"].items():
            if not isinstance(v, str):
                continue
            key = (e["name"], k)
            if v in seen.setdefault(key, set()):
                e["payload"][k] = {MAYBE_EMPTY: v}
            else:
                seen[key].add(v)


def compare(dump, dirs, min_events=1):
    """Both readers agree on every event; returns the event count. A text
    field babeltrace2 shows with a value seen before in that class is not
    compared (see undo_bt2_empty_text)."""
    want = bt2_events(dirs)
    undo_bt2_empty_text(want)
    got = rtr_events(dump, dirs)
    if len(want) < min_events:
        raise AssertionError("babeltrace2 sees only %d events" % len(want))
    if len(got) != len(want):
        raise AssertionError("rtr_dump: %d events, babeltrace2: %d" % (len(got), len(want)))
    for k in range(1, len(got)):
        if got[k]["ns"] < got[k - 1]["ns"]:
            raise AssertionError("rtr_dump: event %d goes back in time" % k)
    if want and want[0]["ns"] is None:
        for e in got:
            e["ns"] = None
    key = lambda e: (e["ns"] or 0, e["name"])
    for k, (g, w) in enumerate(zip(sorted(got, key=key), sorted(want, key=key))):
        if not same(g, w):
            raise AssertionError("event %d differs:\n rtr_dump:    %s\n babeltrace2: %s"
                                 % (k, json.dumps(g, sort_keys=True),
                                    json.dumps(w, sort_keys=True)))
    return len(got)


def compare_gaps(dump, dirs):
    """The discarded events and lost packets rtr_dump -g reports are
    babeltrace2's discarded-events / discarded-packets messages: same
    counts, same time ranges. Returns (events, packets) discarded."""
    want = []
    for msg in bt2.TraceCollectionMessageIterator([str(d) for d in dirs]):
        if type(msg) is bt2._DiscardedEventsMessageConst:
            kind = "events_discarded"
        elif type(msg) is bt2._DiscardedPacketsMessageConst:
            kind = "packets_lost"
        else:
            continue
        if not msg.count:
            continue
        want.append((kind, msg.count, msg.beginning_default_clock_snapshot.ns_from_origin,
                     msg.end_default_clock_snapshot.ns_from_origin))
    res = subprocess.run([str(dump), "-g"] + [str(d) for d in dirs], capture_output=True,
                         text=True, timeout=120)
    if res.returncode != 0:
        raise AssertionError("rtr_dump -g failed: %s" % res.stderr)
    got = []
    for line in res.stdout.splitlines():
        g = json.loads(line)
        for kind in ("events_discarded", "packets_lost"):
            # Packets lost before a stream's first one (it does not start
            # at packet_seq_num 0): rt_reader reports them, babeltrace2 not.
            if kind == "packets_lost" and g["ticks_before"] == 0:
                continue
            if g[kind]:
                got.append((kind, g[kind], g["begin_ns"], g["end_ns"]))
    if sorted(got) != sorted(want):
        raise AssertionError("gaps differ:\n rtr_dump:    %s\n babeltrace2: %s"
                             % (sorted(got), sorted(want)))
    return (sum(g[1] for g in got if g[0] == "events_discarded"),
            sum(g[1] for g in got if g[0] == "packets_lost"))


if __name__ == "__main__":
    print(compare(sys.argv[1], sys.argv[2:]), "events agree")
