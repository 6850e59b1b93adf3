// What a release artifact carries besides tscni's own code, from what the build was made of: the npm packages Bun
// bundled into the program (its metafile's inputs under node_modules/), the Bun runtime the program was compiled
// into (its npm package and version) and what that runtime embeds (licenses/bun.json, Bun's own account, reviewed
// per Bun version), and the C library the launcher was linked with (none, for the no-libc build). From these,
// scripts/release.mjs writes each artifact's NOTICE (the list, then every licence text it can take from the inputs)
// and its SBOM (SPDX 2.3 JSON). A component the build used that has no notice stops the release: an npm package
// without a licence file, a Bun version the table was not reviewed for, a launcher linked against glibc statically.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { bunVersion, lockedPackage, runtimePackage } from "./bun-runtime.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);

/** The npm packages a Bun metafile's inputs come from: [{name, version, license, dir, licenseFile}], by name. */
export function bundledPackages(root, metafile) {
  const inputs = Object.keys(JSON.parse(readFileSync(metafile, "utf8")).inputs);
  const dirs = new Set();
  for (const input of inputs) {
    // The package is the path up to the last node_modules/<name> (or node_modules/@scope/<name>).
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.replaceAll("\\", "/"));
    if (m) dirs.add(path.resolve(root, m[1]));
  }
  return [...dirs]
    .map((dir) => {
      const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
      const licenseName = readdirSync(dir)
        .sort()
        .find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f));
      if (!licenseName) throw new Error(`${manifest.name} ${manifest.version} is bundled into the program but ships no licence file`);
      if (typeof manifest.license !== "string") throw new Error(`${manifest.name} ${manifest.version} declares no licence in its package.json`);
      return { name: manifest.name, version: manifest.version, license: manifest.license, dir, licenseFile: path.join(dir, licenseName) };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Bun's table of what its runtime embeds, refused when it was reviewed for another Bun than the one installed. */
export function bunComponents(root) {
  const table = JSON.parse(readFileSync(path.join(here, "licenses/bun.json"), "utf8"));
  const installed = bunVersion(root);
  if (table.bun !== installed) {
    throw new Error(
      `scripts/licenses/bun.json lists what Bun ${table.bun} embeds, but Bun ${installed} is installed: ` +
        "review Bun's LICENSE.md for that version and update the table",
    );
  }
  return table;
}

/**
 * Everything one native build embeds: `built` is the directory of its program (tscni-js), with bundle-meta.json and
 * launcher/libc beside it as scripts/link-bins.mjs wrote them; `arch` an entry of ARCHES.
 */
export function nativeComponents(root, built, arch) {
  const libc = readFileSync(path.join(built, "launcher/libc"), "utf8").trim();
  if (libc === "glibc-static") {
    throw new Error(`${built}/tscni was linked statically against glibc: a release ships the no-libc launcher (no glibc notice is made)`);
  }
  const bun = bunComponents(root);
  const name = runtimePackage(arch);
  const locked = lockedPackage(root, name);
  return {
    packages: bundledPackages(root, path.join(built, "bundle-meta.json")),
    bun: { ...bun, package: name, version: locked.version, integrity: locked.integrity },
    launcherLibc: libc,
  };
}

const rule = (title) => `\n${"=".repeat(78)}\n${title}\n${"=".repeat(78)}\n\n`;

const MIT = `Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without limitation the
rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to
permit persons to whom the Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial portions of
the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE
WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
`;

/**
 * The NOTICE of an artifact: `native` is nativeComponents' answer for an artifact holding the native program, or
 * undefined for the main npm package (JavaScript only, its dependencies installed by npm, not bundled).
 */
export function noticeText({ version, artifact, native, dependencies = {} }) {
  let text = `tscni ${version}: ${artifact}\n\nCopyright the tscni contributors. Licensed under the Apache License, Version 2.0: see LICENSE.\n`;
  if (!native) {
    text += "\nThis package holds tscni's own code only; it bundles no third-party code.\n";
    const deps = Object.entries(dependencies);
    if (deps.length) {
      text += "npm installs its dependencies as packages of their own, each with its own licence:\n";
      for (const [name, range] of deps) text += `  - ${name} ${range}\n`;
    }
    return text;
  }
  const { packages, bun, launcherLibc } = native;
  text += `
tscni-js, the native program, is tscni's JavaScript compiled by Bun into a copy of Bun's runtime. Besides
tscni's own code it contains:

1. The Bun runtime ${bun.version} (${bun.package} on npm), ${bun.runtime.license}: ${bun.runtime.url}
   ${bun.runtime.copyright}. Bun embeds (its LICENSE.md):
${bun.components.map((c) => `   - ${c.name}: ${c.license}, ${c.url}`).join("\n")}

2. The npm packages bundled into the program's JavaScript:
${packages.map((p) => `   - ${p.name} ${p.version}: ${p.license}, https://www.npmjs.com/package/${p.name}`).join("\n")}

3. tscni, the launcher: tscni's own code, ${
    launcherLibc === "none" ? "built without a C library: it contains no third-party code" : "linked dynamically against the system's C library"
  }.

JavaScriptCore and WebCore (LGPL-2.0-or-later) and tinycc (LGPL-2.1-or-later) are linked statically into Bun's
runtime. Their source, as Bun uses it, is public: Bun's WebKit fork at https://github.com/oven-sh/WebKit (the commit
named by WEBKIT_VERSION in Bun's scripts/build/deps/webkit.ts of the Bun release above) and Bun at
https://github.com/oven-sh/bun (tag bun-v${bun.version}). To relink with a modified JavaScriptCore, rebuild Bun
from that source with the modified library (Bun's LICENSE.md: \`bun run build:local\`), then rebuild tscni-js with
that Bun: tscni's source is in its npm package and its repository, and \`npm run build\` (scripts/link-bins.mjs)
compiles it. tscni's docs/release.md says how.
`;
  text += rule("Licence texts");
  text += "Apache License 2.0 (tscni, and the Apache-2.0 components above): see LICENSE beside this file.\n";
  for (const p of packages) {
    text += rule(`${p.name} ${p.version} (${p.license}): ${path.basename(p.licenseFile)} of the npm package`);
    text += readFileSync(p.licenseFile, "utf8").trimEnd() + "\n";
  }
  text += rule(`Bun ${bun.version} (MIT)`);
  text += `${bun.runtime.copyright}\n\n${MIT}`;
  text += rule("GNU Library General Public License 2.0 (JavaScriptCore, WebCore)");
  text += readFileSync(path.join(here, "licenses/LGPL-2.0.txt"), "utf8");
  text += rule("GNU Lesser General Public License 2.1 (tinycc)");
  text += readFileSync(path.join(here, "licenses/LGPL-2.1.txt"), "utf8");
  text += rule("Other licences");
  text +=
    "The licences of the other components Bun embeds (BSD, ISC, OpenSSL, zlib, Unicode, IJG, Perl Artistic terms)\n" +
    "are in each component's source at the address given above.\n";
  return text;
}

const spdxId = (s) => `SPDXRef-${s.replace(/[^A-Za-z0-9.-]+/g, "-")}`;
const npmPurl = (name, version) => `pkg:npm/${name.startsWith("@") ? `%40${name.slice(1)}` : name}@${version}`;
const sriHex = (integrity) => {
  const [algorithm, b64] = integrity.split(/-(.*)/s);
  return { algorithm: algorithm.toUpperCase(), checksumValue: Buffer.from(b64, "base64").toString("hex") };
};

/**
 * The SPDX 2.3 document of one artifact: the artifact (its file name and SHA-256), tscni in it, and what nativeComponents
 * found (or, for the main package, the npm dependencies it declares). Deterministic: its namespace is named by the
 * artifact's hash, its time is the release's epoch.
 */
export function spdxDocument({ artifact, sha256, version, epoch, native, dependencies = {} }) {
  const packages = [];
  const relationships = [];
  const artifactId = spdxId(`artifact-${artifact}`);
  const tscniId = spdxId("tscni");
  const add = (pkg, from, type) => {
    packages.push({ filesAnalyzed: false, copyrightText: "NOASSERTION", ...pkg });
    relationships.push({ spdxElementId: from, relationshipType: type, relatedSpdxElement: pkg.SPDXID });
  };
  packages.push({
    SPDXID: artifactId,
    name: artifact,
    versionInfo: version,
    packageFileName: artifact,
    downloadLocation: "NOASSERTION",
    filesAnalyzed: false,
    checksums: [{ algorithm: "SHA256", checksumValue: sha256 }],
    licenseConcluded: "NOASSERTION",
    licenseDeclared: "NOASSERTION",
    copyrightText: "NOASSERTION",
    primaryPackagePurpose: native ? "ARCHIVE" : "LIBRARY",
  });
  relationships.push({ spdxElementId: "SPDXRef-DOCUMENT", relationshipType: "DESCRIBES", relatedSpdxElement: artifactId });
  add(
    {
      SPDXID: tscniId,
      name: "tscni",
      versionInfo: version,
      downloadLocation: "NOASSERTION",
      licenseConcluded: "Apache-2.0",
      licenseDeclared: "Apache-2.0",
      externalRefs: [{ referenceCategory: "PACKAGE-MANAGER", referenceType: "purl", referenceLocator: npmPurl("tscni", version) }],
    },
    artifactId,
    "CONTAINS",
  );
  if (native) {
    const { bun, packages: bundled } = native;
    const bunId = spdxId(`bun-${bun.version}`);
    add(
      {
        SPDXID: bunId,
        name: bun.package,
        versionInfo: bun.version,
        downloadLocation: `https://registry.npmjs.org/${bun.package}/-/${bun.package.split("/")[1]}-${bun.version}.tgz`,
        checksums: [sriHex(bun.integrity)],
        licenseConcluded: "NOASSERTION",
        licenseDeclared: bun.runtime.license,
        comment: "Bun's runtime, into which tscni-js is compiled (bun build --compile)",
        externalRefs: [{ referenceCategory: "PACKAGE-MANAGER", referenceType: "purl", referenceLocator: npmPurl(bun.package, bun.version) }],
      },
      tscniId,
      "CONTAINS",
    );
    for (const c of bun.components) {
      add(
        {
          SPDXID: spdxId(`bun-component-${c.name}`),
          name: c.name,
          downloadLocation: c.url,
          licenseConcluded: "NOASSERTION",
          licenseDeclared: c.license,
        },
        bunId,
        "CONTAINS",
      );
    }
    for (const p of bundled) {
      add(
        {
          SPDXID: spdxId(`npm-${p.name}-${p.version}`),
          name: p.name,
          versionInfo: p.version,
          downloadLocation: "NOASSERTION",
          licenseConcluded: "NOASSERTION",
          licenseDeclared: p.license,
          comment: "bundled into tscni-js's JavaScript",
          externalRefs: [{ referenceCategory: "PACKAGE-MANAGER", referenceType: "purl", referenceLocator: npmPurl(p.name, p.version) }],
        },
        tscniId,
        "CONTAINS",
      );
    }
  } else {
    for (const [name, range] of Object.entries(dependencies)) {
      add(
        {
          SPDXID: spdxId(`npm-${name}`),
          name,
          versionInfo: range,
          downloadLocation: "NOASSERTION",
          licenseConcluded: "NOASSERTION",
          licenseDeclared: "NOASSERTION",
        },
        tscniId,
        "DEPENDS_ON",
      );
    }
  }
  return {
    spdxVersion: "SPDX-2.3",
    dataLicense: "CC0-1.0",
    SPDXID: "SPDXRef-DOCUMENT",
    name: artifact,
    documentNamespace: `https://spdx.org/spdxdocs/tscni/${artifact}-${sha256}`,
    creationInfo: { created: new Date(Number(epoch) * 1000).toISOString().replace(/\.\d+Z$/, "Z"), creators: ["Tool: tscni scripts/release.mjs"] },
    packages,
    relationships,
  };
}

/** A file's SHA-256, hex. */
export const sha256File = (file) => createHash("sha256").update(readFileSync(file)).digest("hex");

/** Whether a directory holds a native build's records (bundle-meta.json and launcher/libc). */
export const hasBuildRecords = (dir) => existsSync(path.join(dir, "bundle-meta.json")) && existsSync(path.join(dir, "launcher/libc"));
