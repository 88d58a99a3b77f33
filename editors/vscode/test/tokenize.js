#!/usr/bin/env node
// Tokenize .nx files with the extension's TextMate grammar, the way VS Code
// does (vscode-textmate on the Oniguruma WebAssembly build), and print the
// tokens as JSON: {"path": [[start, end, [scope, ...]], ...], ...}.
// Offsets count code points from the start of the file (Python's str
// indices), not UTF-16 units, so tests/test_textmate.py can lay them over
// the Pygments tokens directly.
//
//   node test/tokenize.js [--grammar GRAMMAR.json] FILE.nx ...
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

function usage(msg) {
  process.stderr.write(`tokenize.js: ${msg}\nusage: node test/tokenize.js [--grammar GRAMMAR.json] FILE.nx ...\n`);
  process.exit(2);
}

async function main(argv) {
  let grammarPath = path.join(__dirname, "..", "syntaxes", "nx.tmLanguage.json");
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--grammar") {
      if (i + 1 >= argv.length) usage("--grammar needs a file");
      grammarPath = argv[++i];
    } else files.push(argv[i]);
  }
  if (files.length === 0) usage("no file given");

  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) =>
      scopeName === "source.nx" ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath) : null,
  });
  const grammar = await registry.loadGrammar("source.nx");
  if (!grammar) usage(`no grammar source.nx in ${grammarPath}`);

  const out = {};
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8");
    const tokens = [];
    let stack = vsctm.INITIAL;
    let base = 0; // code points before this line
    // LF, CRLF and a lone CR each end a line (docs/language.md, "Line ends").
    const re = /\r\n|\r|\n/g;
    let start = 0;
    for (;;) {
      const m = re.exec(text);
      const end = m ? m.index : text.length;
      const line = text.slice(start, end);
      // UTF-16 index -> code points before it, within the line.
      const cp = new Array(line.length + 1);
      let n = 0;
      for (let i = 0; i <= line.length; i++) {
        cp[i] = n;
        const c = line.charCodeAt(i);
        if (!(c >= 0xd800 && c <= 0xdbff && i + 1 < line.length)) n++;
      }
      const r = grammar.tokenizeLine(line, stack);
      for (const t of r.tokens) {
        const e = Math.min(t.endIndex, line.length);
        if (e > t.startIndex) tokens.push([base + cp[t.startIndex], base + cp[e], t.scopes]);
      }
      stack = r.ruleStack;
      base += cp[line.length] + (m ? [...m[0]].length : 0);
      if (!m) break;
      start = re.lastIndex;
    }
    out[file] = tokens;
  }
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`tokenize.js: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
