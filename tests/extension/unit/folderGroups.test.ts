/**
 * The Timeline view of a multi-root workspace (pure grouping, `views/models/folderGroups.ts`):
 * one folder shows its sessions at the top level, exactly as always; more folders show one node
 * per folder, in workspace order, each holding that folder's own sessions and rows (its own
 * store), every node id unique across folders and every row carrying its folder; a row's
 * requests name that folder (`client/folderRpc.ts`).
 */
import * as assert from 'node:assert/strict';
import type { LanguageClient } from 'vscode-languageclient/node';
import { METHODS, Rpc, type Checkpoint, type SessionStory, type StoryRow, type TimelineTreeResult } from '../../../extension/src/client/protocol';
import { inFolderRpc } from '../../../extension/src/client/folderRpc';
import { buildTimeline, checkpointNodeId, type CheckpointNode, type SessionNode } from '../../../extension/src/views/models/timelineModel';
import { folderDescription, groupRoots, idInFolder, indexShown, rowContext, type FolderGroupNode, type ShownNode } from '../../../extension/src/views/models/folderGroups';
import { followedFolder } from '../../../extension/src/diff/hunkModel';
import { storeStats } from '../../../extension/src/views/models/statusModel';
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

/** One folder's store: its baseline (workspace story) and the agent's session `s1` (the same id in
 * every folder: one tool call has its row in each folder it wrote in). */
function treeOf(prefix: string, tools: string[]): TimelineTreeResult {
    const base = checkpoint({ id: `${prefix}-base`, sessionId: 'eng', kind: 'baseline', files: [file('a', 1, 0, 'added')] });
    const rows = tools.map((tool, i) => row(checkpoint({ id: `${prefix}-${i}`, parent: `${prefix}-base`, sessionId: 's1', tool, files: [file(`${tool}.txt`)] }), `${tool}: x`, i === tools.length - 1));
    return { head: rows.at(-1)?.checkpoint.id ?? base.id, headSessionId: 's1', sessions: [story('eng', [row(base, 'Baseline')], true), story('s1', rows)] };
}

function built(tree: TimelineTreeResult): SessionNode[] {
    return buildTimeline(tree, { running: [], fold: false });
}

function rowsUnder(node: ShownNode): CheckpointNode[] {
    if (node.kind === 'checkpoint') {
        return [node, ...node.children.flatMap(rowsUnder)];
    }
    return 'children' in node ? node.children.flatMap(c => rowsUnder(c as ShownNode)) : [];
}

suite('the Timeline view grouped by folder', () => {
    test('one folder: no folder level, the sessions exactly as built', () => {
        const tree = treeOf('w', ['write_file']);
        const roots = built(tree);
        const shown = groupRoots([{ folder: WEB, roots, tree }], 0);
        assert.equal(shown.length, roots.length);
        shown.forEach((node, i) => assert.equal(node, roots[i], 'the same node objects: nothing relabelled'));
        assert.ok(rowsUnder(shown[1]!).every(r => r.folder === undefined), 'rows of a one-folder workspace name no folder');
        assert.equal(idInFolder(undefined, 'cp:x'), 'cp:x');
    });

    test('two folders: one node per folder, in workspace order, each holding its own rows', () => {
        const web = treeOf('w', ['write_file']);
        const api = treeOf('a', ['write_file', 'edit_file']);
        const shown = groupRoots(
            [
                { folder: WEB, roots: built(web), tree: web },
                { folder: API, roots: built(api), tree: api },
            ],
            0,
        );
        assert.deepEqual(
            shown.map(n => n.kind),
            ['folder', 'folder'],
        );
        const [first, second] = shown as FolderGroupNode[];
        assert.deepEqual([first!.folder.name, second!.folder.name], ['web', 'api']);
        assert.equal(first!.first, true);
        assert.equal(second!.first, false);
        assert.deepEqual(rowsUnder(first!).map(r => r.checkpoint.id).sort(), ['w-0', 'w-base']);
        assert.deepEqual(rowsUnder(second!).map(r => r.checkpoint.id).sort(), ['a-0', 'a-1', 'a-base']);
        // Every row carries its folder: a row action's requests name it.
        assert.ok(rowsUnder(first!).every(r => r.folder === WEB.root));
        assert.ok(rowsUnder(second!).every(r => r.folder === API.root));
        // The same session id in both stores: node ids stay unique, parents point inside the group.
        const index = indexShown(shown);
        const all: ShownNode[] = [...index.values()];
        assert.equal(new Set(all.map(n => n.id)).size, all.length);
        const apiRow = index.get(idInFolder(API.root, checkpointNodeId('a-1')));
        assert.ok(apiRow !== undefined && apiRow.kind === 'checkpoint');
        let up: ShownNode | undefined = apiRow;
        const chain: string[] = [];
        while (up !== undefined) {
            chain.push(up.kind);
            up = up.kind === 'folder' ? undefined : up.parentId === undefined ? undefined : index.get(up.parentId);
        }
        assert.deepEqual(chain.at(-1), 'folder', 'a row leads up to its folder node');
        assert.ok(chain.includes('session'));
    });

    test('a folder node says how many sessions and when it last changed', () => {
        const api = treeOf('a', ['write_file']);
        const newest = Date.parse(api.sessions[1]!.items.at(-1)!.kind === 'row' ? (api.sessions[1]!.items.at(-1) as StoryRow).checkpoint.createdAt : '');
        assert.equal(folderDescription(api, newest + 2 * 60_000), '1 session · last change 2 min ago');
        assert.equal(folderDescription({ head: null, headSessionId: null, sessions: [] }, 0), 'no sessions yet');
        assert.equal(folderDescription(undefined, 0), '');
    });

    test("another folder's rows offer what its store does: code restores (the conversation is the first folder's)", () => {
        const first = '/w/web';
        assert.equal(rowContext('checkpoint', undefined, first), 'checkpoint', 'one folder: as always');
        assert.equal(rowContext('checkpoint', first, first), 'checkpoint', 'the first folder: as always');
        assert.equal(rowContext('checkpoint.task.resumable', first, first), 'checkpoint.task.resumable');
        for (const context of ['checkpoint', 'checkpoint.codeOnly', 'checkpoint.task', 'checkpoint.task.resumable', 'checkpoint.child']) {
            assert.equal(rowContext(context, API.root, first), 'checkpoint.codeOnly', context);
        }
        assert.equal(rowContext('session', API.root, first), 'session', 'only rows change');
    });

    test("a row's request names its folder; none in a one-folder workspace", async () => {
        const sent: { method: string; params: unknown }[] = [];
        const client = {
            sendRequest: (method: string, params: unknown) => {
                sent.push({ method, params });
                return Promise.resolve({});
            },
        } as unknown as LanguageClient;
        const rpc = new Rpc(client);
        await inFolderRpc(rpc, API.root).request(METHODS.checkpointRestore, { id: 'a-1', mode: 'code', dryRun: true });
        await inFolderRpc(rpc, undefined).request(METHODS.checkpointRestore, { id: 'w-0', mode: 'code', dryRun: true });
        assert.deepEqual(sent, [
            { method: METHODS.checkpointRestore, params: { id: 'a-1', mode: 'code', dryRun: true, folder: API.root } },
            { method: METHODS.checkpointRestore, params: { id: 'w-0', mode: 'code', dryRun: true } },
        ]);
        // A closed server fails the folder's requests too.
        rpc.close('gone');
        await assert.rejects(inFolderRpc(rpc, API.root).request(METHODS.serverState, {}), /gone/);
    });
});

suite('the status bar and change highlights follow the folder of the active editor', () => {
    const roots = ['/w/web', '/w/api'];

    test('the folder holding the active file; the previous one while no folder file is active', () => {
        assert.equal(followedFolder('/w/api/main.go', roots, undefined), '/w/api');
        assert.equal(followedFolder('/w/web/src/a.ts', roots, '/w/api'), undefined, 'the first folder names none');
        assert.equal(followedFolder(undefined, roots, '/w/api'), '/w/api', 'no editor: stays');
        assert.equal(followedFolder('/elsewhere/x.txt', roots, '/w/api'), '/w/api', 'a file outside every folder: stays');
        assert.equal(followedFolder(undefined, ['/w/web'], '/w/api'), undefined, 'a folder removed: back to the first');
        assert.equal(followedFolder('/w/web/a', ['/w/web'], undefined), undefined, 'one folder: always the first');
    });

    test("the store figures name the folder they are of, only when there are several", () => {
        assert.equal(storeStats(12, 2048, undefined), '12 cp · 2.0 KB');
        assert.equal(storeStats(3, 100, 'api'), 'api: 3 cp · 100 B');
    });
});
