/**
 * With an interpreter that cannot run the server (`retrace.pythonPath` points nowhere, or at a
 * Python whose packages fail the server's import) the extension still activates, says why the
 * server is down, and commands answer "not running" instead of failing obscurely.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
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

suite('Retrace with an interpreter whose packages cannot run the server', () => {
    // The probe before a start reads package metadata only; a dependency at a version the server
    // cannot use shows when the server's import fails. The interpreter here passes the probe (it
    // is the real one) but fails the server's start and its import the way such a Python does.
    test('the failed state names the interpreter and the import error', async function () {
        this.timeout(120_000);
        const a = await api();
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-broken-python-'));
        const python = path.join(dir, 'python');
        const real = path.join(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
        fs.writeFileSync(
            python,
            [
                '#!/bin/sh',
                'case "$*" in',
                '  "-I -m retrace serve"|"-I -c import retrace.lsp.server")',
                '    echo "Traceback (most recent call last):" >&2',
                '    echo "ImportError: cannot import name \'LanguageServer\' from \'pygls.server\'" >&2',
                '    exit 1 ;;',
                'esac',
                `exec "${real}" "$@"`,
            ].join('\n'),
        );
        fs.chmodSync(python, 0o755);
        try {
            await vscode.workspace.getConfiguration('retrace').update('pythonPath', python, vscode.ConfigurationTarget.Global);
            const reason = await waitFor('the failed start explained', () => {
                const state = a.ctx.serverState;
                return state.kind === 'failed' && state.reason.includes(python) ? state.reason : undefined;
            }, 60_000);
            assert.match(reason, /cannot run the Retrace server: ImportError: cannot import name 'LanguageServer'/);
        } finally {
            await vscode.workspace.getConfiguration('retrace').update('pythonPath', undefined, vscode.ConfigurationTarget.Global);
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
