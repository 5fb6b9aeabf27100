/**
 * Coalesces a streamed item's versions: a growing assistant message is re-rendered (Markdown +
 * sanitize) at most once per interval, the newest version winning, and never loses the last one
 * (a pending version is always rendered: by its timer, or at once by `flush`). Pure: the clock and
 * the timer are injected (tests drive them by hand).
 */
export interface Clock {
    now(): number;
    later(fn: () => void, ms: number): unknown;
    cancel(handle: unknown): void;
}

export class Coalescer<T> {
    private readonly pending = new Map<string, T>();
    private last = Number.NEGATIVE_INFINITY;
    private timer: unknown = undefined;

    constructor(
        private readonly intervalMs: number,
        private readonly clock: Clock,
        private readonly render: (key: string, value: T) => void,
    ) {}

    /** A new version of `key`: rendered now when the last render is an interval old, else later. */
    push(key: string, value: T): void {
        this.pending.set(key, value);
        if (this.timer !== undefined) {
            return;
        }
        const wait = this.last + this.intervalMs - this.clock.now();
        if (wait <= 0) {
            this.flush();
        } else {
            this.timer = this.clock.later(() => {
                this.timer = undefined;
                this.flush();
            }, wait);
        }
    }

    /** Render every pending version now (before anything else is shown after it, or a reset). */
    flush(): void {
        if (this.timer !== undefined) {
            this.clock.cancel(this.timer);
            this.timer = undefined;
        }
        if (this.pending.size === 0) {
            return;
        }
        const items = [...this.pending];
        this.pending.clear();
        this.last = this.clock.now();
        for (const [key, value] of items) {
            this.render(key, value);
        }
    }

    /** Forget pending versions (the log is replaced wholesale). */
    drop(): void {
        if (this.timer !== undefined) {
            this.clock.cancel(this.timer);
            this.timer = undefined;
        }
        this.pending.clear();
    }

    get hasPending(): boolean {
        return this.pending.size > 0;
    }
}
