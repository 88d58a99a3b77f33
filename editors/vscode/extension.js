// The Nx extension: .nx highlighting comes from the grammar and language
// configuration in package.json; this file starts the nxc language server
// (`nxc lsp`, docs/editors.md) for .nx documents and restarts it when its
// settings change. Plain JavaScript, so the extension needs no build step.
"use strict";
const os = require("os");
const path = require("path");
const vscode = require("vscode");
const { LanguageClient, RevealOutputChannelOn } = require("vscode-languageclient/node");

let client;
let starting = Promise.resolve();

// `~` and `${workspaceFolder}` in a setting, as VS Code's own settings allow.
function expand(value, folder) {
  let v = String(value);
  if (v === "~" || v.startsWith("~/")) v = path.join(os.homedir(), v.slice(1));
  if (folder) v = v.split("${workspaceFolder}").join(folder);
  return v;
}

// What to run: `<nxc.path> lsp <nxc.extraArgs...>`, in the first workspace
// folder, so that a relative `-I lib` is that folder's lib/ (as it would be
// for `nxc check -I lib` run there).
function serverCommand() {
  const config = vscode.workspace.getConfiguration("nxc");
  const folders = vscode.workspace.workspaceFolders || [];
  const folder = folders.length > 0 && folders[0].uri.scheme === "file" ? folders[0].uri.fsPath : undefined;
  const command = expand(config.get("path") || "nxc", folder);
  const extra = config.get("extraArgs") || [];
  const args = ["lsp", ...(Array.isArray(extra) ? extra : []).map((a) => expand(a, folder))];
  return { command, args, options: folder ? { cwd: folder } : {} };
}

async function start(context) {
  const server = serverCommand();
  client = new LanguageClient(
    "nxc",
    "nxc",
    { run: server, debug: server },
    {
      documentSelector: [
        { scheme: "file", language: "nx" },
        { scheme: "untitled", language: "nx" },
      ],
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    }
  );
  try {
    await client.start();
  } catch (err) {
    const which = `${server.command} ${server.args.join(" ")}`;
    const pick = await vscode.window.showErrorMessage(
      `Nx: could not start the language server (${which}): ${err && err.message ? err.message : err}. ` +
        "Install nxc, or set \"nxc.path\" to its full path (e.g. the nxc of its venv).",
      "Open settings"
    );
    if (pick) vscode.commands.executeCommand("workbench.action.openSettings", "nxc.path");
    client = undefined;
  }
}

async function stop() {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop();
    } catch (err) {
      // already dead (it never started, or it exited): nothing to stop
    }
  }
}

function restart(context) {
  starting = starting.then(() => stop()).then(() => start(context));
  return starting;
}

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("nxc.restartServer", () => restart(context)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("nxc.path") || e.affectsConfiguration("nxc.extraArgs")) restart(context);
    })
  );
  return restart(context);
}

function deactivate() {
  return starting.then(() => stop());
}

module.exports = { activate, deactivate, serverCommand };
