/**
 * `retrace` on PATH in VS Code's integrated terminal (the I/O edge of `terminalModel.ts`).
 *
 * Once the server runs, the launcher of its interpreter is written to `<workspace storage>/bin`
 * (this window's own storage: another window may use another interpreter) and the extension's
 * environment collection puts that directory first on PATH and names the window's folders, so
 * `retrace log` in a terminal lists what the timeline shows. New terminals get it; VS Code marks
 * the ones opened before as needing a relaunch. The collection persists across reloads; at
 * activation it is kept only while its launcher still exists. `retrace.terminal.addToPath: false`
 * clears it. Everything here runs where the extension host runs — with `extensionKind:
 * ["workspace"]`, the machine holding the files, where the terminals run too.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CONFIG_SECTION } from '../constants';
import { errorMessage, log } from '../logging';
import { terminalAddToPath } from '../settings';
import { launcher, launcherName, launcherPlatform, terminalEnv } from './terminalModel';

export const ADD_TO_PATH = 'terminal.addToPath';

export class TerminalCommand implements vscode.Disposable {
    private readonly disposables: vscode.Disposable[] = [];
    private python: string | undefined;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.disposables.push(
            vscode.workspace.onDidChangeWorkspaceFolders(() => void this.apply()),
            vscode.workspace.onDidChangeConfiguration(e => {
                if (e.affectsConfiguration(`${CONFIG_SECTION}.${ADD_TO_PATH}`)) {
                    void this.apply();
                }
            }),
        );
        void this.apply();
    }

    /** Where the launcher lives (this window's storage, else the global one). */
    get binDir(): string {
        return vscode.Uri.joinPath(this.context.storageUri ?? this.context.globalStorageUri, 'bin').fsPath;
    }

    /** The launcher's path (whether or not it was written yet). */
    get launcherPath(): string {
        return path.join(this.binDir, launcherName(launcherPlatform(process.platform)));
    }

    /** The extension's environment collection (global: every folder's terminals). */
    get collection(): vscode.EnvironmentVariableCollection {
        return this.context.environmentVariableCollection;
    }

    /** The server runs on `python`: (re)write its launcher and put it on the terminals' PATH. */
    async serverStarted(python: string): Promise<void> {
        this.python = python;
        await this.apply();
    }

    private async apply(): Promise<void> {
        const collection = this.collection;
        try {
            if (!terminalAddToPath() || !(await this.writeLauncher())) {
                collection.clear();
                return;
            }
            const folders = (vscode.workspace.workspaceFolders ?? []).filter(f => f.uri.scheme === 'file').map(f => f.uri.fsPath);
            collection.description = vscode.l10n.t("Puts the `retrace` command of this window's Retrace server on PATH, working on the folder the terminal is in.");
            for (const change of terminalEnv(this.binDir, folders, path.delimiter)) {
                if (change.op === 'prepend') {
                    collection.prepend(change.variable, change.value);
                } else {
                    collection.replace(change.variable, change.value);
                }
            }
        } catch (err) {
            log.warn(`retrace on the terminal's PATH: ${errorMessage(err)}`);
            collection.clear();
        }
    }

    /** Whether a launcher is in place: written for the running server's interpreter, else one
     * an earlier session wrote (kept until the server starts and rewrites it). */
    private async writeLauncher(): Promise<boolean> {
        const file = this.python === undefined ? undefined : launcher(this.python, launcherPlatform(process.platform));
        if (file === undefined) {
            return fs.access(this.launcherPath).then(
                () => true,
                () => false,
            );
        }
        await fs.mkdir(this.binDir, { recursive: true });
        const target = path.join(this.binDir, file.name);
        const temp = `${target}.${process.pid}.tmp`;
        await fs.writeFile(temp, file.text, { mode: file.mode });
        await fs.chmod(temp, file.mode);
        await fs.rename(temp, target);
        return true;
    }

    dispose(): void {
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
