/**
 * A two-folder `.code-workspace` (the sample workspace first, then `api`) against the real server
 * and a scripted model (`multiroot-model.json`): the agent edits in both folders in one turn; the
 * Timeline view shows the first folder as in a one-folder workspace and "Other Folders" groups the
 * other folder's own timeline under its folder; a restore in one folder leaves the other
 * byte-identical, either way round.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import { METHODS } from '../../../extension/src/client/protocol';
import { COMMANDS } from '../../../extension/src/constants';
import type { FolderNode, FolderRowNode } from '../../../extension/src/views/folderTimelineModel';
import { api, nextEvent, waitFor } from './support';

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

function apiNode(): FolderNode | undefined {
    return a.folders.shown.find(f => f.folder.name === 'api');
}

function rowsOf(node: FolderNode | undefined): FolderRowNode[] {
    return (node?.children ?? []).flatMap(s => s.children);
}

suite('a multi-root workspace', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
    });

    test('the agent edits in both folders; each folder keeps its own timeline; restores stay in their folder', async function () {
        this.timeout(180_000);
        const [web, other] = folders();
        // The other folder is opened by the server (its own store and baseline) and shown grouped under its name.
        const baseline = await waitFor('the other folder\'s baseline', async () => {
            await a.folders.refresh();
            return rowsOf(apiNode()).find(r => r.checkpoint.kind === 'baseline');
        });
        await a.timeline.refresh();
        const firstBaseline = (a.timeline.timeline?.checkpoints ?? []).find(c => c.kind === 'baseline');
        assert.ok(firstBaseline, 'the first folder has its baseline');

        const finished = nextEvent(a, e => e.kind === 'turnFinished', 120_000);
        await a.chat.send('Work in both folders, please');
        await finished;
        assert.equal(fs.readFileSync(path.join(other, 'new.go'), 'utf8'), 'package main\n');
        assert.equal(fs.readFileSync(path.join(other, 'main.go'), 'utf8'), 'package server\n');
        assert.equal(fs.readFileSync(path.join(web, 'hello.txt'), 'utf8'), 'Hello from the first folder\n');
        assert.ok(!fs.existsSync(path.join(web, 'api')), '"api/…" named the folder, not a directory of the first');

        // The first folder's timeline: one row per tool call, as in a one-folder workspace.
        await a.timeline.refresh();
        const tools = (a.timeline.timeline?.checkpoints ?? []).filter(c => c.kind === 'tool');
        assert.deepEqual(tools.map(c => c.tool), ['write_file', 'write_file', 'edit_file']);
        // Other Folders: the folder level above the stories, its rows from its own store.
        const apiRows = await waitFor('api\'s rows', async () => {
            await a.folders.refresh();
            const rows = rowsOf(apiNode()).filter(r => r.checkpoint.kind === 'tool');
            return rows.length === 2 && rows;
        });
        assert.deepEqual(apiRows.map(r => r.checkpoint.tool).sort(), ['edit_file', 'write_file']);
        assert.equal(a.folders.shown.length, 1, 'only the other folder is listed there');
        assert.deepEqual(a.folders.getChildren().map(n => n.kind), ['folder']);

        // A row's changes open from that folder's own store.
        const edit = apiRows.find(r => r.checkpoint.tool === 'edit_file');
        assert.ok(edit);
        await vscode.commands.executeCommand(COMMANDS.foldersOpenDiff, edit);
        const diff = await waitFor('the diff of api/main.go', () => {
            const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
            return input instanceof vscode.TabInputTextDiff && input.modified.query.includes('folder=') ? input : undefined;
        });
        assert.equal((await vscode.workspace.openTextDocument(diff.modified)).getText(), 'package server\n');
        assert.equal((await vscode.workspace.openTextDocument(diff.original)).getText(), 'package main\n');
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');

        // A restore in api (its baseline) leaves the first folder byte-identical.
        const webBefore = tree(web);
        await vscode.commands.executeCommand(COMMANDS.foldersRestoreCode, baseline);
        await waitFor('api restored', () => !fs.existsSync(path.join(other, 'new.go')));
        assert.equal(fs.readFileSync(path.join(other, 'main.go'), 'utf8'), 'package main\n');
        assert.deepEqual(tree(web), webBefore);

        // And the other way round: the first folder to its baseline leaves api byte-identical.
        const apiBefore = tree(other);
        const rpc = await a.ctx.ready();
        const restored = await rpc.request(METHODS.checkpointRestore, { id: firstBaseline.id, mode: 'code' });
        assert.equal(restored.outcome.kind, 'applied');
        assert.ok(!fs.existsSync(path.join(web, 'hello.txt')));
        assert.deepEqual(tree(other), apiBefore);
    });
});
