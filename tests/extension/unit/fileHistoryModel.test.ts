import * as assert from 'node:assert/strict';
import type { FileHistoryResult, FileVersion } from '../../../extension/src/client/protocol';
import {
    diffWithCurrent,
    diffWithPrevious,
    nodesOf,
    versionLook,
    withPage,
    VERSION_CONTEXT,
    VERSION_CONTEXT_EXISTS,
} from '../../../extension/src/views/models/fileHistoryModel';
import { fileInFolders, relativeTo } from '../../../extension/src/paths';

const NOW = Date.parse('2026-01-01T01:00:00Z');

function version(over: Partial<FileVersion> & { checkpointId: string }): FileVersion {
    return {
        parentId: 'p',
        sessionId: 's1',
        createdAt: '2026-01-01T00:58:00Z',
        kind: 'tool',
        title: 'edit_file',
        summary: '+1 −1',
        change: 'modified',
        renamedFrom: null,
        renamedTo: null,
        exists: true,
        hash: 'a'.repeat(64),
        additions: 1,
        deletions: 1,
        binary: false,
        approximate: false,
        ...over,
    };
}

function page(path: string, ids: string[], nextCursor: string | null): FileHistoryResult {
    return { path, versions: ids.map(checkpointId => version({ checkpointId })), nextCursor };
}

suite('file history model', () => {
    test('fileInFolders: the first folder names none, another its root, the innermost wins, Windows case', () => {
        const roots = ['/w/web', '/w/api', '/m', '/m/pkg'];
        assert.deepEqual(fileInFolders('/w/web/src/a.ts', roots), { path: 'src/a.ts', folder: undefined });
        assert.deepEqual(fileInFolders('/w/api/main.go', roots), { path: 'main.go', folder: '/w/api' });
        assert.deepEqual(fileInFolders('/m/pkg/lib.py', roots), { path: 'lib.py', folder: '/m/pkg' });
        assert.deepEqual(fileInFolders('/m/pkgx/y', roots), { path: 'pkgx/y', folder: '/m' });
        assert.equal(fileInFolders('/w/apix/main.go', roots), undefined);
        assert.equal(fileInFolders('/w/web/a', []), undefined);
        assert.deepEqual(fileInFolders('c:\\W\\API\\Main.go', ['C:\\w\\web', 'C:\\w\\api'], '\\'), { path: 'Main.go', folder: 'C:\\w\\api' });
    });

    test('relativeTo: inside, outside, nested, Windows rules', () => {
        const cases: [string, string, '/' | '\\', string | undefined][] = [
            ['/w/proj', '/w/proj/src/a.ts', '/', 'src/a.ts'],
            ['/w/proj/', '/w/proj/a.ts', '/', 'a.ts'],
            ['/w/proj', '/w/project/a.ts', '/', undefined],
            ['/w/proj', '/w/proj', '/', undefined],
            ['/w/proj', '/elsewhere/a.ts', '/', undefined],
            ['C:\\W\\Proj', 'c:\\w\\proj\\Src\\A.ts', '\\', 'Src/A.ts'],
            ['C:\\W\\Proj', 'D:\\w\\proj\\a.ts', '\\', undefined],
        ];
        for (const [root, file, sep, want] of cases) {
            assert.equal(relativeTo(root, file, sep), want, `${root} ${file}`);
        }
    });

    test('pages: a first page replaces, an older page appends without repeats', () => {
        const first = withPage(undefined, page('a.txt', ['c5', 'c4'], 'c4'), false);
        const both = withPage(first, page('a.txt', ['c4', 'c2'], null), true);
        assert.deepEqual(both.versions.map(v => v.checkpointId), ['c5', 'c4', 'c2']);
        assert.equal(both.nextCursor, null);
        const other = withPage(both, page('b.txt', ['c9'], null), true);
        assert.deepEqual(other.versions.map(v => v.checkpointId), ['c9'], 'another file starts over');
        assert.deepEqual(withPage(both, page('a.txt', ['c6'], 'c6'), false).versions.map(v => v.checkpointId), ['c6']);
    });

    test('nodes: rows, then load older; messages for no file and no history', () => {
        const state = withPage(undefined, page('a.txt', ['c5', 'c4'], 'c4'), false);
        const nodes = nodesOf(state, { path: 'a.txt', pinned: false });
        assert.deepEqual(nodes.map(n => n.kind), ['version', 'version', 'more']);
        assert.deepEqual(nodes[2], { kind: 'more', cursor: 'c4' });
        assert.equal(nodesOf(undefined, undefined)[0]?.kind, 'message');
        assert.deepEqual(nodesOf(state, { path: 'b.txt', pinned: true }), [], 'stale state of another file is not shown');
        const empty = withPage(undefined, page('new.txt', [], null), false);
        const [message] = nodesOf(empty, { path: 'new.txt', pinned: false });
        assert.ok(message?.kind === 'message' && message.text.includes('new.txt'));
        // Another folder's file: every row names its folder (its commands ask that folder's store).
        const rows = nodesOf(state, { path: 'a.txt', pinned: false, folder: '/w/api' });
        assert.deepEqual(rows.filter(n => n.kind === 'version').map(n => (n.kind === 'version' ? n.folder : null)), ['/w/api', '/w/api']);
        assert.ok(nodes.every(n => n.kind !== 'version' || !('folder' in n)), 'the first folder: no folder, as ever');
    });

    test('look: title, summary and time; restorable only when the file exists after it', () => {
        const look = versionLook(version({ checkpointId: 'c1', title: 'edit_file', summary: '+2 −1' }), NOW);
        assert.equal(look.label, 'edit_file');
        assert.equal(look.description, '+2 −1 · 2 min ago');
        assert.equal(look.icon, 'diff-modified');
        assert.equal(look.contextValue, VERSION_CONTEXT_EXISTS);
        const gone = versionLook(version({ checkpointId: 'c2', change: 'deleted', exists: false, hash: null }), NOW);
        assert.equal(gone.icon, 'diff-removed');
        assert.equal(gone.contextValue, VERSION_CONTEXT);
        assert.match(gone.tooltip, /does not exist after it/);
    });

    test('diff with current: this version on the left, the file now (or nothing) on the right', () => {
        const v = version({ checkpointId: 'c3', title: 'write_file' });
        const diff = diffWithCurrent('src/a.ts', v, true);
        assert.deepEqual([diff.file.path, diff.file.status, diff.left.id, diff.right.id], ['src/a.ts', 'modified', 'c3', 'current']);
        assert.equal(diffWithCurrent('src/a.ts', v, false).file.status, 'deleted');
    });

    test('diff with previous: the parent checkpoint, following renames either way', () => {
        const plain = diffWithPrevious('a.txt', version({ checkpointId: 'c3', parentId: 'c2' }));
        assert.deepEqual([plain?.file.path, plain?.file.oldPath, plain?.left.id, plain?.right.id], ['a.txt', null, 'c2', 'c3']);
        const from = diffWithPrevious('a.txt', version({ checkpointId: 'c4', parentId: 'c3', change: 'renamed', renamedFrom: 'old.txt' }));
        assert.deepEqual([from?.file.path, from?.file.oldPath], ['a.txt', 'old.txt']);
        const away = diffWithPrevious('a.txt', version({ checkpointId: 'c5', parentId: 'c4', change: 'renamed', renamedTo: 'new.txt', exists: false }));
        assert.deepEqual([away?.file.path, away?.file.oldPath], ['new.txt', 'a.txt']);
        assert.equal(diffWithPrevious('a.txt', version({ checkpointId: 'b', parentId: null, kind: 'baseline' })), undefined);
    });
});
