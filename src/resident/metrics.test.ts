import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatValue, MetricsRegistry } from "./metrics.js";
import { LATENCY_BUCKETS, ServerMetrics } from "./server-metrics.js";

describe("metrics registry and text rendering", () => {
  test("counters, gauges and a histogram render exactly as Prometheus' text format", () => {
    const r = new MetricsRegistry();
    const calls = r.counter({ name: "x_calls_total", help: "Calls.", labelNames: ["program", "command"] });
    r.counter({ name: "x_runs_total", help: "Runs without labels." });
    let inFlight = 2;
    r.gauge({ name: "x_in_flight", help: "In flight.", collect: () => inFlight });
    const temp = r.gauge({ name: "x_temperature", help: "Per room.", labelNames: ["room"] });
    const latency = r.histogram({ name: "x_duration_seconds", help: "Latency.", labelNames: ["program"], buckets: [0.001, 0.1, 1] });

    calls.inc({ program: "bridge", command: "ADD" });
    calls.inc({ program: "bridge", command: "ADD" }, 2);
    calls.inc({ command: "DEL", program: "bridge" });
    calls.inc({ program: "a-first", command: "ADD" });
    temp.set(21.5, { room: "b" });
    temp.set(-3, { room: "a" });
    temp.dec({ room: "a" });
    latency.observe(0.0005, { program: "bridge" });
    latency.observe(0.05, { program: "bridge" });
    latency.observe(0.1, { program: "bridge" });
    latency.observe(7, { program: "bridge" });
    inFlight = 3;

    assert.equal(
      r.render(),
      [
        "# HELP x_calls_total Calls.",
        "# TYPE x_calls_total counter",
        'x_calls_total{program="a-first",command="ADD"} 1',
        'x_calls_total{program="bridge",command="ADD"} 3',
        'x_calls_total{program="bridge",command="DEL"} 1',
        "# HELP x_runs_total Runs without labels.",
        "# TYPE x_runs_total counter",
        "x_runs_total 0",
        "# HELP x_in_flight In flight.",
        "# TYPE x_in_flight gauge",
        "x_in_flight 3",
        "# HELP x_temperature Per room.",
        "# TYPE x_temperature gauge",
        'x_temperature{room="a"} -4',
        'x_temperature{room="b"} 21.5',
        "# HELP x_duration_seconds Latency.",
        "# TYPE x_duration_seconds histogram",
        'x_duration_seconds_bucket{program="bridge",le="0.001"} 1',
        'x_duration_seconds_bucket{program="bridge",le="0.1"} 3',
        'x_duration_seconds_bucket{program="bridge",le="1"} 3',
        'x_duration_seconds_bucket{program="bridge",le="+Inf"} 4',
        'x_duration_seconds_sum{program="bridge"} 7.1505',
        'x_duration_seconds_count{program="bridge"} 4',
        "",
      ].join("\n"),
    );
    assert.equal(calls.get({ program: "bridge", command: "ADD" }), 3);
    assert.equal(calls.get({ program: "none", command: "ADD" }), 0);
    assert.doesNotMatch(r.render(), /program="none"/, "reading a series does not make it");
  });

  test("label values and help text are escaped; special values are spelled as the format wants", () => {
    const r = new MetricsRegistry();
    r.counter({ name: "x_total", help: "A \\ back\nslash.", labelNames: ["v"] }).inc({ v: 'a"b\\c\nd' });
    r.histogram({ name: "x_seconds", help: "Empty.", buckets: [1] });
    assert.equal(
      r.render(),
      [
        "# HELP x_total A \\\\ back\\nslash.",
        "# TYPE x_total counter",
        'x_total{v="a\\"b\\\\c\\nd"} 1',
        "# HELP x_seconds Empty.",
        "# TYPE x_seconds histogram",
        'x_seconds_bucket{le="1"} 0',
        'x_seconds_bucket{le="+Inf"} 0',
        "x_seconds_sum 0",
        "x_seconds_count 0",
        "",
      ].join("\n"),
    );
    assert.deepEqual([Infinity, -Infinity, NaN, 0.0005, 10, 1e21].map(formatValue), ["+Inf", "-Inf", "NaN", "0.0005", "10", "1e+21"]);
  });

  test("misuse is refused: bad names, wrong labels, a counter going down, unordered buckets, a name twice", () => {
    const r = new MetricsRegistry();
    const c = r.counter({ name: "ok_total", help: "h", labelNames: ["a"] });
    assert.throws(() => c.inc({}), /takes the labels \[a\], not \[\]/);
    assert.throws(() => c.inc({ a: "1", b: "2" }), /takes the labels/);
    assert.throws(() => c.inc({ a: "1" }, -1), /cannot go down/);
    assert.throws(() => r.counter({ name: "ok_total", help: "h" }), /declared twice/);
    assert.throws(() => r.counter({ name: "bad-name", help: "h" }), /not valid/);
    assert.throws(() => r.counter({ name: "x", help: "h", labelNames: ["__reserved"] }), /not valid/);
    assert.throws(() => r.histogram({ name: "h", help: "h", labelNames: ["le"], buckets: [1] }), /not valid/);
    assert.throws(() => r.histogram({ name: "h2", help: "h", buckets: [1, 1] }), /increasing/);
    assert.throws(() => r.gauge({ name: "g", help: "h", labelNames: ["a"], collect: () => 1 }), /without labels/);
  });
});

describe("the resident server's metrics", () => {
  const samples = (text: string, name: string) => text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

  test("calls, errors by code, latency, refusals and the counters others increment", () => {
    let inFlight = 1;
    const m = new ServerMetrics({
      build: "b1",
      inFlight: () => inFlight,
      connections: () => 4,
      overdue: () => 2,
      longRunning: () => 3,
      waitingForPlace: () => 1,
    });
    m.callServed({ program: "host-local", command: "ADD", seconds: 0.0004, outcome: { status: 0 } });
    m.callServed({ program: "host-local", command: "ADD", seconds: 0.003, outcome: { status: 0 } });
    m.callServed({ program: "bridge", command: "ADD", seconds: 0.2, outcome: { status: 1, errorCode: 7 } });
    m.callServed({ program: "bridge", command: "DEL", seconds: 12, outcome: undefined });
    m.callServed({ program: "no-such-plugin", command: "ADD\nX", seconds: 0.001, outcome: { status: 1 } });
    m.refused("namespace");
    m.refused("busy");
    m.refused("busy");
    m.refused("no_place");
    m.refused("confinement");
    m.countReload();
    m.countGcRun();
    m.countGcRun();
    inFlight = 0;
    const text = m.render();
    assert.deepEqual(samples(text, "tscni_calls_total"), [
      'tscni_calls_total{program="bridge",command="ADD"} 1',
      'tscni_calls_total{program="bridge",command="DEL"} 1',
      'tscni_calls_total{program="host-local",command="ADD"} 2',
      'tscni_calls_total{program="other",command="other"} 1',
    ]);
    assert.deepEqual(samples(text, "tscni_call_errors_total"), [
      'tscni_call_errors_total{program="bridge",command="ADD",code="7"} 1',
      'tscni_call_errors_total{program="bridge",command="DEL",code="unknown"} 1',
      'tscni_call_errors_total{program="other",command="other",code="unknown"} 1',
    ]);
    const hostLocal = text.split("\n").filter((l) => l.startsWith('tscni_call_duration_seconds_bucket{program="host-local"'));
    assert.deepEqual(
      hostLocal.map((l) => l.replace(/.*le="([^"]+)"\} (\d+)$/, "$1 $2")),
      [
        "0.0005 1",
        "0.001 1",
        "0.0025 1",
        "0.005 2",
        "0.01 2",
        "0.025 2",
        "0.05 2",
        "0.1 2",
        "0.25 2",
        "0.5 2",
        "1 2",
        "2.5 2",
        "5 2",
        "10 2",
        "+Inf 2",
      ],
    );
    assert.equal(LATENCY_BUCKETS.length + 1, hostLocal.length);
    assert.deepEqual(samples(text, "tscni_call_duration_seconds_count"), [
      'tscni_call_duration_seconds_count{program="bridge",command="ADD"} 1',
      'tscni_call_duration_seconds_count{program="bridge",command="DEL"} 1',
      'tscni_call_duration_seconds_count{program="host-local",command="ADD"} 2',
      'tscni_call_duration_seconds_count{program="other",command="other"} 1',
    ]);
    assert.deepEqual(samples(text, "tscni_refusals_total"), [
      'tscni_refusals_total{reason="build"} 0',
      'tscni_refusals_total{reason="busy"} 2',
      'tscni_refusals_total{reason="capabilities"} 0',
      'tscni_refusals_total{reason="confinement"} 1',
      'tscni_refusals_total{reason="dropped"} 0',
      'tscni_refusals_total{reason="identity"} 0',
      'tscni_refusals_total{reason="leaving"} 0',
      'tscni_refusals_total{reason="lock"} 0',
      'tscni_refusals_total{reason="namespace"} 1',
      'tscni_refusals_total{reason="no_place"} 1',
      'tscni_refusals_total{reason="not_root"} 0',
      'tscni_refusals_total{reason="too_large"} 0',
    ]);
    assert.deepEqual(
      [
        "tscni_calls_in_flight",
        "tscni_connections",
        "tscni_calls_overdue",
        "tscni_calls_long_running",
        "tscni_calls_waiting_for_place",
        "tscni_reloads_total",
        "tscni_gc_runs_total",
        "tscni_build_info",
      ].flatMap((n) => samples(text, n)),
      [
        "tscni_calls_in_flight 0",
        "tscni_connections 4",
        "tscni_calls_overdue 2",
        "tscni_calls_long_running 3",
        "tscni_calls_waiting_for_place 1",
        "tscni_reloads_total 1",
        "tscni_gc_runs_total 2",
        'tscni_build_info{build="b1"} 1',
      ],
    );
    assert.match(text, /^# TYPE tscni_call_duration_seconds histogram$/m);
    assert.match(text, /^process_resident_memory_bytes \d+$/m);
  });

  test("a fresh server shows every metric it has, the counters at 0", () => {
    const text = new ServerMetrics({
      build: "b",
      inFlight: () => 0,
      connections: () => 0,
      overdue: () => 0,
      longRunning: () => 0,
      waitingForPlace: () => 0,
    }).render();
    const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual(declared, [
      "tscni_calls_total counter",
      "tscni_call_errors_total counter",
      "tscni_call_duration_seconds histogram",
      "tscni_calls_in_flight gauge",
      "tscni_connections gauge",
      "tscni_calls_overdue gauge",
      "tscni_calls_long_running gauge",
      "tscni_calls_waiting_for_place gauge",
      "tscni_refusals_total counter",
      "tscni_reloads_total counter",
      "tscni_gc_runs_total counter",
      "tscni_build_info gauge",
      "process_start_time_seconds gauge",
      "process_resident_memory_bytes gauge",
    ]);
    assert.match(text, /^tscni_reloads_total 0$/m);
    assert.match(text, /^tscni_gc_runs_total 0$/m);
  });
});
