// Starts `kiln lsp` (stdio) for .policy files. The binary is the `kilnPolicy.serverPath`
// setting (default: `kiln` on PATH).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("kilnPolicy").get("serverPath", "kiln");
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "kilnPolicy",
    "Kiln Policy",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "kiln-policy" }] },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
