/**
 * A request never outlives its server: when the supervisor closes an Rpc (the process died or was
 * stopped), every request still waiting on it fails at once, and later ones fail immediately. A
 * dead connection is not trusted to reject them itself (its dispose can time out first).
 */
import * as assert from 'node:assert/strict';
import type { LanguageClient } from 'vscode-languageclient/node';
import { METHODS, Rpc } from '../../../extension/src/client/protocol';

/** A client whose requests are answered only when the test says so (or never). */
function fakeClient(): { client: LanguageClient; answer: (value: unknown) => void; sent: string[] } {
    const sent: string[] = [];
    let answer: (value: unknown) => void = () => undefined;
    const client = {
        sendRequest: (method: string) => {
            sent.push(method);
            return new Promise(resolve => {
                answer = resolve;
            });
        },
    } as unknown as LanguageClient;
    return { client, answer: v => answer(v), sent };
}

suite('rpc', () => {
    test('a request that its dead server never answers fails when the rpc is closed', async () => {
        const { client } = fakeClient();
        const rpc = new Rpc(client);
        const pending = rpc.request(METHODS.serverState, {});
        rpc.close('the Retrace server stopped');
        await assert.rejects(pending, /the Retrace server stopped/);
    });

    test('after close, requests fail at once and are not sent', async () => {
        const { client, sent } = fakeClient();
        const rpc = new Rpc(client);
        rpc.close('gone');
        await assert.rejects(rpc.request(METHODS.serverState, {}), /gone/);
        assert.deepEqual(sent, []);
    });

    test('answered requests resolve as before, and closing later does not disturb them', async () => {
        const { client, answer } = fakeClient();
        const rpc = new Rpc(client);
        const pending = rpc.request(METHODS.serverState, {});
        answer({ modelMode: 'demo', trusted: true });
        assert.deepEqual(await pending, { modelMode: 'demo', trusted: true });
        rpc.close('gone');
    });
});
