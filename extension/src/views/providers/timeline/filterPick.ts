/**
 * "Filter the Retrace timeline by…": the questions (tool, path, text or bookmarks) that make a
 * `TimelineFilter`. The server decides which rows match; the view shows its answer.
 */
import * as vscode from 'vscode';
import type { TimelineFilter } from '../../../client/protocol';
import { activeFile, folderRoots } from '../../../diff/editorFolder';
import { fileInFolders } from '../../../paths';

const TOOLS = ['edit_file', 'write_file', 'run_command', 'read_file', 'list_files', 'search_text'];

/** Ask what to filter by; undefined when the user cancelled. */
export async function pickFilter(): Promise<TimelineFilter | undefined> {
    const by = await vscode.window.showQuickPick(
        [
            { label: vscode.l10n.t('Tool'), description: vscode.l10n.t('checkpoints of one tool'), by: 'tool' as const },
            { label: vscode.l10n.t('Path'), description: vscode.l10n.t('checkpoints that changed a matching path'), by: 'path' as const },
            { label: vscode.l10n.t('Text'), description: vscode.l10n.t('titles, changes and prompts containing the text'), by: 'text' as const },
            { label: vscode.l10n.t('Bookmarks'), description: vscode.l10n.t('named checkpoints only'), by: 'bookmarks' as const },
        ],
        { title: vscode.l10n.t('Filter the Retrace timeline by') },
    );
    if (by === undefined) {
        return undefined;
    }
    if (by.by === 'bookmarks') {
        return { bookmarks: true };
    }
    const value =
        by.by === 'tool'
            ? await vscode.window.showQuickPick(TOOLS, { title: vscode.l10n.t('Tool') })
            : await vscode.window.showInputBox({
                  title: by.by === 'path' ? vscode.l10n.t('Path contains') : vscode.l10n.t('Text contains'),
                  value: by.by === 'path' ? activePath() : '',
              });
    if (value === undefined || value === '') {
        return undefined;
    }
    return { [by.by]: value };
}

/** The active editor's file relative to its folder (the one path rule, `paths.ts`); '' outside. */
function activePath(): string {
    const file = activeFile();
    return file === undefined ? '' : (fileInFolders(file, folderRoots().map(f => f.root))?.path ?? '');
}
