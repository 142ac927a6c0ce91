// The pure renderer: the settings file, which part ships which payload file,
// and that a part's tar unpacks (with the real GNU tar) to exactly the files of
// scripts/, byte for byte.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { DEFAULT_SETTINGS } from "../../components/config";
import {
    cronSchedule, partBundle, partCreateCommand, partDeleteCommand, partOf, PARTS, readPayload, renderHost,
    renderSettings, sha256, tarFiles, templateKeys, type PayloadFile,
} from "../../components/render";

const EXPECTED_DEFAULT_SETTINGS = `# hostguard settings, written by the Pulumi program (components/render.ts).
# Change the stack config and run \`pulumi up\`; edits here are overwritten.
CPU_THRESHOLD=80
MEMORY_THRESHOLD=90
DISK_THRESHOLD=90
CONTAINER_RUNTIME=docker
CONTAINER_WATCH=
NOTIFY_CA_FILE=
NOTIFY_MAX_TIME=10
NOTIFY_ATTEMPTS=3
NOTIFY_BUDGET=40
SLACK_CHANNEL=alerts
BAN_MAXRETRY=10
BAN_FINDTIME=1m
BAN_BANTIME=10m
BAN_ACTION=
NGINX_ACCESS_LOG=/var/log/nginx/access.log
NGINX_SERVER_CONF=
APP_PROPERTIES=
CRON_MINUTE=7
`;

function file(p: string, text: string, mode: 0o755 | 0o644 = 0o644): PayloadFile {
    const content = Buffer.from(text);
    return { path: p, mode, content, sha256: sha256(content) };
}

function unpack(tar: Buffer): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-render-"));
    execFileSync("tar", ["-xf", "-", "-C", dir], { input: tar, timeout: 10_000 });
    return dir;
}

function listTree(dir: string, rel = ""): string[] {
    return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
        const p = rel ? `${rel}/${e.name}` : e.name;
        return e.isDirectory() ? listTree(dir, p) : [p];
    }).sort();
}

describe("renderSettings", () => {
    it("writes every key of scripts/README.md with the SPEC defaults", () => {
        assert.equal(renderSettings(DEFAULT_SETTINGS, 7), EXPECTED_DEFAULT_SETTINGS);
    });
    it("writes every key the payload README documents, and no other", () => {
        const readme = fs.readFileSync(path.join(__dirname, "../../scripts/README.md"), "utf8");
        const section = readme.split("## Settings")[1].split("\n## ")[0];
        const documented = [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]).sort();
        const written = renderSettings(DEFAULT_SETTINGS, 0).split("\n").filter((l) => /^[A-Z]/.test(l)).map((l) => l.split("=")[0]).sort();
        assert.deepEqual(written, documented);
    });
    it("joins the container watch list with commas and refuses a bad cron minute", () => {
        assert.match(renderSettings({ ...DEFAULT_SETTINGS, containerWatch: ["api", "db"] }, 0), /^CONTAINER_WATCH=api,db$/m);
        assert.throws(() => renderSettings(DEFAULT_SETTINGS, 10), /cron minute/);
        assert.throws(() => renderSettings({ ...DEFAULT_SETTINGS, slackChannel: "a\nCPU_THRESHOLD=0" }, 0), /one line/);
    });
    it("keeps the every-10-minutes schedule with the offset", () => {
        assert.equal(cronSchedule(0), "0-59/10 * * * *");
        assert.equal(cronSchedule(9), "9-59/10 * * * *");
    });
});

describe("parts", () => {
    it("assigns the known payload layout to parts", () => {
        assert.equal(partOf("install"), "installer");
        assert.equal(partOf("lib/common.sh"), "installer");
        assert.equal(partOf("hostguard-notify"), "base");
        assert.equal(partOf("host-monitor"), "monitors");
        assert.equal(partOf("container-monitor"), "monitors");
        assert.equal(partOf("cron.d/hostguard.in"), "monitors");
        assert.equal(partOf("logrotate.d/hostguard"), "monitors");
        assert.equal(partOf("fail2ban/filter.d/nginx-bad-request.local"), "bantool");
        assert.equal(partOf("fail2ban/action.d/slack-notify.conf"), "bantool");
        assert.equal(partOf("nginx/hostguard-deny.conf"), "web");
        assert.equal(partOf("README.md"), "skip");
        assert.throws(() => partOf("mystery.txt"), /belongs to no part/);
    });
    it("finds the settings keys a part's templates use", () => {
        assert.deepEqual(templateKeys([file("a.in", "x @BAN_MAXRETRY@ @CRON_MINUTE@ @BAN_MAXRETRY@"), file("b", "@CPU_THRESHOLD@")]), ["BAN_MAXRETRY", "CRON_MINUTE"]);
    });
    it("re-runs a part only when its own files or its template keys change", () => {
        const payload = [
            file("install", "#!/usr/bin/env bash\n", 0o755), file("lib/common.sh", "x"),
            file("host-monitor", "m", 0o755), file("cron.d/hostguard.in", "@CRON_MINUTE@-59/10 * * * * root x\n"),
            file("fail2ban/jail.d/j.local.in", "maxretry = @BAN_MAXRETRY@\n"),
        ];
        const a = renderHost(DEFAULT_SETTINGS, 1, payload);
        const b = renderHost({ ...DEFAULT_SETTINGS, cpuThreshold: 50 }, 1, payload);
        const c = renderHost({ ...DEFAULT_SETTINGS, banMaxRetry: 5 }, 1, payload);
        const d = renderHost(DEFAULT_SETTINGS, 2, payload);
        const key = (h: typeof a) => h.bundles.map((x) => `${x.part}:${x.sha256}:${x.settingsSha256}`);
        const changed = (x: typeof a, y: typeof a) => PARTS.filter((_, i) => key(x)[i] !== key(y)[i]);
        assert.deepEqual(changed(a, b), ["base"], "a threshold is read at run time: only the settings file changes");
        assert.deepEqual(changed(a, c), ["base", "bantool"]);
        assert.deepEqual(changed(a, d), ["base", "monitors"]);
        const edited = payload.map((f) => (f.path === "host-monitor" ? file("host-monitor", "m2", 0o755) : f));
        assert.deepEqual(changed(a, renderHost(DEFAULT_SETTINGS, 1, edited)), ["monitors"]);
        const lib = payload.map((f) => (f.path === "lib/common.sh" ? file("lib/common.sh", "y") : f));
        assert.deepEqual(changed(a, renderHost(DEFAULT_SETTINGS, 1, lib)), [...PARTS], "the installer travels in every part");
    });
});

describe("tar bundles", () => {
    it("are byte-deterministic", async () => {
        const files = [file("install", "#!/bin/sh\n", 0o755), file("lib/common.sh", "a\n")];
        const one = await tarFiles(files);
        const two = await tarFiles(files.map((f) => ({ ...f, content: Buffer.from(f.content) })));
        assert.equal(sha256(one), sha256(two));
        assert.notEqual(sha256(one), sha256(await tarFiles([file("install", "#!/bin/sh\n", 0o644), files[1]])), "the mode is part of the bytes");
    });

    it("unpack with GNU tar to exactly the files of scripts/ plus the settings file", async () => {
        const payload = readPayload();
        assert.ok(payload.length > 0, "scripts/ is empty");
        const { settingsText, bundles } = renderHost(DEFAULT_SETTINGS, 3, payload);
        const shipped = new Set<string>();
        for (const b of bundles) {
            const dir = unpack(await tarFiles(b.files));
            try {
                const expected = b.files.map((f) => f.path).sort();
                assert.deepEqual(listTree(dir), expected, `files of part ${b.part}`);
                for (const rel of expected) {
                    const got = fs.readFileSync(path.join(dir, rel));
                    const want = rel === "hostguard.conf" ? Buffer.from(settingsText) : fs.readFileSync(path.join(__dirname, "../../scripts", rel));
                    assert.equal(sha256(got), sha256(want), `${b.part}: ${rel} differs from scripts/${rel}`);
                    const exec = (fs.statSync(path.join(dir, rel)).mode & 0o111) !== 0;
                    if (rel !== "hostguard.conf") {
                        const srcExec = (fs.statSync(path.join(__dirname, "../../scripts", rel)).mode & 0o111) !== 0;
                        assert.equal(exec, srcExec, `${rel}: executable bit`);
                    }
                    shipped.add(rel);
                }
            } finally {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        }
        const all = payload.filter((f) => partOf(f.path) !== "skip").map((f) => f.path);
        assert.deepEqual([...shipped].filter((p) => p !== "hostguard.conf").sort(), all.sort(), "every payload file is shipped by some part");
        assert.ok(shipped.has("hostguard.conf"));
    });
});

describe("remote command text", () => {
    const b = partBundle("monitors", [file("install", "i", 0o755), file("host-monitor", "m", 0o755)], renderSettings(DEFAULT_SETTINGS, 0));
    it("unpacks stdin to a private temp dir and runs the installer for the part", () => {
        const cmd = partCreateCommand(b, false);
        assert.match(cmd, new RegExp(`^# hostguard part monitors: payload sha256 ${b.sha256}, settings sha256 ${b.settingsSha256}\n`));
        assert.match(cmd, /umask 077/);
        assert.match(cmd, /"\$d\/install" install --part monitors --settings \/etc\/hostguard\/hostguard.conf$/);
        assert.equal(partDeleteCommand("monitors", false), "/usr/local/lib/hostguard/install uninstall --part monitors");
    });
    it("wraps in sudo for a non-root user, and the script runs in a real shell", async () => {
        const cmd = partCreateCommand(b, true);
        assert.ok(cmd.startsWith("sudo -n sh -c '"), cmd);
        // The real script with the installer swapped for a listing of what it would run from.
        const script = partCreateCommand(b, false).replace('"$d/install" install', 'cd "$d" && ls -l install host-monitor && cat host-monitor && echo " $d" && : install');
        const tar = await tarFiles(b.files);
        const out = execFileSync("sh", ["-c", script], { input: tar.toString("base64"), timeout: 10_000 }).toString();
        assert.match(out, /^-rwxr-xr-x .* install$/m);
        assert.match(out, /^m \/tmp\/hostguard\.\w{8}$/m);
        const tmp = out.trim().split(" ").pop() as string;
        assert.equal(fs.existsSync(tmp), false, "the temp dir is removed on exit");
    });
});
