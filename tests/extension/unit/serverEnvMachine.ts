/**
 * A machine in memory for the server-environment tests: files, and processes that answer like uv,
 * pip and Python do (offline, without a Python, with bundled wheels that fit or not, with damaged
 * bundled files), on a Windows layout and a POSIX one.
 */
import { createHash } from 'node:crypto';
import * as nodePath from 'node:path';
import { PROBE_SCRIPT, venvPython, type EnvFailure, type EnvIo, type EnvLayout } from '../../../extension/src/client/serverEnv';
import { ensureManagedEnv, type BuildOptions } from '../../../extension/src/client/serverEnvBuild';
import * as assert from 'node:assert/strict';

export const WIN: EnvLayout = {
    platform: 'win32',
    globalStorage: 'C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\globalStorage\\retrace.retrace',
    extensionRoot: 'C:\\Users\\ada\\.vscode\\extensions\\retrace.retrace-0.2.0-win32-x64',
    version: '0.2.0',
    lockHash: 'abcdef0123456789abcdef',
};
export const LINUX: EnvLayout = {
    platform: 'linux',
    globalStorage: '/home/ada/.config/Code/User/globalStorage/retrace.retrace',
    extensionRoot: '/home/ada/.vscode/extensions/retrace.retrace-0.2.0-linux-x64',
    version: '0.2.0',
    lockHash: 'abcdef0123456789abcdef',
};

/** The providers whose packages the simulated server lacks until their lock is installed (as cloud.py's table). */
export const CLOUD_EXTRAS: readonly string[] = ['bedrock', 'vertex'];

export interface Options {
    readonly uv?: boolean;
    readonly uvFindsPython?: boolean;
    readonly offline?: boolean;
    /** Python on PATH (python3 / py -3) and its version; undefined: none. */
    readonly systemPython?: readonly number[];
    /** The server the wheel installs reports this version (a bad build when it differs). */
    readonly wheelVersion?: string;
    /** The package bundles the locked wheels (for CPython 3.11–3.14). */
    readonly wheels?: boolean;
    /** The bundled wheels do not fit this machine (another Python ABI, another libc). */
    readonly wheelsMisfit?: boolean;
    /** A bundled wheel's bytes differ from the lock's hash. */
    readonly wheelTampered?: boolean;
    /** The bundled uv's bytes differ from the pin in server/bundle.json. */
    readonly uvTampered?: boolean;
    /** No server/bundle.json (a package from before the pin, or a damaged one). */
    readonly noBundleManifest?: boolean;
}

export const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A machine in memory: files, and processes that behave like uv, pip and Python. */
export class Machine implements EnvIo {
    readonly files = new Map<string, { text: string; mtimeMs: number }>();
    readonly calls: { cmd: string; args: readonly string[]; env?: Record<string, string | undefined> | undefined }[] = [];
    readonly logs: string[] = [];
    readonly p: typeof nodePath.posix;

    constructor(
        readonly layout: EnvLayout,
        readonly o: Options = {},
    ) {
        this.p = layout.platform === 'win32' ? nodePath.win32 : nodePath.posix;
        const root = layout.extensionRoot;
        this.put(this.p.join(root, 'server', 'requirements.lock'), 'pygls==2.1.1 --hash=sha256:00\n');
        for (const extra of CLOUD_EXTRAS) {
            this.put(this.p.join(root, 'server', `requirements-${extra}.lock`), `pygls==2.1.1 --hash=sha256:00\n${extra}-sdk==1.0 --hash=sha256:01\n`);
        }
        this.put(this.p.join(root, 'server', `retrace_checkpoints-${layout.version}-py3-none-any.whl`), 'wheel');
        if (o.uv ?? true) {
            const uvFile = layout.platform === 'win32' ? 'uv.exe' : 'uv';
            this.put(this.p.join(root, 'bin', uvFile), o.uvTampered ? 'uv, changed after packaging' : 'uv');
            const bundle = {
                target: layout.platform === 'win32' ? 'win32-x64' : 'linux-x64',
                server: { file: `server/retrace_checkpoints-${layout.version}-py3-none-any.whl`, sha256: sha('wheel') },
                uv: { file: `bin/${uvFile}`, sha256: sha('uv') },
                wheels: o.wheels ? { dir: 'server/wheels', pythons: ['3.11', '3.12', '3.13', '3.14'], count: 62 } : null,
            };
            if (!o.noBundleManifest) {
                this.put(this.p.join(root, 'server', 'bundle.json'), JSON.stringify(bundle));
            }
            if (o.wheels) {
                this.put(this.p.join(root, 'server', 'wheels', 'pygls-2.1.1-py3-none-any.whl'), 'pygls');
            }
        }
    }

    put(p: string, text: string, mtimeMs = 0): void {
        this.files.set(p, { text, mtimeMs });
    }

    private under(p: string): string[] {
        return [...this.files.keys()].filter(k => k === p || k.startsWith(p + this.p.sep));
    }

    run(cmd: string, args: readonly string[], opts: { env?: Record<string, string | undefined> }): Promise<{ code: number; output: string }> {
        this.calls.push({ cmd, args, env: opts.env });
        return Promise.resolve(this.answer(cmd, args));
    }

    private answer(cmd: string, args: readonly string[]): { code: number; output: string } {
        if (args.includes(PROBE_SCRIPT)) {
            return this.probe(cmd, args[args.indexOf(PROBE_SCRIPT) + 1]);
        }
        if (cmd.endsWith('uv') || cmd.endsWith('uv.exe')) {
            return this.uv(args);
        }
        if (args.includes('venv')) {
            const dir = args[args.length - 1] ?? '';
            this.makeVenv(dir, `home = /usr/bin`);
            return { code: 0, output: '' };
        }
        if (args.includes('pip')) {
            return this.pip(this.p.dirname(this.p.dirname(cmd)), args);
        }
        return { code: -2, output: `spawn ${cmd} ENOENT` };
    }

    private makeVenv(dir: string, cfg: string): void {
        this.put(venvPython(dir, this.layout.platform), 'python');
        this.put(this.p.join(dir, 'pyvenv.cfg'), `${cfg}\nversion_info = 3.12.1\n`);
    }

    private uv(args: readonly string[]): { code: number; output: string } {
        if (args[0] === 'venv') {
            const spec = args[args.indexOf('--python') + 1] ?? '';
            const offered = !spec.startsWith('>=');
            if (!offered && !(this.o.uvFindsPython ?? true)) {
                return this.o.offline
                    ? { code: 2, output: 'error: Failed to download https://github.com/astral-sh/python-build-standalone/...\n  Caused by: dns error' }
                    : { code: 2, output: 'error: No interpreter found for Python >=3.11 in managed installations or search path' };
            }
            this.makeVenv(args[args.length - 1] ?? '', `home = ${offered ? spec : 'C:\\Python312'}`);
            return { code: 0, output: 'Using CPython 3.12.1\nCreating virtual environment' };
        }
        const py = args[args.indexOf('--python') + 1] ?? '';
        return this.pip(this.p.dirname(this.p.dirname(py)), args);
    }

    private pip(dir: string, args: readonly string[]): { code: number; output: string } {
        if (args.includes('--no-index')) {
            const links = args[args.indexOf('--find-links') + 1] ?? '';
            if (!this.files.has(this.p.join(links, 'pygls-2.1.1-py3-none-any.whl'))) {
                return { code: 2, output: `error: --find-links ${links} does not exist` };
            }
            if (this.o.wheelTampered && args.includes('--require-hashes')) {
                return { code: 1, output: 'error: Hash mismatch for `pygls==2.1.1`\n  Expected: sha256:00\n  Computed: sha256:11' };
            }
            if (this.o.wheelsMisfit && args.includes('--require-hashes')) {
                return { code: 1, output: 'error: Because pydantic-core==2.50.5 has no wheels with a matching Python ABI tag (e.g., `cp315`) and you require pydantic-core==2.50.5, we can conclude that your requirements are unsatisfiable.' };
            }
        }
        if (args.includes('--require-hashes')) {
            if (this.o.offline && !args.includes('--no-index')) {
                return { code: 2, output: 'error: Failed to fetch: `https://pypi.org/simple/pygls/`\n  Caused by: tcp connect error' };
            }
            const extra = /requirements-([a-z]+)\.lock$/.exec(args[args.indexOf('-r') + 1] ?? '')?.[1];
            this.put(this.p.join(dir, extra === undefined ? 'deps-installed' : `extra-${extra}`), 'yes');
            return { code: 0, output: 'Installed 26 packages' };
        }
        this.put(this.p.join(dir, 'retrace-installed'), this.o.wheelVersion ?? this.layout.version);
        return { code: 0, output: 'Installed 1 package' };
    }

    private probe(cmd: string, provider: string | undefined): { code: number; output: string } {
        const isVenv = this.files.has(cmd);
        if (isVenv) {
            const dir = this.p.dirname(this.p.dirname(cmd));
            const version = this.files.get(this.p.join(dir, 'retrace-installed'))?.text;
            const deps = this.files.has(this.p.join(dir, 'deps-installed'));
            const lacks = provider !== undefined && CLOUD_EXTRAS.includes(provider) && !this.files.has(this.p.join(dir, `extra-${provider}`));
            const extra = provider === undefined ? {} : { missingExtra: lacks ? provider : null };
            const r = version !== undefined && deps ? { python: [3, 12, 1], executable: cmd, retrace: version, ...extra } : { python: [3, 12, 1], executable: cmd, error: "ModuleNotFoundError: No module named 'retrace'" };
            return { code: 0, output: JSON.stringify(r) };
        }
        const system = this.o.systemPython;
        if (system !== undefined && (cmd === 'python3' || cmd === 'py' || cmd === '/opt/offered/python')) {
            return { code: 0, output: JSON.stringify({ python: system, executable: `/usr/bin/${cmd}`, error: "ModuleNotFoundError: No module named 'retrace'" }) };
        }
        return { code: -2, output: `spawn ${cmd} ENOENT` };
    }

    exists(p: string): Promise<boolean> {
        return Promise.resolve(this.under(p).length > 0);
    }
    readText(p: string): Promise<string | undefined> {
        return Promise.resolve(this.files.get(p)?.text);
    }
    writeText(p: string, text: string): Promise<void> {
        this.put(p, text);
        return Promise.resolve();
    }
    mkdirp(): Promise<void> {
        return Promise.resolve();
    }
    list(dir: string): Promise<{ name: string; mtimeMs: number }[]> {
        const out = new Map<string, number>();
        for (const [k, v] of this.files) {
            if (k.startsWith(dir + this.p.sep)) {
                const name = k.slice(dir.length + 1).split(this.p.sep)[0] ?? '';
                out.set(name, Math.max(out.get(name) ?? 0, v.mtimeMs));
            }
        }
        return Promise.resolve([...out].map(([name, mtimeMs]) => ({ name, mtimeMs })));
    }
    remove(p: string): Promise<void> {
        for (const k of this.under(p)) {
            this.files.delete(k);
        }
        return Promise.resolve();
    }
    rename(from: string, to: string): Promise<void> {
        if (this.under(to).length > 0) {
            return Promise.reject(new Error(`EEXIST: ${to}`));
        }
        for (const k of this.under(from)) {
            const v = this.files.get(k);
            this.files.delete(k);
            if (v !== undefined) {
                this.files.set(to + k.slice(from.length), v);
            }
        }
        return Promise.resolve();
    }
    sha256(p: string): Promise<string | undefined> {
        const f = this.files.get(p);
        return Promise.resolve(f === undefined ? undefined : sha(f.text));
    }
    log(message: string): void {
        this.logs.push(message);
    }
    progress(): void {}

    count(pred: (c: { cmd: string; args: readonly string[] }) => boolean): number {
        return this.calls.filter(pred).length;
    }
    venvBuilds(): number {
        return this.count(c => c.args.includes('venv'));
    }
}

export function ensure(m: Machine, offered?: string, extra: Partial<BuildOptions> = {}): ReturnType<typeof ensureManagedEnv> {
    return ensureManagedEnv(m, { layout: m.layout, baseEnv: { PATH: '/usr/bin', PYTHONPATH: '/evil' }, offeredPython: () => Promise.resolve(offered), now: () => 100_000_000, pid: 42, ...extra });
}

export function failureOf(r: Awaited<ReturnType<typeof ensureManagedEnv>>): EnvFailure {
    assert.ok('failure' in r, `expected a failure, got ${JSON.stringify(r)}`);
    return r.failure;
}

