// Everything a host receives, as pure functions of the validated config
// (model: pulumi-eks userdata.ts): per part (base, monitors, bantool, web) the
// files the file table (scripts/files.table) lists, read from `scripts/` or
// rendered from the settings (components/hostFiles.ts; the settings file
// hostguard.conf is one such row of base), with the installer and the table
// itself expanded (one row per file), plus, for the other parts, the
// settings their install step reads; packed as a byte-deterministic tar. A part's
// hash covers exactly the bytes of its bundle. The commands that ship a bundle
// are in components/remoteCommands.ts. No Pulumi runtime here: the components,
// `npm run render` and the unit tests all call these functions.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as tarStream from "tar-stream";
import { expandRow, FILE_TABLE, parseFileTable, PARTS, renderExpandedTable, type Part } from "./fileTable";
import { installKeys, RENDERED, renderSettingsFile, SETTINGS_FILE, type HostValues } from "./hostFiles";
import { SETTING_KEYS, type PayloadSettings, type SettingKey } from "./settings";

export const SCRIPTS_DIR = path.resolve(__dirname, "..", "scripts");
/**
 * The installer's own files: they travel in every bundle (`install` runs from
 * the folder it sits in), but only base places them. All are base rows. The
 * host agent's package goes with them: install asks each part's programs
 * (Python entry points beside it) for their runtime files.
 */
/** The host agent's package, a row per folder (scripts/files.table). */
export const AGENT_SOURCES: readonly string[] = ["hostguard/*.py", "hostguard/monitor/*.py", "hostguard/notify/*.py", "hostguard/ban/*.py", "hostguard/install/*.py", "hostguard/fleet/*.py"];
export const INSTALLER_SOURCES: readonly string[] = ["install", FILE_TABLE, ...AGENT_SOURCES];
/** Files of scripts/ that no host receives. */
const NOT_SHIPPED = ["README.md"];
/** Folders of scripts/ that are never payload: Python's bytecode cache (a test run writes it). */
const NOT_PAYLOAD_DIRS = ["__pycache__"];

export interface PayloadFile {
    /** Path relative to scripts/ (or inside the bundle), with forward slashes. */
    path: string;
    mode: 0o755 | 0o644;
    content: Buffer;
    sha256: string;
}

export function sha256(data: string | Buffer): string {
    return createHash("sha256").update(data).digest("hex");
}

export function payloadFile(p: string, content: string | Buffer, mode: 0o755 | 0o644 = 0o644): PayloadFile {
    const buf = Buffer.isBuffer(content) ? content : Buffer.from(content, "utf8");
    return { path: p, mode, content: buf, sha256: sha256(buf) };
}

/** All files of the payload folder, sorted, with their mode (from the executable bit) and hash. */
export function readPayload(dir: string = SCRIPTS_DIR): PayloadFile[] {
    const out: PayloadFile[] = [];
    const walk = (rel: string): void => {
        for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
            const relPath = rel ? `${rel}/${entry.name}` : entry.name;
            if (entry.isDirectory()) {
                if (!NOT_PAYLOAD_DIRS.includes(entry.name)) {
                    walk(relPath);
                }
            } else if (entry.isFile()) {
                const full = path.join(dir, relPath);
                const mode = (fs.statSync(full).mode & 0o111) !== 0 ? 0o755 : 0o644;
                out.push(payloadFile(relPath, fs.readFileSync(full), mode));
            }
        }
    };
    walk("");
    return sortFiles(out);
}

function sortFiles<T extends { path: string }>(files: T[]): T[] {
    return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** One file a host receives: the bundle path, where it lands, its mode and bytes. */
export interface HostFile extends PayloadFile {
    part: Part;
    /** The source of its table row (a glob such as hostguard/*.py for each file it matched). */
    tableSource: string;
    destination: string;
}

/**
 * Every file of the table, expanded (globs) and rendered, in table order.
 * A source that is neither in the payload nor rendered is an error, and so is
 * a payload file the table does not ship: nothing is silently left behind.
 * The table ships expanded: its own row carries renderExpandedTable of all
 * these rows, so `install` reads exactly what arrived, file by file.
 */
export function hostFiles(values: HostValues, payload: PayloadFile[]): HostFile[] {
    const table = payload.find((f) => f.path === FILE_TABLE);
    if (!table) {
        throw new Error(`scripts/${FILE_TABLE} is missing`);
    }
    const out: HostFile[] = [];
    const paths = payload.map((f) => f.path);
    /** Payload files a row names whose condition does not hold: listed, not shipped to this host. */
    const held = new Set<string>();
    const read = (source: string): string => {
        const f = payload.find((p) => p.path === source);
        if (!f) {
            throw new Error(`scripts/${source} is missing`);
        }
        return f.content.toString("utf8");
    };
    for (const row of parseFileTable(table.content.toString("utf8"))) {
        const render = RENDERED[row.source];
        const matched = expandRow(row, paths).filter((m) => paths.includes(m.path));
        if (render !== undefined && matched.length > 0) {
            throw new Error(`${FILE_TABLE}: ${row.source} is both a file of scripts/ and rendered`);
        }
        if (render === undefined && matched.length === 0) {
            throw new Error(`${FILE_TABLE}: ${row.source} is neither a file of scripts/ nor rendered (components/hostFiles.ts)`);
        }
        if (row.condition !== undefined && !conditionHolds(row.condition, values.settings)) {
            matched.forEach((m) => held.add(m.path));
            continue;
        }
        if (render !== undefined) {
            out.push({ ...payloadFile(row.source, render(values, read), row.mode), part: row.part, tableSource: row.source, destination: row.destination });
            continue;
        }
        for (const m of matched) {
            const f = payload.find((p) => p.path === m.path)!;
            out.push({ ...payloadFile(f.path, f.content, row.mode), part: row.part, tableSource: row.source, destination: m.destination });
        }
    }
    const shipped = new Set(out.map((f) => f.path));
    const left = payload.filter((f) => !shipped.has(f.path) && !held.has(f.path) && !NOT_SHIPPED.includes(path.posix.basename(f.path)));
    if (left.length > 0) {
        throw new Error(`scripts/${left[0].path} is in no part: add it to scripts/${FILE_TABLE}`);
    }
    const twice = out.find((f, i) => out.findIndex((g) => g.destination === f.destination) !== i);
    if (twice) {
        throw new Error(`${FILE_TABLE}: two rows ship ${twice.destination} to this host (their conditions must exclude each other)`);
    }
    if (!out.some((f) => f.part === "base" && f.path === SETTINGS_FILE)) {
        throw new Error(`${FILE_TABLE}: no base row for ${SETTINGS_FILE}: the host would get no settings`);
    }
    const expanded = renderExpandedTable(out);
    return out.map((f) => (f.path === FILE_TABLE ? { ...f, ...payloadFile(f.path, expanded, f.mode) } : f));
}

/** Whether a row's `when`/`unless` condition holds for these settings; an unknown setting is an error. */
export function conditionHolds(condition: { setting: string; negate: boolean }, settings: PayloadSettings): boolean {
    if (!SETTING_KEYS.includes(condition.setting as SettingKey)) {
        throw new Error(`${FILE_TABLE}: condition on ${condition.setting}, which is no setting of components/settings.ts`);
    }
    const v: unknown = settings[condition.setting as SettingKey];
    const set = Array.isArray(v) ? v.length > 0 : typeof v === "boolean" ? v : typeof v === "number" ? v !== 0 : v !== "";
    return set !== condition.negate;
}

export interface PartBundle {
    part: Part;
    /** Files in the tar, sorted: the installer, the part's files, the settings its install step reads. */
    files: PayloadFile[];
    /** Hash of exactly those files (path, mode, bytes): what decides whether this part runs again. */
    sha256: string;
}

/** The settings file of a part other than base: just the keys its install step reads. */
export function installSettings(part: Part, settings: PayloadSettings): string {
    const keys = installKeys(part);
    return renderSettingsFile(settings, (k) => keys.includes(k));
}

/**
 * The bundle of one part: installer + the part's files + the settings its
 * install step reads (base's own hostguard.conf row; for the others just
 * their install keys, so a threshold change re-runs no ban-tool install).
 */
export function partBundle(part: Part, files: HostFile[], settings: PayloadSettings): PartBundle {
    const installer = files.filter((f) => f.part === "base" && INSTALLER_SOURCES.includes(f.tableSource));
    const own = files.filter((f) => f.part === part && !installer.includes(f));
    const strip = ({ path: p, mode, content, sha256: h }: PayloadFile): PayloadFile => ({ path: p, mode, content, sha256: h });
    const bundle: PayloadFile[] = sortFiles([
        ...[...installer, ...own].map(strip),
        ...(own.some((f) => f.path === SETTINGS_FILE) ? [] : [payloadFile(SETTINGS_FILE, installSettings(part, settings))]),
    ]);
    return {
        part,
        files: bundle,
        sha256: sha256(bundle.map((f) => `${f.mode.toString(8)} ${f.sha256} ${f.path}\n`).join("")),
    };
}

/** What the files depend on besides the settings: the stack's pinned minute and admin networks (nothing of one host). */
export type HostExtras = Omit<HostValues, "settings">;

/** Every file a host receives and every part's bundle: the same bytes for every host of the stack. */
export function renderHost(settings: PayloadSettings, payload: PayloadFile[] = readPayload(), extras: HostExtras = {}): {
    files: HostFile[];
    bundles: PartBundle[];
} {
    const files = hostFiles({ settings, ...extras }, payload);
    return {
        files,
        bundles: PARTS.map((p) => partBundle(p, files, settings)),
    };
}

/** A ustar archive with fixed owner, time and order: the same files give the same bytes. */
export async function tarFiles(files: PayloadFile[]): Promise<Buffer> {
    const pack = tarStream.pack();
    const chunks: Buffer[] = [];
    const done = new Promise<Buffer>((resolve, reject) => {
        pack.on("data", (c: unknown) => chunks.push(c as Buffer));
        pack.on("end", () => resolve(Buffer.concat(chunks)));
        pack.on("error", reject);
    });
    for (const f of files) {
        pack.entry({
            name: f.path, size: f.content.length, mode: f.mode, mtime: new Date(0),
            uid: 0, gid: 0, uname: "root", gname: "root", type: "file",
        }, f.content);
    }
    pack.finalize();
    return done;
}
