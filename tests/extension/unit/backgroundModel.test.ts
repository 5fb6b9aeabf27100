import * as assert from 'node:assert/strict';
import type { BackgroundTaskView } from '../../../extension/src/client/protocol';
import {
    BackgroundModel,
    RESTORE_ANYWAY,
    STOP_AND_RESTORE,
    choiceOf,
    isBackgroundRefusal,
    restoreQuestion,
    statusText,
    stopPicks,
} from '../../../extension/src/views/models/backgroundModel';

function task(handle: string, command: string, over: Partial<BackgroundTaskView> = {}): BackgroundTaskView {
    return { handle, sessionId: 's1', command, pid: 100, startedAt: '2026-01-01T00:00:00+00:00', state: 'running', exitCode: null, stoppedBy: null, ...over };
}

suite('backgroundModel', () => {
    test('keeps running tasks from the list and the start/end events', () => {
        const model = new BackgroundModel();
        model.reset([task('bg-1', 'npm run dev'), task('bg-2', 'tsc -w')]);
        model.update(task('bg-1', 'npm run dev', { state: 'exited', exitCode: 0 }));
        model.update(task('bg-3', 'make'));
        assert.deepEqual(
            model.running.map(t => t.handle),
            ['bg-2', 'bg-3'],
        );
        model.update(task('bg-2', 'tsc -w', { state: 'stopped', stoppedBy: 'user' }));
        model.update(task('bg-3', 'make', { state: 'stopped', stoppedBy: 'restore' }));
        assert.deepEqual(model.running, []);
    });

    test('status text: hidden with none, the command with one, a count with several', () => {
        assert.equal(statusText([]), undefined);
        assert.equal(statusText([task('bg-1', 'npm   run\ndev')]), '$(server-process) npm run dev');
        assert.equal(statusText([task('bg-1', 'a'), task('bg-2', 'b')]), '$(server-process) 2 background commands');
    });

    test('stop picks carry the handle', () => {
        assert.deepEqual(
            stopPicks([task('bg-4', 'npm run dev', { pid: 42 })]).map(p => [p.label, p.handle, p.description.startsWith('bg-4 · pid 42')]),
            [['npm run dev', 'bg-4', true]],
        );
    });

    test('the restore question names the commands and maps the answer to backgroundTasks', () => {
        const one = restoreQuestion([task('bg-1', 'npm run dev')]);
        assert.equal(one.message, '1 background task is running (npm run dev): it may overwrite restored files.');
        assert.deepEqual(one.buttons, [STOP_AND_RESTORE, RESTORE_ANYWAY]);
        const two = restoreQuestion([task('bg-1', 'npm run dev'), task('bg-2', 'tsc -w')]);
        assert.match(two.message, /^2 background tasks are running \(npm run dev, tsc -w\): they may/);
        assert.equal(choiceOf(STOP_AND_RESTORE), 'stop');
        assert.equal(choiceOf(RESTORE_ANYWAY), 'keep');
        assert.equal(choiceOf(undefined), undefined);
    });

    test('a refusal is recognised by its error code only', () => {
        assert.equal(isBackgroundRefusal({ message: 'x', data: { code: 'backgroundTasksRunning' } }), true);
        assert.equal(isBackgroundRefusal({ message: 'x', data: { code: 'other' } }), false);
        assert.equal(isBackgroundRefusal(new Error('backgroundTasksRunning')), false);
        assert.equal(isBackgroundRefusal(undefined), false);
    });
});
