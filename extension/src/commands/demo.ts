/**
 * "Retrace: Try the Demo": a fresh scratch copy of the sample project shipped in the .vsix
 * (extension/media/demo-workspace) under globalStorage/demo/<n>, marked as a demo folder (the only
 * kind of folder where the server's scripted offline model answers), opened in a new window.
 * The user's own folders are never used for the demo.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { DEMO_MARKER } from '../constants';

/** The next unused numeric folder name among `existing` (1, 2, …). */
export function nextDemoName(existing: readonly string[]): string {
    const used = existing.filter(n => /^\d+$/.test(n)).map(Number);
    return String(used.length === 0 ? 1 : Math.max(...used) + 1);
}

/** Copy `source` into a new numbered folder below `base` and mark it; returns its path. */
export async function createDemoFolder(source: string, base: string, now: Date = new Date()): Promise<string> {
    await fs.mkdir(base, { recursive: true });
    for (;;) {
        const target = path.join(base, nextDemoName(await fs.readdir(base)));
        try {
            await fs.mkdir(target); // fails if another window took the same number meanwhile
        } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
                continue;
            }
            throw err;
        }
        await fs.cp(source, target, { recursive: true });
        const marker = { demo: true, createdBy: 'Retrace: Try the Demo', createdAt: now.toISOString() };
        await fs.writeFile(path.join(target, DEMO_MARKER), `${JSON.stringify(marker, null, 2)}\n`, 'utf8');
        return target;
    }
}

/** Whether `folder` is a demo folder (its root holds the marker). */
export async function isDemoFolder(folder: string): Promise<boolean> {
    try {
        return (await fs.stat(path.join(folder, DEMO_MARKER))).isFile();
    } catch {
        return false;
    }
}

/**
 * Whether a Retrace store at `storeDir` holds sessions (a few stats, no server): a window whose
 * workspace already used Retrace starts the server at once, any other window waits until
 * Retrace is opened.
 */
export async function storeHasSessions(storeDir: string): Promise<boolean> {
    try {
        const entries = await fs.readdir(path.join(storeDir, 'sessions'), { withFileTypes: true });
        return entries.some(e => e.isDirectory());
    } catch {
        return false;
    }
}

/** Whether any of `storeDirs` holds sessions (see `storeHasSessions`). */
export async function anyStoreHasSessions(storeDirs: readonly string[]): Promise<boolean> {
    for (const dir of storeDirs) {
        if (await storeHasSessions(dir)) {
            return true;
        }
    }
    return false;
}
