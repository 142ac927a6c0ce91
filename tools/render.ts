// `npm run render -- --stack dev [--out render] [--cron-minute N]`: writes what
// every host of a stack would receive, without a cloud, the Pulumi CLI or any
// secret. Per host: every file at its destination (the settings file, the
// rendered cron file and jail, the scripts; the webhook file redacted), the
// bundle of each part exactly as its command's stdin carries it (parts/), and
// a manifest with the hashes and the exact remote command texts. A reviewer
// diffs this folder. A stack still holding the examples' placeholders is
// rendered, each placeholder named, and the exit status is 1 (not deployable).
//
// A `delivery: ssm` stack (a fleet) has no hosts: its folder `fleet/` holds
// what the fleet will get (components/fleet.ts): each bundle as the object of
// its content-addressed key (bundles/<part>/<sha256>.tar) and unpacked
// (parts/), the SSM document as registered, the association (target,
// schedule, rate control, output location, parameters with their values: names
// and hashes only), the webhook parameter's value (secrets redacted), the
// hosts' policy, the bucket's policy and lifecycle rules, and a manifest.
//
// `--payload DIR [--cron-minute N] [key=value ...]` (tests): writes one folder
// holding every part's bundle merged, for the stack-config settings given
// (validated as at preview), so `DIR/install` installs exactly what a deploy
// ships.
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import {
    configWarnings, NAMESPACE, placeholderLines, refuseNamespaceTypos, validateConfig, type HostguardConfig, type RawConfig,
} from "../components/config";
import { renderHost, sha256, tarFiles } from "../components/bundles";
import {
    bucketPolicy, bundleKey, bundlesValue, DOCUMENT_PARAMETERS, FLEET_TAG, fleetNames, hostPolicy, lifecycleRules, renderDocument, RUNS_PREFIX,
} from "../components/ssmDocument";
import { cronSchedule, JAIL_NAME, SETTINGS_FILE } from "../components/hostFiles";
import {
    partCreateCommand, partDeleteCommand, removeHeartbeatCommand, setHeartbeatCommand, setWebhookCommand, webhookFileText,
} from "../components/remoteCommands";
import { PAGERDUTY_REGIONS } from "../components/chatFormats";
import { SETTING_KEYS, validateSettings } from "../components/settings";

const REDACTED = "<redacted: set with pulumi config set --secret hostguard:webhookUrl>";
const REDACTED_KEY = "<redacted: set with pulumi config set --secret hostguard:pagerdutyRoutingKey>";
const USAGE = "usage: npm run render -- --stack NAME [--out DIR] [--cron-minute 0-9]\n"
    + "       npm run render -- --payload DIR [--cron-minute 0-9] [settingKey=value ...]";

/** cronMinute: as hostguard:cronMinute (absent: each host derives its offset, scripts/at-offset.sh). */
interface Options { stack: string; out: string; payload: string; cronMinute?: number; settings: RawConfig }

/** A flag's integer value in MIN..MAX, or one line saying what is wrong. */
function intFlag(flag: string, value: string, min: number, max: number): number {
    if (!/^[0-9]{1,2}$/.test(value) || Number(value) < min || Number(value) > max) {
        throw new Error(`${flag} must be an integer ${min}-${max}, got ${JSON.stringify(value)}`);
    }
    return Number(value);
}

function parseArgs(argv: string[]): Options {
    const opts: Options = { stack: "", out: "render", payload: "", settings: {} };
    for (let i = 0; i < argv.length; i++) {
        const [flag, value] = [argv[i], argv[i + 1]];
        const setting = /^([A-Za-z]+)=(.*)$/s.exec(flag);
        if (["--stack", "--out", "--payload", "--cron-minute"].includes(flag) && value === undefined) {
            throw new Error(`${flag} needs a value (${USAGE.split("\n")[0]})`);
        }
        if (flag === "--stack") { opts.stack = value; i++; }
        else if (flag === "--out") { opts.out = value; i++; }
        else if (flag === "--payload") { opts.payload = value; i++; }
        else if (flag === "--cron-minute") { opts.cronMinute = intFlag(flag, value, 0, 9); i++; }
        else if (setting && SETTING_KEYS.includes(setting[1] as never)) { opts.settings[setting[1]] = setting[2]; }
        else { throw new Error(`unexpected ${JSON.stringify(flag)} (${USAGE.split("\n")[0]})`); }
    }
    const oneMode = (opts.stack === "") !== (opts.payload === "");
    if (!oneMode || (opts.stack !== "" && !/^[A-Za-z0-9_.-]+$/.test(opts.stack))
        || (opts.stack !== "" && Object.keys(opts.settings).length > 0)) {
        throw new Error(USAGE);
    }
    return opts;
}

/**
 * The namespace's keys from Pulumi.<stack>.yaml; encrypted values stay `{secure: ...}` and are never decrypted.
 * A key whose namespace is a typo of `hostguard` is refused, as at preview.
 */
export function readStackFile(file: string): RawConfig {
    if (!fs.existsSync(file)) {
        const stacks = fs.readdirSync(path.dirname(file)).flatMap((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1] ?? []);
        throw new Error(`no stack file ${path.basename(file)} in ${path.dirname(file)} (stacks: ${stacks.join(", ") || "none"})`);
    }
    const doc = yaml.load(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | undefined;
    const all = doc?.config ?? {};
    refuseNamespaceTypos(Object.keys(all));
    const prefix = `${NAMESPACE}:`;
    return Object.fromEntries(Object.entries(all)
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, v]) => [k.slice(prefix.length), v]));
}

/** The stack file's config validated as at preview: a secret in plain text in the file is refused. */
export function stackConfig(root: string, stack: string): HostguardConfig {
    return validateConfig(readStackFile(path.join(root, `Pulumi.${stack}.yaml`)), { requireSecrets: false, secretKeys: [] });
}

function write(file: string, content: string | Buffer, mode = 0o644): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, { mode });
    fs.chmodSync(file, mode);
}

/** The project's name, from Pulumi.yaml (the fleet's names derive from it). */
export function projectName(root: string): string {
    const doc = yaml.load(fs.readFileSync(path.join(root, "Pulumi.yaml"), "utf8")) as { name?: unknown } | undefined;
    if (typeof doc?.name !== "string") {
        throw new Error(`${path.join(root, "Pulumi.yaml")} has no name: the project's name is required`);
    }
    return doc.name;
}

/** What a fleet (delivery ssm) gets, in STACK_DIR/fleet: see the header. Async: the bundles are tars. */
export async function renderFleet(root: string, stack: string, config: HostguardConfig, stackDir: string): Promise<string> {
    const dir = path.join(stackDir, "fleet");
    const names = fleetNames(projectName(root), stack);
    const { bundles } = renderHost(config.settings, undefined, { adminCidrs: config.adminCidrs });
    const objects: Array<{ part: typeof bundles[number]["part"]; tarSha256: string; key: string }> = [];
    for (const b of bundles) {
        const tar = await tarFiles(b.files);
        const key = bundleKey(b.part, sha256(tar));
        write(path.join(dir, key), tar);
        for (const f of b.files) {
            write(path.join(dir, "parts", b.part, f.path), f.content, f.mode);
        }
        objects.push({ part: b.part, tarSha256: sha256(tar), key });
    }
    const document = renderDocument();
    write(path.join(dir, "document.json"), `${document}
`);
    const bucket = "hostguard-fleet-bundles-<random>";
    const association = {
        name: "<the document's name: hostguard-fleet-apply-<random>>",
        associationName: names.associationName,
        targets: [{ key: `tag:${FLEET_TAG}`, values: [names.tagValue] }],
        scheduleExpression: config.fleet!.schedule, maxConcurrency: config.fleet!.maxConcurrency, maxErrors: config.fleet!.maxErrors,
        complianceSeverity: "HIGH",
        outputLocation: { s3BucketName: bucket, s3KeyPrefix: RUNS_PREFIX },
        parameters: {
            Bucket: bucket, Bundles: bundlesValue(objects), WebhookParameter: names.webhookParameter, WebhookVersion: "<the parameter's version at up>",
        },
        parameterPatterns: Object.fromEntries(Object.entries(DOCUMENT_PARAMETERS).map(([k, v]) => [k, v.allowedPattern])),
    };
    write(path.join(dir, "association.json"), `${JSON.stringify(association, null, 2)}
`);
    write(path.join(dir, "webhook-parameter.txt"), renderedWebhookFile(config), 0o600);
    const bucketArn = `arn:aws:s3:::${bucket}`;
    const pretty = (json: string) => `${JSON.stringify(JSON.parse(json), null, 2)}
`;
    write(path.join(dir, "host-policy.json"), pretty(hostPolicy(bucketArn, `arn:aws:ssm:REGION:ACCOUNT:parameter${names.webhookParameter}`, "arn:aws:kms:REGION:ACCOUNT:key/KEY_ID")));
    write(path.join(dir, "bucket-policy.json"), pretty(bucketPolicy(bucketArn)));
    write(path.join(dir, "lifecycle.json"), `${JSON.stringify(lifecycleRules(config.fleet!.runsExpireDays), null, 2)}
`);
    const manifest = {
        stack, delivery: "ssm", targetTag: `${FLEET_TAG}=${names.tagValue}`, webhookParameter: names.webhookParameter,
        permissionsBoundary: config.fleet!.permissionsBoundary,
        bundles: Object.fromEntries(objects.map((o) => [o.part, { key: o.key, sha256: o.tarSha256 }])),
        document: { file: "document.json", sha256: sha256(document) },
        webhook: { stdin: "secret (redacted)", configured: config.hasWebhookUrl || config.hasPagerdutyRoutingKey },
    };
    write(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}
`);
    return dir;
}

export function renderStack(root: string, stack: string, outDir: string, pinned?: number): string[] {
    const config = stackConfig(root, stack);
    const cronMinute = pinned ?? config.cronMinute;
    const stackDir = path.join(outDir, stack);
    fs.rmSync(stackDir, { recursive: true, force: true });
    const written: string[] = [];
    for (const host of config.hosts) {
        const hostDir = path.join(stackDir, host.name);
        const sudo = host.user !== "root";
        const { files, bundles } = renderHost(config.settings, undefined, { cronMinute, adminCidrs: config.adminCidrs });
        for (const b of bundles) {
            for (const f of b.files) {
                write(path.join(hostDir, "parts", b.part, f.path), f.content, f.mode);
            }
        }
        for (const f of files) {
            write(path.join(hostDir, f.destination), f.content, f.mode);
        }
        write(path.join(hostDir, "etc/hostguard/webhook.conf"), renderedWebhookFile(config), 0o600);
        const manifest = {
            stack, host: host.name, address: host.host, user: host.user, hostKeyChecked: host.hostKey !== undefined,
            bastion: config.bastion?.host ?? null,
            cronMinute: cronMinute ?? null, cronSchedule: cronSchedule(cronMinute),
            cronMinuteNote: cronMinute === undefined
                ? "each host waits its own offset (0-599 s, derived from its instance id by at-offset.sh) after each 10-minute mark"
                : "every host of the stack runs its monitors on this minute (hostguard:cronMinute)",
            jail: JAIL_NAME,
            parts: Object.fromEntries(bundles.map((b) => [b.part, {
                sha256: b.sha256,
                files: Object.fromEntries(b.files.map((f) => [f.path, { mode: f.mode.toString(8), sha256: f.sha256 }])),
                create: partCreateCommand(b, sudo), delete: partDeleteCommand(b.part, sudo),
            }])),
            destinations: Object.fromEntries(files.map((f) => [f.destination, { part: f.part, source: f.path, mode: f.mode.toString(8), sha256: f.sha256 }])),
            webhook: {
                create: setWebhookCommand(sudo, config.settings.verifyWebhook), stdin: "secret (redacted)", configured: config.hasWebhookUrl || config.hasPagerdutyRoutingKey,
                chatFormat: config.chatFormat ?? "detected at deploy from the webhook's host (slack unless a known host)",
            },
            heartbeat: config.hasHeartbeatUrl
                ? { create: setHeartbeatCommand(sudo), delete: removeHeartbeatCommand(sudo), stdin: "secret (redacted)" }
                : null,
        };
        write(path.join(hostDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
        written.push(hostDir);
    }
    return written;
}

/** The webhook file as the host gets it, its secrets redacted (the format line only when it is known here). */
function renderedWebhookFile(config: HostguardConfig): string {
    if (config.hasPagerdutyRoutingKey) {
        return webhookFileText(PAGERDUTY_REGIONS[config.pagerdutyRegion], "pagerduty", REDACTED_KEY);
    }
    return webhookFileText(REDACTED, config.chatFormat ?? "slack");
}

/** Every bundle merged into DIR (the base settings file included), for the given settings. */
export function renderPayload(dir: string, settings: RawConfig, cronMinute?: number): void {
    let validated;
    try {
        validated = validateSettings(settings);
    } catch (e) {
        throw new Error(`${NAMESPACE}:${(e as { key?: string }).key ?? "?"} ${(e as Error).message}`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    for (const b of renderHost(validated, undefined, { cronMinute }).bundles) {
        for (const f of b.files) {
            if (b.part === "base" || f.path !== SETTINGS_FILE) {
                write(path.join(dir, f.path), f.content, f.mode);
            }
        }
    }
}

async function main(): Promise<void> {
    const opts = parseArgs(process.argv.slice(2));
    const root = path.resolve(__dirname, "..");
    if (opts.payload !== "") {
        renderPayload(path.resolve(opts.payload), opts.settings, opts.cronMinute);
        return;
    }
    const config = stackConfig(root, opts.stack);
    for (const warning of configWarnings(config)) {
        console.error(`render: warning: ${warning}`);
    }
    for (const dir of renderStack(root, opts.stack, path.resolve(root, opts.out), opts.cronMinute)) {
        console.log(`rendered ${path.relative(root, dir)}`);
    }
    if (config.delivery === "ssm") {
        const dir = await renderFleet(root, opts.stack, config, path.join(path.resolve(root, opts.out), opts.stack));
        for (const f of ["document.json", "association.json", "webhook-parameter.txt", "host-policy.json", "bucket-policy.json", "lifecycle.json", "manifest.json"]) {
            console.log(`rendered ${path.relative(root, path.join(dir, f))}`);
        }
        for (const key of fs.readdirSync(path.join(dir, "bundles"), { recursive: true }).map(String).filter((k) => k.endsWith(".tar")).sort()) {
            console.log(`rendered ${path.relative(root, path.join(dir, "bundles", key))}`);
        }
    }
    // Rendered for review, but not deployable: the exit status says so, as preview would refuse it.
    const placeholders = placeholderLines(config);
    for (const line of placeholders) {
        console.error(`render: not deployable: ${line}`);
    }
    if (placeholders.length > 0) {
        console.error(`render: ${placeholders.length} placeholder(s) left in Pulumi.${opts.stack}.yaml: pulumi preview and up refuse the stack until they are replaced`);
        process.exitCode = 1;
    }
}

if (require.main === module) {
    main().catch((e: unknown) => {
        console.error(`render: ${e instanceof Error ? e.message : String(e)}`);
        process.exit(1);
    });
}
