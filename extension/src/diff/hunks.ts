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

type MutableLines = { -readonly [K in keyof FileLines]: FileLines[K] };

/** Changed lines per file of a (possibly multi-file, possibly truncated) unified diff. */
export function parseUnifiedDiff(patch: string): Map<string, FileLines> {
    const reader = new DiffReader();
    for (const line of patch.split(/\r?\n/)) {
        if (!reader.read(line)) {
            break;
        }
    }
    return reader.files();
}

/** A unified diff read line by line: headers name the file, hunks mark its changed lines. */
class DiffReader {
    private readonly out = new Map<string, MutableLines>();
    private oldPath: string | undefined;
    private current: MutableLines | undefined;
    private newLine = 0;
    // Lines still expected in the current hunk, per side: outside a hunk both are 0, so '---'/'+++'
    // lines are headers there and content inside it.
    private oldLeft = 0;
    private newLeft = 0;
    private pendingRemoval = false;

    /** Take one line; false: the diff cannot be read further (a hunk without a file). */
    read(line: string): boolean {
        if (this.oldLeft > 0 || this.newLeft > 0) {
            if (this.current === undefined) {
                return false;
            }
            this.hunkLine(this.current, line);
            return true;
        }
        this.header(line);
        return true;
    }

    private hunkLine(current: MutableLines, line: string): void {
        if (line.startsWith('+')) {
            current.changed.push(this.newLine);
            current.additions++;
            this.newLine++;
            this.newLeft--;
            this.pendingRemoval = false;
        } else if (line.startsWith('-')) {
            current.deletions++;
            this.oldLeft--;
            if (!this.pendingRemoval) {
                current.removedAfter.push(Math.max(0, this.newLine - 1));
                this.pendingRemoval = true;
            }
        } else if (line.startsWith(' ') || line === '') {
            this.newLine++;
            this.oldLeft--;
            this.newLeft--;
            this.pendingRemoval = false;
        }
        // "\\ No newline at end of file" changes nothing.
    }

    private header(line: string): void {
        if (line.startsWith('--- ')) {
            this.oldPath = headerPath(line);
        } else if (line.startsWith('+++ ')) {
            const path = headerPath(line) ?? this.oldPath;
            this.current = path === undefined ? undefined : (this.out.get(path) ?? { path, changed: [], removedAfter: [], additions: 0, deletions: 0 });
            if (path !== undefined && this.current !== undefined) {
                this.out.set(path, this.current);
            }
        } else {
            this.hunkHeader(line);
        }
    }

    private hunkHeader(line: string): void {
        const hunk = HUNK.exec(line);
        if (hunk && this.current !== undefined) {
            this.oldLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
            this.newLeft = hunk[4] === undefined ? 1 : Number(hunk[4]);
            // "+0,0": the new side is empty (file deleted): markers go on line 0.
            this.newLine = Math.max(0, Number(hunk[3]) - (this.newLeft === 0 ? 0 : 1));
            this.pendingRemoval = false;
        }
    }

    files(): Map<string, FileLines> {
        for (const f of this.out.values()) {
            // A removal followed by additions is a change, already marked on the new lines.
            const changed = new Set(f.changed);
            f.removedAfter = f.removedAfter.filter(l => !changed.has(l + 1) && !changed.has(l));
        }
        return this.out;
    }
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
