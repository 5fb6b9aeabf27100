/**
 * What a permission prompt shows, computed from the server's review details (pure, unit-tested;
 * the webview only turns it into DOM). The server decides what is shown inline and what is cut;
 * this never shortens anything itself, and a cut is always visible with a way to see everything.
 */
import type { PermissionItem } from './messages';

export interface PermissionView {
    /** `Allow run_command?` plus what it does (`Run a command`, `Write src/app.py (3 lines, …)`). */
    readonly heading: string;
    /** The text shown inline: all of it, or the head the server chose. */
    readonly body: string;
    /** The visible line saying what is hidden (`… 1,234 more characters — Show all`), if anything is. */
    readonly marker: string | undefined;
    /** Offer the one-click "Show all" (the complete text in a read-only editor). */
    readonly showAll: boolean;
}

export function permissionView(item: PermissionItem): PermissionView {
    const review = item.review;
    if (review === undefined) {
        // A prompt without review details (an older server): say so rather than imply completeness.
        return { heading: `Allow ${item.tool}?`, body: item.summary, marker: undefined, showAll: false };
    }
    return {
        heading: `Allow ${item.tool}? ${review.title}`,
        body: review.preview,
        marker: review.truncated ? (review.marker ?? 'The text is cut here — Show all') : undefined,
        showAll: review.truncated,
    };
}
