/**
 * Minimal reading of the server's unified diffs (`retrace/checkpoint/diff` → `patch`).
 *
 * Contract: the server owns diffing; the client only needs (a) which lines of the NEW side were
 * added or changed, per file, to decorate editors, and (b) a short preview for tooltips. Line
 * numbers are 0-based lines of the new file. Paths come from the `+++` header (`b/` stripped),
 * or the `---` header for deletions. No `vscode` import: unit-tested directly.
 */

export interface FileLines {
    readonly path: string;
    /** 0-based new-file lines that were added or changed. */
    readonly changed: number[];
    /** 0-based new-file lines just after which lines were removed (pure deletions). */
    readonly removedAfter: number[];
    readonly additions: number;
    readonly deletions: number;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function headerPath(line: string): string | undefined {
    // "--- a/src/app.py\t(timestamp)" → "src/app.py"; "/dev/null" → undefined.
    const raw = line.slice(4).split('\t')[0]?.trim() ?? '';
    if (raw === '/dev/null' || raw === '') {
        return undefined;
    }
    return raw.startsWith('a/') || raw.startsWith('b/') ? raw.slice(2) : raw;
}

/** Changed lines per file of a (possibly multi-file, possibly truncated) unified diff. */
export function parseUnifiedDiff(patch: string): Map<string, FileLines> {
    type Mutable = { -readonly [K in keyof FileLines]: FileLines[K] };
    const out = new Map<string, Mutable>();
    let oldPath: string | undefined;
    let current: Mutable | undefined;
    let newLine = 0;
    // Lines still expected in the current hunk, per side: outside a hunk both are 0, so '---'/'+++'
    // lines are headers there and content inside it.
    let oldLeft = 0;
    let newLeft = 0;
    let pendingRemoval = false;
    for (const line of patch.split(/\r?\n/)) {
        if (oldLeft > 0 || newLeft > 0) {
            if (current === undefined) {
                break;
            }
            if (line.startsWith('+')) {
                current.changed.push(newLine);
                current.additions++;
                newLine++;
                newLeft--;
                pendingRemoval = false;
            } else if (line.startsWith('-')) {
                current.deletions++;
                oldLeft--;
                if (!pendingRemoval) {
                    current.removedAfter.push(Math.max(0, newLine - 1));
                    pendingRemoval = true;
                }
            } else if (line.startsWith(' ') || line === '') {
                newLine++;
                oldLeft--;
                newLeft--;
                pendingRemoval = false;
            }
            // "\\ No newline at end of file" changes nothing.
            continue;
        }
        if (line.startsWith('--- ')) {
            oldPath = headerPath(line);
            continue;
        }
        if (line.startsWith('+++ ')) {
            const path = headerPath(line) ?? oldPath;
            current = undefined;
            if (path !== undefined) {
                current = out.get(path) ?? { path, changed: [], removedAfter: [], additions: 0, deletions: 0 };
                out.set(path, current);
            }
            continue;
        }
        const hunk = HUNK.exec(line);
        if (hunk && current !== undefined) {
            oldLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
            newLeft = hunk[4] === undefined ? 1 : Number(hunk[4]);
            // "+0,0": the new side is empty (file deleted): markers go on line 0.
            newLine = Math.max(0, Number(hunk[3]) - (newLeft === 0 ? 0 : 1));
            pendingRemoval = false;
        }
    }
    for (const f of out.values()) {
        // A removal followed by additions is a change, already marked on the new lines.
        const changed = new Set(f.changed);
        f.removedAfter = f.removedAfter.filter(l => !changed.has(l + 1) && !changed.has(l));
    }
    return out;
}

export interface PatchPreview {
    readonly text: string;
    readonly omittedLines: number;
    readonly omittedFiles: number;
}

/** The first `maxLines` lines of a patch, plus how much was left out (for tooltips). */
export function previewPatch(patch: string, maxLines: number): PatchPreview {
    const lines = patch.replace(/\n$/, '').split('\n');
    if (patch.trim() === '') {
        return { text: '', omittedLines: 0, omittedFiles: 0 };
    }
    const shown = lines.slice(0, maxLines);
    const rest = lines.slice(maxLines);
    const filesShown = new Set(shown.filter(l => l.startsWith('+++ ')).map(l => l.slice(4)));
    const omittedFiles = rest.filter(l => l.startsWith('+++ ') && !filesShown.has(l.slice(4))).length;
    return { text: shown.join('\n'), omittedLines: rest.length, omittedFiles };
}

/** What a preview left out, as short phrases (`12 more lines`, `2 more files`, and the server's
 *  cut when `truncated`); empty when the preview is the whole patch. */
export function previewOmissions(preview: PatchPreview, truncated: boolean): string[] {
    const more: string[] = [];
    if (preview.omittedLines > 0) {
        more.push(`${preview.omittedLines} more lines`);
    }
    if (preview.omittedFiles > 0) {
        more.push(`${preview.omittedFiles} more files`);
    }
    if (truncated) {
        more.push('patch cut by the server');
    }
    return more;
}
