/**
 * A two-folder `.code-workspace` (the sample workspace first, then `api`) against the real server
 * and a scripted model (`multiroot-model.json`): the agent edits in both folders in one turn; the
 * ONE Timeline view groups by folder (a node per folder, in workspace order, each holding its own
 * store's rows of that turn); the status bar and the change highlights follow the active editor's
 * folder; every row action works in the row's folder: its diff, a bookmark, and a code restore
 * started from a row under one folder restores that folder and leaves the other byte-identical,
 * either way round, its Undo (the restore notification's) undoing it there. Unsaved typing is a
 * conflict of its own folder's restore only, as the server's dry run says (the client marks none).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import type { Prompter } from '../../../extension/src/ui';
import type { RestoreResult } from '../../../extension/src/client/protocol';
import { COMMANDS } from '../../../extension/src/constants';
import type { FolderGroupNode, ShownNode } from '../../../extension/src/views/models/folderGroups';
import type { CheckpointNode } from '../../../extension/src/views/models/timelineModel';
import { api, nextEvent, ScriptedPrompter, waitFor } from './support';

let a: RetraceApi;

function folders(): [string, string] {
    const all = vscode.workspace.workspaceFolders ?? [];
    assert.equal(all.length, 2, 'a two-folder workspace is open');
    return [all[0]!.uri.fsPath, all[1]!.uri.fsPath];
}

function tree(root: string): Record<string, string> {
    const out: Record<string, string> = {};
    const walk = (dir: string): void => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
            const full = path.join(dir, entry.name);
            if (entry.isDirectory()) {
                walk(full);
            } else if (entry.isFile()) {
                out[path.relative(root, full)] = fs.readFileSync(full).toString('base64');
            }
        }
    };
    walk(root);
    return out;
}

/** The view's top level, as the workbench asks for it. */
async function groups(): Promise<FolderGroupNode[]> {
    const top = await a.timeline.getChildren();
    return top.filter((n): n is FolderGroupNode => n.kind === 'folder');
}

/** Every row under a node, as the workbench would show them once expanded (outlines paged in). */
async function rowsUnder(node: ShownNode): Promise<CheckpointNode[]> {
    if (node.kind === 'session' && node.story.outline) {
        await a.timeline.loadPage(node.sessionId, null, node.folder);
    }
    const children = await a.timeline.getChildren(node);
    const below = await Promise.all(children.map(rowsUnder));
    return [...(node.kind === 'checkpoint' ? [node] : []), ...below.flat()];
}

/** The rows under the folder node of `root`, the view refreshed first. */
async function rowsOfFolder(root: string): Promise<CheckpointNode[]> {
    await a.timeline.refresh();
    const group = (await groups()).find(g => g.folder.root === root);
    return group === undefined ? [] : rowsUnder(group);
}

/** Answers "Restore" in the restore's modal and, once, "Undo restore" on its notification. */
class UndoingPrompter implements Prompter {
    undo = false;
    readonly notes: string[] = [];
    modal(_message: string, _detail: string, buttons: readonly string[]): Promise<string | undefined> {
        return Promise.resolve(buttons.includes('Restore') ? 'Restore' : undefined);
    }
    notify(_severity: 'info' | 'warning' | 'error', message: string, buttons: readonly string[]): Promise<string | undefined> {
        this.notes.push(message);
        if (this.undo && buttons.includes('Undo restore')) {
            this.undo = false;
            return Promise.resolve('Undo restore');
        }
        return Promise.resolve(undefined);
    }
}

suite('a multi-root workspace', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
    });

    test('the agent edits in both folders; the Timeline groups by folder; a row restores its own folder only, and its undo too', async function () {
        this.timeout(240_000);
        const [web, other] = folders();
        // One node per folder, in workspace order, each from its own store (its baseline).
        const apiBaseline = await waitFor("the api folder's baseline in its group", async () => (await rowsOfFolder(other)).find(r => r.checkpoint.kind === 'baseline'));
        const shown = await groups();
        assert.deepEqual(
            shown.map(g => g.folder.root),
            [web, other],
        );
        assert.deepEqual(
            shown.map(g => g.first),
            [true, false],
        );
        assert.equal(apiBaseline.folder, other, 'a row carries its folder');
        const webBaseline = (await rowsOfFolder(web)).find(r => r.checkpoint.kind === 'baseline');
        assert.ok(webBaseline, 'the first folder has its baseline in its group');
        assert.notEqual(webBaseline.checkpoint.id, apiBaseline.checkpoint.id);

        const finished = nextEvent(a, e => e.kind === 'turnFinished', 120_000);
        await a.chat.send('Work in both folders, please');
        await finished;
        assert.equal(fs.readFileSync(path.join(other, 'new.go'), 'utf8'), 'package main\n');
        assert.equal(fs.readFileSync(path.join(other, 'main.go'), 'utf8'), 'package server\n');
        assert.equal(fs.readFileSync(path.join(web, 'hello.txt'), 'utf8'), 'Hello from the first folder\n');
        assert.ok(!fs.existsSync(path.join(web, 'api')), '"api/…" named the folder, not a directory of the first');

        // Each folder's group holds its own rows of that turn: the first one row per tool call
        // (as in a one-folder workspace), api the calls that wrote there, from its own store.
        const webRows = await waitFor("the first folder's rows", async () => {
            const rows = (await rowsOfFolder(web)).filter(r => r.checkpoint.kind === 'tool');
            return rows.length === 3 && rows;
        });
        assert.deepEqual(webRows.map(r => r.checkpoint.tool).sort(), ['edit_file', 'write_file', 'write_file']);
        assert.ok(webRows.every(r => r.folder === web));
        const apiRows = await waitFor("api's rows", async () => {
            const rows = (await rowsOfFolder(other)).filter(r => r.checkpoint.kind === 'tool');
            return rows.length === 2 && rows;
        });
        assert.deepEqual(apiRows.map(r => r.checkpoint.tool).sort(), ['edit_file', 'write_file']);
        assert.ok(apiRows.every(r => r.folder === other));
        assert.equal(new Set([...webRows, ...apiRows].map(r => r.id)).size, 5, 'node ids are unique across folders');

        // The status bar's store figures and the change highlights follow the active editor's folder.
        await vscode.window.showTextDocument(vscode.Uri.file(path.join(other, 'main.go')));
        await waitFor('the highlight of api/main.go', () => a.highlighter.folder === other && a.highlighter.changedLines.has('main.go'));
        assert.ok(!a.highlighter.changedLines.has('hello.txt'), "the first folder's changes are not highlighted in api");
        await waitFor('the status bar on api', () => a.status.text.includes('api: '));
        await vscode.window.showTextDocument(vscode.Uri.file(path.join(web, 'hello.txt')));
        await waitFor('the highlight of hello.txt', () => a.highlighter.folder === undefined && a.highlighter.changedLines.has('hello.txt'));
        assert.ok(!a.highlighter.changedLines.has('main.go'));
        await waitFor('the status bar on the first folder', () => !a.status.text.includes('api: ') && a.status.text.includes(`${path.basename(web)}: `));
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');

        // A row's changes open from that folder's own store (the Timeline's own Open Changes).
        const edit = apiRows.find(r => r.checkpoint.tool === 'edit_file');
        assert.ok(edit);
        await vscode.commands.executeCommand(COMMANDS.openDiff, edit);
        const diff = await waitFor('the diff of api/main.go', () => {
            const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
            return input instanceof vscode.TabInputTextDiff && input.modified.query.includes('folder=') ? input : undefined;
        });
        assert.equal((await vscode.workspace.openTextDocument(diff.modified)).getText(), 'package server\n');
        assert.equal((await vscode.workspace.openTextDocument(diff.original)).getText(), 'package main\n');
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');

        const prompter = new UndoingPrompter();
        const restorePrompter = a.setPrompter(prompter);
        try {
            // Restore Code from a row under the SECOND folder's group (its baseline): api goes
            // back, the first folder stays byte-identical; the notification's Undo undoes it in api.
            const webBefore = tree(web);
            const apiAfterTurn = tree(other);
            prompter.undo = true;
            const restored = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, apiBaseline);
            assert.equal(restored?.outcome.kind, 'applied', JSON.stringify(prompter.notes));
            assert.ok(!fs.existsSync(path.join(other, 'new.go')));
            assert.equal(fs.readFileSync(path.join(other, 'main.go'), 'utf8'), 'package main\n');
            assert.deepEqual(tree(web), webBefore, 'the first folder is untouched');
            await waitFor('the undo of the api restore', () => fs.existsSync(path.join(other, 'new.go')));
            await waitFor('api as after the turn', () => JSON.stringify(tree(other)) === JSON.stringify(apiAfterTurn));
            assert.deepEqual(tree(web), webBefore, 'the undo left the first folder untouched too');

            // And the other way round: a row under the FIRST folder's group (its baseline).
            const apiBefore = tree(other);
            const webAfterTurn = tree(web);
            prompter.undo = true;
            const first = (await rowsOfFolder(web)).find(r => r.checkpoint.id === webBaseline.checkpoint.id);
            assert.ok(first);
            const back = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, first);
            assert.equal(back?.outcome.kind, 'applied', JSON.stringify(prompter.notes));
            assert.ok(!fs.existsSync(path.join(web, 'hello.txt')));
            assert.deepEqual(tree(other), apiBefore, 'api is untouched');
            await waitFor('the undo of the first folder restore', () => fs.existsSync(path.join(web, 'hello.txt')));
            await waitFor('the first folder as after the turn', () => JSON.stringify(tree(web)) === JSON.stringify(webAfterTurn));
            assert.deepEqual(tree(other), apiBefore, 'the undo left api untouched too');
        } finally {
            restorePrompter();
        }

        // A bookmark on a row of api names it in api's store (its row shows the name).
        const named = (await rowsOfFolder(other)).find(r => r.checkpoint.tool === 'write_file');
        assert.ok(named);
        await vscode.commands.executeCommand(COMMANDS.bookmarkCheckpoint, named, 'api ready');
        await waitFor("the bookmark in api's group", async () => (await rowsOfFolder(other)).find(r => r.row.bookmark === 'api ready'));
        assert.equal((await rowsOfFolder(web)).find(r => r.row.bookmark === 'api ready'), undefined, "the first folder's rows are not named");
    });

    test("unsaved typing is a conflict of its own folder's restore only (the server's dry run), and Skip keeps it", async function () {
        this.timeout(180_000);
        const [web, other] = folders();
        const apiBaseline = (await rowsOfFolder(other)).find(r => r.checkpoint.kind === 'baseline');
        const webBaseline = (await rowsOfFolder(web)).find(r => r.checkpoint.kind === 'baseline');
        assert.ok(apiBaseline && webBaseline);
        assert.ok(fs.existsSync(path.join(other, 'new.go')) && fs.existsSync(path.join(web, 'hello.txt')), 'both folders as after the turn');
        const typeIn = async (file: string, text: string): Promise<vscode.TextDocument> => {
            const editor = await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: false });
            assert.ok(await editor.edit(b => b.insert(new vscode.Position(0, 0), text)));
            assert.ok(editor.document.isDirty);
            return editor.document;
        };
        const apiTyped = await typeIn(path.join(other, 'main.go'), '// my unsaved typing\n');
        const webTyped = await typeIn(path.join(web, 'hello.txt'), 'my unsaved note\n');
        const skip = 'Skip conflicting files';
        const prompter = new ScriptedPrompter((_m, buttons) => (buttons.includes(skip) ? skip : undefined));
        const restorePrompter = a.setPrompter(prompter);
        try {
            // api's row: its buffer is the conflict, the first folder's is not this restore's.
            const webBefore = tree(web);
            const mainOnDisk = fs.readFileSync(path.join(other, 'main.go'), 'utf8');
            const restored = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, apiBaseline);
            const dialog = prompter.asked.find(q => q.kind === 'modal');
            assert.ok(dialog, `the conflict dialog: ${JSON.stringify(prompter.asked)}`);
            assert.equal(dialog.message, '1 file with unsaved changes in the editor. Restoring them would overwrite that work.');
            assert.match(dialog.detail, /^main\.go: unsaved changes in the editor/);
            assert.doesNotMatch(dialog.detail, /hello\.txt/);
            assert.equal(restored?.outcome.kind, 'applied', JSON.stringify(restored?.outcome));
            assert.deepEqual(restored.outcome.skipped, ['main.go'], 'the server skipped the unsaved file');
            assert.ok(!fs.existsSync(path.join(other, 'new.go')), 'the rest of api was restored');
            assert.equal(fs.readFileSync(path.join(other, 'main.go'), 'utf8'), mainOnDisk, 'the file under the unsaved buffer is left');
            assert.ok(apiTyped.isDirty && apiTyped.getText().startsWith('// my unsaved typing'), 'the typing is kept');
            assert.deepEqual(tree(web), webBefore, 'the first folder is untouched');

            // The first folder's row: its own buffer is the conflict, api's is not.
            prompter.asked.length = 0;
            const apiBefore = tree(other);
            await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, webBaseline);
            const second = prompter.asked.find(q => q.kind === 'modal');
            assert.ok(second, `the conflict dialog: ${JSON.stringify(prompter.asked)}`);
            assert.match(second.message, /^1 file with unsaved changes in the editor/);
            assert.match(second.detail, /^hello\.txt: unsaved changes in the editor/);
            assert.doesNotMatch(second.detail, /main\.go/);
            assert.ok(fs.existsSync(path.join(web, 'hello.txt')), 'the file under the unsaved buffer is left');
            assert.ok(webTyped.isDirty && webTyped.getText().startsWith('my unsaved note'), 'the typing is kept');
            assert.deepEqual(tree(other), apiBefore, 'api is untouched');

            // A buffer of a file gone from disk: only the editor's dirty flag says it holds typing,
            // and a restore tells the server before its dry run (not after the push's debounce).
            await vscode.window.showTextDocument(apiTyped);
            await vscode.commands.executeCommand('workbench.action.files.revert');
            await waitFor('main.go clean', () => !apiTyped.isDirty);
            await new Promise(resolve => setTimeout(resolve, 1000)); // the clean state reaches the server
            fs.unlinkSync(path.join(other, 'main.go'));
            await new Promise(resolve => setTimeout(resolve, 1000)); // the workbench sees it gone
            const editor = await vscode.window.showTextDocument(apiTyped);
            assert.ok(await editor.edit(b => b.insert(new vscode.Position(0, 0), '// typed into a deleted file\n')));
            prompter.asked.length = 0;
            await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, apiBaseline);
            const third = prompter.asked.find(q => q.kind === 'modal');
            assert.ok(third, `the conflict dialog: ${JSON.stringify(prompter.asked)}`);
            assert.match(third.detail, /^main\.go: unsaved changes in the editor/);
            assert.ok(!fs.existsSync(path.join(other, 'main.go')), 'skipped: the file stays as it is (gone)');
            assert.ok(apiTyped.getText().startsWith('// typed into a deleted file'), 'the typing is kept');
        } finally {
            restorePrompter();
            for (const doc of [apiTyped, webTyped]) {
                await vscode.window.showTextDocument(doc);
                await vscode.commands.executeCommand('workbench.action.files.revert');
            }
            await vscode.commands.executeCommand('workbench.action.closeAllEditors');
        }
    });
});
