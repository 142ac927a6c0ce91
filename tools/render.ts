// `npm run render -- --stack dev [--out render] [--cron-minute N]`: writes what
// every host of a stack would receive, without a cloud, the Pulumi CLI or any
// secret. Per host: every file at its destination (the settings file, the
// rendered cron file and jail, the scripts; the webhook file redacted), the
// bundle of each part exactly as its command's stdin carries it (parts/), and
// a manifest with the hashes and the exact remote command texts. A reviewer
// diffs this folder.
//
// `--payload DIR [--cron-minute N] [key=value ...]` (tests): writes one folder
// holding every part's bundle merged, for the stack-config settings given
// (validated as at preview), so `DIR/install` installs exactly what a deploy
// ships.
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { NAMESPACE, validateConfig, type RawConfig } from "../components/config";
import {
    cronSchedule, JAIL_NAME, partCreateCommand, partDeleteCommand, renderHost, SETTINGS_PATH, setWebhookCommand, webhookStdin,
} from "../components/render";
import { SETTING_KEYS, validateSettings } from "../components/settings";

const REDACTED = "<redacted: set with pulumi config set --secret hostguard:webhookUrl>";
const USAGE = "usage: npm run render -- --stack NAME [--out DIR] [--cron-minute 0-9]\n"
    + "       npm run render -- --payload DIR [--cron-minute 0-9] [settingKey=value ...]";

interface Options { stack: string; out: string; payload: string; cronMinute: number; settings: RawConfig }

function parseArgs(argv: string[]): Options {
    const opts: Options = { stack: "", out: "render", payload: "", cronMinute: 0, settings: {} };
    for (let i = 0; i < argv.length; i++) {
        const [flag, value] = [argv[i], argv[i + 1]];
        const setting = /^([A-Za-z]+)=(.*)$/s.exec(flag);
        if (flag === "--stack" && value) { opts.stack = value; i++; }
        else if (flag === "--out" && value) { opts.out = value; i++; }
        else if (flag === "--payload" && value) { opts.payload = value; i++; }
        else if (flag === "--cron-minute" && value) { opts.cronMinute = Number(value); i++; }
        else if (setting && SETTING_KEYS.includes(setting[1] as never)) { opts.settings[setting[1]] = setting[2]; }
        else { throw new Error(`${USAGE}\n(unexpected ${flag})`); }
    }
    const oneMode = (opts.stack === "") !== (opts.payload === "");
    if (!oneMode || (opts.stack !== "" && !/^[A-Za-z0-9_.-]+$/.test(opts.stack))
        || (opts.stack !== "" && Object.keys(opts.settings).length > 0)) {
        throw new Error(USAGE);
    }
    return opts;
}

/** The namespace's keys from Pulumi.<stack>.yaml; encrypted values stay `{secure: ...}` and are never decrypted. */
export function readStackFile(file: string): RawConfig {
    const doc = yaml.load(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | undefined;
    const prefix = `${NAMESPACE}:`;
    return Object.fromEntries(Object.entries(doc?.config ?? {})
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, v]) => [k.slice(prefix.length), v]));
}

function write(file: string, content: string | Buffer, mode = 0o644): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, { mode });
    fs.chmodSync(file, mode);
}

export function renderStack(root: string, stack: string, outDir: string, cronMinute: number): string[] {
    const config = validateConfig(readStackFile(path.join(root, `Pulumi.${stack}.yaml`)), { requireSecrets: false });
    const stackDir = path.join(outDir, stack);
    fs.rmSync(stackDir, { recursive: true, force: true });
    const written: string[] = [];
    for (const host of config.hosts) {
        const hostDir = path.join(stackDir, host.name);
        const sudo = host.user !== "root";
        const { settingsText, files, bundles } = renderHost(config.settings, cronMinute);
        for (const b of bundles) {
            for (const f of b.files) {
                write(path.join(hostDir, "parts", b.part, f.path), f.content, f.mode);
            }
        }
        for (const f of files) {
            write(path.join(hostDir, f.destination), f.content, f.mode);
        }
        write(path.join(hostDir, SETTINGS_PATH), settingsText);
        write(path.join(hostDir, "etc/hostguard/webhook.curlrc"), webhookStdin(REDACTED), 0o600);
        const manifest = {
            stack, host: host.name, address: host.host, user: host.user, hostKeyChecked: host.hostKey !== undefined,
            bastion: config.bastion?.host ?? null,
            cronMinute, cronSchedule: cronSchedule(cronMinute),
            cronMinuteNote: "deployments draw the minute once per host (random.RandomInteger, kept in state); pass --cron-minute to match",
            jail: JAIL_NAME,
            parts: Object.fromEntries(bundles.map((b) => [b.part, {
                sha256: b.sha256,
                files: Object.fromEntries(b.files.map((f) => [f.path, { mode: f.mode.toString(8), sha256: f.sha256 }])),
                create: partCreateCommand(b, sudo), delete: partDeleteCommand(b.part, sudo),
            }])),
            destinations: Object.fromEntries(files.map((f) => [f.destination, { part: f.part, source: f.path, mode: f.mode.toString(8), sha256: f.sha256 }])),
            webhook: { create: setWebhookCommand(sudo), stdin: "secret (redacted)", configured: config.hasWebhookUrl },
        };
        write(path.join(hostDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
        written.push(hostDir);
    }
    return written;
}

/** Every bundle merged into DIR (the base settings file included), for the given settings. */
export function renderPayload(dir: string, settings: RawConfig, cronMinute: number): void {
    let validated;
    try {
        validated = validateSettings(settings);
    } catch (e) {
        throw new Error(`${NAMESPACE}:${(e as { key?: string }).key ?? "?"} ${(e as Error).message}`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    for (const b of renderHost(validated, cronMinute).bundles) {
        for (const f of b.files) {
            if (b.part === "base" || f.path !== "hostguard.conf") {
                write(path.join(dir, f.path), f.content, f.mode);
            }
        }
    }
}

function main(): void {
    const opts = parseArgs(process.argv.slice(2));
    const root = path.resolve(__dirname, "..");
    if (opts.payload !== "") {
        renderPayload(path.resolve(opts.payload), opts.settings, opts.cronMinute);
        return;
    }
    for (const dir of renderStack(root, opts.stack, path.resolve(root, opts.out), opts.cronMinute)) {
        console.log(`rendered ${path.relative(root, dir)}`);
    }
}

if (require.main === module) {
    try {
        main();
    } catch (e) {
        console.error(`render: ${e instanceof Error ? e.message : String(e)}`);
        process.exit(1);
    }
}
