/**
 * Mocha `--require` hook for the extension unit tests: `require('vscode')` resolves to a small
 * stand-in (only what the modules under test touch at import time or in pure helpers), so view
 * models and command logic run in plain Node. Anything not stood in throws when used, loudly.
 */
import Module from 'node:module';

class EventEmitter<T> {
    private listeners: ((e: T) => void)[] = [];
    readonly event = (listener: (e: T) => void): { dispose(): void } => {
        this.listeners.push(listener);
        return { dispose: () => (this.listeners = this.listeners.filter(l => l !== listener)) };
    };
    fire(e: T): void {
        this.listeners.forEach(l => l(e));
    }
    dispose(): void {
        this.listeners = [];
    }
}

class ThemeIcon {
    constructor(
        readonly id: string,
        readonly color?: ThemeColor,
    ) {}
}
class ThemeColor {
    constructor(readonly id: string) {}
}
class MarkdownString {
    value = '';
    constructor(
        value = '',
        readonly supportThemeIcons = false,
    ) {
        this.value = value;
    }
    appendMarkdown(s: string): this {
        this.value += s;
        return this;
    }
    appendCodeblock(code: string, lang = ''): this {
        this.value += `\n\`\`\`${lang}\n${code}\n\`\`\`\n`;
        return this;
    }
}

/**
 * `vscode.l10n` as VS Code implements it: the loaded bundle's translation of `message` (the
 * message itself without one), `{0}` / `{name}` filled from the arguments. A test sets `bundle`
 * to play a locale.
 */
export const l10n = {
    bundle: undefined as Record<string, string> | undefined,
    t(message: string, ...args: unknown[]): string {
        const text = l10n.bundle?.[message] ?? message;
        const first = args[0];
        const named = args.length === 1 && typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : undefined;
        return text.replace(/\{([^}]+)\}/g, (whole, key: string) => {
            const value = named !== undefined ? named[key] : args[Number(key)];
            return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : whole;
        });
    },
};

const unavailable = new Proxy(
    {},
    {
        get(_target, prop) {
            throw new Error(`vscode stand-in: ${String(prop)} is not available in unit tests`);
        },
    },
);

export const standIn = {
    EventEmitter,
    ThemeIcon,
    ThemeColor,
    MarkdownString,
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    OverviewRulerLane: { Left: 1, Center: 2, Right: 4, Full: 7 },
    l10n,
    window: unavailable,
    workspace: unavailable,
    commands: unavailable,
    languages: unavailable,
    Uri: unavailable,
};

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const mod = Module as unknown as { _load: Load };
const original = mod._load;
mod._load = function load(request: string, parent: unknown, isMain: boolean): unknown {
    return request === 'vscode' ? standIn : original.call(this, request, parent, isMain);
};
