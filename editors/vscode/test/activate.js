#!/usr/bin/env node
// Load extension.js outside VS Code, with stand-ins for the `vscode` module
// and vscode-languageclient's LanguageClient, activate it, and print as JSON
// what it asked for: the server it would start (command, args, cwd), the
// documents it would serve, the commands it registered and any error shown.
// tests/test_vscode_package.py runs it.
//
//   NXC_TEST_CONFIG='{"path": "...", "extraArgs": [...]}' NXC_TEST_FOLDER=/ws \
//   NXC_TEST_START_FAILS=1 node test/activate.js
"use strict";
const Module = require("module");
const path = require("path");

const config = JSON.parse(process.env.NXC_TEST_CONFIG || "{}");
const folder = process.env.NXC_TEST_FOLDER;
const report = { clients: [], commands: [], errors: [] };

const vscode = {
  workspace: {
    getConfiguration: (section) => ({ get: (key) => (section === "nxc" ? config[key] : undefined) }),
    workspaceFolders: folder ? [{ uri: { scheme: "file", fsPath: folder } }] : undefined,
    onDidChangeConfiguration: () => ({ dispose() {} }),
  },
  window: {
    showErrorMessage: async (msg) => {
      report.errors.push(msg);
      return undefined;
    },
  },
  commands: {
    registerCommand: (name) => {
      report.commands.push(name);
      return { dispose() {} };
    },
    executeCommand: async () => undefined,
  },
};

class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    report.clients.push({ id, name, server: serverOptions.run, documentSelector: clientOptions.documentSelector });
  }
  async start() {
    if (process.env.NXC_TEST_START_FAILS) throw new Error("spawn nxc ENOENT");
  }
  async stop() {}
}

const realLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === "vscode") return vscode;
  if (request === "vscode-languageclient/node") return { LanguageClient, RevealOutputChannelOn: { Never: 4 } };
  return realLoad.call(this, request, parent, isMain);
};

const ext = require(path.join(__dirname, "..", "extension.js"));
Promise.resolve(ext.activate({ subscriptions: [] }))
  .then(() => ext.deactivate())
  .then(() => process.stdout.write(JSON.stringify(report)))
  .catch((err) => {
    process.stderr.write(`activate.js: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  });
