/**
 * Bookmarks: "Retrace: Bookmark the Current State…" (the timeline's title button) records a named
 * checkpoint now; "Bookmark This Checkpoint…" on a timeline row names that checkpoint (an empty
 * name removes it). The name is checked by the server (`retrace/bookmark/create`,
 * `retrace/bookmark/name`); a refusal is shown as it words it. A string argument skips the input
 * box (tests, keybindings).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../constants';
import { METHODS, type Checkpoint, type Rpc } from '../client/protocol';
import { prompter } from '../ui';
import { serverCommand, type Registration } from './registry';

export interface BookmarkCommandParts {
    /** The checkpoint of a timeline row command (node, id or the selected row), its folder (a
     * multi-root workspace) and the server naming that folder in every request. */
    readonly rowTarget: (rpc: Rpc, arg: unknown) => Promise<{ readonly cp: Checkpoint; readonly folder: string | undefined; readonly rpc: Rpc }>;
    /** The row's current bookmark name and title, when the timeline shows it. */
    readonly rowOf: (id: string, folder: string | undefined) => { readonly title: string; readonly bookmark?: string | null } | undefined;
    /** Show what changed (the timeline asks the server again). */
    readonly refresh: () => void;
}

async function askName(given: unknown, options: vscode.InputBoxOptions): Promise<string | undefined> {
    return typeof given === 'string' ? given : vscode.window.showInputBox({ ignoreFocusOut: true, ...options });
}

export function bookmarkCommands(parts: BookmarkCommandParts): Registration[] {
    return [bookmarkCurrentState(parts), bookmarkCheckpoint(parts)];
}

function bookmarkCurrentState(parts: BookmarkCommandParts): Registration {
    return serverCommand(COMMANDS.bookmarkCurrentState, rpc => async (given: unknown) => {
        const name = await askName(given, {
            title: vscode.l10n.t('Retrace: Bookmark the Current State'),
            prompt: vscode.l10n.t('A name for the workspace as it is now (it is offered first when you restore)'),
            placeHolder: vscode.l10n.t('e.g. tests pass, before the refactor'),
        });
        if (name === undefined) {
            return undefined;
        }
        const result = await rpc.request(METHODS.bookmarkCreate, { name });
        parts.refresh();
        const message =
            result.checkpoint.meta['duringTurn'] === true
                ? vscode.l10n.t('Retrace: bookmarked “{0}” (an agent is working: the state of its last step).', result.name)
                : vscode.l10n.t('Retrace: bookmarked “{0}”.', result.name);
        void prompter().notify('info', message, []);
        return result;
    });
}

function bookmarkCheckpoint(parts: BookmarkCommandParts): Registration {
    return serverCommand(COMMANDS.bookmarkCheckpoint, server => async (arg: unknown, given: unknown) => {
        const { cp, folder, rpc } = await parts.rowTarget(server, arg);
        const row = parts.rowOf(cp.id, folder);
        const name = await askName(given, {
            title: vscode.l10n.t('Retrace: Bookmark “{0}”', row?.title ?? cp.label),
            prompt: vscode.l10n.t('A name for this checkpoint (empty: remove its name)'),
            value: row?.bookmark ?? '',
        });
        if (name === undefined) {
            return undefined;
        }
        const result = await rpc.request(METHODS.bookmarkName, { checkpointId: cp.id, name });
        parts.refresh();
        return result;
    });
}
