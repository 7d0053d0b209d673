// Tokenizes every shipped policy (policies/*.policy) and the fixtures here with the TextMate
// grammar in editors/vscode/syntaxes, using the engine VS Code itself uses (vscode-textmate +
// vscode-oniguruma, installed by `npm ci` in editors/vscode). Checks:
//   1. every file ends outside any multi-line scope (no string or block comment left open), and
//      no token of a shipped policy is scoped `invalid.*`;
//   2. the golden expectations in grammar_golden.txt: `FILE:LINE: TOKEN -> SCOPE` means the first
//      token on LINE whose text is TOKEN has SCOPE as its innermost scope.
// Usage: node grammar_test.mjs REPO_ROOT
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, "..", ".."));
const ext = path.join(root, "editors", "vscode");
const require = createRequire(path.join(ext, "package.json"));
let vsctm, oniguruma;
try {
  vsctm = require("vscode-textmate");
  oniguruma = require("vscode-oniguruma");
} catch (e) {
  console.error(`grammar_test: ${e.message}\n(run \`npm ci\` in ${ext}; scripts/install-deps does)`);
  process.exit(1);
}

const wasm = readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
await oniguruma.loadWASM(wasm);
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async (scope) => {
    if (scope !== "source.kiln-policy") return null;
    const file = path.join(ext, "syntaxes", "kiln-policy.tmLanguage.json");
    return vsctm.parseRawGrammar(readFileSync(file, "utf8"), file);
  },
});
const grammar = await registry.loadGrammar("source.kiln-policy");

// Each line's tokens: [{text, scopes}], and the rule stack after the last line.
function tokenize(text) {
  const lines = text.split(/\r?\n/);
  let stack = vsctm.INITIAL;
  const out = [];
  for (const line of lines) {
    const r = grammar.tokenizeLine(line, stack);
    out.push(r.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes })));
    stack = r.ruleStack;
  }
  return { lines: out, endStack: stack };
}

let failures = 0;
function fail(msg) {
  console.error(`FAIL ${msg}`);
  ++failures;
}

const files = new Map();
const policyDir = path.join(root, "policies");
const fixtureDir = path.join(root, "tests", "editors", "fixtures");
const shipped = readdirSync(policyDir).filter((f) => f.endsWith(".policy")).sort();
if (shipped.length === 0) fail(`no policies in ${policyDir}`);
for (const f of shipped) files.set(`policies/${f}`, readFileSync(path.join(policyDir, f), "utf8"));
for (const f of readdirSync(fixtureDir).filter((f) => f.endsWith(".policy")).sort())
  files.set(`tests/editors/fixtures/${f}`, readFileSync(path.join(fixtureDir, f), "utf8"));

const tokenized = new Map();
for (const [name, text] of files) {
  const t = tokenize(text);
  tokenized.set(name, t);
  // The INITIAL stack has depth 1; anything deeper is a begin/end rule still open at EOF.
  if (t.endStack.depth !== 1) fail(`${name}: ends inside an open scope (rule stack depth ${t.endStack.depth})`);
  t.lines.forEach((tokens, i) => {
    for (const tok of tokens) {
      const bad = tok.scopes.find((s) => s.startsWith("invalid"));
      if (bad && name.startsWith("policies/")) fail(`${name}:${i + 1}: \`${tok.text}\` scoped ${bad}`);
    }
    // A string must close on its line (the lexer's STRING has no raw newline).
    const last = tokens[tokens.length - 1];
    if (last && last.scopes.some((s) => s.startsWith("string.")) && !/"$/.test(last.text) && tokens.length)
      fail(`${name}:${i + 1}: line ends inside a string: ${JSON.stringify(last.text)}`);
  });
}

// Golden lines.
const golden = readFileSync(path.join(import.meta.dirname, "grammar_golden.txt"), "utf8");
let checked = 0;
golden.split("\n").forEach((raw, gi) => {
  const line = raw.trim();
  if (!line || line.startsWith("#")) return;
  const m = /^(\S+):(\d+): (.+?) -> (\S+)$/.exec(line);
  if (!m) return fail(`grammar_golden.txt:${gi + 1}: cannot read ${JSON.stringify(raw)}`);
  const [, file, lineNo, token, scope] = m;
  const t = tokenized.get(file);
  if (!t) return fail(`grammar_golden.txt:${gi + 1}: unknown file ${file}`);
  const tokens = t.lines[Number(lineNo) - 1];
  if (!tokens) return fail(`grammar_golden.txt:${gi + 1}: ${file} has no line ${lineNo}`);
  const tok = tokens.find((x) => x.text.trim() === token);
  ++checked;
  if (!tok) {
    const actual = tokens.map((x) => `${JSON.stringify(x.text)} ${x.scopes.at(-1)}`).join("\n    ");
    return fail(`${file}:${lineNo}: no token \`${token}\`; the line's tokens:\n    ${actual}`);
  }
  const inner = tok.scopes.at(-1);
  if (inner !== scope) fail(`${file}:${lineNo}: \`${token}\` is ${inner}, expected ${scope}\n    ${line.replace(/-> \S+$/, `-> ${inner}`)}`);
});
if (checked < 20) fail(`only ${checked} golden lines checked`);

if (failures) {
  console.error(`${failures} failure(s)`);
  process.exit(1);
}
console.log(`ok: ${files.size} files tokenized, ${checked} golden tokens`);
