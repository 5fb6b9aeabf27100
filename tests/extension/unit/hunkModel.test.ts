import * as assert from 'node:assert/strict';
import type { HunkView } from '../../../extension/src/client/protocol';
import { hunkKey, hunkLines, hunkPick, lensLine, openHunks } from '../../../extension/src/diff/hunkModel';
import { fileInFolders, withFolder } from '../../../extension/src/paths';

function hunk(over: Partial<HunkView>): HunkView {
    return { id: '1,1,1,1', baseStart: 1, baseCount: 1, currentStart: 1, currentCount: 1, baseText: 'b\n', currentText: 'B\n', ...over };
}

suite('hunkModel (keep/undo per hunk)', () => {
    test('a kept hunk stays kept when its lines move; the others stay open', () => {
        const first = hunk({});
        const second = hunk({ id: '5,1,5,2', baseStart: 5, currentStart: 5, currentCount: 2, baseText: 'f\n', currentText: 'F\nF2\n' });
        const kept = new Set([hunkKey('a.py', 'cp1', second)]);
        assert.deepEqual(openHunks('a.py', 'cp1', [first, second], kept), [first]);
        const moved = { ...second, id: '4,1,4,2', baseStart: 4, currentStart: 4 };
        assert.deepEqual(openHunks('a.py', 'cp1', [moved], kept), []);
        assert.deepEqual(openHunks('b.py', 'cp1', [second], kept), [second], 'another file');
        assert.deepEqual(openHunks('a.py', 'cp2', [second], kept), [second], 'another base');
    });

    test('the lines a hunk covers, a pure deletion marks the line above its gap', () => {
        assert.deepEqual(hunkLines({ currentStart: 3, currentCount: 2 }), [3, 4]);
        assert.deepEqual(hunkLines({ currentStart: 3, currentCount: 0 }), [2]);
        assert.deepEqual(hunkLines({ currentStart: 0, currentCount: 0 }), [0]);
    });

    test('the lens stays inside the document', () => {
        assert.equal(lensLine({ currentStart: 10 }, 4), 3);
        assert.equal(lensLine({ currentStart: 0 }, 0), 0);
        assert.equal(lensLine({ currentStart: 2 }, 10), 2);
    });

    test('quick pick words', () => {
        assert.deepEqual(hunkPick(hunk({})), { label: 'Line 2: +1 −1', detail: 'back to: b' });
        assert.deepEqual(hunkPick(hunk({ currentCount: 2, currentText: 'x\r\ny\r\n', baseText: '' })), { label: 'Lines 2–3: +2 −0', detail: 'removes: x' });
        assert.deepEqual(hunkPick(hunk({ currentCount: 0, currentText: '', baseText: 'gone\n' })), { label: 'Line 2: +0 −1', detail: 'back to: gone' });
    });

    test('a file is routed to its folder: the first folder names none, the innermost wins, outside is undefined', () => {
        const roots = ['/w/web', '/w/api', '/m', '/m/packages/pkg'];
        assert.deepEqual(fileInFolders('/w/web/src/a.ts', roots), { folder: undefined, path: 'src/a.ts' });
        assert.deepEqual(fileInFolders('/w/api/main.go', roots), { folder: '/w/api', path: 'main.go' });
        assert.deepEqual(fileInFolders('/m/packages/pkg/lib.py', roots), { folder: '/m/packages/pkg', path: 'lib.py' });
        assert.deepEqual(fileInFolders('/m/packages/pkgx/y', roots), { folder: '/m', path: 'packages/pkgx/y' });
        assert.equal(fileInFolders('/w/apix/main.go', roots), undefined, 'a prefix is no folder');
        assert.equal(fileInFolders('/w/api', roots), undefined, 'a folder itself is no file');
        assert.equal(fileInFolders('/elsewhere/x', []), undefined);
        assert.deepEqual(fileInFolders('C:\\w\\api\\main.go', ['C:\\w\\web', 'C:\\w\\api']), { folder: 'C:\\w\\api', path: 'main.go' });
    });

    test('params name the folder only when it is not the first', () => {
        assert.deepEqual(withFolder({ checkpoint: 'c', path: 'p' }, undefined), { checkpoint: 'c', path: 'p' });
        assert.deepEqual(withFolder({ checkpoint: 'c', path: 'p' }, '/w/api'), { checkpoint: 'c', path: 'p', folder: '/w/api' });
    });
});
