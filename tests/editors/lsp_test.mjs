// Drives `kiln lsp` through a whole session with a real JSON-RPC client (vscode-jsonrpc, the
// library VS Code's client is built on) over the process's stdin/stdout: initialize,
// initialized, didOpen, didChange, hover, definition, completion, documentSymbol, shutdown,
// exit. Diagnostics are compared with what `kiln check` prints for the same text. A second
// process gets raw bytes: malformed JSON and an unknown method are answered with errors.
// Usage: node lsp_test.mjs KILN REPO_ROOT
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const kiln = path.resolve(process.argv[2]);
const root = path.resolve(process.argv[3]);
const require = createRequire(path.join(root, "editors", "vscode", "package.json"));
const rpc = require("vscode-jsonrpc/node");

let failures = 0;
function check(ok, what, actual) {
  if (!ok) {
    console.error(`FAIL ${what}${actual === undefined ? "" : `\n  actual: ${JSON.stringify(actual, null, 1)}`}`);
    ++failures;
  } else {
    console.log(`ok   ${what}`);
  }
}

// The protocol position (0-based line, UTF-16 character) of the `nth` `word` on the first line
// containing `lineHas`, plus `offset` characters.
function posOf(text, lineHas, word, { nth = 0, offset = 0 } = {}) {
  const lines = text.split("\n");
  const line = lines.findIndex((l) => l.includes(lineHas));
  if (line < 0) throw new Error(`no line containing ${lineHas}`);
  let at = -1;
  for (let i = 0; i <= nth; ++i) {
    at = lines[line].indexOf(word, at + 1);
    if (at < 0) throw new Error(`no ${word} #${nth} on line ${line + 1}`);
  }
  return { line, character: at + offset };
}

// `kiln check` on `text`: [{line, col, message}] (1-based) of its `file:line:col: error:` lines.
const tmp = mkdtempSync(path.join(os.tmpdir(), "kiln-lsp-test-"));
function kilnCheck(text) {
  const file = path.join(tmp, "check.policy");
  writeFileSync(file, text);
  const r = spawnSync(kiln, ["check", file], { encoding: "utf8" });
  const out = [];
  for (const l of (r.stdout + r.stderr).split("\n")) {
    const m = /^.*check\.policy:(\d+):(\d+): error: (.*)$/.exec(l);
    if (m) out.push({ line: Number(m[1]), col: Number(m[2]), message: m[3] });
  }
  return out;
}

const server = spawn(kiln, ["lsp"], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(server.stdout),
  new rpc.StreamMessageWriter(server.stdin),
);
const diagnostics = [];
let diagnosticWaiter = null;
conn.onNotification("textDocument/publishDiagnostics", (p) => {
  diagnostics.push(p);
  if (diagnosticWaiter) diagnosticWaiter();
});
conn.listen();
async function nextDiagnostics(uri) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const i = diagnostics.findIndex((d) => d.uri === uri);
    if (i >= 0) return diagnostics.splice(i, 1)[0].diagnostics;
    if (Date.now() > deadline) throw new Error(`no diagnostics for ${uri}`);
    await new Promise((resolve) => {
      diagnosticWaiter = resolve;
      setTimeout(resolve, 200);
    });
  }
}
const sameAsCheck = (diags, text, what) => {
  const expected = kilnCheck(text);
  const actual = diags
    .filter((d) => d.severity === 1)
    .map((d) => ({ line: d.range.start.line + 1, col: d.range.start.character + 1, message: d.message }));
  check(expected.length > 0 && JSON.stringify(actual) === JSON.stringify(expected),
        `${what}: diagnostics are kiln check's (${JSON.stringify(expected)})`, actual);
};

const hoverText = async (uri, pos) => {
  const h = await conn.sendRequest("textDocument/hover", { textDocument: { uri }, position: pos });
  return h ? h.contents.value : "";
};
const definition = (uri, pos) =>
  conn.sendRequest("textDocument/definition", { textDocument: { uri }, position: pos });
const labels = async (uri, pos) => {
  const r = await conn.sendRequest("textDocument/completion", { textDocument: { uri }, position: pos });
  return new Map(r.items.map((i) => [i.label, i]));
};

try {
  // ---- initialize
  const init = await conn.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {} });
  const caps = init.capabilities;
  check(caps.hoverProvider && caps.definitionProvider && caps.documentSymbolProvider &&
        caps.completionProvider && caps.textDocumentSync.change === 1, "initialize: capabilities", caps);
  conn.sendNotification("initialized", {});

  // ---- didOpen: a clean shipped policy has no diagnostics
  const binpackPath = path.join(root, "policies", "binpack.policy");
  const binpack = readFileSync(binpackPath, "utf8");
  const uri = pathToFileURL(binpackPath).href;
  conn.sendNotification("textDocument/didOpen",
                        { textDocument: { uri, languageId: "kiln-policy", version: 1, text: binpack } });
  let diags = await nextDiagnostics(uri);
  check(diags.length === 0, "didOpen binpack.policy: no diagnostics", diags);

  // ---- hover
  let h = await hoverText(uri, posOf(binpack, "for r in weighted", "weighted"));
  check(h.includes("(state) weighted: list<Weighted>"), "hover: state and its type", h);
  h = await hoverText(uri, posOf(binpack, "if weight == 0", "weight"));
  check(h.includes("(arg) weight: int") && h.includes("binpack.weight"), "hover: arg, type and conf key", h);
  h = await hoverText(uri, posOf(binpack, "let capacity = node.allocatable", "allocatable", { offset: 2 }));
  check(h.includes("Node.allocatable: Resource"), "hover: view field with its type", h);
  h = await hoverText(uri, posOf(binpack, "let capacity = node.allocatable", "dim"));
  check(h.includes("Resource.dim(int) -> float") && h.split("\n").length > 3, "hover: builtin method with its doc", h);
  h = await hoverText(uri, posOf(binpack, "for name in split(resources", "split"));
  check(/fn split\(.*\) -> list<string>/.test(h) && h.split("\n").length > 3, "hover: builtin with its doc", h);
  h = await hoverText(uri, posOf(binpack, "let used_finally", "request", { offset: 1 }));
  check(h.includes("(let) request: float"), "hover: local and its type", h);
  h = await hoverText(uri, posOf(binpack, "on node_order", "node_order"));
  check(h.includes("on node_order(task: Task, node: Node) -> float"), "hover: handler signature", h);

  // ---- definition
  const defAt = async (pos) => {
    const d = await definition(uri, pos);
    return d ? [d.range.start.line + 1, d.range.start.character + 1] : null;
  };
  const lineCol = (lineHas, word) => {
    const p = posOf(binpack, lineHas, word);
    return [p.line + 1, p.character + 1];
  };
  let d = await defAt(posOf(binpack, "for r in weighted", "weighted"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("state weighted", "weighted")), "definition: state", d);
  d = await defAt(posOf(binpack, "if weight == 0", "weight"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("arg weight:", "weight")), "definition: arg", d);
  d = await defAt(posOf(binpack, "return score * max_node_score", "max_node_score"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("const max_node_score", "max_node_score")), "definition: const", d);
  d = await defAt(posOf(binpack, "if request == 0.0", "request"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("let request =", "request")), "definition: let", d);
  d = await defAt(posOf(binpack, "let capacity = node.allocatable", "node"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("on node_order(", "node:")), "definition: parameter", d);
  h = await hoverText(uri, posOf(binpack, "state weighted: list<Weighted>", "Weighted"));
  check(h.includes("record Weighted {") && h.includes("id: int;"), "hover: a record type lists its fields", h);
  h = await hoverText(uri, posOf(binpack, "on node_order(", "Node"));
  check(h.includes("type Node") && h.includes("`allocatable`"), "hover: a view type lists its fields", h);
  d = await defAt(posOf(binpack, "state weighted: list<Weighted>", "Weighted"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("record Weighted", "Weighted")), "definition: record type", d);
  d = await defAt(posOf(binpack, "let w = r.weight", "weight"));
  check(JSON.stringify(d) === JSON.stringify(lineCol("weight: int = 0;", "weight")), "definition: record field", d);

  // A `fn`, in a second document.
  const litPath = path.join(root, "tests", "editors", "fixtures", "literals.policy");
  const lit = readFileSync(litPath, "utf8");
  const litUri = pathToFileURL(litPath).href;
  conn.sendNotification("textDocument/didOpen",
                        { textDocument: { uri: litUri, languageId: "kiln-policy", version: 1, text: lit } });
  check((await nextDiagnostics(litUri)).length === 0, "didOpen literals.policy: no diagnostics");
  const fnDef = await definition(litUri, posOf(lit, "if roomy(node)", "roomy"));
  const fnDecl = posOf(lit, "fn roomy", "roomy");
  check(fnDef && fnDef.uri === litUri && fnDef.range.start.line === fnDecl.line &&
        fnDef.range.start.character === fnDecl.character, "definition: fn", fnDef);
  h = await hoverText(litUri, posOf(lit, "if roomy(node)", "roomy"));
  check(h.includes("fn roomy(node: Node) -> bool"), "hover: fn signature", h);
  h = await hoverText(litUri, posOf(lit, "return unschedulable", "unschedulable"));
  check(h.includes("unschedulable(string) -> Fit") && h.includes("Unschedulable"), "hover: result builtin and its doc", h);

  // ---- documentSymbol
  const syms = await conn.sendRequest("textDocument/documentSymbol", { textDocument: { uri } });
  const top = syms[0];
  const child = (name) => (top.children ?? []).find((c) => c.name === name);
  check(syms.length === 1 && top.name === "binpack" && top.kind === 2, "documentSymbol: the policy", syms.map((s) => s.name));
  check(child("weight")?.kind === 7 && child("weighted")?.kind === 8 && child("max_node_score")?.kind === 14,
        "documentSymbol: arg, state, const", top.children?.map((c) => [c.name, c.kind]));
  check(child("Weighted")?.kind === 23 && child("Weighted").children.map((c) => c.name).join() === "id,weight",
        "documentSymbol: record and its fields", child("Weighted"));
  check(child("on node_order")?.kind === 24 && child("on session_open")?.kind === 24, "documentSymbol: handlers",
        top.children?.map((c) => c.name));
  const litSyms = await conn.sendRequest("textDocument/documentSymbol", { textDocument: { uri: litUri } });
  check(litSyms[0].children.some((c) => c.name === "roomy" && c.kind === 12 && c.detail === "(node: Node) -> bool"),
        "documentSymbol: fn with its signature", litSyms[0].children);

  // ---- didChange: errors, as kiln check reports them
  let version = 1;
  const change = async (text) => {
    conn.sendNotification("textDocument/didChange",
                          { textDocument: { uri, version: ++version }, contentChanges: [{ text }] });
    return nextDiagnostics(uri);
  };
  // A type error.
  let text = binpack.replace("  var score = 0.0;\n", "  var score = 0.0;\n  let bad: int = \"eight\";\n");
  sameAsCheck(await change(text), text, "didChange with a type error");
  // An unknown view field (with its "did you mean").
  text = binpack.replace("node.allocatable.dim(r.id)", "node.alocatable.dim(r.id)");
  diags = await change(text);
  sameAsCheck(diags, text, "didChange with an unknown field");
  // A cost-budget error: a triple loop over the nodes in node_order.
  text = binpack.replace("  var score = 0.0;\n",
    "  var score = 0.0;\n  for a in session.nodes { for b in session.nodes { for c in session.nodes { score += 1.0; } } }\n");
  diags = await change(text);
  check(diags.some((x) => x.message.includes("over the budget")), "didChange: cost-budget error reported", diags);
  sameAsCheck(diags, text, "didChange with a cost-budget error");
  // Incomplete text: a syntax error, and completion still knows the types.
  text = binpack.replace("  var score = 0.0;\n", "  var score = 0.0;\n  let x = task.\n");
  diags = await change(text);
  sameAsCheck(diags, text, "didChange with a syntax error");

  // ---- completion
  let items = await labels(uri, posOf(text, "let x = task.", "task.", { offset: 5 }));
  check(items.has("resreq") && items.has("priority") && items.get("resreq").detail === "Resource" &&
        !items.has("allocatable"), "completion: Task fields after `task.`", [...items.keys()]);
  text = text.replace("  let x = task.\n", "  let x = node.all\n");
  await change(text);
  items = await labels(uri, posOf(text, "let x = node.all", "node.", { offset: 8 }));
  check(items.has("allocatable") && items.has("idle") && !items.has("resreq"), "completion: Node fields after `node.`",
        [...items.keys()]);
  text = text.replace("  let x = node.all\n", "  let x = task.job.\n");
  await change(text);
  items = await labels(uri, posOf(text, "let x = task.job.", "job.", { offset: 4 }));
  check(items.has("min_available") || items.has("queue"), "completion: Job fields after `task.job.`", [...items.keys()]);
  text = text.replace("  let x = task.job.\n", "  let x = node.allocatable.\n");
  await change(text);
  items = await labels(uri, posOf(text, "let x = node.allocatable.", "allocatable.", { offset: 12 }));
  check(items.has("dim") && items.has("has"), "completion: Resource methods", [...items.keys()]);
  text = binpack + "\non \n";
  await change(text);
  items = await labels(uri, { line: text.split("\n").length - 2, character: 3 });
  check(items.has("node_order") && items.has("job_order") && items.has("predicate") &&
        items.get("node_order").detail === "(Task, Node) -> float" && !items.has("split"),
        "completion: handler names after `on `", [...items.keys()]);
  text = binpack.replace("  var score = 0.0;\n", "  var score = 0.0;\n  let y = sp\n");
  await change(text);
  items = await labels(uri, posOf(text, "let y = sp", "sp", { offset: 2 }));
  check(items.has("split") && items.has("max_node_score") && items.has("weighted") && items.has("request") &&
        items.has("len") && items.has("fits"), "completion: builtins, constants, the policy's names and locals",
        [...items.keys()]);

  // ---- errors, not crashes
  let err = null;
  try {
    await conn.sendRequest("kiln/noSuchMethod", {});
  } catch (e) {
    err = e;
  }
  check(err && err.code === -32601, "an unknown method: MethodNotFound", err?.code);
  err = null;
  try {
    await conn.sendRequest("textDocument/hover", { textDocument: { uri: "file:///nowhere.policy" }, position: { line: 0, character: 0 } });
  } catch (e) {
    err = e;
  }
  check(err && err.code === -32602, "hover on a document not open: InvalidParams", err?.code);
  err = null;
  try {
    await conn.sendRequest("textDocument/hover", { textDocument: { uri }, position: "here" });
  } catch (e) {
    err = e;
  }
  check(err && err.code === -32602, "malformed params: InvalidParams", err?.code);

  // ---- every word of every shipped policy: hover and definition answer (or say null), and
  // completion at every line's end; any error or a dead server fails.
  {
    const policyDir = path.join(root, "policies");
    let words = 0, hovered = 0, defined = 0;
    for (const f of readdirSync(policyDir).filter((f) => f.endsWith(".policy"))) {
      const p = path.join(policyDir, f);
      const text = readFileSync(p, "utf8");
      const u = pathToFileURL(p).href;
      conn.sendNotification("textDocument/didOpen", { textDocument: { uri: u, languageId: "kiln-policy", version: 1, text } });
      const lines = text.split("\n");
      for (let l = 0; l < lines.length; ++l) {
        if (lines[l].trimStart().startsWith("//")) continue;
        for (const m of lines[l].matchAll(/[A-Za-z_]\w*/g)) {
          const position = { line: l, character: m.index };
          if (await conn.sendRequest("textDocument/hover", { textDocument: { uri: u }, position })) ++hovered;
          if (await conn.sendRequest("textDocument/definition", { textDocument: { uri: u }, position })) ++defined;
          ++words;
        }
        await conn.sendRequest("textDocument/completion",
                               { textDocument: { uri: u }, position: { line: l, character: lines[l].length } });
      }
      conn.sendNotification("textDocument/didClose", { textDocument: { uri: u } });
    }
    check(words > 10000 && hovered > words / 2 && defined > words / 4,
          `every word of the shipped policies: ${words} words, ${hovered} hovers, ${defined} definitions`);
  }

  // ---- shutdown, exit
  const down = await conn.sendRequest("shutdown");
  check(down === null, "shutdown: null result", down);
  conn.sendNotification("exit");
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 10000))]);
  check(code === 0, "exit after shutdown: exit code 0", code);
} catch (e) {
  console.error(`FAIL ${e.stack ?? e}`);
  ++failures;
} finally {
  conn.dispose();
  if (server.exitCode === null) server.kill();
}

// ---- raw bytes: malformed JSON, a header without a length, then exit without shutdown
{
  const frame = (s) => `Content-Length: ${Buffer.byteLength(s)}\r\n\r\n${s}`;
  const input =
    frame("{not json") +
    "X-Nothing: 1\r\n\r\n" +
    frame(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "textDocument/hover", params: {} })) +
    frame(JSON.stringify([1, 2])) +
    frame(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "initialize", params: {} })) +
    frame(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "no/such", params: {} })) +
    frame(JSON.stringify({ jsonrpc: "2.0", method: "exit" }));
  const r = spawnSync(kiln, ["lsp"], { input, encoding: "utf8", timeout: 30000 });
  const bodies = r.stdout.split(/Content-Length: \d+\r\n\r\n/).filter(Boolean).map((b) => JSON.parse(b));
  const codeOf = (id) => bodies.find((b) => b.id === id)?.error?.code;
  check(bodies[0]?.error?.code === -32700 && bodies[0].id === null, "raw: malformed JSON: ParseError", bodies[0]);
  check(bodies[1]?.error?.code === -32700, "raw: no Content-Length: ParseError", bodies[1]);
  check(codeOf(1) === -32002, "raw: a request before initialize: ServerNotInitialized", bodies);
  check(bodies.some((b) => b.id === null && b.error?.code === -32600), "raw: a JSON array: InvalidRequest", bodies);
  check(bodies.find((b) => b.id === 2)?.result?.capabilities !== undefined, "raw: then initialize works", bodies);
  check(codeOf(3) === -32601, "raw: unknown method: MethodNotFound", bodies);
  check(r.status === 1, "raw: exit without shutdown: exit code 1", r.status);
}

if (failures) {
  console.error(`${failures} failure(s)`);
  process.exit(1);
}
console.log("ok: kiln lsp session");
