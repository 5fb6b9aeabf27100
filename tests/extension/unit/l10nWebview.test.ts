/**
 * Localisation of what l10n.test.ts does not cover: the webviews (their words come from one table,
 * WEBVIEW_TEXT, the host translates and embeds in the page; `scripts/l10n.mjs --check` refuses a
 * literal word a webview script shows), the timeline's session titles, relative times and filter
 * words, and the server environment's first-run messages. A pseudo-locale bundle changes each.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { SessionStory } from '../../../extension/src/client/protocol';
import { fixIt } from '../../../extension/src/client/serverEnv';
import { webviewHtml } from '../../../extension/src/views/providers/webviewPage';
import { webviewText } from '../../../extension/src/views/models/webviewStrings';
import { filterDescription, relativeTime, sessionTitle } from '../../../extension/src/views/models/timelineModel';
import { chatBanner } from '../../../extension/src/webview/messages';
import { fmt, mergeText, pageText, STRINGS_ELEMENT_ID, stringsJson, WEBVIEW_TEXT } from '../../../extension/src/webview/strings';

const repo = path.join(__dirname, '../../..');
const SCRIPT = path.join(repo, 'scripts', 'l10n.mjs');

function check(root: string, ...args: string[]): { status: number | null; stderr: string } {
    const r = spawnSync(process.execPath, [SCRIPT, '--root', root, ...args], { encoding: 'utf8', cwd: repo });
    return { status: r.status, stderr: r.stderr };
}

function setBundle(bundle: Record<string, string> | undefined): void {
    (vscode.l10n as unknown as { bundle: Record<string, string> | undefined }).bundle = bundle;
}

/** Every message of the committed bundle, "pseudo-translated" (vowels upper-cased, in ⟦…⟧). */
function pseudoBundle(): Record<string, string> {
    const bundle = JSON.parse(fs.readFileSync(path.join(repo, 'l10n/bundle.l10n.json'), 'utf8')) as Record<string, string>;
    return Object.fromEntries(Object.keys(bundle).map(k => [k, `⟦${k.replace(/[aeiou]/g, c => c.toUpperCase())}⟧`]));
}

/** The page's JSON element, as a webview's `document` would give it. */
function pageOf(html: string): { getElementById(id: string): { textContent: string } | null } {
    const m = new RegExp(`<script type="application/json" id="${STRINGS_ELEMENT_ID}">(.*?)</script>`, 's').exec(html);
    return { getElementById: id => (id === STRINGS_ELEMENT_ID && m?.[1] !== undefined ? { textContent: m[1] } : null) };
}

const fakeWebview = { cspSource: 'vscode-resource:', asWebviewUri: (u: unknown) => u } as unknown as vscode.Webview;
const script = { toString: () => 'vscode-resource:/dist/webview/chat.js' } as unknown as vscode.Uri;

suite('localisation: webviews, timeline, first run', function () {
    this.timeout(60_000);
    let tmp: string;

    setup(() => {
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-l10n-web-'));
        for (const f of ['package.json', 'package.nls.json', 'l10n', 'extension/src']) {
            fs.cpSync(path.join(repo, f), path.join(tmp, f), { recursive: true });
        }
    });
    teardown(() => {
        fs.rmSync(tmp, { recursive: true, force: true });
        setBundle(undefined);
    });

    test('a literal word a webview script shows fails the check, one problem per place', () => {
        const planted = [
            "import { el } from './dom';",
            "import { fmt, S } from './strings';",
            'export function planted(node: HTMLElement, n: number, ok: boolean): void {',
            "    node.textContent = 'Hello there';", // 4
            "    node.setAttribute('aria-label', `Close ${n}`);", // 5
            "    node.append(el('span', 'note', ok ? S.retry : 'Try again'));", // 6
            "    node.title = fmt(S.showEarlier, n);", // 7: from the table, fine
            "    node.append(el('span', 'note', S.copy), document.createTextNode('×'));", // 8: no letter, fine
            "    node.innerHTML = '<b>Bold words</b>';", // 9
            "    const choices = [{ label: 'Code only', mode: 'code' }];", // 10
            "    tile('Storage', choices);", // 11
            "    node.className = 'secondary retry';", // 12: a class, fine
            "    node.append(el('p', '', fmt('loading {0}', n)));", // 13
            "    throw new Error('Not a screen word');", // 14: fine
            '}',
            'declare function tile(title: string, x: unknown): void;',
        ];
        fs.writeFileSync(path.join(tmp, 'extension/src/webview/planted.ts'), `${planted.join('\n')}\n`);
        const r = check(tmp, '--check');
        assert.notEqual(r.status, 0);
        const lines = [...r.stderr.matchAll(/webview\/planted\.ts:(\d+): the webview shows the literal/g)].map(m => Number(m[1]));
        assert.deepEqual(lines, [4, 5, 6, 9, 10, 11, 13], r.stderr);
        // The same screen from the table passes.
        fs.writeFileSync(path.join(tmp, 'extension/src/webview/planted.ts'), "import { S } from './strings';\nexport const f = (node: HTMLElement): void => {\n    node.textContent = S.retry;\n};\n");
        const clean = check(tmp, '--check');
        assert.equal(clean.status, 0, clean.stderr);
    });

    test('a literal word in a webview page the host writes fails the check', () => {
        const file = path.join(tmp, 'extension/src/views/providers/chatView.ts');
        fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('${h(text.send)}</button>', 'Send now</button>'));
        const r = check(tmp, '--check');
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /views\/providers\/chatView\.ts:\d+: the webview shows the literal `<div id="banner"/);
    });

    test('a new entry of the strings table is a bundle message (the check fails until it is regenerated)', () => {
        const file = path.join(tmp, 'extension/src/webview/strings.ts');
        fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace("    retry: 'Retry',", "    retry: 'Retry',\n    brandNew: 'A brand new webview word {0}',"));
        assert.match(check(tmp, '--check').stderr, /bundle\.l10n\.json is not what the code says/);
        assert.equal(check(tmp).status, 0);
        const bundle = JSON.parse(fs.readFileSync(path.join(tmp, 'l10n/bundle.l10n.json'), 'utf8')) as Record<string, string>;
        assert.equal(bundle['A brand new webview word {0}'], 'A brand new webview word {0}');
        fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace("    retry: 'Retry',", '    retry: `Re${"try"}`,'));
        assert.match(check(tmp, '--check').stderr, /strings\.ts:\d+: a WEBVIEW_TEXT value must be a string literal/);
    });

    test('a pseudo-locale bundle changes the webview page, its script\'s words and the chat banner', () => {
        const english = webviewText();
        assert.deepEqual(english, WEBVIEW_TEXT);
        setBundle(pseudoBundle());
        const text = webviewText();
        assert.equal(text.retry, '⟦REtry⟧');
        assert.equal(fmt(text.showEarlier, '1,234'), '⟦ShOw EArlIEr mEssAgEs (1,234 mOrE)⟧');
        const html = webviewHtml(fakeWebview, { title: text.chatTitle, text, css: '', body: '<p></p>', script });
        assert.match(html, /<title>⟦REtrAcE ChAt⟧<\/title>/);
        assert.match(html, /<html lang="en">/);
        assert.match(webviewHtml(fakeWebview, { title: '', text, lang: 'pt-br', css: '', body: '', script }), /<html lang="pt-br">/);
        assert.match(webviewHtml(fakeWebview, { title: '', text, lang: 'x"><script>', css: '', body: '', script }), /<html lang="en">/);
        // What the webview's script reads from that page is the translation.
        const read = pageText(pageOf(html));
        assert.equal(read.allow, '⟦AllOw⟧');
        assert.equal(read.storageOverTime, '⟦StOrAgE OvEr tImE⟧');
        assert.equal(chatBanner('noKey', true, text)?.actions[1]?.label, '⟦Try thE DEmO⟧');
        // Without a bundle the English the browser scenarios assert.
        assert.equal(chatBanner('noKey', true)?.actions[1]?.label, 'Try the Demo');
    });

    test('the page\'s words are data: untrusted JSON falls back to English, nothing closes the element', () => {
        assert.deepEqual(pageText(undefined), WEBVIEW_TEXT);
        assert.deepEqual(pageText({ getElementById: () => ({ textContent: '{not json' }) }), WEBVIEW_TEXT);
        assert.deepEqual(pageText({ getElementById: () => null }), WEBVIEW_TEXT);
        const merged = mergeText(JSON.parse('{"retry": "R", "copy": 5, "unknown": "x", "__proto__": "p", "toString": "t"}'));
        assert.equal(merged.retry, 'R');
        assert.equal(merged.copy, 'Copy');
        assert.ok(!('unknown' in merged) && Object.getPrototypeOf(merged) === Object.prototype && typeof merged.toString === 'function');
        const hostile = { ...WEBVIEW_TEXT, retry: '</script><script>alert(1)</script>' };
        const json = stringsJson(hostile);
        assert.ok(!json.includes('<'), json);
        assert.equal(pageText({ getElementById: () => ({ textContent: json }) }).retry, hostile.retry);
        const html = webviewHtml(fakeWebview, { title: '<b>&', text: hostile, css: '', body: '', script });
        assert.match(html, /<title>&lt;b&gt;&amp;<\/title>/);
        assert.equal((html.match(/<\/script>/g) ?? []).length, 2, 'the strings element and the page script, nothing else');
    });

    test('a pseudo-locale bundle changes session titles, relative times and filter words; English is unchanged', () => {
        const story = (createdAt: string | null, agentTitle?: string): SessionStory =>
            ({ session: { id: 's', title: 'x', createdAt, running: false, checkpointCount: 0, ...(agentTitle === undefined ? {} : { agentTitle }) }, workspace: false, items: [] }) as unknown as SessionStory;
        const at = new Date(2026, 4, 3, 9, 7).toISOString();
        const now = Date.parse(at);
        const english = [sessionTitle(story(at)), sessionTitle(story(null)), sessionTitle(story(at, 'Claude Code')), relativeTime(at, now + 60_000), relativeTime(at, now + 5 * 3_600_000)];
        assert.deepEqual(english, ['Session of May 3, 09:07', 'Session', 'Claude Code: session of May 3, 09:07', '1 min ago', '5 h ago']);
        assert.equal(filterDescription({ tool: 'Write', bookmarks: true }), 'Filter: tool Write, bookmarks');
        setBundle(pseudoBundle());
        assert.equal(sessionTitle(story(at)), '⟦SEssIOn Of ⟦MAy⟧ 3, 09:07⟧');
        assert.equal(sessionTitle(story(at, 'Claude Code')), '⟦Claude Code: sEssIOn Of ⟦MAy⟧ 3, 09:07⟧');
        assert.equal(relativeTime(at, now + 10_000), '⟦jUst nOw⟧');
        assert.equal(relativeTime(at, now + 60_000), '⟦1 mIn AgO⟧');
        assert.equal(relativeTime(at, now + 5 * 60_000), '⟦5 mIn AgO⟧');
        assert.equal(filterDescription({ tool: 'Write' }), '⟦FIltEr: ⟦tOOl Write⟧⟧');
    });

    test('a pseudo-locale bundle changes the first-run messages and their buttons', () => {
        const failure = { kind: 'python-too-old', detail: '/usr/bin/python3 is 3.8' } as const;
        assert.equal(fixIt(failure).button, 'Choose interpreter');
        assert.equal(fixIt(failure, vscode.l10n).message, fixIt(failure).message, 'English without a bundle');
        setBundle(pseudoBundle());
        const fix = fixIt(failure, vscode.l10n);
        assert.equal(fix.button, '⟦ChOOsE IntErprEtEr⟧');
        assert.ok(fix.message.startsWith('⟦ThE IntErprEtEr In rEtrAcE.pythOnPAth') && fix.message.includes('/usr/bin/python3 is 3.8'), fix.message);
        assert.equal(fixIt({ kind: 'offline', detail: '' }, vscode.l10n).button, '⟦REtry⟧');
    });
});
