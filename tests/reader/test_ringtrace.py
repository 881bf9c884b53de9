#!/usr/bin/python3
"""Record traces with `ringtrace record` (the integration programs: every
field type, and a burst with a small buffer that discards events) and
check that rt_reader (rtr_dump) and babeltrace2 decode the same events:
names, timestamps in ns, payload values; and report the same discarded
events. Then open both traces at once
(rtr_open_many, and a parent directory holding both) and check the merge
(babeltrace2 does not merge these: their clocks have different UUIDs).

    test_ringtrace.py BUILD_DIR      (exit 77: bt2 not available)
"""
import json
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
SKIP = 77


def main():
    build = pathlib.Path(sys.argv[1]).resolve()
    ringtrace = build / "src/cli/ringtrace"
    dump = build / "tests/reader/rtr_dump"
    types = build / "tests/integration/types"
    burst = build / "tests/integration/burst"
    extremes = build / "tests/reader/extremes"
    try:
        import bt2_compare
    except ImportError:
        print("skip: python3-bt2 not installed")
        return SKIP
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="rtr_ringtrace."))
    try:
        a, b = tmp / "all" / "types", tmp / "all" / "burst"
        c = tmp / "extremes"
        for out, cmd in ((a, [str(types), "30"]), (b, [str(burst), "3000", "return"]),
                         (c, [str(extremes)])):
            r = subprocess.run([str(ringtrace), "record", "-o", str(out), "--subbuf-size", "4k",
                                "--", *cmd], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise AssertionError("ringtrace record %s: %s" % (cmd, r.stderr))
        n1 = bt2_compare.compare(dump, [a], min_events=30)
        n2 = bt2_compare.compare(dump, [b], min_events=100)
        print("ringtrace traces: rtr_dump and babeltrace2 agree on %d + %d events" % (n1, n2))
        # The burst usually overflows its small buffers (how much depends
        # on timing): the same discarded events, over the same time ranges,
        # as babeltrace2's messages.
        disc, _ = bt2_compare.compare_gaps(dump, [b])
        print("and on %d discarded events" % disc)
        # Floating-point values no integer can hold: both readers agree,
        # rtr_dump prints what was recorded, and decoding them is defined
        # behaviour (make check-sanitize runs this test under UBSan).
        bt2_compare.compare(dump, [c], min_events=2)
        got = {e["name"]: e["payload"] for e in bt2_compare.rtr_events(dump, [c])}
        f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
        want = {"extremes:doubles": {"qnan": "nan", "neg_qnan": "-nan", "inf": "inf",
                                     "neg_inf": "-inf", "big": 1e300, "neg_big": -1e300,
                                     "two63": 2.0 ** 63, "max": sys.float_info.max,
                                     "neg_zero": 0, "tiny": 5e-324},
                "extremes:floats": {"qnan": "nan", "inf": "inf", "neg_inf": "-inf",
                                    "big": f32(1e38), "max": f32(3.4028234663852886e38),
                                    "neg_zero": 0}}
        assert got == want, got
        res = subprocess.run([str(dump), "-n", str(c)], capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 0 and res.stdout.startswith("2 events "), res
        print("and on floating-point values no integer can hold")
        # Both at once: the same events, merged by time, trace 0 first on ties.
        for dirs in ([a, b], [tmp / "all"]):
            res = subprocess.run([str(dump)] + [str(d) for d in dirs], capture_output=True,
                                 text=True, timeout=120)
            assert res.returncode == 0, res.stderr
            evs = [json.loads(line) for line in res.stdout.splitlines()]
            assert len(evs) == n1 + n2, (len(evs), n1, n2)
            keys = [(e["ns"], e["trace"], e["stream"]) for e in evs]
            assert keys == sorted(keys), "not merged by (ns, trace, stream)"
            assert {e["trace"] for e in evs} == {0, 1}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
