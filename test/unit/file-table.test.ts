// One grammar of the file table. A bundle carries the table expanded (one row
// per file, no glob, no folder), and that is all `install` reads: the same
// tables, good and bad rows, go to the real `install list` (the Python
// installer behind its shim, in a copy of scripts/) and to parseExpandedTable; both must accept the same tables
// with the same rows and refuse the same ones naming the same line. The
// source table (scripts/files.table, with globs) is read by the renderer
// only; its expansion is checked here against a folder of known files, and
// the table a rendered bundle carries against what `install list` reads.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { readPayload, renderHost } from "../../components/bundles";
import { expandRow, FILE_TABLE, parseExpandedTable, parseFileTable, PARTS } from "../../components/fileTable";
import { DEFAULT_SETTINGS } from "../../components/settings";

const SCRIPTS = path.resolve(__dirname, "../../scripts");
/** Payload files beside the installer's own, for the globs to find (and skip). */
const EXTRA = ["a.sh", "b.conf", "lib2/x.sh", "lib2/y.conf", "lib2/.hidden.sh", "lib2/sub/z.sh", "d/e/f.txt"];
let dir = "";

before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-file-table-"));
    fs.cpSync(SCRIPTS, dir, { recursive: true });
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** What `install list` says of TABLE (the bundle's table beside it): its lines, or its one error line. */
function installVerdict(table: string, installDir = dir): string {
    fs.writeFileSync(path.join(installDir, FILE_TABLE), table);
    const r = spawnSync(path.join(installDir, "install"), ["list"], {
        encoding: "utf8", timeout: 20_000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
    });
    return r.status === 0 ? r.stdout : `error: ${r.stderr.replace(/^hostguard: /, "").trimEnd()}`;
}

/** The same from the TypeScript parser, in install list's format (parts in order, then rows). */
function tsVerdict(table: string): string {
    let rows;
    try {
        rows = parseExpandedTable(table);
    } catch (e) {
        return `error: ${(e as Error).message}`;
    }
    return PARTS.flatMap((part) => rows.filter((r) => r.part === part)
        .map((r) => `${part}|${r.source}|${r.destination}|0${r.mode.toString(8)}\n`)).join("");
}

function assertAgree(table: string): void {
    assert.equal(tsVerdict(table), installVerdict(table), `table ${JSON.stringify(table)}`);
}

const GOOD = [
    "base a.sh /usr/local/lib/hostguard/a.sh 0755\n",
    "# comment\n   # indented comment\n\n\t\nweb a.sh /etc/x/a 0644\n",
    "  web\ta.sh \t /etc/x/.a  0644  \n",
    "monitors d/e/f.txt /etc/f 0644\nbase lib2/x.sh /opt/l/x.sh 0644",
    "bantool b.conf /etc/...b 0644\nbase a.sh /a 0755\nweb a.sh /x/a..b/c 0644\n",
];
const BAD = [
    "base a.sh /x 0600\n", "base a.sh /x 755\n", "base a.sh /x 0755x\n", "webb a.sh /x 0644\n", "base a.sh etc/x 0644\n",
    "base a.sh /x 0644 extra\n", "base a.sh 0644\n", "web a.sh /x 0644\r\n", "base a.sh / 0644\n",
    "base ../a.sh /x 0644\n", "base /a.sh /x 0644\n", "base .hidden /x 0644\n", "base a.sh /x 0644 # comment\n",
    "web\u00a0a.sh /x 0644\n", "base a.sh /x y 0644\n", "# fine\nbase a.sh /x 0644\nbad line\n",
    // What only the source table may hold: a glob, a destination folder.
    "base lib2/*.sh /opt/l/ 0644\n", "base lib2/x.sh /opt/l/ 0644\n", "base a.sh /x/ 0644\n", "base lib2/* /o/x 0644\n",
    // A destination through . or ..
    "base a.sh /x/../y 0644\n", "base a.sh /x/./y 0644\n", "base a.sh /x/.. 0644\n", "base a.sh /. 0644\n",
];

describe("the bundle's (expanded) file table: the installer and TypeScript read it alike", () => {
    for (const t of GOOD) {
        it(`accepts alike: ${JSON.stringify(t)}`, () => {
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
            "/etc/x/", "/", "/..", "/a/../b", "/.a", "etc", "0644", "0755", "0600", "644", "#", "a b", "[x]", "?.sh", "d/e/f.txt", "");
        const blank = fc.constantFrom(" ", "\t", "  ", " \t", "\u00a0", "\r", "");
        const line = fc.tuple(blank, fc.array(fc.tuple(field, blank), { minLength: 0, maxLength: 6 }))
            .map(([lead, parts]) => lead + parts.map(([f, b]) => f + (b === "" ? " " : b)).join(""));
        fc.assert(fc.property(fc.array(line, { minLength: 1, maxLength: 3 }), fc.boolean(), (lines, newline) => {
            assertAgree(lines.join("\n") + (newline ? "\n" : ""));
        }), { numRuns: 80 });
    });
    it("the table a rendered bundle carries: install reads every file the renderer ships, where it ships it", () => {
        const { files, bundles } = renderHost(DEFAULT_SETTINGS, readPayload());
        const base = bundles.find((b) => b.part === "base")!;
        const table = base.files.find((f) => f.path === FILE_TABLE)!.content.toString("utf8");
        for (const b of bundles) {
            assert.equal(b.files.find((f) => f.path === FILE_TABLE)?.content.toString("utf8"), table, `${b.part} carries the same table`);
        }
        const want = PARTS.flatMap((part) => files.filter((f) => f.part === part)
            .map((f) => `${part}|${f.path}|${f.destination}|0${f.mode.toString(8)}\n`)).join("");
        assert.equal(installVerdict(table), want);
        assert.equal(tsVerdict(table), want);
        assert.ok(!/[*]/.test(table.replace(/^#.*$/gm, "")), "no glob left");
        assert.match(want, /^base\|hostguard\.conf\|\/etc\/hostguard\/hostguard\.conf\|0644$/m, "the settings file is a row of base");
    });
    it("the settings row lands where the host's programs read their settings (hostguard/paths.py's SETTINGS_PATH)", () => {
        const r = spawnSync("python3", ["-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); from hostguard import paths; print(paths.SETTINGS_PATH, end='')", SCRIPTS], { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        const { files } = renderHost(DEFAULT_SETTINGS, readPayload(), { cronMinute: 3 });
        assert.deepEqual(files.filter((f) => f.path === "hostguard.conf").map((f) => `${f.part} ${f.destination}`), [`base ${r.stdout}`]);
    });
});

describe("the source table (scripts/files.table): parsed and expanded by the renderer", () => {
    const paths = ["files.table", "install", "hostguard/paths.py", ...EXTRA].sort();
    const expand = (t: string): string[] => parseFileTable(t).flatMap((r) => expandRow(r, paths).map((m) => `${r.part} ${m.path} ${m.destination}`));
    it("the real table parses", () => {
        assert.ok(parseFileTable(fs.readFileSync(path.join(SCRIPTS, FILE_TABLE), "utf8")).length > 0);
    });
    it("a glob matches as bash's does (last segment only, never a dot file) and a folder gets the file's name", () => {
        assert.deepEqual(expand("base lib2/*.sh /opt/l/ 0644\n"), ["base lib2/x.sh /opt/l/x.sh"]);
        assert.deepEqual(expand("base lib2/* /opt/l/ 0755\n"), ["base lib2/x.sh /opt/l/x.sh", "base lib2/y.conf /opt/l/y.conf"]);
        assert.deepEqual(expand("web a.sh /etc/x/ 0644\nweb nothing*.sh /o/ 0644\n"), ["web a.sh /etc/x/a.sh"]);
        assert.deepEqual(expand("monitors d/e/f.txt /etc/f 0644\n"), ["monitors d/e/f.txt /etc/f"]);
    });
    for (const t of ["base lib2/*.sh /opt/l 0644\n", "base li*/x.sh /o/ 0644\n", "base lib2/?.sh /o/ 0644\n", "base lib2/.* /o/ 0644\n",
        "base a.sh /x/../y 0644\n", "base a.sh /x 0600\n"]) {
        it(`refuses, naming the line: ${JSON.stringify(t)}`, () => {
            assert.throws(() => parseFileTable(t), /^Error: files\.table:1: expected PART SOURCE DESTINATION MODE \(a part of base/);
        });
    }
});
