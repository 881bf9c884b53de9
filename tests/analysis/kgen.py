"""Write a kernel trace of given events as CTF 1.8 with babeltrace2
(a Python source component into sink.ctf.fs): env domain "kernel", one
stream per CPU (packet context cpu_id), LTTng's event names and fields,
and a `tid` (optionally `pid`) context, or none at all as LTTng's kernel
traces without add-context have. The analyses' tests build traces of
known answers with it.

    events = [(ns, cpu, tid, "syscall_entry_read", {"fd": 3}), ...]
    write_trace("/tmp/t/kernel", events, contexts=("tid",))

ns are since the epoch; integer fields are signed 64-bit, strings are
strings."""
import bt2

_SPEC = {}


class _Iter(bt2._UserMessageIterator):
    def __init__(self, config, port):
        spec = port.user_data
        tc, sc, events, contexts = (spec["tc"], spec["sc"], spec["events"],
                                    spec["contexts"])
        trace = tc(environment={"domain": spec["domain"], "tracer_name": "kgen"})
        cpus = sorted({e[1] for e in events})
        first = min(e[0] for e in events)
        last = max(e[0] for e in events)
        classes = spec["classes"]
        msgs = []
        streams, packets = {}, {}
        for cpu in cpus:
            streams[cpu] = trace.create_stream(sc)
            packets[cpu] = streams[cpu].create_packet()
            packets[cpu].context_field["cpu_id"] = cpu
            msgs.append(("sb", cpu))
            msgs.append(("pb", cpu, first))
        for e in sorted(events, key=lambda e: e[0]):
            msgs.append(("ev", e))
        for cpu in cpus:
            msgs.append(("pe", cpu, last))
            msgs.append(("se", cpu))
        self._msgs = msgs
        self._streams, self._packets = streams, packets
        self._classes, self._contexts = classes, contexts
        self._pos = 0

    def __next__(self):
        if self._pos == len(self._msgs):
            raise StopIteration
        m = self._msgs[self._pos]
        self._pos += 1
        if m[0] == "sb":
            return self._create_stream_beginning_message(self._streams[m[1]])
        if m[0] == "se":
            return self._create_stream_end_message(self._streams[m[1]])
        if m[0] == "pb":
            return self._create_packet_beginning_message(self._packets[m[1]], m[2])
        if m[0] == "pe":
            return self._create_packet_end_message(self._packets[m[1]], m[2])
        ns, cpu, tid, name, fields = m[1]
        msg = self._create_event_message(self._classes[name], self._packets[cpu], ns)
        ev = msg.event
        if self._contexts:
            ctx = ev.common_context_field
            for c in self._contexts:
                ctx[c] = tid if c == "tid" else fields["__pid"]
        for k, v in fields.items():
            if not k.startswith("__"):
                ev.payload_field[k] = v
        return msg


@bt2.plugin_component_class
class _Source(bt2._UserSourceComponent, message_iterator_class=_Iter):
    def __init__(self, config, params, obj):
        events, contexts, base, domain = obj
        tc = self._create_trace_class()
        cc = self._create_clock_class(frequency=1000000000, name="monotonic",
                                      offset=bt2.ClockClassOffset(base // 10**9, 0))
        pctx = tc.create_structure_field_class()
        pctx.append_member("cpu_id", tc.create_unsigned_integer_field_class(32))
        ectx = None
        if contexts:
            ectx = tc.create_structure_field_class()
            for c in contexts:
                ectx.append_member(c, tc.create_signed_integer_field_class(32))
        sc = tc.create_stream_class(default_clock_class=cc, supports_packets=True,
                                    packets_have_beginning_default_clock_snapshot=True,
                                    packets_have_end_default_clock_snapshot=True,
                                    packet_context_field_class=pctx,
                                    event_common_context_field_class=ectx)
        classes = {}
        for ns, cpu, tid, name, fields in events:
            if name in classes:
                continue
            payload = tc.create_structure_field_class()
            for k, v in fields.items():
                if k.startswith("__"):
                    continue
                if isinstance(v, str):
                    payload.append_member(k, tc.create_string_field_class())
                else:
                    payload.append_member(k, tc.create_signed_integer_field_class(64))
            classes[name] = sc.create_event_class(name=name, payload_field_class=payload)
        # The clock's offset holds the whole seconds of `base`: the events'
        # clock values are ns after it.
        shifted = [(ns - base // 10**9 * 10**9, cpu, tid, name, fields)
                   for ns, cpu, tid, name, fields in events]
        self._add_output_port("out", {"tc": tc, "sc": sc, "events": shifted,
                                      "contexts": contexts, "classes": classes,
                                      "domain": domain})


def write_trace(path, events, contexts=("tid",), domain="kernel"):
    """Write `events` [(ns, cpu, tid, name, {field: value})] as a kernel
    trace in the directory `path` (created). With "pid" in contexts, each
    event's fields give it as "__pid"."""
    base = min(e[0] for e in events)
    graph = bt2.Graph()
    src = graph.add_component(_Source, "src", obj=(events, tuple(contexts), base, domain))
    sink_cls = bt2.find_plugin("ctf").sink_component_classes["fs"]
    sink = graph.add_component(sink_cls, "sink", params={
        "path": path, "assume-single-trace": True, "quiet": True})
    graph.connect_ports(src.output_ports["out"], sink.input_ports["in"])
    graph.run()
