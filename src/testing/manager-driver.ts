/**
 * Runs a PodNetworkManager inside a test's "host" namespace (`ip netns exec <host> node manager-driver.js`) and
 * takes requests as JSON lines on stdin: `{"id": 1, "op": "setUpPod", "args": [...]}`; answers
 * `{"id": 1, "ok": <value>}` or `{"id": 1, "error": "<message>"}` on stdout. The manager's options are the first
 * line. Lets integration tests drive the manager while they change its config directory.
 * @module
 */
import { createInterface } from "node:readline";
import { PodNetworkManager, type PodNetworkManagerOptions } from "#runtime/manager.js";

type Request = { id: number; op: string; args?: unknown[] };

async function main(): Promise<void> {
  const lines = createInterface({ input: process.stdin });
  let manager: PodNetworkManager | undefined;
  const reply = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");
  for await (const line of lines) {
    if (!manager) {
      manager = new PodNetworkManager(JSON.parse(line) as PodNetworkManagerOptions);
      await manager.start();
      reply({ id: 0, ok: "started" });
      continue;
    }
    const req = JSON.parse(line) as Request;
    const m = manager as unknown as Record<string, (...a: unknown[]) => unknown>;
    // Requests run concurrently, as a runtime's do.
    void (async () => {
      try {
        const value = await m[req.op]!.apply(manager, req.args ?? []);
        reply({ id: req.id, ok: value instanceof Set ? [...value] : (value ?? null) });
      } catch (e) {
        reply({ id: req.id, error: (e as Error).message, name: (e as Error).name });
      }
    })();
  }
  manager?.close();
}

void main();
