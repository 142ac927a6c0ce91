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
    hostFiles, partBundle, payloadFile, readPayload, renderHost, sha256, tarFiles, type PayloadFile,
} from "../../components/bundles";
import { parseFileTable, PARTS } from "../../components/fileTable";
import { cronSchedule, jailIgnoreIps, renderCron, renderJail, renderSettingsFile } from "../../components/hostFiles";
import { partCreateCommand, partDeleteCommand } from "../../components/remoteCommands";

const EXPECTED_DEFAULT_SETTINGS = `# hostguard settings, written by the Pulumi program (components/settings.ts).
# Change the stack config and run \`pulumi up\`; edits here are overwritten.
CPU_THRESHOLD=80
MEMORY_THRESHOLD=90
DISK_THRESHOLD=90
CONTAINER_MONITOR=true
CONTAINER_RUNTIME=docker
CONTAINER_RUNTIME_TIMEOUT=60
CONTAINER_WATCH=
NOTIFY_CA_FILE=
NOTIFY_MAX_TIME=10
NOTIFY_ATTEMPTS=3
NOTIFY_BUDGET=40
NOTIFY_SPOOL_MAX=1000
SLACK_CHANNEL=alerts
ALERT_HOST_LABEL=false
ALERT_REPEAT_INTERVAL=0
ALERT_SEND_RESOLVED=false
ALERT_AFTER_RUNS=1
NGINX_SERVER_CONF=
APP_PROPERTIES=
HOST_NAME=
`;

const file = (p: string, text: string, mode: 0o755 | 0o644 = 0o644): PayloadFile => payloadFile(p, text, mode);

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

describe("renderSettingsFile", () => {
    it("writes every host key with the SPEC defaults, and nothing only a rendered file uses", () => {
        assert.equal(renderSettingsFile(DEFAULT_SETTINGS), EXPECTED_DEFAULT_SETTINGS);
    });
    it("carries no host's name: HOST_NAME is empty, the host labels with its kernel's name", () => {
        assert.match(renderSettingsFile(DEFAULT_SETTINGS), /\nAPP_PROPERTIES=\nHOST_NAME=\n$/);
        assert.doesNotMatch(renderSettingsFile(DEFAULT_SETTINGS, (k) => k === "appProperties"), /HOST_NAME/);
        assert.match(renderSettingsFile({ ...DEFAULT_SETTINGS, alertHostLabel: true, alertRepeatInterval: "1h", alertSendResolved: true, alertAfterRuns: 2 }),
            /^ALERT_HOST_LABEL=true\nALERT_REPEAT_INTERVAL=1h\nALERT_SEND_RESOLVED=true\nALERT_AFTER_RUNS=2$/m);
    });
    it("writes every key the payload README documents, and no other", () => {
        const readme = fs.readFileSync(path.join(__dirname, "../../scripts/README.md"), "utf8");
        const section = readme.split("## Settings")[1].split("\n## ")[0];
        const documented = [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]).sort();
        const written = renderSettingsFile(DEFAULT_SETTINGS).split("\n").filter((l) => /^[A-Z]/.test(l)).map((l) => l.split("=")[0]).sort();
        assert.deepEqual(written, documented);
    });
    it("joins the container watch list with commas and refuses a value of two lines", () => {
        assert.match(renderSettingsFile({ ...DEFAULT_SETTINGS, containerWatch: ["api", "db"] }), /^CONTAINER_WATCH=api,db$/m);
        assert.throws(() => renderSettingsFile({ ...DEFAULT_SETTINGS, slackChannel: "a\nCPU_THRESHOLD=0" }), /one line/);
    });
});

describe("cron file and jail", () => {
    it("keeps the every-10-minutes schedule on the pinned minute, and refuses a bad one", () => {
        assert.equal(cronSchedule(), "0-59/10 * * * *");
        assert.equal(cronSchedule(9), "9-59/10 * * * *");
        assert.throws(() => cronSchedule(10), /cron minute/);
        assert.throws(() => cronSchedule(1.5), /cron minute/);
        assert.match(renderCron(4), /^4-59\/10 \* \* \* \* root \/usr\/local\/lib\/hostguard\/host-monitor >> \/var\/log\/hostguard\/host-monitor.log 2>&1$/m);
    });
    it("without a pinned minute runs each monitor through at-offset.sh on every 10-minute mark (the host waits its own offset)", () => {
        const lines = renderCron(undefined).split("\n").filter((l) => /^[0-9]/.test(l));
        assert.deepEqual(lines, [
            "0-59/10 * * * * root sh /usr/local/lib/hostguard/at-offset.sh /usr/local/lib/hostguard/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1",
            "0-59/10 * * * * root sh /usr/local/lib/hostguard/at-offset.sh /usr/local/lib/hostguard/container-monitor >> /var/log/hostguard/container-monitor.log 2>&1",
        ]);
        assert.doesNotMatch(renderCron(7), /at-offset/, "a pinned minute runs on it, as the SPEC's line");
    });
    it("schedules the container monitor unless containerMonitor is false; the host monitor always", () => {
        const jobs = (text: string) => text.split("\n").filter((l) => /^[0-9]/.test(l));
        assert.equal(renderCron(7, true), renderCron(7), "the SPEC's two jobs by default");
        assert.deepEqual(jobs(renderCron(7, false)), [
            "7-59/10 * * * * root /usr/local/lib/hostguard/host-monitor >> /var/log/hostguard/host-monitor.log 2>&1",
        ]);
        assert.match(renderCron(7, false), /^# .*containerMonitor is false/m, "the file says why the container monitor is missing");
        const cron = (s: typeof DEFAULT_SETTINGS) => renderHost(s, readPayload(), { cronMinute: 3 }).files.find((f) => f.destination === "/etc/cron.d/hostguard")!.content.toString();
        assert.match(cron(DEFAULT_SETTINGS), /container-monitor/);
        assert.doesNotMatch(cron({ ...DEFAULT_SETTINGS, containerMonitor: false }), /container-monitor/);
        assert.match(cron({ ...DEFAULT_SETTINGS, containerMonitor: false }), /^3-59\/10 \* \* \* \* root \/usr\/local\/lib\/hostguard\/host-monitor /m);
    });
    it("leaves banaction out when none is set, and writes the stack's values", () => {
        const plain = renderJail(DEFAULT_SETTINGS);
        assert.doesNotMatch(plain, /^banaction/m);
        assert.match(plain, /^maxretry  = 10\nfindtime  = 1m\nbantime   = 10m\nignoreip  = 127.0.0.1\/8 ::1\naction    = %\(action_\)s\n            slack-notify\.py\[slack_channel="alerts"\]\n$/m);
        assert.doesNotMatch(plain, /^bantime\.increment/m, "banIncrement false: the SPEC's fixed bantime");
        const set = renderJail({ ...DEFAULT_SETTINGS, banAction: "iptables.multiport", banBanTime: "1h30m", nginxAccessLog: "/srv/log/a.log" });
        assert.match(set, /^banaction = iptables.multiport$/m);
        assert.match(set, /^bantime   = 1h30m$/m);
        assert.match(set, /^logpath   = \/srv\/log\/a.log$/m);
    });
    it("never bans loopback, the admin networks or banIgnoreIps; banIncrement grows the bans", () => {
        const jail = renderJail({ ...DEFAULT_SETTINGS, banIgnoreIps: ["198.51.100.7", "203.0.113.0/24"], banIncrement: true },
            ["203.0.113.0/24", "2001:db8::/48"]);
        assert.match(jail, /^ignoreip  = 127.0.0.1\/8 ::1 203.0.113.0\/24 2001:db8::\/48 198.51.100.7$/m, "each once, in order");
        assert.match(jail, /^bantime   = 10m\nbantime.increment = true\nbantime.factor = 1\nbantime.maxtime = 1w\n/m);
        assert.deepEqual(jailIgnoreIps(DEFAULT_SETTINGS), ["127.0.0.1/8", "::1"]);
    });
});

describe("the file table", () => {
    it("parses the table install reads, and names a malformed line", () => {
        assert.deepEqual(parseFileTable("# c\n\nweb  a/b  /etc/x/  0644\n"), [{ part: "web", source: "a/b", destination: "/etc/x/", mode: 0o644 }]);
        assert.throws(() => parseFileTable("# c\nbase a /x\n"), /files.table:2: expected PART SOURCE DESTINATION MODE/);
        assert.throws(() => parseFileTable("nopart a /x 0644\n"), /files.table:1:/);
        assert.throws(() => parseFileTable("base a x 0644\n"), /files.table:1:/);
    });
    it("ships every file of scripts/ but the README, and renders the sources scripts/ lacks", () => {
        const payload = readPayload();
        const files = hostFiles({ settings: DEFAULT_SETTINGS }, payload);
        const fromScripts = files.filter((f) => payload.some((p) => p.path === f.path)).map((f) => f.path).sort();
        // The file shipped only `when trustedProxies` is set (issue 25) is the exception.
        const onlyProxied = ["fail2ban/action.d/hostguard-nginx-ban.py"];
        assert.deepEqual(fromScripts, payload.map((p) => p.path).filter((p) => p !== "README.md" && !onlyProxied.includes(p)).sort());
        const proxied = hostFiles({ settings: { ...DEFAULT_SETTINGS, trustedProxies: ["10.9.1.0/24"] } }, payload);
        assert.deepEqual(proxied.filter((f) => payload.some((p) => p.path === f.path)).map((f) => f.path).sort(),
            payload.map((p) => p.path).filter((p) => p !== "README.md" && p !== "nginx/hostguard-deny.conf").sort());
        assert.deepEqual(files.filter((f) => !payload.some((p) => p.path === f.path)).map((f) => `${f.part} ${f.path} ${f.destination}`), [
            "base hostguard.conf /etc/hostguard/hostguard.conf",
            "monitors cron.d/hostguard /etc/cron.d/hostguard",
            "bantool fail2ban/jail.d/hostguard-nginx-bad-request.local /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local",
        ]);
        assert.equal(files.find((f) => f.path === "hostguard/paths.py")!.destination, "/usr/local/lib/hostguard/hostguard/paths.py");
    });
    it("refuses a payload file no row ships, and a row with no file and no renderer", () => {
        const payload = readPayload();
        const v = { settings: DEFAULT_SETTINGS };
        assert.throws(() => hostFiles(v, [...payload, file("mystery.txt", "x")]), /scripts\/mystery.txt is in no part/);
        const table = payload.find((f) => f.path === "files.table")!;
        const extra = file("files.table", `${table.content.toString()}web  nope.conf  /etc/nope  0644\n`);
        assert.throws(() => hostFiles(v, payload.map((f) => (f.path === "files.table" ? extra : f))), /nope.conf is neither/);
        const noSettings = file("files.table", table.content.toString().replace(/^base +hostguard\.conf .*\n/m, ""));
        assert.notEqual(noSettings.content.toString(), table.content.toString());
        assert.throws(() => hostFiles(v, payload.map((f) => (f.path === "files.table" ? noSettings : f))), /no base row for hostguard.conf/);
    });
});

describe("parts", () => {
    const TABLE = [
        "base install /usr/local/lib/hostguard/install 0755", "base files.table /usr/local/lib/hostguard/files.table 0644",
        "base hostguard.conf /etc/hostguard/hostguard.conf 0644",
        "base hostguard/*.py /usr/local/lib/hostguard/hostguard/ 0644", "monitors host-monitor /usr/local/lib/hostguard/host-monitor 0755",
        "monitors cron.d/hostguard /etc/cron.d/hostguard 0644",
        "bantool fail2ban/jail.d/hostguard-nginx-bad-request.local /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local 0644",
        "web nginx/hostguard-deny.conf /etc/nginx/snippets/hostguard-deny.conf 0644", "",
    ].join("\n");
    const payload = [
        file("install", "#!/usr/bin/env bash\n", 0o755), file("files.table", TABLE), file("hostguard/paths.py", "x"),
        file("host-monitor", "m", 0o755), file("nginx/hostguard-deny.conf", "d"),
    ];
    it("re-runs exactly the parts whose bundle bytes change", () => {
        const a = renderHost(DEFAULT_SETTINGS, payload, { cronMinute: 1 });
        const changed = (x: typeof a, y: typeof a) => PARTS.filter((_, i) => x.bundles[i].sha256 !== y.bundles[i].sha256);
        assert.deepEqual(changed(a, renderHost({ ...DEFAULT_SETTINGS, cpuThreshold: 50 }, payload, { cronMinute: 1 })), ["base"], "a threshold is read at run time: only the settings file changes");
        assert.deepEqual(changed(a, renderHost({ ...DEFAULT_SETTINGS, banMaxRetry: 5 }, payload, { cronMinute: 1 })), ["bantool"], "the jail is the bantool part's");
        assert.deepEqual(changed(a, renderHost({ ...DEFAULT_SETTINGS, slackChannel: "ops" }, payload, { cronMinute: 1 })), ["base", "bantool"]);
        assert.deepEqual(changed(a, renderHost(DEFAULT_SETTINGS, payload, { cronMinute: 2 })), ["monitors"]);
        assert.deepEqual(changed(a, renderHost({ ...DEFAULT_SETTINGS, containerRuntime: "podman" }, payload, { cronMinute: 1 })), ["base", "monitors"], "monitors' install step checks the runtime");
        assert.deepEqual(changed(a, renderHost({ ...DEFAULT_SETTINGS, containerMonitor: false }, payload, { cronMinute: 1 })), ["base", "monitors"], "the cron file and monitors' runtime check");
        assert.deepEqual(changed(a, renderHost({ ...DEFAULT_SETTINGS, nginxServerConf: "/etc/nginx/x" }, payload, { cronMinute: 1 })), ["base", "web"], "web's install step reads it");
        const edited = payload.map((f) => (f.path === "host-monitor" ? file("host-monitor", "m2", 0o755) : f));
        assert.deepEqual(changed(a, renderHost(DEFAULT_SETTINGS, edited, { cronMinute: 1 })), ["monitors"]);
        const lib = payload.map((f) => (f.path === "hostguard/paths.py" ? file("hostguard/paths.py", "y") : f));
        assert.deepEqual(changed(a, renderHost(DEFAULT_SETTINGS, lib, { cronMinute: 1 })), [...PARTS], "the installer travels in every part");
    });
    it("gives each bundle the installer, its own files and the settings its install step reads", () => {
        const r = renderHost({ ...DEFAULT_SETTINGS, appProperties: "/opt/app/a.properties" }, payload, { cronMinute: 1 });
        const names = (p: string) => r.bundles.find((b) => b.part === p)!.files.map((f) => f.path);
        assert.deepEqual(names("monitors"), ["cron.d/hostguard", "files.table", "host-monitor", "hostguard.conf", "hostguard/paths.py", "install"]);
        assert.deepEqual(names("web"), ["files.table", "hostguard.conf", "hostguard/paths.py", "install", "nginx/hostguard-deny.conf"]);
        const conf = (p: string) => r.bundles.find((b) => b.part === p)!.files.find((f) => f.path === "hostguard.conf")!.content.toString();
        assert.deepEqual(conf("web").split("\n").filter((l) => /^[A-Z]/.test(l)), ["NGINX_SERVER_CONF=", "APP_PROPERTIES=/opt/app/a.properties"]);
        assert.deepEqual(conf("monitors").split("\n").filter((l) => /^[A-Z]/.test(l)), ["CONTAINER_MONITOR=true", "CONTAINER_RUNTIME=docker"], "install checks the runtime is there unless the container monitor is off");
        assert.equal(conf("base"), renderSettingsFile({ ...DEFAULT_SETTINGS, appProperties: "/opt/app/a.properties" }), "base's is its row: every setting");
        assert.deepEqual(names("base"), ["files.table", "hostguard.conf", "hostguard/paths.py", "install"]);
    });
});

describe("tar bundles", () => {
    it("are byte-deterministic", async () => {
        const files = [file("install", "#!/bin/sh\n", 0o755), file("hostguard/paths.py", "a\n")];
        const one = await tarFiles(files);
        const two = await tarFiles(files.map((f) => ({ ...f, content: Buffer.from(f.content) })));
        assert.equal(sha256(one), sha256(two));
        assert.notEqual(sha256(one), sha256(await tarFiles([file("install", "#!/bin/sh\n", 0o644), files[1]])), "the mode is part of the bytes");
    });

    it("unpack with GNU tar to exactly the rendered files, scripts/ byte for byte", async () => {
        const payload = readPayload();
        assert.ok(payload.length > 0, "scripts/ is empty");
        const { files, bundles } = renderHost(DEFAULT_SETTINGS, payload, { cronMinute: 3 });
        const byPath = new Map(files.map((f) => [f.path, f]));
        for (const b of bundles) {
            const dir = unpack(await tarFiles(b.files));
            try {
                const expected = b.files.map((f) => f.path).sort();
                assert.deepEqual(listTree(dir), expected, `files of part ${b.part}`);
                for (const rel of expected) {
                    const got = fs.readFileSync(path.join(dir, rel));
                    const exec = (fs.statSync(path.join(dir, rel)).mode & 0o111) !== 0;
                    if (rel === "hostguard.conf") {
                        assert.equal(got.toString(), b.files.find((f) => f.path === rel)!.content.toString());
                        continue;
                    }
                    const want = byPath.get(rel)!;
                    assert.equal(sha256(got), want.sha256, `${b.part}: ${rel} differs from what the renderer made`);
                    assert.equal(exec, want.mode === 0o755, `${rel}: executable bit`);
                    const source = path.join(__dirname, "../../scripts", rel);
                    if (fs.existsSync(source) && rel !== "files.table") {
                        assert.equal(sha256(got), sha256(fs.readFileSync(source)), `${rel} differs from scripts/${rel}`);
                    }
                }
            } finally {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        }
    });
});

describe("remote command text", () => {
    const hostFile = (p: string, text: string, mode: 0o755 | 0o644, part: "base" | "monitors") => ({ ...file(p, text, mode), part, tableSource: p, destination: `/x/${p}` });
    const b = partBundle("monitors", [hostFile("install", "i", 0o755, "base"), hostFile("host-monitor", "m", 0o755, "monitors")], DEFAULT_SETTINGS);
    it("unpacks stdin to a private temp dir and runs the installer for the part", () => {
        const cmd = partCreateCommand(b, false);
        assert.match(cmd, new RegExp(`^# hostguard part monitors: bundle sha256 ${b.sha256}\n`));
        assert.match(cmd, /umask 077/);
        assert.match(cmd, /"\$d\/install" install --part monitors$/);
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
