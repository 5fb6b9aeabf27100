/**
 * Background commands in the extension against the real server and the fake model scenario
 * `e2e` (a first prompt asking for a "background server" starts one; the next prompt is the
 * scenario's prompt 1: write_file, edit_file, run_command): the status bar item lists the running
 * command, and a code restore while it runs asks first; "Stop and Restore" stops it and restores.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import type { RestoreResult } from '../../../extension/src/client/protocol';
import { COMMANDS } from '../../../extension/src/constants';
import { ScriptedPrompter, api, nextEvent, readText, waitFor } from './support';

let a: RetraceApi;

async function runPrompt(text: string): Promise<string> {
    const finished = nextEvent(a, e => e.kind === 'turnFinished');
    const { turnId } = await a.chat.send(text);
    await finished;
    await a.timeline.refresh();
    return turnId;
}

suite('Background commands in the extension host', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        a = await api();
        await a.ctx.ready();
    });

    test('the status bar lists it; a code restore asks first and "Stop and Restore" stops it', async () => {
        const started = nextEvent(a, e => e.kind === 'backgroundTask' && e.task.state === 'running');
        await runPrompt('Start a background server');
        await started;
        const running = await waitFor('background item', () => (a.background.running.length === 1 ? a.background.running : undefined));
        assert.equal(running[0]?.command, 'while true; do sleep 0.2; done');

        const turnId = await runPrompt('Create hello.txt, annotate app.py and generate a file');
        assert.equal(await readText('hello.txt'), 'Hello from Retrace\n');
        const first = (a.timeline.timeline?.checkpoints ?? []).find(c => c.turnId === turnId && c.kind === 'tool');
        assert.ok(first?.parent);

        const prompter = new ScriptedPrompter((_m, buttons) => (buttons.includes('Stop and Restore') ? 'Stop and Restore' : buttons.includes('Restore') ? 'Restore' : undefined));
        const restorePrompter = a.setPrompter(prompter);
        try {
            const result = await vscode.commands.executeCommand<RestoreResult | undefined>(COMMANDS.restoreCode, first.parent);
            const question = prompter.asked.find(q => q.kind === 'modal' && q.message.includes('background task'));
            assert.ok(question, JSON.stringify(prompter.asked));
            assert.equal(question.message, '1 background task is running (while true; do sleep 0.2; done): it may overwrite restored files.');
            assert.equal(result?.outcome.kind, 'applied', JSON.stringify(result?.outcome));
            assert.equal(result.backgroundTasks[0]?.state, 'stopped');
            assert.equal(await readText('hello.txt'), undefined);
            await waitFor('background item empty', () => a.background.running.length === 0);
        } finally {
            restorePrompter();
        }
    });
});
