/**
 * A small metrics registry — counters, gauges, histograms, each with a fixed set of label names — and its
 * rendering in the Prometheus text exposition format (version 0.0.4): `# HELP`, `# TYPE`, then one sample a
 * line, series sorted by their label values so the same state renders the same text.
 * @module
 */

/** A series' label values, keyed by the metric's label names (exactly those names). */
export type Labels = Readonly<Record<string, string>>;

/** What every metric is declared with. */
export interface MetricOptions {
  /** `[a-zA-Z_:][a-zA-Z0-9_:]*`, by Prometheus' conventions with a unit suffix (`_seconds`, `_bytes`, `_total`). */
  name: string;
  help: string;
  labelNames?: readonly string[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A sample value as the text format writes it: +Inf, -Inf, NaN, or the shortest decimal of the number. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

const escapeLabelValue = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const escapeHelp = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");

/** `{a="x",b="y"}` of label pairs; empty for none. */
function labelText(pairs: ReadonlyArray<readonly [string, string]>): string {
  return pairs.length ? `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}` : "";
}

/** The state shared by every kind of metric: its declaration and its series, keyed by label values. */
abstract class Metric<S> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  abstract readonly type: "counter" | "gauge" | "histogram";
  protected readonly series = new Map<string, { values: string[]; state: S }>();

  constructor(options: MetricOptions, reserved: readonly string[] = []) {
    if (!METRIC_NAME.test(options.name)) throw new Error(`metric name ${JSON.stringify(options.name)} is not valid`);
    for (const label of options.labelNames ?? []) {
      if (!LABEL_NAME.test(label) || label.startsWith("__") || reserved.includes(label)) {
        throw new Error(`label name ${JSON.stringify(label)} of ${options.name} is not valid`);
      }
    }
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
  }

  protected abstract fresh(): S;

  /** The label values `labels` gives, in the declared order; throws unless it names exactly the declared labels. */
  private valuesOf(labels: Labels): string[] {
    const given = Object.keys(labels);
    if (given.length !== this.labelNames.length || this.labelNames.some((n) => typeof labels[n] !== "string")) {
      throw new Error(`${this.name} takes the labels [${this.labelNames.join(", ")}], not [${given.join(", ")}]`);
    }
    return this.labelNames.map((n) => labels[n]!);
  }

  /** The state of the series `labels` names, created on first use. */
  protected at(labels: Labels = {}): S {
    const values = this.valuesOf(labels);
    const key = values.join("\0");
    let entry = this.series.get(key);
    if (!entry) {
      entry = { values, state: this.fresh() };
      this.series.set(key, entry);
    }
    return entry.state;
  }

  /** The state of the series `labels` names, if it exists. */
  protected find(labels: Labels = {}): S | undefined {
    return this.series.get(this.valuesOf(labels).join("\0"))?.state;
  }

  /** The series in a stable order: by label values. */
  protected sorted(): Array<{ pairs: Array<[string, string]>; state: S }> {
    return [...this.series.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, { values, state }]) => ({ pairs: values.map((v, i) => [this.labelNames[i]!, v] as [string, string]), state }));
  }

  /** The sample lines of this metric (no header). */
  protected abstract samples(): string[];

  /** The metric's whole text: HELP, TYPE and its samples. */
  render(): string {
    return [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`, ...this.samples()].join("\n") + "\n";
  }
}

/** A count that only goes up. A counter without labels shows 0 before its first increment. */
export class Counter extends Metric<{ value: number }> {
  readonly type = "counter";
  constructor(options: MetricOptions) {
    super(options);
    if (this.labelNames.length === 0) this.at();
  }
  protected fresh() {
    return { value: 0 };
  }
  /** Adds `by` (at least 0) to the series `labels` names; a series shows from its first `inc`, even `inc(labels, 0)`. */
  inc(labels?: Labels, by = 1): void {
    if (!(by >= 0)) throw new Error(`${this.name} cannot go down (by ${by})`);
    this.at(labels).value += by;
  }
  /** The series' value (0 when it has none yet). */
  get(labels?: Labels): number {
    return this.find(labels)?.value ?? 0;
  }
  protected samples(): string[] {
    return this.sorted().map(({ pairs, state }) => `${this.name}${labelText(pairs)} ${formatValue(state.value)}`);
  }
}

/** A value that goes up and down; one without labels may be read at render time from `collect`. */
export class Gauge extends Metric<{ value: number }> {
  readonly type = "gauge";
  private readonly collect: (() => number) | undefined;
  constructor(options: MetricOptions & { collect?: () => number }) {
    super(options);
    if (options.collect && this.labelNames.length > 0) throw new Error(`${this.name}: only a gauge without labels is collected`);
    this.collect = options.collect;
    if (this.labelNames.length === 0) this.at();
  }
  protected fresh() {
    return { value: 0 };
  }
  set(value: number, labels?: Labels): void {
    this.at(labels).value = value;
  }
  inc(labels?: Labels, by = 1): void {
    this.at(labels).value += by;
  }
  dec(labels?: Labels, by = 1): void {
    this.at(labels).value -= by;
  }
  protected samples(): string[] {
    if (this.collect) this.at().value = this.collect();
    return this.sorted().map(({ pairs, state }) => `${this.name}${labelText(pairs)} ${formatValue(state.value)}`);
  }
}

/** Observations counted into cumulative buckets of upper bounds (`le`), with their sum and count. */
export class Histogram extends Metric<{ counts: number[]; sum: number; count: number }> {
  readonly type = "histogram";
  readonly buckets: readonly number[];
  constructor(options: MetricOptions & { buckets: readonly number[] }) {
    super(options, ["le"]);
    const b = options.buckets;
    if (b.length === 0 || b.some((v, i) => !Number.isFinite(v) || (i > 0 && v <= b[i - 1]!))) {
      throw new Error(`${this.name}: buckets must be finite and increasing`);
    }
    this.buckets = [...b];
    if (this.labelNames.length === 0) this.at();
  }
  protected fresh() {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }
  /** Counts `value` in the series `labels` names. */
  observe(value: number, labels?: Labels): void {
    const s = this.at(labels);
    const i = this.buckets.findIndex((bound) => value <= bound);
    if (i >= 0) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }
  protected samples(): string[] {
    return this.sorted().flatMap(({ pairs, state }) => {
      let cumulative = 0;
      const lines = this.buckets.map((bound, i) => {
        cumulative += state.counts[i]!;
        return `${this.name}_bucket${labelText([...pairs, ["le", formatValue(bound)]])} ${cumulative}`;
      });
      lines.push(`${this.name}_bucket${labelText([...pairs, ["le", "+Inf"]])} ${state.count}`);
      lines.push(`${this.name}_sum${labelText(pairs)} ${formatValue(state.sum)}`);
      lines.push(`${this.name}_count${labelText(pairs)} ${state.count}`);
      return lines;
    });
  }
}

/** The metrics of one process, rendered in the order they were declared. */
export class MetricsRegistry {
  private readonly metrics: Array<Counter | Gauge | Histogram> = [];

  private add<M extends Counter | Gauge | Histogram>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name)) throw new Error(`metric ${metric.name} is declared twice`);
    this.metrics.push(metric);
    return metric;
  }

  counter(options: MetricOptions): Counter {
    return this.add(new Counter(options));
  }
  gauge(options: MetricOptions & { collect?: () => number }): Gauge {
    return this.add(new Gauge(options));
  }
  histogram(options: MetricOptions & { buckets: readonly number[] }): Histogram {
    return this.add(new Histogram(options));
  }

  /** Every metric in the text exposition format (`text/plain; version=0.0.4`). */
  render(): string {
    return this.metrics.map((m) => m.render()).join("");
  }
}

/** The Content-Type of `render()`'s text. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
