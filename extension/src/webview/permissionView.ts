/**
 * What a permission prompt shows, computed from the server's review details (pure, unit-tested;
 * the webview only turns it into DOM). The server decides what is shown inline and what is cut;
 * this never shortens anything itself, and a cut is always visible with a way to see everything.
 */
import type { CommandPartView, PermissionItem } from './messages';
import { fmt, S } from './strings';

/** One line of a split command: its spans (kind → how it is highlighted) and the operator ending it. */
export interface CommandLine {
    readonly spans: readonly { readonly text: string; readonly kind: string }[];
    /** The control operator shown at the end of the line (a newline is shown as `⏎`), if any. */
    readonly operator: string | undefined;
}

export interface PermissionView {
    /** `Allow run_command?` plus what it does (`Run a command`, `Write src/app.py (3 lines, …)`). */
    readonly heading: string;
    /** The text shown inline: all of it, or the head the server chose. */
    readonly body: string;
    /** The visible line saying what is hidden (`… 1,234 more characters — Show all`), if anything is. */
    readonly marker: string | undefined;
    /** Offer the one-click "Show all" (the complete text in a read-only editor). */
    readonly showAll: boolean;
    /** The server's line above a compound command (`This command runs 2 commands in 2 parts.`). */
    readonly notice: string | undefined;
    /** A command as the server split it, one line per part; undefined: show `body` as it is. */
    readonly lines: readonly CommandLine[] | undefined;
}

/** A part's spans with the whitespace around the part dropped (the operator already separates). */
function commandLine(part: CommandPartView, index: number, count: number): CommandLine {
    const spans = part.spans.map(s => ({ text: s.text, kind: s.kind }));
    const first = spans[0];
    if (index > 0 && first !== undefined && first.kind === 'text') {
        spans[0] = { ...first, text: first.text.replace(/^[ \t]+/, '') };
    }
    const last = spans[spans.length - 1];
    if (last !== undefined && last.kind === 'text' && (part.operator !== null || index === count - 1)) {
        spans[spans.length - 1] = { ...last, text: last.text.replace(/[ \t]+$/, '') };
    }
    const operator = part.operator === null ? undefined : part.operator === '\n' ? '⏎' : part.operator;
    return { spans: spans.filter(s => s.text !== ''), operator };
}

export function permissionView(item: PermissionItem): PermissionView {
    const review = item.review;
    if (review === undefined) {
        // A prompt without review details (an older server): say so rather than imply completeness.
        return { heading: fmt(S.permissionHeading, item.tool), body: item.summary, marker: undefined, showAll: false, notice: undefined, lines: undefined };
    }
    return {
        heading: fmt(S.permissionHeadingTitled, item.tool, review.title),
        body: review.preview,
        marker: review.truncated ? (review.marker ?? S.permissionCut) : undefined,
        showAll: review.truncated,
        notice: review.notice ?? undefined,
        lines: review.parts ? review.parts.map((p, i, all) => commandLine(p, i, all.length)) : undefined,
    };
}
