/**
 * Where developers work (issue 29): code-server is a remote setup — the workbench is a browser
 * page, the extension host runs on the server beside the files —, so this suite checks that the
 * extension runs in the workspace extension host with its server on the files' machine, that a
 * folder that is not on that disk is refused with a clear sentence, and that `retrace` in VS Code's
 * integrated terminal (the extension's environment collection) lists what the timeline shows,
 * from a subfolder of the workspace.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import { localFolderProblem } from '../../../extension/src/client/localFolder';
import { EXTENSION_ID, api, nextEvent, waitFor, workspaceRoot } from './support';

let a: RetraceApi;

suite('Retrace where developers work', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
    });

    test('the extension runs in the workspace extension host, its server beside the files', () => {
        const ext = vscode.extensions.getExtension(EXTENSION_ID);
        assert.ok(ext);
        assert.deepEqual((ext.packageJSON as { extensionKind?: unknown }).extensionKind, ['workspace']);
        assert.equal(ext.extensionKind, vscode.ExtensionKind.Workspace);
        // The UI is a browser page; this host (and so the server) runs where the folder is.
        assert.equal(vscode.env.uiKind, vscode.UIKind.Web);
        const folder = workspaceRoot();
        assert.equal(folder.scheme, 'file');
        const pid = a.ctx.serverPid;
        assert.ok(pid !== undefined, 'the server runs');
        assert.equal(fs.readlinkSync(`/proc/${pid}/cwd`), fs.realpathSync(folder.fsPath));
    });

    test("the manifest's strings come from package.nls.json (localisable without code changes)", () => {
        const manifest = vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON as { displayName: string; contributes: { commands: { command: string; title: string; category: string }[] } };
        assert.equal(manifest.displayName, 'Retrace');
        const open = manifest.contributes.commands.find(c => c.command === 'retrace.open');
        assert.deepEqual([open?.title, open?.category], ['Open Retrace', 'Retrace']);
        assert.deepEqual(manifest.contributes.commands.filter(c => /%/.test(c.title)), []);
    });

    test('a folder that is not on this disk is refused with a clear sentence', () => {
        assert.equal(localFolderProblem(workspaceRoot()), undefined);
        for (const uri of ['vscode-vfs://github/retrace-dev/retrace', 'memfs:/sample', 'vscode-remote://ssh-remote+box/home/u/p']) {
            const why = localFolderProblem(vscode.Uri.parse(uri));
            assert.ok(why !== undefined, uri);
            assert.match(why, /needs a folder on the disk/);
            assert.ok(why.includes(`"${vscode.Uri.parse(uri).scheme}:"`), why);
        }
    });

    test("`retrace log` in the integrated terminal, from a subfolder, lists the timeline's checkpoints", async function () {
        this.timeout(120_000);
        const finished = nextEvent(a, e => e.kind === 'turnFinished');
        await a.chat.send('Create hello.txt, annotate app.py and generate a file');
        await finished;
        const head = await waitFor('the timeline shows the turn', () => {
            const t = a.timeline.timeline;
            return t !== undefined && t.checkpoints.some(c => c.tool === 'run_command') && t.head !== null ? t : undefined;
        });
        await waitFor('the launcher is written', () => fs.existsSync(a.terminal.launcherPath));

        const out = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-terminal-'));
        const rc = path.join(out, 'rc');
        const terminal = vscode.window.createTerminal({ name: 'Retrace test', cwd: workspaceRoot(), shellPath: '/bin/sh' });
        try {
            terminal.sendText(`cd src && { command -v retrace; retrace log --json; } > '${out}/out.txt' 2> '${out}/err.txt'; echo $? > '${rc}.tmp' && mv '${rc}.tmp' '${rc}'`);
            await waitFor('the command ran', () => fs.existsSync(rc), 60_000);
        } finally {
            terminal.dispose();
        }
        const err = fs.readFileSync(path.join(out, 'err.txt'), 'utf8');
        assert.equal(fs.readFileSync(rc, 'utf8').trim(), '0', err);
        const [which, ...json] = fs.readFileSync(path.join(out, 'out.txt'), 'utf8').split('\n');
        assert.equal(which, a.terminal.launcherPath, 'retrace is the launcher the extension put first on PATH');
        const rows = JSON.parse(json.join('\n')) as { id: string; head: boolean }[];
        assert.deepEqual(
            rows.map(r => r.id),
            head.checkpoints.map(c => c.id),
        );
        assert.equal(rows.find(r => r.head)?.id, head.head);
        fs.rmSync(out, { recursive: true, force: true });
    });

    test("the collection says what it does; switching the setting off takes `retrace` off the terminals' PATH", async () => {
        const collection = await waitFor('the collection is set', () => {
            let found: vscode.EnvironmentVariableMutator | undefined;
            a.terminal.collection.forEach((variable, mutator) => {
                if (variable === 'PATH') {
                    found = mutator;
                }
            });
            return found;
        });
        assert.equal(collection.type, vscode.EnvironmentVariableMutatorType.Prepend);
        const said = a.terminal.collection.description;
        assert.ok((typeof said === 'string' ? said : (said?.value ?? '')).includes('`retrace`'), JSON.stringify(said));
        const config = vscode.workspace.getConfiguration('retrace');
        await config.update('terminal.addToPath', false, vscode.ConfigurationTarget.Global);
        try {
            await waitFor('the collection is cleared', () => a.terminal.collection.get('PATH') === undefined);
        } finally {
            await config.update('terminal.addToPath', undefined, vscode.ConfigurationTarget.Global);
        }
        await waitFor('the collection is back', () => a.terminal.collection.get('PATH') !== undefined);
    });
});
