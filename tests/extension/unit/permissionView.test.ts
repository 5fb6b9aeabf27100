import * as assert from 'node:assert/strict';
import { ChatTranscript } from '../../../extension/src/views/chatModel';
import { reviewView } from '../../../extension/src/views/permissionReview';
import { permissionView } from '../../../extension/src/webview/permissionView';
import type { PermissionRequest } from '../../../extension/src/client/protocol';

/** A request as the server sends it for a 5,000-character command whose tail is `; rm -rf ~`. */
function longCommandRequest(): PermissionRequest {
    const command = `echo ${'x'.repeat(4990)}; rm -rf ~`;
    const preview = command.slice(0, 300);
    const marker = `… ${(command.length - 300).toLocaleString('en-US')} more characters — Show all`;
    return {
        sessionId: 's1',
        requestId: 'r1',
        tool: 'run_command',
        input: { command },
        summary: `run_command: ${command.slice(0, 200)} … (${(command.length - 200).toLocaleString('en-US')} more characters)`,
        review: {
            kind: 'command',
            title: 'Run a command',
            path: null,
            text: command,
            summary: `${preview}\n${marker}`,
            preview,
            marker,
            truncated: true,
            shownChars: 300,
            hiddenChars: command.length - 300,
            language: 'shellscript',
        },
    };
}

suite('permission prompt rendering', () => {
    test('a cut command shows the marker and offers Show all', () => {
        const request = longCommandRequest();
        const item = new ChatTranscript().permission(request.requestId, request.tool, request.summary, undefined, reviewView(request));
        assert.ok(item.kind === 'permission');
        const view = permissionView(item);
        assert.equal(view.marker, '… 4,705 more characters — Show all');
        assert.equal(view.showAll, true);
        assert.equal(view.body, request.review.preview);
        assert.match(view.heading, /^Allow run_command\? Run a command$/);
        // The webview never receives the complete text; the extension keeps it for "Show all".
        assert.ok(!JSON.stringify(item).includes('rm -rf'));
    });

    test('a short command is shown whole, without a marker', () => {
        const request = longCommandRequest();
        const short: PermissionRequest = {
            ...request,
            review: { ...request.review, text: 'npm test', preview: 'npm test', summary: 'npm test', marker: null, truncated: false, shownChars: 8, hiddenChars: 0 },
        };
        const item = new ChatTranscript().permission(short.requestId, short.tool, short.summary, undefined, reviewView(short));
        assert.ok(item.kind === 'permission');
        const view = permissionView(item);
        assert.equal(view.body, 'npm test');
        assert.equal(view.marker, undefined);
        assert.equal(view.showAll, false);
    });

    test('a truncated review without a marker line still says it is cut', () => {
        const request = longCommandRequest();
        const item = new ChatTranscript().permission('r2', 'run_command', request.summary, undefined, { ...reviewView(request)!, marker: null });
        assert.ok(item.kind === 'permission');
        const view = permissionView(item);
        assert.ok(view.marker !== undefined && view.showAll);
    });
});
