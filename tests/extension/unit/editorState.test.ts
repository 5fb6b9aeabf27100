import * as assert from 'node:assert/strict';
import { captureEditorState, type EditorLike } from '../../../extension/src/editorState/capture';
import { relativeTo } from '../../../extension/src/paths';

function editor(fsPath: string, opts: { dirty?: boolean; column?: number; scheme?: string } = {}): EditorLike {
    const scheme = opts.scheme ?? 'file';
    return {
        document: { uri: { scheme, fsPath, toString: () => `${scheme}://${fsPath}` }, isDirty: opts.dirty ?? false },
        selections: [{ anchor: { line: 2, character: 1 }, active: { line: 3, character: 4 } }],
        visibleRanges: [{ start: { line: 0, character: 0 }, end: { line: 30, character: 0 } }],
        viewColumn: opts.column,
    };
}

suite('editor state capture', () => {
    test('open editors with paths, selections, ranges, dirty flags and the active one', () => {
        const a = editor('/ws/src/app.py', { column: 1 });
        const b = editor('/ws/notes.txt', { dirty: true, column: 2 });
        const outside = editor('/elsewhere/x.py');
        const output = editor('/ws/log', { scheme: 'output' });
        const state = captureEditorState([a, b, outside, output], b, '/ws/');
        assert.equal(state.openEditors.length, 3);
        assert.deepEqual(
            state.openEditors.map(e => [e.path, e.isActive, e.isDirty, e.viewColumn]),
            [
                ['src/app.py', false, false, 1],
                ['notes.txt', true, true, 2],
                [null, false, false, null],
            ],
        );
        assert.equal(state.activeEditor, 'file:///ws/notes.txt');
        assert.deepEqual(state.openEditors[0]?.selections, [{ anchor: { line: 2, character: 1 }, active: { line: 3, character: 4 } }]);
        assert.deepEqual(state.openEditors[0]?.visibleRanges, [{ start: { line: 0, character: 0 }, end: { line: 30, character: 0 } }]);
    });

    test('tabs that are open but not visible are listed without selections', () => {
        const a = editor('/ws/src/app.py', { column: 1 });
        const tab = (fsPath: string, isDirty: boolean) => ({ uri: { scheme: 'file', fsPath, toString: () => `file://${fsPath}` }, viewColumn: 1, isDirty });
        const state = captureEditorState([a], a, '/ws', [tab('/ws/src/app.py', false), tab('/ws/notes.txt', true)]);
        assert.deepEqual(
            state.openEditors.map(e => [e.path, e.isActive, e.isDirty, e.selections.length]),
            [
                ['src/app.py', true, false, 1],
                ['notes.txt', false, true, 0],
            ],
        );
    });

    test('no active editor → null; paths are workspace-relative with forward slashes', () => {
        assert.equal(captureEditorState([editor('/ws/a')], undefined, '/ws').activeEditor, null);
        assert.equal(relativeTo('C:\\ws', 'C:\\ws\\src\\a.py'), 'src/a.py');
        assert.equal(relativeTo('/ws', '/ws2/a.py'), undefined);
        const inside = editor('/ws/a.py');
        assert.equal(captureEditorState([inside], inside, undefined).openEditors[0]?.path, null, 'no folder: no path');
    });
});
