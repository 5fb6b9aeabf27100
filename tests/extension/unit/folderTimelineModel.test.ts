import * as assert from 'node:assert/strict';
import type { Checkpoint, FileOutcome, RestoreOutcomePayload, SessionStory, StoryRow, TimelineTreeResult } from '../../../extension/src/client/protocol';
import { conflictsOf, folderNode, inFolder, otherFolders, restoreMessage, restoreParams, rowDescription, type FolderRowNode } from '../../../extension/src/views/folderTimelineModel';
import { checkpoint, file } from './fixtures';

const WEB = { name: 'web', root: '/w/web' };
const API = { name: 'api', root: '/w/api' };

function row(cp: Checkpoint, title: string, isHead = false): StoryRow {
    return { kind: 'row', checkpoint: cp, title, summary: '', toolStatus: null, isHead, branch: false, terminal: null };
}

function story(id: string, rows: StoryRow[], workspace = false): SessionStory {
    return {
        session: { id, title: 'p', createdAt: rows[0]?.checkpoint.createdAt ?? null, running: false, checkpointCount: rows.length },
        workspace,
        turnCount: 0,
        rowCount: rows.length,
        rowsOmitted: 0,
        items: rows,
        nextBefore: null,
        outline: false,
    };
}

function tree(): TimelineTreeResult {
    const base = checkpoint({ id: 'a-base', sessionId: 'eng', kind: 'baseline', files: [file('main.go', 1, 0, 'added')] });
    const w = checkpoint({ id: 'a-w', parent: 'a-base', sessionId: 's1', tool: 'write_file', files: [file('new.go', 1, 0, 'added'), file('x.go')] });
    const e = checkpoint({ id: 'a-e', parent: 'a-w', sessionId: 's1', tool: 'edit_file', files: [file('main.go')] });
    return { head: 'a-e', headSessionId: 's1', sessions: [story('eng', [row(base, 'Baseline')], true), story('s1', [row(w, 'write_file: api/new.go'), row(e, 'edit_file: api/main.go', true)])] } as TimelineTreeResult;
}

function outcome(kind: RestoreOutcomePayload['kind'], files: Partial<FileOutcome>[] = [], extra: Record<string, unknown> = {}): RestoreOutcomePayload {
    const full = files.map(f => ({ action: 'overwrite', detail: null, path: 'p', status: 'restored', ...f }));
    return { kind, files: full, dryRun: false, mode: 'code', plan: null, skipped: [], targetId: 't', ...extra } as unknown as RestoreOutcomePayload;
}

suite('other folders of a multi-root workspace', () => {
    test('the first folder is the Timeline view\'s: one folder shows nothing here', () => {
        assert.deepEqual(otherFolders([WEB]), []);
        assert.deepEqual(otherFolders([WEB, API]), [API]);
        assert.deepEqual(otherFolders([]), []);
    });

    test('a folder level above its stories, newest story and row first, ids unique per folder', () => {
        const node = folderNode(API, tree());
        assert.equal(node.id, 'folder:/w/api');
        assert.deepEqual(node.children.map(s => s.title.startsWith('Workspace') ? 'ws' : 'session'), ['session', 'ws']);
        const rows = node.children[0]!.children;
        assert.deepEqual(rows.map(r => r.checkpoint.id), ['a-e', 'a-w']);
        assert.ok(rows.every(r => r.folder === API && r.id.startsWith('folder:/w/api|')));
        // The same session id in two folders (one tool call checkpointed in both) never collides.
        const other = folderNode({ name: 'docs', root: '/w/docs' }, tree());
        const ids = new Set([node, other].flatMap(f => [f.id, ...f.children.flatMap(s => [s.id, ...s.children.map(r => r.id)])]));
        assert.equal(ids.size, 2 * (1 + 2 + 3));
    });

    test('an unreadable folder keeps its node, with the server\'s line', () => {
        const node = folderNode(API, undefined, 'the workspace folder /w/api is not open');
        assert.deepEqual(node.children, []);
        assert.equal(node.error, 'the workspace folder /w/api is not open');
    });

    test('every request about a folder names it; the restore is code only, dry run first', () => {
        assert.deepEqual(inFolder({ maxRows: 5 }, API), { maxRows: 5, folder: '/w/api' });
        const node = folderNode(API, tree()).children[0]!.children[0] as FolderRowNode;
        assert.deepEqual(restoreParams(node, true), { id: 'a-e', mode: 'code', dryRun: true, folder: '/w/api' });
        assert.deepEqual(restoreParams(node, false, 'overwrite'), { id: 'a-e', mode: 'code', dryRun: false, force: true, folder: '/w/api' });
        assert.deepEqual(restoreParams(node, false, 'skip'), { id: 'a-e', mode: 'code', dryRun: false, skipConflicts: true, folder: '/w/api' });
    });

    test('conflicts and the words after a restore', () => {
        const conflict = outcome('conflict', [{ path: 'a.go', action: 'conflict' }, { path: 'b.go' }]);
        assert.deepEqual(conflictsOf(conflict), ['a.go']);
        assert.deepEqual(conflictsOf(outcome('preview', [{ path: 'b.go' }])), []);
        assert.match(restoreMessage(outcome('applied', [{}, {}]), API), /^Restored 2 files in api; the other folders are untouched\.$/);
        assert.match(restoreMessage(outcome('applied', [{}], { skipped: ['a.go'] }), API), /1 left as they are/);
        assert.match(restoreMessage(outcome('failed', [], { error: 'disk full' }), API), /failed: disk full/);
        assert.match(restoreMessage(outcome('nothingToRestore', [], { reason: 'same' }), API), /Nothing to restore in api/);
        assert.match(restoreMessage(conflict, API), /1 file\(s\) in api changed since/);
    });

    test('a row says its kind, its files and where the folder is', () => {
        const rows = folderNode(API, tree()).children[0]!.children;
        assert.equal(rowDescription(rows[0]!.row), 'tool · 1 file · you are here');
        assert.equal(rowDescription(rows[1]!.row), 'tool · 2 files');
    });
});
