/**
 * Which folder of the workspace the user is working in: the folders on disk (first first) and the
 * file of the active editor. With `followedFolder` (`hunkModel.ts`, pure) the status bar and the
 * change highlights follow the folder of the active editor in a multi-root workspace.
 */
import * as vscode from 'vscode';

/** The workspace's folders on disk, in order (the server opens only those). */
export function folderRoots(): { readonly root: string; readonly name: string }[] {
    return (vscode.workspace.workspaceFolders ?? []).filter(f => f.uri.scheme === 'file').map(f => ({ root: f.uri.fsPath, name: f.name }));
}

/** The active editor's file (a file on disk), if any. */
export function activeFile(): string | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri;
    return uri?.scheme === 'file' ? uri.fsPath : undefined;
}
