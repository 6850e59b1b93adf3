import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { duplicateKeysAt } from "./json-keys.js";

describe("duplicateKeysAt", () => {
  test("finds repeated keys only at the path", () => {
    const text = '{"a": {"x": 1, "y": [1, {"x": 2, "x": 3}], "x": "}"}, "b": {"x": 1, "x": 2}}';
    assert.deepEqual(duplicateKeysAt(text, ["a"]), ["x"]);
    assert.deepEqual(duplicateKeysAt(text, ["b"]), ["x"]);
    assert.deepEqual(duplicateKeysAt(text, []), []);
    assert.deepEqual(duplicateKeysAt(text, ["c"]), []);
  });

  test("keys compare after unescaping", () => {
    assert.deepEqual(duplicateKeysAt('{"s": {"net.a": "1", "net\\u002ea": "2"}}', ["s"]), ["net.a"]);
  });

  test("a repeated path key merges its objects, as Go decoding into one map does", () => {
    assert.deepEqual(duplicateKeysAt('{"s": {"k": "1"}, "s": {"k": "2", "j": "3"}}', ["s"]), ["k"]);
  });

  test("strings with brackets and escapes are skipped whole; non-objects have no keys", () => {
    assert.deepEqual(duplicateKeysAt('{"z": "{\\"s\\": [", "s": {"a": "]}\\\\", "b": 1, "a": null}}', ["s"]), ["a"]);
    assert.deepEqual(duplicateKeysAt('{"s": "text"}', ["s"]), []);
    assert.deepEqual(duplicateKeysAt("[1, 2]", ["s"]), []);
    assert.deepEqual(duplicateKeysAt(' {\n\t"s" :\n{ } } ', ["s"]), []);
  });

  test("deep nesting outside the path does not recurse", () => {
    const deep = "[".repeat(20000) + "]".repeat(20000);
    assert.deepEqual(duplicateKeysAt(`{"x": ${deep}, "s": {"a": 1, "a": 2}}`, ["s"]), ["a"]);
  });
});
