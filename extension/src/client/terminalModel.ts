/**
 * `retrace` in VS Code's integrated terminal, pure: the launcher file the extension writes and the
 * environment changes its environment collection makes (`terminalHost.ts` is the I/O edge).
 *
 * - The launcher runs the interpreter that runs the extension's server, isolated like the server
 *   (`-I`: nothing in the folder shadows the package), so `retrace` in the terminal is the same
 *   version as the server: `retrace` (POSIX `sh`) or `retrace.cmd` (Windows: cmd and PowerShell
 *   both find it through PATHEXT).
 * - PATH gets the launcher's directory in front; `RETRACE_WORKSPACE_FOLDERS` names the window's
 *   folders (absolute, `path.delimiter`-separated): the command line works on the folder holding
 *   its current directory (`server/retrace/cli/folders.py`), whose store is the one the server
 *   opened for that folder (the same home rule), i.e. what the timeline shows. No store is named:
 *   a `cd` to another folder of the window, or out of them, keeps working.
 */

export const FOLDERS_ENV = 'RETRACE_WORKSPACE_FOLDERS';

export type LauncherPlatform = 'win32' | 'posix';

export interface Launcher {
    /** File name inside the launcher directory. */
    readonly name: string;
    readonly text: string;
    /** POSIX file mode (ignored on Windows). */
    readonly mode: number;
}

export interface EnvChange {
    readonly variable: string;
    readonly op: 'prepend' | 'replace';
    readonly value: string;
}

export function launcherPlatform(platform: string): LauncherPlatform {
    return platform === 'win32' ? 'win32' : 'posix';
}

/** The launcher's file name: `retrace.cmd` on Windows, else `retrace`. */
export function launcherName(platform: LauncherPlatform): string {
    return platform === 'win32' ? 'retrace.cmd' : 'retrace';
}

/** `s` as one POSIX shell word (single quotes; a quote inside closes, escapes and reopens). */
export function shellQuote(s: string): string {
    return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The launcher running `python -I -m retrace <args>`; undefined for a path no script can hold. */
export function launcher(python: string, platform: LauncherPlatform): Launcher | undefined {
    if (python === '' || /[\0\r\n]/.test(python)) {
        return undefined;
    }
    if (platform === 'win32') {
        // A Windows path holds no `"`; `%` is doubled so cmd does not expand it.
        if (python.includes('"')) {
            return undefined;
        }
        const exe = python.replace(/%/g, '%%');
        return { name: launcherName(platform), text: `@echo off\r\nREM Written by the Retrace extension: its server's command line.\r\n"${exe}" -I -m retrace %*\r\n`, mode: 0o644 };
    }
    return {
        name: launcherName(platform),
        text: `#!/bin/sh\n# Written by the Retrace extension: its server's command line.\nexec ${shellQuote(python)} -I -m retrace "$@"\n`,
        mode: 0o755,
    };
}

/** The environment collection's changes: the launcher directory first on PATH, the folders named. */
export function terminalEnv(binDir: string, folders: readonly string[], delimiter: string): EnvChange[] {
    const usable = folders.filter(f => f !== '' && !f.includes(delimiter) && !f.includes('\0'));
    return [
        { variable: 'PATH', op: 'prepend', value: `${binDir}${delimiter}` },
        { variable: FOLDERS_ENV, op: 'replace', value: usable.join(delimiter) },
    ];
}

/** `env` without the terminal's variables (the server never works from a terminal's folders). */
export function withoutTerminalEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    const copy = { ...env };
    delete copy[FOLDERS_ENV];
    return copy;
}
