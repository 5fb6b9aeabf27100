/**
 * Localisation ready: a translation is data, never code. Every `%key%` of package.json resolves in
 * package.nls.json; every `l10n.t` message of the extension is in l10n/bundle.l10n.json (the check
 * CI runs, `node scripts/l10n.mjs --check`, fails on a copy with a new string until the bundle is
 * regenerated); and a pseudo-locale bundle changes what the user reads.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { localFolderProblem } from '../../../extension/src/client/localFolder';
import { abandonedLabel } from '../../../extension/src/views/models/timelineFold';
import { retraceNoteText } from '../../../extension/src/views/models/chatModel';

const repo = path.join(__dirname, '../../..');
const SCRIPT = path.join(repo, 'scripts', 'l10n.mjs');

function l10nScript(root: string, ...args: string[]): { status: number | null; stderr: string } {
    const r = spawnSync(process.execPath, [SCRIPT, '--root', root, ...args], { encoding: 'utf8', cwd: repo });
    return { status: r.status, stderr: r.stderr };
}

type Json = Record<string, unknown>;

suite('localisation', function () {
    this.timeout(60_000);
    let tmp: string;

    setup(() => {
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-l10n-'));
        for (const f of ['package.json', 'package.nls.json', 'l10n', 'extension/src']) {
            fs.cpSync(path.join(repo, f), path.join(tmp, f), { recursive: true });
        }
    });
    teardown(() => {
        fs.rmSync(tmp, { recursive: true, force: true });
        (vscode.l10n as unknown as { bundle: Record<string, string> | undefined }).bundle = undefined;
    });

    test('the repository passes the check', () => {
        const r = l10nScript(repo, '--check');
        assert.equal(r.status, 0, r.stderr);
    });

    test('a new l10n.t string fails the check until the bundle is regenerated', () => {
        fs.writeFileSync(path.join(tmp, 'extension/src/added.ts'), "import * as vscode from 'vscode';\nexport const s = vscode.l10n.t('A brand new message {0}', 1);\n");
        const r = l10nScript(tmp, '--check');
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /bundle\.l10n\.json is not what the code says/);
        assert.equal(l10nScript(tmp).status, 0);
        const bundle = JSON.parse(fs.readFileSync(path.join(tmp, 'l10n/bundle.l10n.json'), 'utf8')) as Json;
        assert.equal(bundle['A brand new message {0}'], 'A brand new message {0}');
        assert.equal(l10nScript(tmp, '--check').status, 0);
    });

    test('a message that is not a literal cannot be translated and is refused', () => {
        fs.writeFileSync(path.join(tmp, 'extension/src/added.ts'), "import * as vscode from 'vscode';\nexport const f = (x: string) => vscode.l10n.t(`Hello ${x}`);\n");
        const r = l10nScript(tmp, '--check');
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /added\.ts:2: l10n\.t needs a string literal/);
    });

    test('a manifest string that is not a %key%, or a %key% that names nothing, fails the check', () => {
        const manifest = JSON.parse(fs.readFileSync(path.join(tmp, 'package.json'), 'utf8')) as { contributes: { commands: { title: string }[] } };
        const first = manifest.contributes.commands[0];
        assert.ok(first);
        first.title = 'A literal title';
        fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify(manifest, null, 2));
        let r = l10nScript(tmp, '--check');
        assert.match(r.stderr, /"A literal title" is not a %key%/);
        first.title = '%command.nowhere.title%';
        fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify(manifest, null, 2));
        r = l10nScript(tmp, '--check');
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /names %command\.nowhere\.title%, which package\.nls\.json does not define/);
    });

    test('every %key% in package.json resolves, and every command has a localised title', () => {
        const text = fs.readFileSync(path.join(repo, 'package.json'), 'utf8');
        const nls = JSON.parse(fs.readFileSync(path.join(repo, 'package.nls.json'), 'utf8')) as Json;
        const keys = [...text.matchAll(/"%([^"%]+)%"/g)].map(m => m[1] ?? '');
        assert.ok(keys.length > 150, `${keys.length} keys`);
        assert.deepEqual(keys.filter(k => typeof nls[k] !== 'string'), []);
        const manifest = JSON.parse(text) as { contributes: { commands: { title: string }[] } };
        assert.deepEqual(manifest.contributes.commands.filter(c => !/^%.+%$/.test(c.title)), []);
    });

    test('a pseudo-locale bundle changes what the user reads', () => {
        const bundle = JSON.parse(fs.readFileSync(path.join(repo, 'l10n/bundle.l10n.json'), 'utf8')) as Record<string, string>;
        const pseudo = Object.fromEntries(Object.keys(bundle).map(k => [k, `⟦${k.replace(/[aeiou]/g, c => c.toUpperCase())}⟧`]));
        const uri = { scheme: 'memfs', toString: () => 'memfs:/sample' } as unknown as vscode.Uri;
        const english = localFolderProblem(uri);
        (vscode.l10n as unknown as { bundle: Record<string, string> | undefined }).bundle = pseudo;
        const translated = localFolderProblem(uri);
        assert.ok(english?.startsWith('Retrace needs a folder'), english);
        assert.ok(translated?.startsWith('⟦REtrAcE nEEds A fOldEr'), translated);
        assert.ok(translated !== undefined && translated.includes('memfs:/sample') && translated.includes('"memfs:"'), 'the arguments are filled in');
        // Tree labels and chat lines the client makes follow the same bundle.
        assert.equal(abandonedLabel(['a', 'b']).label, '⟦AbAndOnEd: 2 stEps⟧');
        assert.equal(retraceNoteText('[Retrace note: files changed]'), '⟦REtrAcE tOld thE mOdEl: files changed⟧');
    });
});
