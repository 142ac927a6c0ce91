// The grammar of the file table (scripts/files.table), defined once: the row
// pattern is generated into bash (the block of scripts/lib/common.sh that
// `npm run settings:gen` writes), so `install` and this parser accept and
// refuse the same lines, and a glob source expands the same way on both sides
// (test/unit/file-table.test.ts feeds both the same tables).
import { sq } from "./settings";

export const PARTS = ["base", "monitors", "bantool", "web"] as const;
export type Part = (typeof PARTS)[number];

/** Name of the file table, in scripts/ and in every bundle. */
export const FILE_TABLE = "files.table";

/** What a row may hold, in words: the error text on both sides. */
export const FILE_ROW_ALLOWED = `a part of ${PARTS.join(", ")}; a relative source path (no segment starting with a dot), `
    + "with * only in its last segment and then a destination folder; an absolute destination (ending in / for a folder); "
    + "mode 0755 or 0644";

/**
 * A row, anchored, in a syntax JavaScript and bash's `=~` (POSIX ERE) read
 * alike; BLANK is the one class they spell differently (space or tab).
 */
function rowPattern(blank: string): string {
    const segment = "[A-Za-z0-9_][A-Za-z0-9_.-]*";
    const plain = `(${segment}/)*${segment}`;
    const glob = `(${segment}/)*(${segment})?[*][A-Za-z0-9_.*-]*`;
    const file = "/([A-Za-z0-9_.-]+/)*([A-Za-z0-9_.-]+)?";
    const folder = "/([A-Za-z0-9_.-]+/)*";
    const sources = `(${plain}${blank}+${file}|${glob}${blank}+${folder})`;
    return `^${blank}*(${PARTS.join("|")})${blank}+${sources}${blank}+0(755|644)${blank}*$`;
}
/** A line that is no row: blank, or a comment. */
function skipPattern(blank: string): string {
    return `^${blank}*(#.*)?$`;
}

export const FILE_TABLE_BLOCK_BEGIN = "# BEGIN file table grammar (generated from components/fileTable.ts by `npm run settings:gen`; do not edit)";
export const FILE_TABLE_BLOCK_END = "# END file table grammar";

/** The generated bash block of scripts/lib/common.sh: install reads files.table with it. */
export function renderFileTableBlock(): string {
    return [
        FILE_TABLE_BLOCK_BEGIN,
        `readonly HG_PARTS=(${PARTS.join(" ")})`,
        `readonly HG_FILE_ROW_RE=${sq(rowPattern("[[:blank:]]"))}`,
        `readonly HG_FILE_SKIP_RE=${sq(skipPattern("[[:blank:]]"))}`,
        `readonly HG_FILE_ROW_ALLOWED=${sq(FILE_ROW_ALLOWED)}`,
        FILE_TABLE_BLOCK_END,
    ].join("\n");
}

const ROW = new RegExp(rowPattern("[ \\t]"));
// dotAll: in POSIX ERE `.` also matches a carriage return.
const SKIP = new RegExp(skipPattern("[ \\t]"), "s");

/** One line of the file table. */
export interface FileRow {
    part: Part;
    source: string;
    destination: string;
    mode: 0o755 | 0o644;
}

/** Parses the file table; a line that is neither a row nor blank/comment is an error naming it. */
export function parseFileTable(text: string): FileRow[] {
    const rows: FileRow[] = [];
    text.split("\n").forEach((line, i) => {
        if (SKIP.test(line)) {
            return;
        }
        if (!ROW.test(line)) {
            throw new Error(`${FILE_TABLE}:${i + 1}: expected PART SOURCE DESTINATION MODE (${FILE_ROW_ALLOWED})`);
        }
        const [part, source, destination, mode] = line.trim().split(/[ \t]+/);
        rows.push({ part: part as Part, source, destination, mode: mode === "0755" ? 0o755 : 0o644 });
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
