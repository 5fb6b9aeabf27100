/**
 * The extension's one rule for workspace paths (the server's is `engine/workspace.normalize_rel`
 * and `engine/folders.FolderRouter`): a file's path relative to a folder's root, and which folder
 * of a multi-root workspace holds a file. Pure (no `vscode` import; unit-tested directly).
 */

/** `/` or `\`: how the platform separates the parts of an absolute path. */
export type Separator = '/' | '\\';

/** The separator `root` is written with (a drive letter or a backslash: Windows). */
export function separatorOf(root: string): Separator {
    return /^[A-Za-z]:|\\/.test(root) ? '\\' : '/';
}

/**
 * `file` as a `/`-separated path relative to `root` when it lies inside it, else `undefined`
 * (the root itself, a sibling sharing a prefix, `..`). Both are absolute paths; with `\` (Windows)
 * letter case is ignored and the path keeps the file's own spelling.
 */
export function relativeTo(root: string, file: string, sep: Separator = separatorOf(root)): string | undefined {
    const norm = (p: string): string => (sep === '\\' ? p.replace(/\\/g, '/').toLowerCase() : p);
    const base = norm(root).replace(/\/+$/, '');
    const full = norm(file);
    if (!full.startsWith(`${base}/`)) {
        return undefined;
    }
    const rel = (sep === '\\' ? file.replace(/\\/g, '/') : file).slice(base.length + 1);
    const parts = rel.split('/').filter(p => p !== '' && p !== '.');
    return parts.length === 0 || parts.includes('..') ? undefined : parts.join('/');
}

/** Where a file lives in the workspace: `folder` the root of a folder other than the first
 * (`undefined`: the first, as in a workspace of one folder) and the path relative to it. */
export interface FileInFolder {
    readonly folder: string | undefined;
    readonly path: string;
}

/** The folder of `roots` (the workspace's folders, first first) holding `file`: the innermost
 * one, like the server's folder rule; `undefined` outside every folder. */
export function fileInFolders(file: string, roots: readonly string[], sep?: Separator): FileInFolder | undefined {
    let found: FileInFolder | undefined;
    for (const [index, root] of roots.entries()) {
        const path = relativeTo(root, file, sep ?? separatorOf(root));
        if (path !== undefined && (found === undefined || path.length < found.path.length)) {
            found = { folder: index === 0 ? undefined : root, path };
        }
    }
    return found;
}

/** A request's params naming the folder they are about (none: the first folder). */
export function withFolder<P extends object>(params: P, folder: string | undefined): P {
    return folder === undefined ? params : { ...params, folder };
}
