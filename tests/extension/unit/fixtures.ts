/** Builders of protocol values for the unit tests (typed by the generated protocol). */
import type { Checkpoint, FileChange, TimelineGetResult } from '../../../extension/src/client/protocol';

let seq = 0;

export function file(path: string, additions = 1, deletions = 0, status: FileChange['status'] = 'modified'): FileChange {
    return { path, status, oldPath: null, additions, deletions, binary: false, approximate: false, counted: true };
}

export function checkpoint(over: Partial<Checkpoint> & { id: string }): Checkpoint {
    seq++;
    return {
        captureMs: 1,
        conversation: null,
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
        damage: null,
        editorState: null,
        files: [],
        kind: 'tool',
        label: '',
        meta: {},
        parent: null,
        recoverability: 'full',
        restoredFrom: null,
        sessionId: 's1',
        terminal: null,
        tool: null,
        toolCallId: null,
        turnId: null,
        unrecoverable: [],
        ...over,
    };
}

/** baseline → turn t1 (write_file, edit_file, run_command) → turn t2 (edit_file). */
export function sampleTimeline(): TimelineGetResult {
    const cps = [
        checkpoint({ id: 'base', kind: 'baseline', files: [file('README.md', 9, 0, 'added')] }),
        checkpoint({ id: 'c1', parent: 'base', turnId: 't1', tool: 'write_file', toolCallId: 'tc1', label: 'write_file hello.txt', files: [file('hello.txt', 1, 0, 'added')] }),
        checkpoint({ id: 'c2', parent: 'c1', turnId: 't1', tool: 'edit_file', toolCallId: 'tc2', files: [file('src/app.py', 1, 0)] }),
        checkpoint({ id: 'c3', parent: 'c2', turnId: 't1', tool: 'run_command', toolCallId: 'tc3', files: [file('generated/out.txt', 1, 0, 'added')] }),
        checkpoint({ id: 'c4', parent: 'c3', turnId: 't2', tool: 'edit_file', toolCallId: 'tc4', files: [file('hello.txt', 1, 1)] }),
    ];
    return {
        checkpoints: cps,
        head: 'c4',
        sessions: [{ id: 's1', title: 'Create hello.txt please', createdAt: cps[0]?.createdAt ?? null, running: false, checkpointCount: cps.length }],
        bookmarks: [],
    };
}
