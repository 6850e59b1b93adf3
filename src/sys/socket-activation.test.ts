import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { takeListenFd } from "./socket-activation.js";

describe("systemd socket activation", () => {
  test("fd 3 when LISTEN_PID is this process, and the variables are unset once read", () => {
    const env: Record<string, string | undefined> = { LISTEN_PID: "42", LISTEN_FDS: "1", LISTEN_FDNAMES: "tscni.socket", PATH: "/bin" };
    assert.equal(takeListenFd(env, 42), 3);
    assert.deepEqual(env, { PATH: "/bin" });
  });
  test("nothing for another process's variables (left as they are) or without sockets", () => {
    const other = { LISTEN_PID: "41", LISTEN_FDS: "1" };
    assert.equal(takeListenFd(other, 42), undefined);
    assert.deepEqual(other, { LISTEN_PID: "41", LISTEN_FDS: "1" });
    assert.equal(takeListenFd({ LISTEN_PID: "42", LISTEN_FDS: "0" }, 42), undefined);
    assert.equal(takeListenFd({}, 42), undefined);
  });
  test("more than one socket is an error, as Go's activation.Listeners", () => {
    assert.throws(() => takeListenFd({ LISTEN_PID: "42", LISTEN_FDS: "2" }, 42), /Too many \(2\) FDs/);
  });
});
