import * as assert from 'node:assert/strict';
import type { RemoteSession, RemoteStatusResult, RemoteSyncView } from '../../../extension/src/client/protocol';
import { parseRemoteSecrets, remoteSecretsFrom } from '../../../extension/src/client/remoteSecrets';
import { pushSummary } from '../../../extension/src/commands/remote';
import { ago, remoteItemView, remoteSessionPicks, remoteSessionRows } from '../../../extension/src/views/models/remoteModel';

const NOW = Date.parse('2026-12-02T12:00:00Z');
const minutesAgo = (m: number): string => new Date(NOW - m * 60_000).toISOString();

function sync(over: Partial<RemoteSyncView>): RemoteSyncView {
    return { state: 'idle', remote: 'origin', progress: null, lastReport: null, lastError: null, at: null, pendingCheckpoints: 0, retryInSeconds: null, ...over };
}

function status(lastPush: string | null, lastError: string | null = null): RemoteStatusResult {
    return {
        configured: true,
        status: { remote: 'origin', url: 's3://b/p', endpoint: null, encrypt: false, lastPush, lastError, pendingCheckpoints: 0, pendingBytes: 0, outbox: 0 },
        sync: sync({}),
    };
}

function session(id: string, over: Partial<RemoteSession> = {}): RemoteSession {
    return {
        sessionId: id,
        storeId: `store-${id}`,
        machine: 'laptop',
        workspaceName: 'shop',
        workspacePath: '/home/me/shop',
        firstAt: minutesAgo(90),
        lastAt: minutesAgo(3),
        bytes: 2048,
        segments: 2,
        generation: 0,
        openedLocally: false,
        ...over,
    };
}

suite('remote sync view models', () => {
    test('ago', () => {
        const cases: [string | null, string | undefined][] = [
            [null, undefined],
            ['not a date', undefined],
            [minutesAgo(0.2), 'just now'],
            [minutesAgo(2), '2 min ago'],
            [minutesAgo(125), '2 h ago'],
            [minutesAgo(60 * 24 * 3), '3 d ago'],
        ];
        for (const [iso, expected] of cases) {
            assert.equal(ago(iso, NOW), expected, String(iso));
        }
    });

    test('the status bar item in each state', () => {
        const progress = { remote: 'origin', phase: 'blobs' as const, done: 3, total: 10, bytesDone: 1024, bytesTotal: 4096 };
        const cases: [RemoteSyncView | undefined, RemoteStatusResult | undefined, string | undefined, boolean][] = [
            [undefined, undefined, undefined, false],
            [sync({ state: 'off' }), undefined, undefined, false],
            [sync({ state: 'pushing', progress }), undefined, '$(cloud-upload) 3/10', false],
            [sync({ state: 'pushing' }), undefined, '$(cloud-upload)', false],
            [sync({ state: 'synced', at: minutesAgo(2) }), undefined, '$(cloud) synced 2 min ago', false],
            [sync({ state: 'synced', at: minutesAgo(9) }), status(minutesAgo(2)), '$(cloud) synced 2 min ago', false],
            [undefined, status(null), '$(cloud) not synced yet', false],
            [sync({ state: 'error', lastError: "remote 'origin' is unreachable: connection refused", retryInSeconds: 20 }), status(minutesAgo(5)), '$(cloud) remote unreachable', false],
            [sync({ state: 'error', lastError: 'access denied: invalid credentials' }), status(null), '$(cloud) remote unreachable', true],
            [sync({ state: 'error', lastError: 'access denied: invalid credentials' }), status(minutesAgo(5)), '$(cloud) remote unreachable', false],
        ];
        for (const [s, st, text, attention] of cases) {
            const view = remoteItemView(s, st, NOW);
            assert.equal(view.text, text, JSON.stringify(s));
            assert.equal(view.attention, attention, JSON.stringify(s));
        }
        const error = remoteItemView(sync({ state: 'error', lastError: 'unreachable: refused', retryInSeconds: 20 }), status(minutesAgo(5)), NOW);
        assert.match(error.tooltip, /unreachable: refused\. Retrying in 20 s\. Last synced 5 min ago\. Your checkpoints are safe locally/);
        assert.match(remoteItemView(sync({ state: 'pushing', progress }), undefined, NOW).tooltip, /blobs \(1\.0 KB of 4\.0 KB\)/);
    });

    test('quick pick: sessions not opened first, with workspace, machine, time and size', () => {
        const picks = remoteSessionPicks([session('a', { openedLocally: true }), session('b', { machine: 'ci-runner', bytes: 3 * 1024 * 1024 })], NOW);
        assert.deepEqual(
            picks.map(p => [p.label, p.description, p.sessionId, p.storeId]),
            [
                ['shop — ci-runner', '3 min ago · 3.0 MB', 'b', 'store-b'],
                ['shop — laptop', '3 min ago · 2.0 KB · opened here', 'a', 'store-a'],
            ],
        );
        assert.match(picks[0]?.detail ?? '', /^b · \/home\/me\/shop · 2 segment\(s\)$/);
    });

    test('timeline rows: only sessions not opened here', () => {
        const rows = remoteSessionRows([session('a', { openedLocally: true }), session('b', { lastAt: null })], NOW);
        assert.deepEqual(rows.map(r => [r.label, r.description, r.session.sessionId]), [['shop on laptop', '2.0 KB', 'b']]);
    });

    test('push summary', () => {
        const base = { remote: 'origin', packs: 1, blobs: 12, segments: 3, bytes: 5000, seconds: 0.4, upToDate: false };
        assert.equal(pushSummary(base), 'Retrace: pushed to origin: 3 journal segment(s), 12 file version(s) in 1 pack(s), 4.9 KB.');
        assert.equal(pushSummary({ ...base, upToDate: true }), 'Retrace: origin is up to date.');
    });

    test('remote credentials: what is stored and read back', () => {
        assert.deepEqual(remoteSecretsFrom({ AWS_ACCESS_KEY_ID: ' AKIA1 ', AWS_SECRET_ACCESS_KEY: 's', AWS_SESSION_TOKEN: '', RETRACE_REMOTE_KEY: '' }), {
            AWS_ACCESS_KEY_ID: 'AKIA1',
            AWS_SECRET_ACCESS_KEY: 's',
        });
        assert.equal(remoteSecretsFrom({ AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: 'x' }), undefined);
        assert.deepEqual(remoteSecretsFrom({ RETRACE_REMOTE_KEY: 'a2V5' }), { RETRACE_REMOTE_KEY: 'a2V5' });
        assert.deepEqual(parseRemoteSecrets(undefined), {});
        assert.deepEqual(parseRemoteSecrets('{not json'), {});
        assert.deepEqual(parseRemoteSecrets(JSON.stringify({ AWS_ACCESS_KEY_ID: 'A', PATH: '/evil', AWS_SECRET_ACCESS_KEY: 5 })), { AWS_ACCESS_KEY_ID: 'A' });
    });
});
