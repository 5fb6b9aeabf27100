/**
 * Entry point the extension host loads (extensionTestsPath): runs every `*.test.js` next to it
 * with mocha inside the host, where `vscode` is the real API.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

export function run(): Promise<void> {
    const mocha = new Mocha({ ui: 'tdd', color: false, timeout: 90_000 });
    // RETRACE_EXTHOST_SUITE picks the suites of one workbench launch (e.g. `serverDown`).
    const only = process.env['RETRACE_EXTHOST_SUITE'] ?? 'retrace';
    for (const f of fs.readdirSync(__dirname).sort()) {
        if (f === `${only}.test.js`) {
            mocha.addFile(path.join(__dirname, f));
        }
    }
    return new Promise((resolve, reject) => {
        mocha.run(failures => (failures > 0 ? reject(new Error(`${failures} extension-host test(s) failed`)) : resolve()));
    });
}
