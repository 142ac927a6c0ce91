// `npm run render`: renders the committed stacks without a cloud or secrets;
// what it writes is what renderHost gives (scripts/ byte for byte, the
// rendered files), and the rendered host files of dev and prod match their
// committed snapshots (test/unit/snapshots/; UPDATE_SNAPSHOTS=1 rewrites them).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { validateConfig } from "../../components/config";
import { renderHost, sha256 } from "../../components/bundles";
import { renderSettingsFile } from "../../components/hostFiles";
import { readStackFile, renderStack } from "../../tools/render";

const ROOT = path.resolve(__dirname, "../..");

function tree(dir: string, rel = ""): string[] {
    return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
        const p = rel ? `${rel}/${e.name}` : e.name;
        return e.isDirectory() ? tree(dir, p) : [p];
    }).sort();
}

/** The files a stack's hosts receive that are rendered from its settings, as one text. */
function renderedText(dirs: string[]): string {
    const wanted = ["etc/hostguard/hostguard.conf", "etc/cron.d/hostguard", "etc/fail2ban/jail.d/hostguard-nginx-bad-request.local"];
    return dirs.flatMap((dir) => wanted.map((rel) => `==> ${path.basename(dir)}/${rel} <==\n${fs.readFileSync(path.join(dir, rel), "utf8")}`)).join("\n");
}

function checkSnapshot(stack: string, dirs: string[]): void {
    const file = path.join(__dirname, "snapshots", `${stack}.txt`);
    const text = renderedText(dirs);
    if (process.env.UPDATE_SNAPSHOTS === "1") {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, text);
    }
    assert.equal(text, fs.readFileSync(file, "utf8"), `the rendered host files of ${stack} differ from ${path.relative(ROOT, file)} (UPDATE_SNAPSHOTS=1 rewrites it after review)`);
}

describe("render tool", () => {
    for (const stack of ["dev", "prod"]) {
        it(`renders the ${stack} stack: payload identical to scripts/, settings from the stack file`, () => {
            const out = fs.mkdtempSync(path.join(os.tmpdir(), "hg-render-tool-"));
            try {
                const dirs = renderStack(ROOT, stack, out);
                const config = validateConfig(readStackFile(path.join(ROOT, `Pulumi.${stack}.yaml`)), { requireSecrets: false });
                assert.deepEqual(dirs.map((d) => path.basename(d)), config.hosts.map((h) => h.name));
                for (const dir of dirs) {
                    const rendered = renderHost(config.settings, undefined, { adminCidrs: config.adminCidrs });
                    assert.equal(fs.readFileSync(path.join(dir, "etc/hostguard/hostguard.conf"), "utf8"), renderSettingsFile(config.settings));
                    for (const b of rendered.bundles) {
                        assert.deepEqual(tree(path.join(dir, "parts", b.part)), b.files.map((f) => f.path), b.part);
                        for (const f of b.files) {
                            const got = path.join(dir, "parts", b.part, f.path);
                            assert.equal(sha256(fs.readFileSync(got)), f.sha256, `${b.part}/${f.path}`);
                            assert.equal(fs.statSync(got).mode & 0o777, f.mode, `${b.part}/${f.path} mode`);
                        }
                    }
                    for (const f of rendered.files) {
                        assert.equal(sha256(fs.readFileSync(path.join(dir, f.destination))), f.sha256, f.destination);
                        const source = path.join(ROOT, "scripts", f.path);
                        // files.table ships expanded (test/unit/file-table.test.ts).
                        if (fs.existsSync(source) && f.path !== "files.table") {
                            assert.equal(f.sha256, sha256(fs.readFileSync(source)), `${f.path} is scripts/${f.path}`);
                        }
                    }
                    const hookFile = path.join(dir, "etc/hostguard/webhook.conf");
                    assert.match(fs.readFileSync(hookFile, "utf8"), /^url=<redacted/);
                    assert.equal(fs.statSync(hookFile).mode & 0o777, 0o600);
                    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
                    assert.equal(manifest.cronSchedule, "0-59/10 * * * *");
                    assert.equal(manifest.cronMinute, null, "each host derives its offset");
                    assert.equal(manifest.jail, "nginx-bad-request");
                }
                if (stack === "prod") {
                    assert.match(fs.readFileSync(path.join(dirs[0], "etc/fail2ban/jail.d/hostguard-nginx-bad-request.local"), "utf8"), /^maxretry  = 5$/m);
                }
                checkSnapshot(stack, dirs);
            } finally {
                fs.rmSync(out, { recursive: true, force: true });
            }
        });
    }

    it("works with an encrypted webhook in the stack file and never decrypts it", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-render-stack-"));
        try {
            fs.writeFileSync(path.join(dir, "Pulumi.t.yaml"), [
                "config:", "  hostguard:aws: false", "  hostguard:hosts:", "    - {name: t1, host: 127.0.0.1, user: root, hostKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A}",
                "  hostguard:webhookUrl:", "    secure: v1:SENTINELCIPHERTEXT", "",
            ].join("\n"));
            const [hostDir] = renderStack(dir, "t", path.join(dir, "out"), 0);
            const all = tree(hostDir).map((f) => fs.readFileSync(path.join(hostDir, f), "latin1")).join("\n");
            assert.ok(!all.includes("SENTINELCIPHERTEXT"));
            assert.equal(JSON.parse(fs.readFileSync(path.join(hostDir, "manifest.json"), "utf8")).webhook.configured, true);
            assert.ok(!JSON.parse(fs.readFileSync(path.join(hostDir, "manifest.json"), "utf8")).parts.base.create.startsWith("sudo"), "root needs no sudo");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("renders the chat format beside the webhook, and PagerDuty's routing key only in the root-only webhook file, redacted (issue 34)", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-render-chat-"));
        const base = ["config:", "  hostguard:aws: false", "  hostguard:hosts:", "    - {name: t1, host: 127.0.0.1, user: root, hostKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A}"];
        try {
            fs.writeFileSync(path.join(dir, "Pulumi.t.yaml"), [...base, "  hostguard:chatFormat: googlechat", "  hostguard:webhookUrl:", "    secure: v1:SENTINELCIPHERTEXT", ""].join("\n"));
            let [hostDir] = renderStack(dir, "t", path.join(dir, "out"), 0);
            assert.match(fs.readFileSync(path.join(hostDir, "etc/hostguard/webhook.conf"), "utf8"), /^url=<redacted[^\n]*\nformat=googlechat\n$/);
            assert.equal(JSON.parse(fs.readFileSync(path.join(hostDir, "manifest.json"), "utf8")).webhook.chatFormat, "googlechat");
            fs.writeFileSync(path.join(dir, "Pulumi.t.yaml"), [...base, "  hostguard:alertSendResolved: true", "  hostguard:pagerdutyRegion: eu", "  hostguard:pagerdutyRoutingKey:", "    secure: v1:SENTINELCIPHERTEXT", ""].join("\n"));
            [hostDir] = renderStack(dir, "t", path.join(dir, "out"), 0);
            const hookFile = path.join(hostDir, "etc/hostguard/webhook.conf");
            assert.equal(fs.readFileSync(hookFile, "utf8"), 'url=https://events.eu.pagerduty.com/v2/enqueue\nformat=pagerduty\n'
                + 'routing_key=<redacted: set with pulumi config set --secret hostguard:pagerdutyRoutingKey>\n');
            assert.equal(fs.statSync(hookFile).mode & 0o777, 0o600);
            const files = tree(hostDir);
            assert.deepEqual(files.filter((f) => /--secret hostguard:pagerdutyRoutingKey/.test(fs.readFileSync(path.join(hostDir, f), "latin1"))), ["etc/hostguard/webhook.conf"]);
            assert.ok(!files.some((f) => fs.readFileSync(path.join(hostDir, f), "latin1").includes("SENTINELCIPHERTEXT")));
            const manifest = JSON.parse(fs.readFileSync(path.join(hostDir, "manifest.json"), "utf8"));
            assert.deepEqual([manifest.webhook.configured, manifest.webhook.chatFormat], [true, "pagerduty"]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("fails on a bad stack file naming the key, as the CLI entry point", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-render-bad-"));
        try {
            fs.writeFileSync(path.join(dir, "Pulumi.bad.yaml"), "config:\n  hostguard:aws: false\n  hostguard:hosts: [{name: b, host: h, hostKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A}]\n  hostguard:banBanTime: ten minutes\n");
            assert.throws(() => renderStack(dir, "bad", path.join(dir, "out"), 0), /hostguard:banBanTime must be a duration/);
            let stderr = "";
            try {
                execFileSync(process.execPath, ["--import", "tsx", path.join(ROOT, "tools/render.ts"), "--stack", "nosuchstack", "--out", path.join(dir, "o")], { cwd: ROOT, timeout: 30_000, stdio: "pipe" });
            } catch (e: any) {
                stderr = String(e.stderr);
            }
            assert.match(stderr, /render: .*Pulumi\.nosuchstack\.yaml/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
