import * as assert from 'node:assert/strict';
import type { RestoreOutcome, RestoreResult } from '../../../extension/src/client/protocol';
import { conversationMoved, restoreButtons, terminalNote, undoMovedConversation, type ButtonFacts } from '../../../extension/src/commands/restoreNotice';

function outcome(kind: RestoreOutcome['kind'], mode: RestoreOutcome['mode'] = 'both'): RestoreOutcome {
    return { kind, mode, targetId: 'c1', dryRun: false, files: [], plan: null, skipped: [] } as unknown as RestoreOutcome;
}

function result(over: Partial<RestoreResult>): RestoreResult {
    return { outcome: outcome('applied'), conversationHead: null, terminalNotes: [], backgroundTasks: [], askReason: false, undid: null, ...over };
}

suite('the notice after a restore', () => {
    test('conversation moved: a head or a left-out prompt, never for code only, never on a refusal', () => {
        const rows: [RestoreResult['outcome']['kind'], 'code' | 'conversation' | 'both', string | null, string | null, boolean][] = [
            ['applied', 'both', 'h1', null, true],
            ['nothingToRestore', 'conversation', 'h1', null, true],
            ['applied', 'conversation', null, 'the first prompt', true], // before the first prompt: no head
            ['applied', 'both', null, null, false],
            ['applied', 'code', 'h1', null, false],
            ['failed', 'both', 'h1', null, false],
            ['conflict', 'both', 'h1', null, false],
        ];
        for (const [kind, mode, head, prompt, moved] of rows) {
            assert.equal(conversationMoved(mode, result({ outcome: outcome(kind, mode), conversationHead: head, restoredPrompt: prompt })), moved, `${kind} ${mode} ${head} ${prompt}`);
        }
    });

    test('an undo moved the conversation when done and its head, mode or words say so', () => {
        const rows: [RestoreResult['outcome']['kind'], 'code' | 'conversation' | 'both', string | null, string | null, boolean][] = [
            ['applied', 'code', null, null, false],
            ['applied', 'code', 'h1', null, true],
            ['applied', 'both', null, null, true],
            ['nothingToRestore', 'code', null, 'Undid: Restore conversation to “x”', true],
            ['failed', 'both', 'h1', null, false],
            ['conflict', 'conversation', 'h1', null, false],
        ];
        for (const [kind, mode, head, undid, moved] of rows) {
            assert.equal(undoMovedConversation(result({ outcome: outcome(kind, mode), conversationHead: head, undid })), moved, `${kind} ${mode} ${head} ${undid}`);
        }
    });

    test('terminal notes are told only when the conversation moved', () => {
        const r = result({ terminalNotes: ['API_KEY not restored', 'cwd gone'] });
        assert.equal(terminalNote(r, true), ' Terminal: API_KEY not restored. Terminal: cwd gone.');
        assert.equal(terminalNote(r, false), '');
    });

    test('buttons: Undo when undoable or the conversation moved, Why? only in the first folder when asked, nothing in a subagent', () => {
        const base: ButtonFacts = { inTask: false, otherFolder: false, undoTarget: undefined, conversationMoved: false, askReason: false };
        const rows: [Partial<ButtonFacts>, string[]][] = [
            [{}, []],
            [{ undoTarget: 's1' }, ['undo']],
            [{ conversationMoved: true }, ['undo']],
            [{ undoTarget: 's1', askReason: true }, ['undo', 'why']],
            [{ askReason: true }, ['why']],
            [{ undoTarget: 's1', askReason: true, otherFolder: true }, ['undo']],
            [{ undoTarget: 's1', askReason: true, conversationMoved: true, inTask: true }, []],
        ];
        for (const [facts, buttons] of rows) {
            assert.deepEqual(restoreButtons({ ...base, ...facts }), buttons, JSON.stringify(facts));
        }
    });
});
