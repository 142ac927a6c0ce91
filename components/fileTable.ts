// The grammar of the file table, defined once. scripts/files.table is the
// source: a row may name a glob of payload files (`hostguard/*.py`) and a
// destination folder. Every bundle carries the table expanded (one row per
// file, its destination a file: components/bundles.ts writes it), and that
// is all `install` reads: it never globs or derives a destination. The
// expanded row pattern is generated into the host agent (the block of
// scripts/hostguard/settings_table.py that `npm run settings:gen` writes), so
// `install` and parseExpandedTable accept and refuse the same lines
// (test/unit/file-table.test.ts feeds both the same tables).

export const PARTS = ["base", "monitors", "bantool", "web"] as const;
export type Part = (typeof PARTS)[number];

/** Name of the file table, in scripts/ and in every bundle. */
export const FILE_TABLE = "files.table";

/** What a row may hold, in words: the error text on both sides. */
export const FILE_ROW_ALLOWED = `a part of ${PARTS.join(", ")}; a relative source path (no segment starting with a dot), `
    + "with * only in its last segment and then a destination folder; an absolute destination (ending in / for a folder); "
    + "mode 0755 or 0644; optionally `when SETTING` or `unless SETTING`";

/** What a row of a bundle's (expanded) table may hold: the error text on both sides. */
export const EXPANDED_ROW_ALLOWED = `a part of ${PARTS.join(", ")}; a relative source path (no segment starting with a dot, no *); `
    + "an absolute destination file (no trailing /); mode 0755 or 0644";

const SEGMENT = "[A-Za-z0-9_][A-Za-z0-9_.-]*";
const PLAIN = `(${SEGMENT}/)*${SEGMENT}`;
// A destination's folder or file name: never `.` or `..`.
const DEST_SEGMENT = "(([A-Za-z0-9_-]|[.][A-Za-z0-9_-]|[.][.][A-Za-z0-9_.-])[A-Za-z0-9_.-]*)";

/** PART SOURCES MODE [TAIL], anchored, in a syntax JavaScript and Python read alike. */
function anchoredRow(blank: string, sources: string, tail = ""): string {
    return `^${blank}*(${PARTS.join("|")})${blank}+${sources}${blank}+0(755|644)${tail}${blank}*$`;
}

/**
 * A source row's optional condition: `when KEY` ships the row only when the
 * setting KEY is set (a non-empty list or text, true, a number other than
 * 0), `unless KEY` only when it is not. The expanded table a bundle carries
 * holds the rows that ship, without condition: install never sees one.
 */

/**
 * A row of scripts/files.table; BLANK is the one class JavaScript and ERE
 * spell differently (space or tab).
 */
function rowPattern(blank: string): string {
    const glob = `(${SEGMENT}/)*(${SEGMENT})?[*][A-Za-z0-9_.*-]*`;
    const file = `/(${DEST_SEGMENT}/)*(${DEST_SEGMENT})?`;
    const folder = `/(${DEST_SEGMENT}/)*`;
    return anchoredRow(blank, `(${PLAIN}${blank}+${file}|${glob}${blank}+${folder})`, `(${blank}+(when|unless)${blank}+[a-z][A-Za-z]*)?`);
}

/** A row of a bundle's table: one file, no glob, its destination a file. */
function expandedRowPattern(blank: string): string {
    return anchoredRow(blank, `${PLAIN}${blank}+/(${DEST_SEGMENT}/)*${DEST_SEGMENT}`);
}
/** A line that is no row: blank, or a comment. */
function skipPattern(blank: string): string {
    return `^${blank}*(#.*)?$`;
}

export const FILE_TABLE_BLOCK_BEGIN = "# BEGIN file table grammar (generated from components/fileTable.ts by `npm run settings:gen`; do not edit)";
export const FILE_TABLE_BLOCK_END = "# END file table grammar";

/** The generated block of scripts/hostguard/settings_table.py: the installer reads a bundle's files.table with it. */
export function renderPythonFileTableBlock(): string {
    const py = (text: string): string => JSON.stringify(text);
    return [
        FILE_TABLE_BLOCK_BEGIN,
        `PARTS: tuple[str, ...] = (${PARTS.map(py).join(", ")})`,
        `FILE_ROW_RE: str = ${py(expandedRowPattern("[ \\t]"))}`,
        `FILE_SKIP_RE: str = ${py(skipPattern("[ \\t]"))}`,
        `FILE_ROW_ALLOWED: str = ${py(EXPANDED_ROW_ALLOWED)}`,
        FILE_TABLE_BLOCK_END,
    ].join("\n");
}

const ROW = new RegExp(rowPattern("[ \\t]"));
const EXPANDED_ROW = new RegExp(expandedRowPattern("[ \\t]"));
// dotAll: in POSIX ERE `.` also matches a carriage return.
const SKIP = new RegExp(skipPattern("[ \\t]"), "s");

/** One line of the file table. */
export interface FileRow {
    part: Part;
    source: string;
    destination: string;
    mode: 0o755 | 0o644;
    /** Source table only: the row ships only when the setting is set (`when`) or not set (`unless`). */
    condition?: { setting: string; negate: boolean };
}

/** Parses scripts/files.table; a line that is neither a row nor blank/comment is an error naming it. */
export function parseFileTable(text: string): FileRow[] {
    return parseRows(text, ROW, FILE_ROW_ALLOWED);
}

/** Parses a bundle's (expanded) table, as `install` does. */
export function parseExpandedTable(text: string): FileRow[] {
    return parseRows(text, EXPANDED_ROW, EXPANDED_ROW_ALLOWED);
}

function parseRows(text: string, row: RegExp, allowed: string): FileRow[] {
    const rows: FileRow[] = [];
    text.split("\n").forEach((line, i) => {
        if (SKIP.test(line)) {
            return;
        }
        if (!row.test(line)) {
            throw new Error(`${FILE_TABLE}:${i + 1}: expected PART SOURCE DESTINATION MODE (${allowed})`);
        }
        const [part, source, destination, mode, word, setting] = line.trim().split(/[ \t]+/);
        rows.push({
            part: part as Part, source, destination, mode: mode === "0755" ? 0o755 : 0o644,
            ...(word === undefined ? {} : { condition: { setting, negate: word === "unless" } }),
        });
    });
    return rows;
}

/**
 * The payload files a row's source names, with where each lands: a glob
 * (`*` in the last segment) matches as bash's does (never a name starting
 * with a dot: no glob of the grammar starts with one), a destination ending
 * in / gets the file's name.
 */
export function expandRow(row: FileRow, paths: readonly string[]): Array<{ path: string; destination: string }> {
    const into = (p: string): string => (row.destination.endsWith("/") ? row.destination + p.slice(p.lastIndexOf("/") + 1) : row.destination);
    if (!row.source.includes("*")) {
        return [{ path: row.source, destination: into(row.source) }];
    }
    const dir = row.source.slice(0, row.source.lastIndexOf("/") + 1);
    const glob = row.source.slice(dir.length);
    const name = new RegExp(`^${glob.split("*").map((x) => x.replace(/[.]/g, "\\.")).join("[^/]*")}$`);
    return paths
        .filter((p) => p.startsWith(dir) && name.test(p.slice(dir.length)) && !p.slice(dir.length).startsWith("."))
        .map((p) => ({ path: p, destination: into(p) }));
}

/** One expanded row per file, in the given order, columns aligned: the table a bundle carries. */
export function renderExpandedTable(files: ReadonlyArray<{ part: Part; path: string; destination: string; mode: 0o755 | 0o644 }>): string {
    const width = (pick: (f: (typeof files)[number]) => string): number => Math.max(0, ...files.map((f) => pick(f).length));
    const [p, s, d] = [width((f) => f.part), width((f) => f.path), width((f) => f.destination)];
    return [
        "# hostguard's file table, expanded from scripts/files.table by the Pulumi program",
        "# (components/bundles.ts): every file this host receives, one row each:",
        "#   part  source-in-the-bundle  destination  mode",
        "# install places the files of a part from these rows; it never globs.",
        ...files.map((f) => `${f.part.padEnd(p)}  ${f.path.padEnd(s)}  ${f.destination.padEnd(d)}  0${f.mode.toString(8)}`),
        "",
    ].join("\n");
}
