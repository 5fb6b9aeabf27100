/**
 * The extension against the real Retrace server (repo .venv) and the deterministic fake model
 * scenario `e2e` (prompt 1: write_file hello.txt, edit_file src/app.py, run_command →
 * generated/out.txt; prompt 2: edit hello.txt). Suites run in order and share the session.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import { METHODS, type AgentIntegrateResult, type Checkpoint, type RestoreResult } from '../../../extension/src/client/protocol';
import { CHECKPOINT_SCHEME, COMMANDS, VIEW_TIMELINE } from '../../../extension/src/constants';
import { checkpointUri } from '../../../extension/src/diff/contentProvider';
import type { ShownNode } from '../../../extension/src/views/models/folderGroups';
import { ScriptedPrompter, api, nextEvent, readText, waitFor, workspaceRoot } from './support';

const ORIGINAL_APP = 'def main():';
const ANNOTATION = '# Touched by the Retrace e2e scenario.\ndef main():';

let a: RetraceApi;
let turnOne: Checkpoint[] = [];

function turnCheckpoints(turnId: string): Checkpoint[] {
    return (a.timeline.timeline?.checkpoints ?? []).filter(c => c.turnId === turnId && c.kind === 'tool');
}

async function runPrompt(text: string): Promise<string> {
    const finished = nextEvent(a, e => e.kind === 'turnFinished');
    const { turnId } = await a.chat.send(text);
    const end = await finished;
    assert.equal(end.kind === 'turnFinished' ? end.stopReason : end.kind, 'end_turn');
    await a.timeline.refresh();
    return turnId;
}

/**
 * The user's click on a timeline row whose command reads the selection: the row selected (asked
 * again when a refresh in between drops the selection), every row rendered again (the click lands
 * before the view re-asks for them), the command run; the query of the diff it opened.
 */
async function clickRow(node: ShownNode, command: string): Promise<string> {
    await waitFor('row selected', async () => {
        await a.timeline.view.reveal(node, { select: true, focus: true });
        return waitFor('row selected', () => a.timeline.view.selection.some(n => n.id === node.id), 3_000).catch(() => false);
    });
    a.timeline.render();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand(command);
    const diffTab = await waitFor('diff tab of the selected row', () => {
        const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
        return tab?.input instanceof vscode.TabInputTextDiff ? tab.input : undefined;
    });
    return diffTab.modified.query;
}

suite('Retrace in the extension host', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
    });

    test('the server runs with the configured interpreter and the status bar says idle', async () => {
        const state = a.ctx.serverState;
        assert.equal(state.kind, 'running');
        assert.ok(state.kind === 'running' && state.interpreter.source === 'setting', 'interpreter from retrace.pythonPath');
        await waitFor('status text', () => a.status.text.includes('Retrace: idle') && a.status.text);
    });

    test("the server holds the folder's one store (not the workbench's storage), and the extension remembers it", async () => {
        const state = await (await a.ctx.ready()).request(METHODS.serverState, {});
        assert.ok(typeof state.storeDir === 'string' && path.isAbsolute(state.storeDir), 'the store is reported');
        assert.ok(fs.existsSync(path.join(state.storeDir, 'store.json')), 'a store lives there');
        assert.ok(state.storeDir.includes(`${path.sep}retrace${path.sep}stores${path.sep}`), `the per-user stores folder: ${state.storeDir}`);
        assert.ok(!state.storeDir.startsWith(path.dirname(a.ctx.legacyStoreDir)), 'not in the workbench storage');
        const known = await waitFor('the store remembered', () => a.ctx.knownStoreDirs[0] === state.storeDir && a.ctx.knownStoreDirs);
        assert.deepEqual(known, [state.storeDir, a.ctx.legacyStoreDir]);
    });

    test('a prompt produces one checkpoint per tool call, carrying editor state', async () => {
        // An open editor with a selection, so the pushed editor state is not empty.
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(workspaceRoot(), 'src/util.py'));
        const editor = await vscode.window.showTextDocument(doc);
        editor.selection = new vscode.Selection(3, 4, 3, 10);
        await a.editorState.push();

        const turnId = await runPrompt('Create hello.txt, annotate app.py and generate a file');
        turnOne = turnCheckpoints(turnId);
        assert.deepEqual(turnOne.map(c => c.tool), ['write_file', 'edit_file', 'run_command']);
        assert.equal(await readText('hello.txt'), 'Hello from Retrace\n');
        assert.ok((await readText('src/app.py'))?.includes(ANNOTATION));
        assert.equal(await readText('generated/out.txt'), 'generated by run_command\n');
        assert.deepEqual(turnOne[2]?.files.map(f => f.path), ['generated/out.txt']);
        // Timeline rows leave editor state out of the wire (payload size): read the checkpoint itself.
        const first = turnOne[0];
        assert.ok(first && a.ctx.rpc);
        const detail = await a.ctx.rpc.request('retrace/checkpoint/get', { id: first.id });
        const state = detail.checkpoint.editorState as { openEditors?: { path?: string; selections?: unknown[] }[] } | null;
        assert.ok(state?.openEditors?.some(e => e.path === 'src/util.py'), `editor state stamped: ${JSON.stringify(state)}`);
        // The chat transcript streamed the turn.
        assert.ok(a.chat.items.some(i => i.kind === 'tool' && i.summary === 'write_file hello.txt' && i.status === 'ok'));
        assert.ok(a.chat.items.some(i => i.kind === 'assistant' && i.text.includes('Done: created hello.txt')));
    });

    test('the content provider returns checkpoint text (and empty before a file existed)', async () => {
        const [write] = turnOne;
        assert.ok(write?.parent);
        const at = await vscode.workspace.openTextDocument(checkpointUri('hello.txt', write.id));
        assert.equal(at.uri.scheme, CHECKPOINT_SCHEME);
        assert.equal(at.getText(), 'Hello from Retrace\n');
        const before = await vscode.workspace.openTextDocument(checkpointUri('hello.txt', write.parent));
        assert.equal(before.getText(), '');
        const appBefore = await vscode.workspace.openTextDocument(checkpointUri('src/app.py', write.parent));
        assert.ok(appBefore.getText().includes(ORIGINAL_APP) && !appBefore.getText().includes('Touched'));
    });

    test('restore code brings the files back; the open editor shows the restored text; undo reapplies', async () => {
        const before = turnOne[0]?.parent;
        assert.ok(before);
        const app = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(workspaceRoot(), 'src/app.py'));
        await vscode.window.showTextDocument(app);
        const prompter = new ScriptedPrompter((_m, buttons) => (buttons.includes('Restore') ? 'Restore' : undefined));
        const restorePrompter = a.setPrompter(prompter);
        try {
            const outcome = (await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, before))?.outcome;
            assert.equal(outcome?.kind, 'applied', JSON.stringify(outcome));
            const confirm = prompter.asked.find(q => q.kind === 'modal');
            assert.ok(confirm, 'asked before overwriting');
            assert.match(confirm.message, /overwritten/);
            assert.match(confirm.detail, /src\/app\.py/);
            assert.equal(await readText('hello.txt'), undefined);
            assert.equal(await readText('generated/out.txt'), undefined);
            assert.ok(!(await readText('src/app.py'))?.includes('Touched'));
            await waitFor('editor shows restored text', () => !app.getText().includes('Touched') && !app.isDirty);

            // Undo = restore the restore checkpoint's parent.
            assert.ok(outcome?.kind === 'applied' && outcome.checkpoint?.parent);
            const undo = (await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.undoRestore, outcome.checkpoint.parent, 'code'))?.outcome;
            assert.equal(undo?.kind, 'applied', JSON.stringify(undo));
            assert.equal(await readText('hello.txt'), 'Hello from Retrace\n');
            assert.ok((await readText('src/app.py'))?.includes(ANNOTATION));
            assert.equal(await readText('generated/out.txt'), 'generated by run_command\n');
        } finally {
            restorePrompter();
        }
    });

    test('a file the user changed is a conflict: skip keeps the user text, merge keeps both, overwrite replaces it', async () => {
        const before = turnOne[0]?.parent;
        assert.ok(before);
        const appUri = vscode.Uri.joinPath(workspaceRoot(), 'src/app.py');
        const doc = await vscode.workspace.openTextDocument(appUri);
        const edit = new vscode.WorkspaceEdit();
        edit.insert(appUri, new vscode.Position(0, 0), '# my own change\n');
        assert.ok(await vscode.workspace.applyEdit(edit));
        assert.ok(await doc.save());

        let prompter = new ScriptedPrompter((_m, buttons) => (buttons.includes('Skip conflicting files') ? 'Skip conflicting files' : undefined));
        let restorePrompter = a.setPrompter(prompter);
        try {
            const skipped = (await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, before))?.outcome;
            const conflictDialog = prompter.asked.find(q => q.kind === 'modal');
            assert.ok(conflictDialog, 'the conflict dialog appeared');
            assert.match(conflictDialog.message, /changed outside the agent/);
            assert.ok(conflictDialog.buttons.includes('Overwrite'));
            assert.ok(skipped === undefined || skipped.kind === 'applied', JSON.stringify(skipped));
            assert.ok((await readText('src/app.py'))?.startsWith('# my own change\n'), 'user text survives skip');
            assert.equal(await readText('hello.txt'), undefined, 'non-conflicting files were restored');
        } finally {
            restorePrompter();
        }

        // "Open 3-way merge" shows merged ↔ current, then "Apply merged text": the user's line stays,
        // the agent's annotation goes.
        prompter = new ScriptedPrompter((_m, buttons) =>
            buttons.includes('Open 3-way merge') ? 'Open 3-way merge' : buttons.includes('Apply merged text') ? 'Apply merged text' : undefined,
        );
        restorePrompter = a.setPrompter(prompter);
        try {
            const merged = (await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, before))?.outcome;
            assert.deepEqual(prompter.asked.filter(q => q.kind === 'modal').length, 2, JSON.stringify(prompter.asked));
            assert.equal(merged?.kind, 'applied', JSON.stringify(merged));
            const text = await readText('src/app.py');
            assert.ok(text?.startsWith('# my own change\n') && !text.includes('Touched'), text);
            const preview = vscode.window.tabGroups.all.flatMap(g => g.tabs).find(t => t.label.includes('current ↔ merged'));
            assert.ok(preview, 'the merge preview was opened');
        } finally {
            restorePrompter();
        }

        prompter = new ScriptedPrompter((_m, buttons) => (buttons.includes('Overwrite') ? 'Overwrite' : buttons.includes('Restore') ? 'Restore' : undefined));
        restorePrompter = a.setPrompter(prompter);
        try {
            const forced = (await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, before))?.outcome;
            assert.equal(forced?.kind, 'applied', JSON.stringify(forced));
            const text = await readText('src/app.py');
            assert.ok(text !== undefined && !text.includes('# my own change') && !text.includes('Touched'), text);
        } finally {
            restorePrompter();
        }
    });

    test('restore conversation shortens the chat history', async () => {
        // Back to the end of turn one (code and conversation), then a second prompt.
        const last = turnOne[turnOne.length - 1];
        assert.ok(last);
        const restorePrompter = a.setPrompter(new ScriptedPrompter((_m, buttons) => (buttons.includes('Overwrite') ? 'Overwrite' : buttons.includes('Restore') ? 'Restore' : undefined)));
        try {
            const both = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreBoth, last.id);
            assert.equal(both?.outcome.kind, 'applied', JSON.stringify(both));
            assert.ok(both.conversationHead, 'the conversation moved too');
            assert.equal(await readText('hello.txt'), 'Hello from Retrace\n');
            const turnTwo = await runPrompt('Update hello.txt');
            assert.deepEqual(turnCheckpoints(turnTwo).map(c => c.tool), ['edit_file']);
            assert.equal(await readText('hello.txt'), 'Hello again from Retrace\n');
            await waitFor('turn two in chat', () => a.chat.items.some(i => i.kind === 'assistant' && i.text.includes('Updated hello.txt')));

            const conv = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreConversation, last.id);
            assert.ok(conv?.conversationHead, JSON.stringify(conv));
            assert.notEqual(conv.outcome.kind, 'failed');
            await waitFor('chat reloaded without turn two', () => !a.chat.items.some(i => i.kind === 'user' && i.text.includes('Update hello.txt')));
            // Code untouched by a conversation-only restore.
            assert.equal(await readText('hello.txt'), 'Hello again from Retrace\n');
        } finally {
            restorePrompter();
        }
    });

    test('a settings change is forwarded without restarting the server', async () => {
        const before = a.ctx.rpc;
        assert.ok(before);
        const config = vscode.workspace.getConfiguration('retrace');
        await config.update('maxTokens', 4096, vscode.ConfigurationTarget.Global);
        try {
            await waitFor('setting visible', () => vscode.workspace.getConfiguration('retrace').get<number>('maxTokens') === 4096);
            // Still the same client, still answering.
            assert.equal(a.ctx.rpc, before);
            await a.timeline.refresh();
            assert.equal(a.ctx.serverState.kind, 'running');
        } finally {
            await config.update('maxTokens', undefined, vscode.ConfigurationTarget.Global);
        }
    });

    test('summarize up to a checkpoint records a summary checkpoint', async () => {
        const last = turnOne[turnOne.length - 1];
        assert.ok(last);
        const summary = await vscode.commands.executeCommand<Checkpoint | undefined>(COMMANDS.summarizeUpTo, last.id);
        assert.equal(summary?.kind, 'summary', JSON.stringify(summary));
        await a.timeline.refresh();
        assert.ok(a.timeline.checkpoint(summary.id), 'the summary appears in the timeline');
    });

    test('inline highlights mark the lines of the last turn', async () => {
        a.highlighter.setScope({ kind: 'since', checkpointId: turnOne[0]?.parent ?? '' });
        await a.highlighter.refresh();
        const hello = a.highlighter.changedLines.get('hello.txt');
        assert.ok(hello && hello.changed.includes(0), JSON.stringify([...a.highlighter.changedLines.keys()]));
        const hover = a.highlighter.provideHover(await vscode.workspace.openTextDocument(vscode.Uri.joinPath(workspaceRoot(), 'hello.txt')), new vscode.Position(0, 0));
        assert.ok(hover, 'hover on a changed line');
        const md = hover.contents[0] as vscode.MarkdownString;
        assert.match(md.value, /Restore this file to before this change/);

        // The hover's link: restore hello.txt to before the checkpoint that last changed it.
        const changedBy = /command:retrace\.restoreFileBefore\?([^)]+)\)/.exec(md.value)?.[1];
        assert.ok(changedBy, md.value);
        const [path, cpId] = JSON.parse(decodeURIComponent(changedBy)) as [string, string];
        assert.equal(path, 'hello.txt');
        const restorePrompter = a.setPrompter(new ScriptedPrompter((_m, buttons) => (buttons.includes('Restore') ? 'Restore' : undefined)));
        try {
            const result = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreFileBefore, path, cpId);
            assert.equal(result?.outcome.kind, 'applied', JSON.stringify(result));
            assert.equal(await readText('hello.txt'), 'Hello from Retrace\n');
            assert.deepEqual(result.outcome.files.map(f => f.path), ['hello.txt'], 'only that file');
        } finally {
            restorePrompter();
        }
    });

    // Last: the diff views load documents for files that later restores delete, and the server
    // currently treats such lingering buffers as unsaved work (see the report).
    test('a click on a row the tree re-rendered since (it does after every tool call) still opens its diff', async () => {
        const edit = turnOne[1];
        assert.ok(edit);
        const find = async (nodes: readonly ShownNode[]): Promise<ShownNode | undefined> => {
            for (const n of nodes) {
                const hit = n.kind === 'checkpoint' && n.checkpoint.id === edit.id ? n : await find(await a.timeline.getChildren(n));
                if (hit !== undefined) return hit;
            }
            return undefined;
        };
        const node = await find(await a.timeline.getChildren());
        assert.ok(node, 'the edit row is in the tree');
        const item = a.timeline.getTreeItem(node);
        assert.equal(item.command?.command, COMMANDS.openDiff);
        // A command with arguments is held by the workbench per rendered item: a re-render drops
        // it, and the click finds "command not found". The row's command reads the selection.
        assert.equal(item.command?.arguments, undefined);
        await vscode.commands.executeCommand(`${VIEW_TIMELINE}.focus`);
        await waitFor('timeline visible', () => a.timeline.view.visible);
        const command = item.command.command;
        // The view follows the restores: the last test's restore selects the head row when its
        // timeline update lands, which on a busy machine can be after the click below selected the
        // edit row. A click whose diff is the head's was overtaken by that follow: clicked again.
        let shown = '';
        for (let attempt = 0; attempt < 3; attempt++) {
            shown = await clickRow(node, command);
            const head = a.timeline.timeline?.head;
            if (shown.includes(`cp=${edit.id}`) || head === undefined || head === null || !shown.includes(`cp=${head}`)) {
                break;
            }
        }
        assert.match(shown, new RegExp(`cp=${edit.id}`));
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });

    test('clicking a checkpoint opens its diff; compare with current opens the multi-file changes view', async () => {
        const edit = turnOne[1];
        assert.ok(edit);
        await vscode.commands.executeCommand(COMMANDS.openDiff, edit.id);
        const diffTab = await waitFor('diff tab', () => {
            const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
            return tab?.input instanceof vscode.TabInputTextDiff ? tab.input : undefined;
        });
        assert.equal(diffTab.original.scheme, CHECKPOINT_SCHEME);
        assert.equal(diffTab.modified.scheme, CHECKPOINT_SCHEME);
        assert.match(diffTab.modified.query, new RegExp(`cp=${edit.id}`));

        const base = turnOne[0]?.parent;
        assert.ok(base);
        await vscode.commands.executeCommand(COMMANDS.compareWithCurrent, base);
        const label = await waitFor('changes tab', () => {
            const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
            return tab?.label.includes('↔ current') ? tab.label : undefined;
        });
        assert.match(label, /Retrace: Starting point ↔ current/);
        // A live changes view stays; after a reload (simulated: this activation forgets what it
        // opened) the restored tab has lost its file list and is closed, not left "No Changed Files".
        const tabs = (): string[] => vscode.window.tabGroups.all.flatMap(g => g.tabs).map(t => t.label);
        // (Earlier tests' restores may have left other changes views; only this one is checked.)
        await a.changeViews.closeStale();
        assert.ok(tabs().includes(label), `a live changes view stays open: ${JSON.stringify(tabs())}`);
        a.changeViews.forget();
        assert.ok((await a.changeViews.closeStale()) >= 1);
        assert.ok(!tabs().includes(label), JSON.stringify(tabs()));
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });

    test('Show Health opens one panel (shown again, not duplicated); a slowest checkpoint is selected in the timeline', async () => {
        const healthTabs = (): vscode.Tab[] =>
            vscode.window.tabGroups.all.flatMap(g => g.tabs).filter(t => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('retrace.health'));
        await vscode.commands.executeCommand(COMMANDS.showHealth);
        await waitFor('the health panel', () => healthTabs().length === 1);
        await vscode.commands.executeCommand('workbench.action.files.newUntitledFile');
        await vscode.commands.executeCommand(COMMANDS.showHealth);
        await waitFor('the health panel active again', () => healthTabs()[0]?.isActive);
        assert.equal(healthTabs().length, 1);
        assert.ok(a.health.isOpen);

        const edit = turnOne[1];
        assert.ok(edit);
        await a.timeline.showCheckpoint(edit.id, edit.sessionId);
        await waitFor('the checkpoint selected', () => a.timeline.view.selection.some(n => n.kind === 'checkpoint' && n.checkpoint.id === edit.id));
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
        await waitFor('the panel closed', () => !a.health.isOpen);
    });

    test('"Checkpoint Claude Code in this workspace" writes its hooks; the stop command takes them out', async () => {
        const prompter = new ScriptedPrompter(() => undefined);
        const restorePrompter = a.setPrompter(prompter);
        try {
            const added = (await vscode.commands.executeCommand(COMMANDS.integrateClaudeCode)) as AgentIntegrateResult | undefined;
            assert.equal(added?.action, 'added');
            const text = await readText('.claude/settings.local.json');
            assert.ok(text?.includes(' -m retrace hook claude-code'), text);
            assert.match(prompter.asked.at(-1)?.message ?? '', /every Claude Code tool call .* checkpoint/);
            const removed = (await vscode.commands.executeCommand(COMMANDS.removeClaudeCode)) as AgentIntegrateResult | undefined;
            assert.equal(removed?.action, 'removed');
            assert.equal(await readText('.claude/settings.local.json'), undefined);
            assert.match(prompter.asked.at(-1)?.message ?? '', /no longer checkpointed/);
        } finally {
            restorePrompter();
        }
    });
});
