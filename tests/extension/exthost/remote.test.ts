/**
 * Remote sync in the real workbench, against a real S3 server (rclone) that holds a session
 * another machine pushed (`seed_remote.py`): the Remote Sessions view lists it, "Open a remote
 * session…" (its quick pick, accepted like a user would) imports it, and the timeline shows it.
 * The status bar item shows the remote's state.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { RetraceApi } from '../../../extension/src/extension';
import { METHODS, type OpenReport } from '../../../extension/src/client/protocol';
import { remoteSessionPicks } from '../../../extension/src/views/models/remoteModel';
import { COMMANDS } from '../../../extension/src/constants';
import { api, waitFor } from './support';

let a: RetraceApi;
const seeded = process.env['RETRACE_E2E_REMOTE_SESSION'] ?? '';

suite('Remote sessions', () => {
    suiteSetup(async function () {
        this.timeout(120_000);
        assert.notEqual(seeded, '', 'the runner seeds a remote session');
        a = await api();
        await a.ctx.ready();
    });

    test('the Remote Sessions view lists the session another machine pushed', async () => {
        await a.remoteSessions.refresh();
        const row = await waitFor('the seeded session listed', () => a.remoteSessions.sessions.find(r => r.session.sessionId === seeded));
        assert.equal(row.session.workspaceName, 'proj');
        assert.ok(row.session.bytes > 0);
    });

    test('"Open a remote session…" imports the picked session and the timeline shows it', async () => {
        const rpc = await a.ctx.ready();
        const { sessions } = await rpc.request(METHODS.remoteSessions, {});
        const position = remoteSessionPicks(sessions, Date.now()).findIndex(p => p.sessionId === seeded);
        assert.ok(position >= 0, JSON.stringify(sessions));
        let settled = false;
        const opening = Promise.resolve(vscode.commands.executeCommand<OpenReport | undefined>(COMMANDS.remoteOpen)).finally(() => (settled = true));
        // Like a user: move down to the seeded session in the quick pick, then accept it.
        for (let i = 0; i < 50 && !settled; i++) {
            await new Promise(r => setTimeout(r, 300));
            for (let down = 0; down < position; down++) {
                await vscode.commands.executeCommand('workbench.action.quickOpenSelectNext');
            }
            await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
        }
        const report = await opening;
        assert.equal(report?.sessionId, seeded);
        assert.ok((report?.checkpoints ?? 0) >= 3, JSON.stringify(report));
        await waitFor(
            'the session in the timeline',
            async () => {
                const roots = await a.timeline.getChildren();
                return roots.some(r => r.kind === 'session' && r.sessionId === seeded);
            },
            60_000,
        );
        await a.remoteSessions.refresh();
        assert.equal(a.remoteSessions.sessions.find(r => r.session.sessionId === seeded), undefined, 'an opened session leaves the view');
        await waitFor('the status bar item', () => (a.remote.text ?? '').includes('$(cloud'));
    });
});
