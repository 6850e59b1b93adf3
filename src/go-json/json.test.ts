import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  cloneJson,
  compareBytes,
  findJsonSyntaxError,
  goQuote,
  goQuoteList,
  goTypeName,
  isJsonObject,
  JsonSyntaxError,
  jsonEqual,
  jsonKindName,
  marshalJson,
  parseJson,
  quoteJsonString,
} from "./json.js";

/** The message findJsonSyntaxError gives, or null for valid JSON. */
const syntaxError = (text: string): string | null => findJsonSyntaxError(text)?.message ?? null;

describe("Go JSON syntax errors (checklist 0.5)", () => {
  // [input, Go's encoding/json error text]
  const cases: Array<[string, string]> = [
    ["{", "unexpected end of JSON input"],
    ["", "unexpected end of JSON input"],
    ["   ", "unexpected end of JSON input"],
    ["adfadsfasdfasdfasdfasdf", "invalid character 'a' looking for beginning of value"],
    ["{{{", "invalid character '{' looking for beginning of object key string"],
    ["{ cc cc cc}", "invalid character 'c' looking for beginning of object key string"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', "invalid character '\"' after object key:value pair"],
    ["[1 2]", "invalid character '2' after array element"],
    ["[1,]", "invalid character ']' looking for beginning of value"],
    ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
    ["{} {}", "invalid character '{' after top-level value"],
    ["1 2", "invalid character '2' after top-level value"],
    ["01", "invalid character '1' after top-level value"],
    ["[01]", "invalid character '1' after array element"],
    ['"abc', "unexpected end of JSON input"],
    ['"a\tb"', "invalid character '\\t' in string literal"],
    ['"a\u0001b"', "invalid character '\\x01' in string literal"],
    ['"\\q"', "invalid character 'q' in string escape code"],
    ['"\\u12x4"', "invalid character 'x' in \\u hexadecimal character escape"],
    ["-", "unexpected end of JSON input"],
    ["-a", "invalid character 'a' in numeric literal"],
    ["1.", "unexpected end of JSON input"],
    ["1.a", "invalid character 'a' after decimal point in numeric literal"],
    ["1e", "unexpected end of JSON input"],
    ["1ex", "invalid character 'x' in exponent of numeric literal"],
    ["tru", "unexpected end of JSON input"],
    ["trux", "invalid character 'x' in literal true (expecting 'e')"],
    ["nul", "unexpected end of JSON input"],
    ["fals3", "invalid character '3' in literal false (expecting 'e')"],
    ["nulL", "invalid character 'L' in literal null (expecting 'l')"],
    ["'a'", "invalid character '\\'' looking for beginning of value"],
    ["\\", "invalid character '\\\\' looking for beginning of value"],
    ["{'a':1}", "invalid character '\\'' looking for beginning of object key string"],
    ['{"a":1}\u007f', "invalid character '\\x7f' after top-level value"],
    // Go's scanner works on bytes: a non-ASCII character is named by its first UTF-8 byte as Latin-1.
    ["é", "invalid character 'Ã' looking for beginning of value"],
  ];
  for (const [input, expected] of cases) {
    test(`${JSON.stringify(input)} => ${expected}`, () => {
      assert.equal(syntaxError(input), expected);
    });
  }

  test("nesting deeper than 10000 containers is Go's max-depth error, without overflowing the stack", () => {
    assert.equal(syntaxError("[".repeat(10000) + "]".repeat(10000)), null);
    assert.equal(syntaxError("[".repeat(10000)), "unexpected end of JSON input");
    assert.equal(syntaxError("[".repeat(10001) + "]".repeat(10001)), "invalid character '[' exceeded max depth");
    assert.equal(syntaxError('{"a":'.repeat(10000) + "{}" + "}".repeat(10000)), "invalid character '{' exceeded max depth");
    assert.equal(syntaxError("[".repeat(100000)), "invalid character '[' exceeded max depth");
  });

  test("valid documents have no error", () => {
    for (const ok of ["{}", "[]", ' {"a": [1, 2.5e-3, -0, true, false, null, "\\u00e9\\n"]} \n', "0", '"x"', "null"]) {
      assert.equal(syntaxError(ok), null, ok);
    }
  });

  test("parseJson throws a JsonSyntaxError with Go's text and an offset", () => {
    assert.throws(
      () => parseJson("{"),
      (e: unknown) => {
        assert.ok(e instanceof JsonSyntaxError);
        assert.equal(e.message, "unexpected end of JSON input");
        assert.equal(e.offset, 1);
        return true;
      },
    );
    assert.throws(
      () => parseJson("[1,]"),
      (e: unknown) => e instanceof JsonSyntaxError && e.offset === 3,
    );
  });

  test("duplicate keys: the last value wins", () => {
    assert.deepEqual(parseJson('{"a":1,"b":2,"a":3}'), { a: 3, b: 2 });
  });

  test("parseJson accepts bytes and decodes values", () => {
    assert.deepEqual(parseJson(Buffer.from('{"a":[1,"x",null]}')), { a: [1, "x", null] });
    assert.deepEqual(parseJson(new Uint8Array(Buffer.from("[true]"))), [true]);
    assert.equal(parseJson(" 12 "), 12);
  });
});

describe("marshalJson (Go json.Marshal / MarshalIndent)", () => {
  test("map keys are sorted at every level by byte order", () => {
    assert.equal(marshalJson({ b: 1, a: { z: true, B: null, y: [{ d: 1, c: 2 }] } }), '{"a":{"B":null,"y":[{"c":2,"d":1}],"z":true},"b":1}');
    // byte order: upper case before lower case, "a" before "é"
    assert.equal(marshalJson({ é: 1, a: 2, Z: 3, _: 4 }), '{"Z":3,"_":4,"a":2,"é":1}');
  });

  test("sortKeys: false keeps insertion order (Go struct semantics)", () => {
    assert.equal(marshalJson({ b: 1, a: 2 }, { sortKeys: false }), '{"b":1,"a":2}');
  });

  test("HTML characters and line separators are escaped", () => {
    assert.equal(marshalJson("<a href='x'>&</a>"), "\"\\u003ca href='x'\\u003e\\u0026\\u003c/a\\u003e\"");
    assert.equal(marshalJson("\u2028\u2029"), '"\\u2028\\u2029"');
    assert.equal(marshalJson({ "<k>": "&" }), '{"\\u003ck\\u003e":"\\u0026"}');
  });

  test("control characters use Go's escapes", () => {
    assert.equal(marshalJson('\n\r\t"\\'), '"\\n\\r\\t\\"\\\\"');
    assert.equal(marshalJson("\b\f"), '"\\b\\f"');
    assert.equal(marshalJson("\u0000\u0001\u001f\u007f"), '"\\u0000\\u0001\\u001f\u007f"');
    assert.equal(marshalJson("é☃😀"), '"é☃😀"');
    assert.equal(marshalJson("\ud800"), '"\\ufffd"');
  });

  test("undefined members are omitted; undefined array items become null", () => {
    assert.equal(marshalJson({ a: undefined, b: 1 }), '{"b":1}');
    assert.equal(marshalJson([undefined, 1]), "[null,1]");
    assert.equal(marshalJson(undefined), "null");
  });

  test("numbers print as Go prints float64", () => {
    assert.equal(marshalJson([0, -1, 1.5, 1e21, 1e-7, 0.000001, 123456789, 1e20]), "[0,-1,1.5,1e+21,1e-7,0.000001,123456789,100000000000000000000]");
    assert.equal(marshalJson(parseJson("[-0, 1.0, 1e2, 2.50]")), "[-0,1,100,2.5]");
  });

  test("empty containers stay compact even when indenting", () => {
    assert.equal(marshalJson({ a: {}, b: [] }, { indent: "    " }), '{\n    "a": {},\n    "b": []\n}');
  });

  test('MarshalIndent layout: 4 spaces, ": ", no trailing newline', () => {
    const out = marshalJson({ code: 7, list: [1, { x: "y" }] }, { indent: "    " });
    assert.equal(
      out,
      ["{", '    "code": 7,', '    "list": [', "        1,", "        {", '            "x": "y"', "        }", "    ]", "}"].join("\n"),
    );
  });

  test("toJSON() is honoured", () => {
    assert.equal(marshalJson({ v: { toJSON: () => ({ b: 2, a: 1 }) } }), '{"v":{"a":1,"b":2}}');
  });

  test("quoteJsonString matches marshalJson of a string", () => {
    assert.equal(quoteJsonString("a<b"), '"a\\u003cb"');
  });
});

describe("Go %q quoting", () => {
  test("strings", () => {
    assert.equal(goQuote("abc"), '"abc"');
    assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
    assert.equal(goQuote("\n\t\x07\v"), '"\\n\\t\\a\\v"');
    assert.equal(goQuote("\x00\x7f"), '"\\x00\\x7f"');
    assert.equal(goQuote("\u00a0\u0085"), '"\\u00a0\\u0085"');
    assert.equal(goQuote("é☃"), '"é☃"');
    assert.equal(goQuote(""), '""');
  });

  test("string lists print space separated", () => {
    assert.equal(goQuoteList(["1.2.3", "4.3.2"]), '["1.2.3" "4.3.2"]');
    assert.equal(goQuoteList([]), "[]");
  });
});

describe("helpers", () => {
  test("goTypeName gives Go's %T of decoded JSON values", () => {
    assert.equal(goTypeName("x"), "string");
    assert.equal(goTypeName(1), "float64");
    assert.equal(goTypeName(true), "bool");
    assert.equal(goTypeName({}), "map[string]interface {}");
    assert.equal(goTypeName([]), "[]interface {}");
    assert.equal(goTypeName(null), "<nil>");
  });

  test("jsonKindName gives the words of Go's UnmarshalTypeError", () => {
    assert.deepEqual(["x", 1, true, {}, [], null].map(jsonKindName), ["string", "number", "bool", "object", "array", "null"]);
  });

  test("isJsonObject", () => {
    assert.equal(isJsonObject({}), true);
    assert.equal(isJsonObject([]), false);
    assert.equal(isJsonObject(null), false);
    assert.equal(isJsonObject("x"), false);
  });

  test("jsonEqual ignores key order and undefined members", () => {
    assert.equal(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
    assert.equal(jsonEqual({ a: 1, x: undefined }, { a: 1 }), true);
    assert.equal(jsonEqual([1, 2], [2, 1]), false);
    assert.equal(jsonEqual({ a: 1 }, { a: "1" }), false);
    assert.equal(jsonEqual({}, []), false);
    assert.equal(jsonEqual(null, {}), false);
  });

  test("cloneJson is deep", () => {
    const a = { x: [{ y: 1 }] };
    const b = cloneJson(a);
    b.x[0]!.y = 2;
    assert.equal(a.x[0]!.y, 1);
  });

  test("compareBytes sorts by UTF-8 bytes", () => {
    assert.deepEqual(["b", "a", "B", "é", "z"].sort(compareBytes), ["B", "a", "b", "z", "é"]);
    // UTF-16 order would put U+FF5E before U+1F600; UTF-8 byte order does the opposite.
    assert.deepEqual(["😀", "～"].sort(compareBytes), ["～", "😀"]);
  });
});
