// `npm run render -- --stack dev [--out render] [--cron-minute N]`: writes what
// every host of a stack would receive, without a cloud, the Pulumi CLI or any
// secret: per host the bundle of each part as it is unpacked on the host, the
// settings file, the webhook file (redacted) and a manifest with hashes and
// the exact remote command texts. A reviewer diffs this folder.
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { NAMESPACE, validateConfig, type RawConfig } from "../components/config";
import {
    cronSchedule, JAIL_NAME, partCreateCommand, partDeleteCommand, renderHost, setWebhookCommand, webhookStdin,
} from "../components/render";

const REDACTED = "<redacted: set with pulumi config set --secret hostguard:webhookUrl>";

function parseArgs(argv: string[]): { stack: string; out: string; cronMinute: number } {
    const opts = { stack: "", out: "render", cronMinute: 0 };
    for (let i = 0; i < argv.length; i++) {
        const [flag, value] = [argv[i], argv[i + 1]];
        if (flag === "--stack" && value) { opts.stack = value; i++; }
        else if (flag === "--out" && value) { opts.out = value; i++; }
        else if (flag === "--cron-minute" && value) { opts.cronMinute = Number(value); i++; }
        else { throw new Error(`usage: npm run render -- --stack NAME [--out DIR] [--cron-minute 0-9] (unexpected ${flag})`); }
    }
    if (!/^[A-Za-z0-9_.-]+$/.test(opts.stack)) {
        throw new Error("usage: npm run render -- --stack NAME [--out DIR] [--cron-minute 0-9]");
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
        const { settingsText, bundles } = renderHost(config.settings, cronMinute);
        for (const b of bundles) {
            for (const f of b.files) {
                write(path.join(hostDir, "parts", b.part, f.path), f.content, f.mode);
            }
        }
        write(path.join(hostDir, "etc/hostguard/hostguard.conf"), settingsText);
        write(path.join(hostDir, "etc/hostguard/webhook.curlrc"), webhookStdin(REDACTED), 0o600);
        const manifest = {
            stack, host: host.name, address: host.host, user: host.user, hostKeyChecked: host.hostKey !== undefined,
            bastion: config.bastion?.host ?? null,
            cronMinute, cronSchedule: cronSchedule(cronMinute),
            cronMinuteNote: "deployments draw the minute once per host (random.RandomInteger, kept in state); pass --cron-minute to match",
            jail: JAIL_NAME,
            parts: Object.fromEntries(bundles.map((b) => [b.part, {
                sha256: b.sha256, settingsKeys: b.settingsKeys,
                files: Object.fromEntries(b.files.map((f) => [f.path, { mode: f.mode.toString(8), sha256: f.sha256 }])),
                create: partCreateCommand(b, sudo), delete: partDeleteCommand(b.part, sudo),
            }])),
            webhook: { create: setWebhookCommand(sudo), stdin: "secret (redacted)", configured: config.hasWebhookUrl },
        };
        write(path.join(hostDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
        written.push(hostDir);
    }
    return written;
}

function main(): void {
    const { stack, out, cronMinute } = parseArgs(process.argv.slice(2));
    const root = path.resolve(__dirname, "..");
    for (const dir of renderStack(root, stack, path.resolve(root, out), cronMinute)) {
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
