/**
 * With an interpreter that cannot run the server (`retrace.pythonPath` points nowhere) the
 * extension still activates, says why the server is down, and commands answer "not running"
 * instead of failing obscurely.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { COMMANDS } from '../../../extension/src/constants';
import { api, waitFor } from './support';

suite('Retrace without a usable interpreter', () => {
    test('the server state says why; status bar and commands follow', async () => {
        const a = await api();
        await assert.rejects(a.ctx.ready(), /nonexistent\/retrace-test\/python.*does not exist/);
        const state = a.ctx.serverState;
        assert.equal(state.kind, 'failed');
        assert.match(state.kind === 'failed' ? state.reason : '', /no Python can run the Retrace server/);
        await waitFor('status bar shows the failure', () => a.status.text.includes('server not running'));
        // A server-backed command resolves without touching a client (the disabled form).
        const result = await vscode.commands.executeCommand(COMMANDS.restoreCode, 'any-id');
        assert.equal(result, undefined);
        assert.equal(a.ctx.rpc, undefined);
        // Chat prompts fail with the same reason rather than hanging.
        await assert.rejects(a.chat.send('hello'), /does not exist/);
    });
});
