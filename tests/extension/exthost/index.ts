/**
 * Entry point the extension host loads (extensionTestsPath): runs every `*.test.js` next to it
 * with mocha inside the host, where `vscode` is the real API.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

export function run(): Promise<void> {
    const mocha = new Mocha({ ui: 'tdd', color: false, timeout: 90_000 });
    for (const f of fs.readdirSync(__dirname).sort()) {
        if (f.endsWith('.test.js')) {
            mocha.addFile(path.join(__dirname, f));
        }
    }
    return new Promise((resolve, reject) => {
        mocha.run(failures => (failures > 0 ? reject(new Error(`${failures} extension-host test(s) failed`)) : resolve()));
    });
}
