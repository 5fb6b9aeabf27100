/**
 * The File History view against the real server and the fake model scenario `e2e` (prompt 1:
 * write_file hello.txt, edit_file src/app.py, run_command; prompt 2: edit_file hello.txt): the
 * view lists the checkpoints that changed the active file, a click opens that version ↔ the file
 * now, "compare with previous" opens what the checkpoint did, and "restore this file to this
 * version" brings only that file back.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import type { FileVersion, RestoreResult } from '../../../extension/src/client/protocol';
import { CHECKPOINT_SCHEME, COMMANDS } from '../../../extension/src/constants';
import type { FileHistoryNode, VersionNode } from '../../../extension/src/views/models/fileHistoryModel';
import { ScriptedPrompter, api, nextEvent, readText, waitFor, workspaceRoot } from './support';

let a: RetraceApi;

async function runPrompt(text: string): Promise<void> {
    const finished = nextEvent(a, e => e.kind === 'turnFinished');
    await a.chat.send(text);
    await finished;
}

function versionRows(): VersionNode[] {
    return a.fileHistory.getChildren().filter((n: FileHistoryNode): n is VersionNode => n.kind === 'version');
}

async function activeDiff(what: string): Promise<vscode.TabInputTextDiff> {
    return waitFor(what, () => {
        const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
        return tab?.input instanceof vscode.TabInputTextDiff ? tab.input : undefined;
    });
}

suite('File History view', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
        await runPrompt('Create hello.txt, annotate app.py and generate a file');
        await runPrompt('Update hello.txt');
        assert.equal(await readText('hello.txt'), 'Hello again from Retrace\n');
    });

    test('the command focuses the view on the active file and lists its checkpoints, newest first', async () => {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(workspaceRoot(), 'hello.txt'));
        await vscode.window.showTextDocument(doc);
        const versions = await vscode.commands.executeCommand<FileVersion[]>(COMMANDS.fileHistoryShow);
        assert.deepEqual(
            versions.map(v => [v.title, v.change]),
            [
                ['edit_file: hello.txt', 'modified'],
                ['write_file: hello.txt', 'created'],
            ],
        );
        assert.deepEqual(a.fileHistory.target, { path: 'hello.txt', pinned: false });
        await waitFor('view visible', () => a.fileHistory.view.visible);
        const rows = versionRows();
        assert.deepEqual(rows.map(r => r.version.checkpointId), versions.map(v => v.checkpointId));
        const item = a.fileHistory.getTreeItem(rows[0] as VersionNode);
        assert.equal(item.contextValue, 'fileVersionExists');
        assert.equal(item.command?.command, COMMANDS.fileHistoryOpenVersion);
        assert.equal(item.command?.arguments, undefined, 'a click resolves the selected row (re-rendered rows keep working)');
    });

    test('the view follows the active editor unless pinned', async () => {
        const app = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(workspaceRoot(), 'src/app.py'));
        await vscode.window.showTextDocument(app);
        await waitFor('app.py history', () => versionRows()[0]?.path === 'src/app.py' && versionRows());
        assert.deepEqual(versionRows().map(r => r.version.change), ['modified', 'created']);
        await vscode.commands.executeCommand(COMMANDS.fileHistoryTogglePin);
        await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.joinPath(workspaceRoot(), 'hello.txt')));
        assert.deepEqual(a.fileHistory.target, { path: 'src/app.py', pinned: true });
        await vscode.commands.executeCommand(COMMANDS.fileHistoryTogglePin);
        await waitFor('back to hello.txt', () => a.fileHistory.target?.path === 'hello.txt' && versionRows()[0]?.path === 'hello.txt');
    });

    test('clicking a version opens it ↔ the file now; compare with previous opens what it did', async () => {
        const [newest, created] = versionRows();
        assert.ok(newest && created);
        // As a click runs it: no argument, the selected row.
        await a.fileHistory.view.reveal(created, { select: true, focus: false });
        await vscode.commands.executeCommand(COMMANDS.fileHistoryOpenVersion);
        const withCurrent = await activeDiff('version ↔ current');
        assert.equal(withCurrent.original.scheme, CHECKPOINT_SCHEME);
        assert.match(withCurrent.original.query, new RegExp(`cp=${created.version.checkpointId}`));
        assert.equal(withCurrent.modified.scheme, 'file');
        assert.ok(withCurrent.modified.path.endsWith('/hello.txt'));
        const left = await vscode.workspace.openTextDocument(withCurrent.original);
        assert.equal(left.getText(), 'Hello from Retrace\n');
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');

        await vscode.commands.executeCommand(COMMANDS.fileHistoryComparePrevious, newest);
        const previous = await activeDiff('previous ↔ version');
        assert.match(previous.original.query, new RegExp(`cp=${newest.version.parentId ?? 'missing'}`));
        assert.match(previous.modified.query, new RegExp(`cp=${newest.version.checkpointId}`));
        assert.equal((await vscode.workspace.openTextDocument(previous.modified)).getText(), 'Hello again from Retrace\n');
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });

    test('restore this file to this version brings back only that file, and the history shows the restore', async () => {
        const created = versionRows()[1];
        assert.ok(created);
        const appBefore = await readText('src/app.py');
        const prompter = new ScriptedPrompter((_m, buttons) => (buttons.includes('Restore') ? 'Restore' : undefined));
        const restorePrompter = a.setPrompter(prompter);
        try {
            const result = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.fileHistoryRestoreVersion, created);
            assert.equal(result?.outcome.kind, 'applied', JSON.stringify(result?.outcome));
        } finally {
            restorePrompter();
        }
        assert.equal(await readText('hello.txt'), 'Hello from Retrace\n');
        assert.equal(await readText('src/app.py'), appBefore);
        await a.fileHistory.refresh();
        const newest = versionRows()[0];
        assert.equal(newest?.version.kind, 'restore');
        assert.equal(newest?.version.hash, created.version.hash);
    });
});
