// One grammar of the file table on both sides: the same tables, good and bad
// rows, go to the real `install list` (bash, in a copy of scripts/) and to
// components/fileTable.ts; both must accept the same tables with the same
// expansion (globs included) and refuse the same ones naming the same line.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { expandRow, parseFileTable, PARTS } from "../../components/fileTable";

const SCRIPTS = path.resolve(__dirname, "../../scripts");
/** Payload files beside the installer's own, for the globs to find (and skip). */
const EXTRA = ["a.sh", "b.conf", "lib2/x.sh", "lib2/y.conf", "lib2/.hidden.sh", "lib2/sub/z.sh", "d/e/f.txt"];
let dir = "";
let paths: string[] = [];

before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-file-table-"));
    fs.cpSync(SCRIPTS, dir, { recursive: true });
    for (const p of EXTRA) {
        fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
        fs.writeFileSync(path.join(dir, p), "x\n");
    }
    const walk = (rel: string): string[] => fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
        const p = rel === "" ? e.name : `${rel}/${e.name}`;
        return e.isDirectory() ? walk(p) : [p];
    });
    paths = walk("").filter((p) => p !== "files.table").sort();
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** What `install list` says of TABLE: its lines, or its one error line. */
function bashVerdict(table: string): string {
    fs.writeFileSync(path.join(dir, "files.table"), table);
    const r = spawnSync("bash", [path.join(dir, "install"), "list"], {
        encoding: "utf8", timeout: 20_000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
    });
    return r.status === 0 ? r.stdout : `error: ${r.stderr.replace(/^hostguard: /, "").trimEnd()}`;
}

/** The same from the TypeScript parser, in install list's format (parts in order, then rows). */
function tsVerdict(table: string): string {
    let rows;
    try {
        rows = parseFileTable(table);
    } catch (e) {
        return `error: ${(e as Error).message}`;
    }
    return PARTS.flatMap((part) => rows.filter((r) => r.part === part).flatMap((r) => expandRow(r, paths)
        .map((m) => `${part}|${m.path}|${m.destination}|0${r.mode.toString(8)}\n`))).join("");
}

function assertAgree(table: string): void {
    assert.equal(tsVerdict(table), bashVerdict(table), `table ${JSON.stringify(table)}`);
}

const GOOD = [
    "base a.sh /usr/local/lib/hostguard/a.sh 0755\n",
    "# comment\n   # indented comment\n\n\t\nweb a.sh /etc/x/ 0644\n",
    "  web\ta.sh \t /etc/x/  0644  \n",
    "base lib2/*.sh /opt/l/ 0644\n",
    "base lib2/* /opt/l/ 0755\nmonitors d/e/f.txt /etc/f 0644\n",
    "bantool lib2/x* /o/ 0644\nbase b.conf / 0644",
    "web nothing*.sh /o/ 0644\n",
];
const BAD = [
    "base a.sh /x 0600\n", "base a.sh /x 755\n", "base a.sh /x 0755x\n", "webb a.sh /x 0644\n", "base a.sh etc/x 0644\n",
    "base a.sh /x 0644 extra\n", "base a.sh 0644\n", "web a.sh /x 0644\r\n", "base lib2/*.sh /opt/l 0644\n",
    "base li*/x.sh /o/ 0644\n", "base ../a.sh /x 0644\n", "base /a.sh /x 0644\n", "base .hidden /x 0644\n",
    "base a.sh /x 0644 # comment\n", "web\u00a0a.sh /x 0644\n", "base lib2/?.sh /o/ 0644\n", "base lib2/[xy].sh /o/ 0644\n",
    "base a.sh /x y 0644\n", "# fine\nbase a.sh /x 0644\nbad line\n", "base a.sh /x/../y 0644 0644\n", "base lib2/.* /o/ 0644\n",
];

describe("the file table's grammar, bash and TypeScript", () => {
    it("the real scripts/files.table: the same files, destinations and modes", () => {
        const table = fs.readFileSync(path.join(SCRIPTS, "files.table"), "utf8");
        assert.ok(!tsVerdict(table).startsWith("error"), tsVerdict(table));
        assertAgree(table);
    });
    for (const t of GOOD) {
        it(`accepts and expands alike: ${JSON.stringify(t)}`, () => {
            assert.ok(!tsVerdict(t).startsWith("error"), tsVerdict(t));
            assertAgree(t);
        });
    }
    for (const t of BAD) {
        it(`refuses alike, naming the line: ${JSON.stringify(t)}`, () => {
            assert.match(tsVerdict(t), /^error: files\.table:\d+: expected PART SOURCE DESTINATION MODE \(a part of base/);
            assertAgree(t);
        });
    }
    it("agrees on arbitrary lines made of table-like pieces", () => {
        const field = fc.constantFrom("base", "web", "webb", "a.sh", "lib2/*.sh", "lib2/*", "*", "../a.sh", ".h", "x/", "/etc/x",
            "/etc/x/", "/", "etc", "0644", "0755", "0600", "644", "#", "a b", "[x]", "?.sh", "d/e/f.txt", "");
        const blank = fc.constantFrom(" ", "\t", "  ", " \t", "\u00a0", "\r", "");
        const line = fc.tuple(blank, fc.array(fc.tuple(field, blank), { minLength: 0, maxLength: 6 }))
            .map(([lead, parts]) => lead + parts.map(([f, b]) => f + (b === "" ? " " : b)).join(""));
        fc.assert(fc.property(fc.array(line, { minLength: 1, maxLength: 3 }), fc.boolean(), (lines, newline) => {
            assertAgree(lines.join("\n") + (newline ? "\n" : ""));
        }), { numRuns: 80 });
    });
});
