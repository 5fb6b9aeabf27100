import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { probe } from '../../../extension/src/client/serverProcess';

const repo = path.join(__dirname, '../../..');

suite('server interpreter probe (real processes)', function () {
    this.timeout(60_000);

    test('the repo venv can run the server', async () => {
        assert.deepEqual(await probe(path.join(repo, '.venv/bin/python')), { ok: true });
    });

    test('a missing interpreter says so', async () => {
        const r = await probe('/nonexistent/bin/python');
        assert.equal(r.ok, false);
        assert.match(r.ok ? '' : r.reason, /does not exist/);
    });

    test('a Python without the server package names the missing module', async () => {
        const r = await probe('/usr/bin/python3');
        assert.equal(r.ok, false);
        assert.match(r.ok ? '' : r.reason, /No module named 'retrace'/);
    });
});
