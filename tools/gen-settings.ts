// `npm run settings:gen`: writes what components/settings.ts generates into
// the files that must agree with it: the host agent's block in
// scripts/hostguard/settings_table.py and the settings tables of README.md
// and scripts/README.md; and the file table's grammar (components/fileTable.ts)
// into its block of settings_table.py; the chat formats' table (components/chatFormats.ts)
// into scripts/hostguard/format_table.py. `--check` only reports files that differ (exit 1);
// test/unit/settings.test.ts runs the same comparison.
import * as fs from "node:fs";
import * as path from "node:path";
import { FORMATS_BLOCK_BEGIN, FORMATS_BLOCK_END, renderPythonFormatsBlock } from "../components/chatFormats";
import { FILE_TABLE_BLOCK_BEGIN, FILE_TABLE_BLOCK_END, renderPythonFileTableBlock } from "../components/fileTable";
import {
    PY_BLOCK_BEGIN, PY_BLOCK_END, README_BEGIN, README_END, renderConfigReadmeTable,
    renderHostReadmeTable, renderPythonSettingsBlock, renderStackKeysReadmeTable, replaceBlock, STACK_README_BEGIN, STACK_README_END,
} from "../components/settings";

export const ROOT = path.resolve(__dirname, "..");

/** Each generated file with the content it must have. */
export function generatedFiles(root: string = ROOT): Array<{ file: string; current: string; wanted: string }> {
    const targets: Array<[string, string, string, string]> = [
        ["scripts/hostguard/settings_table.py", PY_BLOCK_BEGIN, PY_BLOCK_END, renderPythonSettingsBlock()],
        ["scripts/hostguard/settings_table.py", FILE_TABLE_BLOCK_BEGIN, FILE_TABLE_BLOCK_END, renderPythonFileTableBlock()],
        ["scripts/hostguard/format_table.py", FORMATS_BLOCK_BEGIN, FORMATS_BLOCK_END, renderPythonFormatsBlock()],
        ["README.md", README_BEGIN, README_END, renderConfigReadmeTable()],
        ["README.md", STACK_README_BEGIN, STACK_README_END, renderStackKeysReadmeTable()],
        ["scripts/README.md", README_BEGIN, README_END, renderHostReadmeTable()],
    ];
    // A file with two blocks (README.md, settings_table.py) gets both replaced in one text.
    const files = [...new Set(targets.map(([rel]) => rel))];
    return files.map((rel) => {
        const current = fs.readFileSync(path.join(root, rel), "utf8");
        const wanted = targets.filter(([r]) => r === rel).reduce((doc, [, begin, end, block]) => replaceBlock(doc, begin, end, block), current);
        return { file: rel, current, wanted };
    });
}

function main(): void {
    const check = process.argv.includes("--check");
    let stale = 0;
    for (const g of generatedFiles()) {
        if (g.current === g.wanted) {
            continue;
        }
        stale++;
        if (check) {
            console.error(`settings:gen: ${g.file} differs from components/settings.ts`);
        } else {
            fs.writeFileSync(path.join(ROOT, g.file), g.wanted);
            console.log(`settings:gen: wrote ${g.file}`);
        }
    }
    process.exit(check && stale > 0 ? 1 : 0);
}

if (require.main === module) {
    main();
}
