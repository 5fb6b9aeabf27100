/**
 * Retrace works where the files are: the server is a process on the machine of the extension host
 * (`extensionKind: ["workspace"]`: with Remote-SSH, WSL, Dev Containers, Codespaces or code-server
 * that is the remote machine) and opens the folder by its local path there. A folder the extension
 * host sees with a `file` URI is such a path; any other scheme (a virtual file system such as
 * GitHub Repositories' `vscode-vfs:`, an in-memory or FTP folder) is not a disk path of that
 * machine, and is refused with one clear sentence instead of handing the server a path it cannot
 * open.
 */
import * as vscode from 'vscode';

/** Why the server cannot open `uri` as its workspace; undefined for a local folder. */
export function localFolderProblem(uri: vscode.Uri): string | undefined {
    if (uri.scheme === 'file') {
        return undefined;
    }
    return vscode.l10n.t(
        'Retrace needs a folder on the disk of the machine the extension runs on, and {0} is a "{1}:" folder (a virtual or remote file system): open a local folder, or the folder through Remote-SSH, WSL, a Dev Container or Codespaces.',
        uri.toString(true),
        uri.scheme,
    );
}
