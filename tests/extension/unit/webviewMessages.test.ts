import * as assert from 'node:assert/strict';
import { isWebviewMessage } from '../../../extension/src/webview/messages';

/** The chat page's own messages: what the page sends passes; a message missing or mistyping a
 * field is refused (the host logs and ignores it) instead of reaching a handler half-formed. */
suite('chat webview messages: every field checked', () => {
    const accepted: [string, unknown][] = [
        ['ready', { type: 'ready' }],
        ['a prompt', { type: 'prompt', text: 'fix it', includeEditor: true }],
        ['a prompt, editor context not said', { type: 'prompt', text: 'fix it' }],
        ['a retry of a failed prompt', { type: 'retry', text: 'fix it', of: 'turn:t1' }],
        ['a retry without its prompt id', { type: 'retry', text: 'fix it' }],
        ['an @ completion query', { type: 'files', requestId: 3, query: 'uti' }],
        ['cancel', { type: 'cancel' }],
        ['a new session', { type: 'newSession' }],
        ['show earlier', { type: 'showEarlier' }],
        ['a permission answer', { type: 'permission', requestId: 'r1', decision: 'allowAlways' }],
        ['show a review', { type: 'showReview', requestId: 'r1' }],
        ['a banner command', { type: 'command', command: 'retrace.tryDemo' }],
    ];
    const refused: [string, unknown][] = [
        ['a prompt without text', { type: 'prompt' }],
        ['a prompt whose text is not a string', { type: 'prompt', text: 42 }],
        ['a prompt with a non-boolean editor flag', { type: 'prompt', text: 'x', includeEditor: 'yes' }],
        ['a retry without text', { type: 'retry', of: 'turn:t1' }],
        ['a retry naming no string', { type: 'retry', text: 'x', of: 7 }],
        ['a completion query without an id', { type: 'files', query: 'uti' }],
        ['a completion query with a string id', { type: 'files', requestId: '3', query: 'uti' }],
        ['a completion query without a query', { type: 'files', requestId: 3 }],
        ['a permission answer with an unknown decision', { type: 'permission', requestId: 'r1', decision: 'sudo' }],
        ['a permission answer for no request', { type: 'permission', decision: 'allow' }],
        ['a review of no request', { type: 'showReview' }],
        ['a command the banner does not offer', { type: 'command', command: 'workbench.action.terminal.new' }],
        ['an unknown type', { type: 'eval' }],
        ['a type named like an object key', { type: 'constructor' }],
        ['no type', { text: 'x' }],
        ['not an object', 'prompt'],
        ['null', null],
    ];
    for (const [name, message] of accepted) {
        test(`accepted: ${name}`, () => assert.equal(isWebviewMessage(message), true));
    }
    for (const [name, message] of refused) {
        test(`refused: ${name}`, () => assert.equal(isWebviewMessage(message), false));
    }
});
