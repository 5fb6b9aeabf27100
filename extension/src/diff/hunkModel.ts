/**
 * Keep/undo per hunk, the pure part (no `vscode` import; unit-tested directly): which hunks get a
 * lens, which lines a kept hunk hides from the change highlight, and how a hunk is named in a
 * quick pick. The hunks themselves are the server's (`retrace/restore/hunks`).
 */
import type { HunkView } from '../client/protocol';
import { fileInFolders } from '../paths';

/**
 * The folder the editor's Retrace follows (status bar, change highlights): the one holding the
 * active editor's file (`undefined`: the first, as in a workspace of one folder); `previous` while
 * no file of a folder is active (no editor, a diff's checkpoint side, a file outside every
 * folder), unless that folder left the workspace.
 */
export function followedFolder(fsPath: string | undefined, roots: readonly string[], previous: string | undefined): string | undefined {
    const where = fsPath === undefined ? undefined : fileInFolders(fsPath, roots);
    if (where !== undefined) {
        return where.folder;
    }
    return previous !== undefined && roots.slice(1).includes(previous) ? previous : undefined;
}

/** A hunk's identity across line shifts: its file, its diff base and both texts. */
export function hunkKey(path: string, base: string, hunk: Pick<HunkView, 'baseText' | 'currentText'>): string {
    return JSON.stringify([path, base, hunk.baseText, hunk.currentText]);
}

/** The hunks still under review (not kept), in file order. */
export function openHunks(path: string, base: string, hunks: readonly HunkView[], kept: ReadonlySet<string>): HunkView[] {
    return hunks.filter(h => !kept.has(hunkKey(path, base, h)));
}

/** The 0-based current lines a kept hunk covers (a pure deletion: the line above its gap). */
export function hunkLines(hunk: Pick<HunkView, 'currentStart' | 'currentCount'>): number[] {
    if (hunk.currentCount === 0) {
        return [Math.max(0, hunk.currentStart - 1)];
    }
    return Array.from({ length: hunk.currentCount }, (_, i) => hunk.currentStart + i);
}

/** The line a hunk's lens sits on (within a document of `lineCount` lines). */
export function lensLine(hunk: Pick<HunkView, 'currentStart'>, lineCount: number): number {
    return Math.max(0, Math.min(hunk.currentStart, lineCount - 1));
}

function firstLine(text: string): string {
    const line = text.split('\n', 1)[0] ?? '';
    return line.replace(/\r$/, '').trim();
}

/** "Lines 3–5: +2 −1" and a detail line, for the quick pick of a file's hunks. */
export function hunkPick(hunk: HunkView): { label: string; detail: string } {
    const from = hunk.currentStart + 1;
    const to = hunk.currentStart + Math.max(1, hunk.currentCount);
    const where = from === to ? `Line ${from}` : `Lines ${from}–${to}`;
    const lines = (text: string): number => (text === '' ? 0 : text.replace(/\n$/, '').split('\n').length);
    const label = `${where}: +${lines(hunk.currentText)} −${lines(hunk.baseText)}`;
    const back = firstLine(hunk.baseText);
    const now = firstLine(hunk.currentText);
    const detail = back !== '' ? `back to: ${back}` : now !== '' ? `removes: ${now}` : 'whitespace only';
    return { label, detail };
}
