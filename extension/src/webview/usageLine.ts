/**
 * The line under a finished turn: its tokens and cost, e.g. `12.3k in (10.1k cached) · 850 out ·
 * $0.012`. The numbers are the server's (`usage` events' `turn`, the conversation's `turnUsage`);
 * this only words them. Pure. "in" counts every input token (uncached, cache writes, cache reads).
 * A provider without prices (`costUnknown`: a local model, the editor's language models) shows
 * "cost unknown", never a number: the known part of the sum would read as the whole.
 */
import { fmt, S } from './strings';
export interface TurnUsage {
    readonly inputTokens: number;
    readonly outputTokens: number;
    readonly cacheCreationInputTokens: number;
    readonly cacheReadInputTokens: number;
    readonly costUsd: number;
    /** Some call's price is not known: `costUsd` is only a lower bound and is not shown. */
    readonly costUnknown?: boolean;
}

/** 850, 12.3k, 1.2M. */
export function compactCount(n: number): string {
    if (n < 1000) {
        return String(Math.round(n));
    }
    if (n < 1_000_000) {
        return `${trim((n / 1000).toFixed(n < 10_000 ? 2 : 1))}k`;
    }
    return `${trim((n / 1_000_000).toFixed(n < 10_000_000 ? 2 : 1))}M`;
}

function trim(fixed: string): string {
    return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

/** $0.012, $1.23, <$0.001. */
export function compactCost(usd: number): string {
    if (usd <= 0) {
        return '$0';
    }
    if (usd < 0.001) {
        return '<$0.001';
    }
    return usd < 1 ? `$${trim(usd.toFixed(3))}` : `$${usd.toFixed(2)}`;
}

/** The cost slot of the line: the price, or "cost unknown" (`spoken`: the word for "unknown" after "cost"). */
function costText(u: TurnUsage, spoken: boolean): string {
    if (u.costUnknown === true) {
        return spoken ? S.costUnknownSpoken : S.costUnknown;
    }
    return compactCost(u.costUsd);
}

export function usageLine(u: TurnUsage): string {
    const input = u.inputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens;
    return u.cacheReadInputTokens > 0
        ? fmt(S.usageLineCached, compactCount(input), compactCount(u.cacheReadInputTokens), compactCount(u.outputTokens), costText(u, false))
        : fmt(S.usageLine, compactCount(input), compactCount(u.outputTokens), costText(u, false));
}

/** What a screen reader hears for it (no abbreviations). */
export function usageSpoken(u: TurnUsage): string {
    const input = u.inputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens;
    return fmt(S.usageSpoken, input.toLocaleString('en-US'), u.cacheReadInputTokens.toLocaleString('en-US'), u.outputTokens.toLocaleString('en-US'), costText(u, true));
}
