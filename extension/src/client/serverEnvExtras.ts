/**
 * The optional packages a model provider needs (Amazon Bedrock: boto3; Vertex AI: google-auth),
 * installed into the managed server environment when `retrace.model.provider` names that provider.
 *
 * Contracts:
 * - Which provider needs which extra is the server's knowledge (`retrace.agent.model.cloud`,
 *   matching pyproject's extras): the probe, given the provider, reports the extra this Python
 *   lacks (`missingExtra`, see serverEnv.ts `PROBE_SCRIPT`). Nothing here lists providers.
 * - What is installed is exactly `server/requirements-<extra>.lock` (written by scripts/lock.sh:
 *   the extra's whole set, hash-pinned, constrained to requirements.lock so nothing already
 *   installed changes), with `--require-hashes`; through the bundled uv when it is the pinned one,
 *   else through the environment's own pip. The index is used as the user configured it (these
 *   providers are reached over the network anyway); the log says what is fetched from where.
 * - A failure never stops the server: it starts without the provider, whose requests then say
 *   what is missing and which command tries again.
 */
import { ENGLISH, classifyBuildFailure, pathFor, uvEnv, type EnvFailure, type EnvIo, type EnvLayout } from './serverEnv';
import { DEFAULT_NETWORK, describeDownload, lockedPins, networkEnv, type NetworkSettings } from './serverEnvNet';

const EXTRA_NAME = /^[a-z][a-z0-9-]{0,31}$/;
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** The extra's hash-pinned lock inside the extension, or undefined for a name that is not one. */
export function extraLockFile(layout: EnvLayout, extra: string): string | undefined {
    return EXTRA_NAME.test(extra) ? pathFor(layout.platform).join(layout.extensionRoot, 'server', `requirements-${extra}.lock`) : undefined;
}

export interface ExtraInstall {
    readonly cmd: string;
    readonly args: readonly string[];
    readonly env: Record<string, string | undefined>;
}

/** The command line that installs `lock` into the environment of `python` (uv when given, else its pip). */
export function extraInstallCommand(
    layout: EnvLayout,
    python: string,
    lock: string,
    uv: string | undefined,
    baseEnv: Readonly<Record<string, string | undefined>>,
    network: NetworkSettings = DEFAULT_NETWORK,
): ExtraInstall {
    const net = networkEnv(baseEnv, network);
    const pinned = ['--require-hashes', '-r', lock];
    if (uv !== undefined) {
        return { cmd: uv, args: ['pip', 'install', '--python', python, ...pinned], env: uvEnv(layout, net) };
    }
    return {
        cmd: python,
        args: ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', ...pinned],
        env: { ...net, PYTHONPATH: undefined, PYTHONHOME: undefined, VIRTUAL_ENV: undefined, PIP_REQUIRE_VIRTUALENV: undefined },
    };
}

export interface ExtraOptions {
    readonly layout: EnvLayout;
    readonly baseEnv: Readonly<Record<string, string | undefined>>;
    readonly network?: NetworkSettings | undefined;
    /** The bundled uv when it passed its hash check, else undefined (pip is used). */
    readonly uv: string | undefined;
}

/** Install what `extra` needs into the environment of `python`; a failure, or undefined when installed. */
export async function installExtra(io: EnvIo, opts: ExtraOptions, python: string, extra: string): Promise<EnvFailure | undefined> {
    const lock = extraLockFile(opts.layout, extra);
    const text = lock === undefined ? undefined : await io.readText(lock);
    if (lock === undefined || text === undefined) {
        return { kind: 'install-failed', detail: `this copy of the extension ships no lock for the ${extra} provider's packages (${lock ?? extra})` };
    }
    const install = extraInstallCommand(opts.layout, python, lock, opts.uv, opts.baseEnv, opts.network);
    const l10n = io.l10n ?? ENGLISH;
    io.progress(l10n.t("installing the {0} provider's packages", extra));
    io.log(`the ${extra} provider needs packages the server environment does not have: installing ${lock}`);
    io.log(describeDownload('packages', install.env));
    io.log(`the locked set (${lockedPins(text).length} pins; those not installed yet are fetched): ${lockedPins(text).join(' ')}`);
    io.log(`${install.cmd} ${install.args.join(' ')}`);
    const r = await io.run(install.cmd, install.args, { env: install.env, cwd: opts.layout.globalStorage, timeoutMs: INSTALL_TIMEOUT_MS });
    io.log(r.output);
    return r.code === 0 ? undefined : classifyBuildFailure(`installing the ${extra} provider's packages failed (exit ${r.code}): ${r.output}`);
}
