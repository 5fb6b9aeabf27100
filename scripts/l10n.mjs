// Localisation: the manifest's strings (package.nls.json) and the extension's strings
// (l10n/bundle.l10n.json), kept in step with the code.
//
//   node scripts/l10n.mjs           write l10n/bundle.l10n.json from the code (run after adding a string)
//   node scripts/l10n.mjs --check   fail when the bundle is not what the code says, when a manifest
//                                   string is not a %key% of package.nls.json, or a %key% names nothing
//   node scripts/l10n.mjs --extract-manifest   one-time: move every localisable manifest string into
//                                   package.nls.json as a %key% (idempotent)
//
// The bundle lists every message of `vscode.l10n.t('…', …)` / `l10n.t('…', …)` in extension/src
// (string literals only: a message that is not a literal cannot be translated, and is refused
// here). Keys are the messages themselves, as `@vscode/l10n-dev export` writes them for this form.
// Translators add l10n/bundle.l10n.<locale>.json and package.nls.<locale>.json; no code changes.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// --root DIR: another checkout (the tests check a copy with a string added).
const rootArg = process.argv.indexOf('--root');
const root = rootArg > 0 ? path.resolve(process.argv[rootArg + 1]) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(root, 'extension', 'src');
const BUNDLE = path.join(root, 'l10n', 'bundle.l10n.json');
const MANIFEST = path.join(root, 'package.json');
const NLS = path.join(root, 'package.nls.json');

/** Where a manifest holds text a user reads: [path pattern, key maker]. `*` is any array index or key. */
const MANIFEST_FIELDS = [
  ['displayName', () => 'displayName'],
  ['description', () => 'description'],
  ['capabilities.untrustedWorkspaces.description', () => 'capabilities.untrustedWorkspaces.description'],
  ['contributes.viewsContainers.*.*.title', p => `viewsContainer.${p.node.id}.title`],
  ['contributes.views.*.*.name', p => `view.${p.node.id}.name`],
  ['contributes.views.*.*.contextualTitle', p => `view.${p.node.id}.contextualTitle`],
  ['contributes.commands.*.title', p => `command.${p.node.command}.title`],
  ['contributes.commands.*.shortTitle', p => `command.${p.node.command}.shortTitle`],
  ['contributes.commands.*.category', () => 'command.category'],
  ['contributes.configuration.title', () => 'configuration.title'],
  ['contributes.configuration.properties.*.description', p => `config.${p.key}.description`],
  ['contributes.configuration.properties.*.markdownDescription', p => `config.${p.key}.markdownDescription`],
  ['contributes.configuration.properties.*.deprecationMessage', p => `config.${p.key}.deprecationMessage`],
  ['contributes.configuration.properties.*.enumDescriptions.*', p => `config.${p.key}.enumDescriptions.${p.index}`],
  ['contributes.configuration.properties.*.markdownEnumDescriptions.*', p => `config.${p.key}.markdownEnumDescriptions.${p.index}`],
  ['contributes.viewsWelcome.*.contents', p => `viewsWelcome.${p.index}.contents`],
  ['contributes.walkthroughs.*.title', p => `walkthrough.${p.node.id}.title`],
  ['contributes.walkthroughs.*.description', p => `walkthrough.${p.node.id}.description`],
  ['contributes.walkthroughs.*.steps.*.title', p => `walkthrough.${p.parent.id}.${p.node.id}.title`],
  ['contributes.walkthroughs.*.steps.*.description', p => `walkthrough.${p.parent.id}.${p.node.id}.description`],
];

/** Every [holder, property, key] the fields name in `manifest`. */
export function manifestStrings(manifest) {
  const out = [];
  for (const [pattern, keyOf] of MANIFEST_FIELDS) {
    const parts = pattern.split('.');
    // holder[prop] is the value reached by parts[0..i); ctx: the setting key, index, node, parent.
    const walk = (holder, prop, i, ctx) => {
      const value = holder[prop];
      if (i === parts.length) {
        if (typeof value === 'string') out.push([holder, prop, keyOf({ ...ctx, node: holder })]);
        return;
      }
      if (value === null || typeof value !== 'object') return;
      const node = Array.isArray(value) ? ctx.node : value;
      if (parts[i] !== '*') return walk(value, parts[i], i + 1, { ...ctx, node, parent: parts[i] === 'steps' ? value : ctx.parent });
      for (const k of Object.keys(value)) {
        const next = { ...ctx, index: Array.isArray(value) ? Number(k) : ctx.index };
        if (parts[i - 1] === 'properties') next.key = k.replace(/^retrace\./, '');
        walk(value, k, i + 1, next);
      }
    };
    walk({ root: manifest }, 'root', 0, {});
  }
  return out;
}

/** Every l10n.t message in the extension's sources, with the places that use it; errors for non-literals. */
export function codeMessages(dir = SRC) {
  const messages = new Map();
  const errors = [];
  const files = [];
  const list = d => fs.readdirSync(d, { withFileTypes: true }).forEach(e => (e.isDirectory() ? list(path.join(d, e.name)) : e.name.endsWith('.ts') && files.push(path.join(d, e.name))));
  list(dir);
  for (const file of files.sort()) {
    const text = fs.readFileSync(file, 'utf8');
    if (!text.includes('l10n')) continue; // no message here (parsing every file costs seconds)
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const visit = node => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 't') {
        const target = node.expression.expression;
        const isL10n = (ts.isIdentifier(target) && target.text === 'l10n') || (ts.isPropertyAccessExpression(target) && target.name.text === 'l10n');
        if (isL10n) {
          const first = node.arguments[0];
          const where = `${path.relative(root, file)}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
          if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) {
            messages.set(first.text, [...(messages.get(first.text) ?? []), where]);
          } else if (path.relative(SRC, file) !== TABLE_TRANSLATOR) {
            errors.push(`${where}: l10n.t needs a string literal as its message (use {0} placeholders for values)`);
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  const table = webviewTable(dir);
  errors.push(...table.errors);
  for (const [message, where] of table.messages) messages.set(message, [...(messages.get(message) ?? []), where]);
  return { messages, errors };
}

// The webviews' words: the English table (WEBVIEW_TEXT of webview/strings.ts) is translated by the
// host in one place (TABLE_TRANSLATOR, the only l10n.t call allowed a non-literal), so its values
// are bundle messages; every other webview script shows words only from it.
const TABLE_FILE = path.join('webview', 'strings.ts');
const TABLE_TRANSLATOR = path.join('views', 'models', 'webviewStrings.ts');

/** The values of `export const WEBVIEW_TEXT = { key: 'literal', … }` as [message, where] pairs. */
export function webviewTable(dir = SRC) {
  const file = path.join(dir, TABLE_FILE);
  const messages = [];
  const errors = [];
  if (!fs.existsSync(file)) return { messages, errors };
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const visit = node => {
    if (ts.isVariableDeclaration(node) && node.name.getText(sf) === 'WEBVIEW_TEXT') {
      let init = node.initializer;
      while (init && (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init))) init = init.expression;
      for (const prop of init && ts.isObjectLiteralExpression(init) ? init.properties : []) {
        const where = `${path.relative(root, file)}:${sf.getLineAndCharacterOfPosition(prop.getStart()).line + 1}`;
        const value = ts.isPropertyAssignment(prop) ? prop.initializer : undefined;
        if (value && (ts.isStringLiteral(value) || ts.isNoSubstitutionTemplateLiteral(value))) messages.push([value.text, where]);
        else errors.push(`${where}: a WEBVIEW_TEXT value must be a string literal`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { messages, errors };
}

// Where a webview script puts words on screen. A literal with a letter there is a string no
// translation reaches: it must come from the strings table (`S.key`, `fmt(S.key, …)`).
const TEXT_PROPS = new Set(['textContent', 'innerText', 'title', 'placeholder', 'label', 'ariaLabel', 'alt']);
const TEXT_ATTRS = new Set(['aria-label', 'aria-description', 'title', 'placeholder', 'alt']);
const TEXT_KEYS = new Set(['text', 'label', 'heading', 'title', 'marker', 'notice']);
// Calls whose arguments are never shown (ids, selectors, events, CSS names, keys, patterns).
const QUIET_CALLS = new Set(['t', 'Error', 'TypeError', 'RangeError', 'getElementById', 'querySelector', 'querySelectorAll', 'createElement', 'addEventListener', 'removeEventListener', 'getPropertyValue', 'RegExp', 'postMessage', 'get', 'has', 'set', 'delete', 'add', 'warn', 'log', 'error', 'toLocaleString', 'toLocaleDateString', 'toLocaleTimeString', 'replace', 'split', 'join', 'startsWith', 'endsWith', 'includes', 'test', 'matchAll', 'match']);
const LETTER = /\p{L}/u;

/** The literal text parts of `node` when it is a literal (through ?:, ??, ||, parentheses), else []. */
function literalParts(node) {
  if (!node) return [];
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node)) return literalParts(node.expression);
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return [node.text];
  if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map(s => s.literal.text)];
  if (ts.isConditionalExpression(node)) return [...literalParts(node.whenTrue), ...literalParts(node.whenFalse)];
  // fmt('words {0}', …) is still a literal message (fmt(S.key, …) is not).
  if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'fmt') return literalParts(node.arguments[0]);
  if (ts.isBinaryExpression(node) && [ts.SyntaxKind.QuestionQuestionToken, ts.SyntaxKind.BarBarToken, ts.SyntaxKind.PlusToken].includes(node.operatorToken.kind)) {
    return [...literalParts(node.left), ...literalParts(node.right)];
  }
  return [];
}

const worded = node => literalParts(node).some(t => LETTER.test(t));
const capitalised = node => literalParts(node).some(t => /^\s*[(]?\p{Lu}/u.test(t));
const calleeName = call => (ts.isIdentifier(call.expression) ? call.expression.text : ts.isPropertyAccessExpression(call.expression) ? call.expression.name.text : ts.isNewExpression(call) && ts.isIdentifier(call.expression) ? call.expression.text : '');
// HTML text between tags, or a shown attribute's value, holding a letter outside `${…}`.
const HTML_TEXT = /(?:>[^<>]*\p{L}[^<>]*<|\b(?:title|placeholder|aria-label|alt)="[^"]*\p{L}[^"]*")/u;

function shownLiteral(node) {
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.EqualsToken && ts.isPropertyAccessExpression(node.left)) {
    return TEXT_PROPS.has(node.left.name.text) && worded(node.right) ? node.right : undefined;
  }
  if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name)) return TEXT_KEYS.has(node.name.text) && worded(node.initializer) ? node.initializer : undefined;
  if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
    const name = calleeName(node);
    const args = node.arguments ?? [];
    if (name === 'setAttribute') return TEXT_ATTRS.has(args[0]?.text) && worded(args[1]) ? args[1] : undefined;
    if (name === 'el') return worded(args[2]) ? args[2] : undefined;
    if (name === 'createTextNode') return worded(args[0]) ? args[0] : undefined;
    if (!QUIET_CALLS.has(name)) return args.find(capitalised);
  }
  if ((ts.isTemplateExpression(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isStringLiteral(node)) && literalParts(node).some(t => HTML_TEXT.test(t.replace(/\s+/g, ' ')))) return node;
  return undefined;
}

/** Webview scripts (and the host files that write a webview page) showing a literal word. */
export function webviewProblems(dir = SRC) {
  const files = fs.readdirSync(path.join(dir, 'webview')).filter(f => f.endsWith('.ts')).map(f => path.join(dir, 'webview', f));
  for (const f of fs.readdirSync(path.join(dir, 'views'), { recursive: true })) {
    const file = path.join(dir, 'views', f);
    if (f.endsWith('.ts') && fs.readFileSync(file, 'utf8').includes('webviewHtml(')) files.push(file);
  }
  const problems = [];
  for (const file of files.sort()) {
    if (path.relative(dir, file) === TABLE_FILE) continue;
    const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const seen = new Set();
    const visit = node => {
      const bad = shownLiteral(node);
      if (bad && !seen.has(bad.pos)) {
        seen.add(bad.pos);
        const line = sf.getLineAndCharacterOfPosition(bad.getStart()).line + 1;
        problems.push(`${path.relative(root, file)}:${line}: the webview shows the literal ${bad.getText(sf).slice(0, 60)}; take it from the strings table (webview/strings.ts, S.key)`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return problems;
}

export function bundleText(messages) {
  const sorted = Object.fromEntries([...messages.keys()].sort().map(m => [m, m]));
  return `${JSON.stringify(sorted, null, 2)}\n`;
}

function extractManifest() {
  const manifest = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));
  const nls = fs.existsSync(NLS) ? JSON.parse(fs.readFileSync(NLS, 'utf8')) : {};
  for (const [holder, prop, key] of manifestStrings(manifest)) {
    const value = holder[prop];
    if (/^%[^%]+%$/.test(value)) continue;
    if (key in nls && nls[key] !== value) throw new Error(`two different strings want key ${key}`);
    nls[key] = value;
    holder[prop] = `%${key}%`;
  }
  fs.writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
  fs.writeFileSync(NLS, `${JSON.stringify(nls, null, 2)}\n`);
}

export function manifestProblems(manifest, nls) {
  const problems = [];
  const used = new Set();
  for (const [holder, prop, key] of manifestStrings(manifest)) {
    const value = holder[prop];
    const m = /^%([^%]+)%$/.exec(value);
    if (m === null) problems.push(`package.json ${key}: "${String(value).slice(0, 60)}" is not a %key% of package.nls.json`);
    else if (!(m[1] in nls)) problems.push(`package.json names %${m[1]}%, which package.nls.json does not define`);
    else used.add(m[1]);
  }
  for (const key of Object.keys(nls)) if (!used.has(key)) problems.push(`package.nls.json: ${key} is used nowhere in package.json`);
  if (manifest.l10n !== './l10n') problems.push('package.json: "l10n": "./l10n" is missing');
  return problems;
}

function main(argv) {
  if (argv.includes('--extract-manifest')) return extractManifest(), 0;
  const { messages, errors } = codeMessages();
  const want = bundleText(messages);
  if (!argv.includes('--check')) {
    fs.mkdirSync(path.dirname(BUNDLE), { recursive: true });
    fs.writeFileSync(BUNDLE, want);
    console.log(`l10n: ${messages.size} messages in ${path.relative(root, BUNDLE)}`);
    errors.forEach(e => console.error(e));
    return errors.length === 0 ? 0 : 1;
  }
  const problems = [...errors, ...webviewProblems()];
  const have = fs.existsSync(BUNDLE) ? fs.readFileSync(BUNDLE, 'utf8') : '';
  if (have !== want) problems.push(`${path.relative(root, BUNDLE)} is not what the code says: run node scripts/l10n.mjs and commit it`);
  problems.push(...manifestProblems(JSON.parse(fs.readFileSync(MANIFEST, 'utf8')), JSON.parse(fs.readFileSync(NLS, 'utf8'))));
  problems.forEach(p => console.error(`[l10n] ${p}`));
  return problems.length === 0 ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
