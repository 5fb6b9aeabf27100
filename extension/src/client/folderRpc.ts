/**
 * Requests about one folder of a multi-root workspace. The server keeps one store per folder and
 * routes a request by its `folder` (a root; `server/retrace/lsp/folders.py`): `inFolderRpc`
 * names the folder in every request sent through it, so a timeline row's every action (its diff,
 * its hover, a restore with its dry run, a bookmark, an export) reaches the row's own store.
 * `undefined` (a workspace of one folder): the Rpc itself, requests exactly as always.
 */
import { Rpc, type ClientRequest, type RequestParams, type RequestResult } from './protocol';

class FolderRpc extends Rpc {
    constructor(
        readonly inner: Rpc,
        readonly folder: string,
    ) {
        super(inner.client);
    }

    override request<M extends ClientRequest>(method: M, params: RequestParams[M]): Promise<RequestResult[M]> {
        return this.inner.request(method, { ...params, folder: this.folder });
    }

    /** Closing is the server's: the inner Rpc fails what waits (this one holds nothing). */
    override close(reason: string): void {
        this.inner.close(reason);
    }
}

/** `rpc` with every request naming the folder at `root` (undefined: `rpc` as it is). */
export function inFolderRpc(rpc: Rpc, root: string | undefined): Rpc {
    if (root === undefined) {
        return rpc;
    }
    return new FolderRpc(rpc instanceof FolderRpc ? rpc.inner : rpc, root);
}
