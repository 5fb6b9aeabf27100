/**
 * What the timeline knows of subagents, as the server last said it: the children of sessions
 * (`retrace/tasks/list`: state now, including children that never got a parent checkpoint, e.g.
 * cut off by a crash) and the own timelines of the children the user opened
 * (`retrace/timeline/tree` with `task`). Asked on demand; the timeline provider renders them.
 *
 * `tasks/list` reads the session's journal, so it is not asked on every refresh: only for sessions
 * showing `task` rows, and once per connection for the session in focus (where a crash leaves an
 * interrupted child without a row).
 */
import { METHODS, type Rpc, type TaskRef, type TaskView, type TimelineTreeResult } from '../../../client/protocol';
import { errorMessage, log } from '../../../logging';
import { taskKey } from '../../models/taskModel';

export class Subagents {
    /** Loaded child timelines by `taskKey`. */
    readonly trees = new Map<string, TimelineTreeResult>();
    /** `tasks/list` answers by `taskKey`. */
    readonly views = new Map<string, TaskView>();
    /** Sessions listed on this connection. */
    private readonly listed = new Set<string>();
    private rpcSeen: Rpc | undefined;

    constructor(
        private readonly rpc: () => Rpc | undefined,
        private readonly maxRows: number,
    ) {}

    private current(): Rpc | undefined {
        const rpc = this.rpc();
        if (rpc !== this.rpcSeen) {
            this.rpcSeen = rpc; // a new server: what the old one said may have moved (crash resume)
            this.listed.clear();
        }
        return rpc;
    }

    isOpen(ref: TaskRef): boolean {
        return this.trees.has(taskKey(ref));
    }

    /** Fetch a child's own timeline; an unavailable one (discarded) is forgotten. */
    async loadTree(ref: TaskRef): Promise<void> {
        const rpc = this.current();
        if (rpc === undefined) {
            return;
        }
        try {
            const started = Date.now();
            const tree = await rpc.request(METHODS.timelineTree, { task: ref, maxRows: this.maxRows });
            log.info(`subagent ${ref.taskId} timeline: ${tree.sessions.reduce((n, s) => n + s.rowCount, 0)} rows, ${Date.now() - started} ms`);
            this.trees.set(taskKey(ref), tree);
        } catch (err) {
            log.warn(`subagent ${ref.taskId} timeline unavailable: ${errorMessage(err)}`);
            this.trees.delete(taskKey(ref));
        }
    }

    forget(ref: TaskRef): void {
        this.trees.delete(taskKey(ref));
    }

    /** Ask for the children of `sessionIds` (and of `once`, unless listed on this connection);
     * resolves to whether anything the timeline shows moved. */
    async list(sessionIds: readonly string[], once: readonly string[] = []): Promise<boolean> {
        const rpc = this.current();
        if (rpc === undefined) {
            return false;
        }
        const asked = [...new Set([...sessionIds, ...once.filter(s => !this.listed.has(s))])];
        const before = JSON.stringify([...this.views]);
        await Promise.all(
            asked.map(async sessionId => {
                try {
                    const { tasks } = await rpc.request(METHODS.tasksList, { sessionId });
                    this.listed.add(sessionId);
                    for (const t of tasks) {
                        this.views.set(taskKey({ sessionId, taskId: t.taskId }), t);
                    }
                } catch (err) {
                    log.debug(`subagents of ${sessionId} not listed: ${errorMessage(err)}`);
                }
            }),
        );
        return JSON.stringify([...this.views]) !== before;
    }
}
