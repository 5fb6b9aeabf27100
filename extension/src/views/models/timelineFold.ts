/**
 * Folding the timeline's rows so a story stays readable after many restores and long runs of
 * the same tool (issue 28). Pure (of `vscode` only `l10n`), table-tested; `timelineModel.ts` applies it
 * to the rows of every turn and story it builds, so a row the server adds through `didChange`
 * folds the same way as a fetched page (no refetch, no protocol change).
 *
 * Contracts:
 * - nothing is hidden: every folded row stays reachable as a child of the node it folds into,
 *   with its own node id (`cp:<id>`), so `reveal`, the diff and the row menu work on it;
 * - a restore and the safety capture it took just before fold into ONE row: the restore row, the
 *   safety capture its first child;
 * - the work a restore left behind (the checkpoints between the old head and the restored one)
 *   shows as one collapsed "Abandoned: N steps" node under the restore row (copies of those rows,
 *   ids `abandoned:<restore>:<id>`); the rows also stay where they happened;
 * - at least {@link REPEAT_MIN} consecutive rows of the same tool on the same single file fold into
 *   one "edit_file a.py ×N" group; at least {@link READS_MIN} consecutive read-only rows (a
 *   read-only tool whose checkpoint changed nothing) into one "read 3 files" group. A group holding
 *   the head says so; {@link shownNodeId} names the node to reveal for a checkpoint (its group).
 */
import * as vscode from 'vscode';
import type { Checkpoint } from '../../client/protocol';

/** Runs of the same tool on the same file this long (or longer) fold into one group. */
export const REPEAT_MIN = 3;
/** Runs of read-only tool calls this long (or longer) fold into one group. */
export const READS_MIN = 2;

/**
 * Tools that only look (read, list, search): their checkpoints never change a file. Retrace's own
 * tools and other agents' (Claude Code, Gemini CLI), as their hooks name them.
 */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
    'read_file',
    'list_files',
    'search_text',
    'Read',
    'Grep',
    'Glob',
    'LS',
    'read_many_files',
    'glob',
    'search_file_content',
    'list_directory',
]);

/** The verb a read-only tool's group uses: "read 3 files", "2 listings", "4 searches". */
const READ_VERBS: Readonly<Record<string, 'read' | 'list' | 'search'>> = {
    read_file: 'read',
    Read: 'read',
    read_many_files: 'read',
    list_files: 'list',
    LS: 'list',
    list_directory: 'list',
};

/** The part of a row folding looks at (a `CheckpointNode` has it). */
export interface FoldRow {
    readonly id: string;
    readonly checkpoint: Checkpoint;
    readonly isHead: boolean;
    /** A task row or a subagent's row (it has its own children), or a bookmark (it stays in sight): never folded. */
    readonly nested: boolean;
}

export type GroupKind = 'repeat' | 'reads';

/** One entry of a folded list: a row left as it is, a group of rows, or a restore with what it folds. */
export type Folded<R extends FoldRow> =
    | { readonly kind: 'row'; readonly row: R }
    | { readonly kind: 'group'; readonly group: GroupKind; readonly rows: readonly R[] }
    | { readonly kind: 'restore'; readonly row: R; readonly safety: R | undefined };

export function isReadOnly(cp: Checkpoint): boolean {
    return cp.kind === 'tool' && cp.tool !== undefined && cp.tool !== null && READ_ONLY_TOOLS.has(cp.tool) && (cp.files ?? []).length === 0;
}

/** "edit_file\u0000src/a.py" for a tool call that changed exactly one file, else undefined. */
export function repeatKey(cp: Checkpoint): string | undefined {
    const files = cp.files ?? [];
    const path = files.length === 1 ? files[0]?.path : undefined;
    return cp.kind !== 'tool' || cp.tool === undefined || cp.tool === null || path === undefined ? undefined : `${cp.tool}\u0000${path}`;
}

function foldKey(row: FoldRow): string | undefined {
    if (row.nested) {
        return undefined;
    }
    if (isReadOnly(row.checkpoint)) {
        return 'reads';
    }
    const key = repeatKey(row.checkpoint);
    return key === undefined ? undefined : `repeat\u0000${key}`;
}

/** Fold one list of rows (a turn's, or a story's rows in place), order kept. */
export function foldRows<R extends FoldRow>(rows: readonly R[]): Folded<R>[] {
    const out: Folded<R>[] = [];
    let i = 0;
    while (i < rows.length) {
        const step = restoreAt(rows, i) ?? runAt(rows, i);
        out.push(...step.folded);
        i += step.taken;
    }
    return out;
}

/** What folding took at one position: the entries it made of `taken` rows. */
interface FoldStep<R extends FoldRow> {
    readonly folded: readonly Folded<R>[];
    readonly taken: number;
}

/** A restore at `i`, with the safety capture just before it when there is one. */
function restoreAt<R extends FoldRow>(rows: readonly R[], i: number): FoldStep<R> | undefined {
    const row = rows[i] as R;
    const next = rows[i + 1];
    if (row.checkpoint.kind === 'safety' && next?.checkpoint.kind === 'restore' && next.checkpoint.parent === row.checkpoint.id) {
        return { folded: [{ kind: 'restore', row: next, safety: row }], taken: 2 };
    }
    return row.checkpoint.kind === 'restore' ? { folded: [{ kind: 'restore', row, safety: undefined }], taken: 1 } : undefined;
}

/** The run of rows of one fold key from `i`: a group when long enough, else the rows as they are. */
function runAt<R extends FoldRow>(rows: readonly R[], i: number): FoldStep<R> {
    const key = foldKey(rows[i] as R);
    let end = i + 1;
    while (key !== undefined && end < rows.length && foldKey(rows[end] as R) === key) {
        end += 1;
    }
    const group: GroupKind = key === 'reads' ? 'reads' : 'repeat';
    if (key !== undefined && end - i >= (group === 'reads' ? READS_MIN : REPEAT_MIN)) {
        return { folded: [{ kind: 'group', group, rows: rows.slice(i, end) }], taken: end - i };
    }
    return { folded: rows.slice(i, end).map(row => ({ kind: 'row', row })), taken: end - i };
}

/**
 * The checkpoints a restore left behind, newest first: from the head it replaced (`from`) up the
 * parent chain until the restored checkpoint or one of its ancestors. Only checkpoints `byId` knows
 * (a page not loaded is not walked); a chain longer than `byId` (a cycle in damaged data) stops.
 */
export function abandonedBy(from: string | null | undefined, target: string | null | undefined, byId: ReadonlyMap<string, Checkpoint>): Checkpoint[] {
    const kept = ancestry(target, byId);
    const out: Checkpoint[] = [];
    for (const cp of chain(from, byId)) {
        if (kept.has(cp.id)) {
            break;
        }
        if (cp.kind !== 'safety') {
            out.push(cp);
        }
    }
    return out;
}

/** `id` and its ancestors that `byId` knows (the ids; a cycle stops). */
function ancestry(id: string | null | undefined, byId: ReadonlyMap<string, Checkpoint>): Set<string> {
    const ids = new Set<string>();
    for (let at = id ?? undefined; at !== undefined && !ids.has(at); at = byId.get(at)?.parent ?? undefined) {
        ids.add(at);
    }
    return ids;
}

/** The checkpoints from `id` up the parent chain while `byId` knows them (a cycle stops). */
function* chain(id: string | null | undefined, byId: ReadonlyMap<string, Checkpoint>): Generator<Checkpoint> {
    const seen = new Set<string>();
    for (let cp = byId.get(id ?? ''); cp !== undefined && !seen.has(cp.id); cp = byId.get(cp.parent ?? '')) {
        seen.add(cp.id);
        yield cp;
    }
}

function fileName(path: string): string {
    return path.split('/').at(-1) ?? path;
}

function folderOf(path: string): string {
    const cut = path.lastIndexOf('/');
    return cut <= 0 ? '' : path.slice(0, cut);
}


/** A group's label, verb and file name first: "edit_file a.py ×50", "read 3 files · 1 search". */
export function groupLabel(group: GroupKind, rows: readonly FoldRow[]): string {
    const first = rows[0]?.checkpoint;
    if (group === 'repeat') {
        const path = first?.files?.[0]?.path ?? '';
        return `${first?.tool ?? 'tool'} ${fileName(path)} ×${rows.length}`;
    }
    const verbs = { read: 0, list: 0, search: 0 };
    for (const r of rows) {
        verbs[READ_VERBS[r.checkpoint.tool ?? ''] ?? 'search'] += 1;
    }
    return (Object.keys(READ_WORDS) as (keyof typeof READ_WORDS)[])
        .filter(verb => verbs[verb] > 0)
        .map(verb => READ_WORDS[verb](verbs[verb]))
        .join(' · ');
}

/** How many reads, listings or searches a group holds, in words (n ≥ 1); in this order. */
const READ_WORDS: Readonly<Record<'read' | 'list' | 'search', (n: number) => string>> = {
    read: n => (n === 1 ? vscode.l10n.t('read 1 file') : vscode.l10n.t('read {0} files', n)),
    list: n => (n === 1 ? vscode.l10n.t('1 listing') : vscode.l10n.t('{0} listings', n)),
    search: n => (n === 1 ? vscode.l10n.t('1 search') : vscode.l10n.t('{0} searches', n)),
};

/** A group's description: the folder of a repeated file; what the reads looked at. */
export function groupDetail(group: GroupKind, rows: readonly FoldRow[], titles: readonly string[]): string {
    if (group === 'repeat') {
        return folderOf(rows[0]?.checkpoint.files?.[0]?.path ?? '');
    }
    const what = titles.map(t => t.replace(/^[^:]*:\s*/, '')).filter(t => t !== '');
    const shown = what.slice(0, 3).join(', ');
    return what.length > 3 ? `${shown}, …` : shown;
}

/** "Abandoned: 3 steps" and what they were: "edit_file: a.py ×2, run_command: make". */
export function abandonedLabel(titles: readonly string[]): { readonly label: string; readonly detail: string } {
    const counts = new Map<string, number>();
    for (const t of titles) {
        counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    const named = [...counts].slice(0, 2).map(([t, n]) => (n > 1 ? `${t} ×${n}` : t));
    const more = counts.size > 2 ? ', …' : '';
    const label = titles.length === 1 ? vscode.l10n.t('Abandoned: 1 step') : vscode.l10n.t('Abandoned: {0} steps', titles.length);
    return { label, detail: `${named.join(', ')}${more}` };
}

/**
 * The node to reveal for a checkpoint's row (`rowId`): the row, or the group it is folded into (a
 * collapsed group stays collapsed: revealing the row inside would open it). `nodes`: every node
 * by id (`indexNodes`).
 */
export function shownNodeId(rowId: string, nodes: ReadonlyMap<string, { readonly kind: string; readonly parentId?: string }>): string {
    const parentId = nodes.get(rowId)?.parentId;
    const parent = parentId === undefined ? undefined : nodes.get(parentId);
    return parent !== undefined && parent.kind === 'group' && parentId !== undefined ? parentId : rowId;
}
