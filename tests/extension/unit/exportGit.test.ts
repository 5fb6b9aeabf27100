import * as assert from 'node:assert/strict';
import { defaultBranchName, exportSummary } from '../../../extension/src/commands/exportGit';

suite('export to git wording', () => {
    test('the offered branch is retrace/<first 8 characters of the id>', () => {
        assert.equal(defaultBranchName('2krzq7c4p9f9'), 'retrace/2krzq7c4');
        assert.equal(defaultBranchName('abc'), 'retrace/abc');
    });

    test('the summary names the branch, the short commit, the files and the base', () => {
        const commit = '0094e9abe84572d8b3c4aae74526df008ea22546';
        assert.equal(
            exportSummary({ commit, branch: 'retrace/x', files: 1, base: 'b391a7d26f4b16a34c462deb188e38b5d3ddb386' }),
            'Retrace: branch retrace/x created at 0094e9ab (1 file, on b391a7d2). Your working tree, index and current branch were not touched.',
        );
        assert.match(exportSummary({ commit, branch: 'b', files: 3, base: null }), /3 files, a new root commit/);
    });
});
