// Issue 16 items 1-3 and 5-7 and issue 17.1: the stack keys' rows, the checks
// a pattern cannot make (the union of CIDRs, files the installer may edit,
// duplicate hosts), namespace typos, secrets in plain text, parsed host keys,
// warnings for values that are legal but surely wrong, and messages in words.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { ConfigError, DEFAULT_SECURITY_GROUP_DESCRIPTION, KNOWN_KEYS, SECRET_KEYS, validateConfig, type RawConfig } from "../../components/config";
import { defaultWords, STACK_KEYS, type StackKeyRow } from "../../components/settings";
import * as pulumi from "@pulumi/pulumi";
import { rawStackConfig, stackSecretKeys } from "../../components/stack";
import { renderStack } from "../../tools/render";
import { filledPlaceholders } from "./placeholders";

const ROOT = path.resolve(__dirname, "../..");
const SENTINEL = "https://hooks.example.test/services/T000/B000/SENTINEL-not-a-real-hook";
const PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAfake\n-----END OPENSSH PRIVATE KEY-----\n";

/** A real public key of TYPE, as `TYPE BASE64` (node:crypto makes it; ssh wire format by hand). */
function sshKey(type: "ed25519" | "rsa2048" | "rsa1024" | "p256"): string {
    const s = (b: Buffer | string) => {
        const buf = Buffer.isBuffer(b) ? b : Buffer.from(b);
        const len = Buffer.alloc(4);
        len.writeUInt32BE(buf.length);
        return Buffer.concat([len, buf]);
    };
    const mpint = (b: Buffer) => s(b[0] & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
    if (type === "ed25519") {
        const { publicKey } = crypto.generateKeyPairSync("ed25519");
        const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
        return `ssh-ed25519 ${Buffer.concat([s("ssh-ed25519"), s(raw)]).toString("base64")}`;
    }
    if (type === "p256") {
        const { publicKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
        const q = publicKey.export({ format: "der", type: "spki" }).subarray(-65);
        return `ecdsa-sha2-nistp256 ${Buffer.concat([s("ecdsa-sha2-nistp256"), s("nistp256"), s(q)]).toString("base64")}`;
    }
    const { publicKey } = crypto.generateKeyPairSync("rsa", { modulusLength: type === "rsa2048" ? 2048 : 1024 });
    const jwk = publicKey.export({ format: "jwk" });
    return `ssh-rsa ${Buffer.concat([s("ssh-rsa"), mpint(Buffer.from(jwk.e!, "base64url")), mpint(Buffer.from(jwk.n!, "base64url"))]).toString("base64")}`;
}

const ED = sshKey("ed25519");

function good(overrides: RawConfig = {}): RawConfig {
    return {
        hosts: JSON.stringify([{ name: "web1", host: "10.0.1.10", hostKey: ED }]),
        vpcId: "vpc-0123456789abcdef0",
        adminCidrs: JSON.stringify(["203.0.113.0/24"]),
        webhookUrl: SENTINEL,
        sshPrivateKey: PEM,
        ...overrides,
    };
}
/** What keeps good() free of the warnings every example would otherwise carry: the web fixes' files, the host's instance. */
const QUIET: RawConfig = {
    nginxServerConf: "/etc/nginx/sites-available/default", appProperties: "/opt/app/application.properties",
    hosts: JSON.stringify([{ name: "web1", host: "10.0.1.10", hostKey: ED, instanceId: "i-0123456789abcdef0" }]),
};
/** As Pulumi hands a deployment over: the secrets decrypted, their keys marked secret. */
const ENGINE = { secretKeys: SECRET_KEYS };

function refusal(raw: RawConfig, opts: object = ENGINE): ConfigError {
    try {
        validateConfig(raw, opts);
    } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        assert.ok(!e.message.includes("SENTINEL"), `secret echoed: ${e.message}`);
        return e;
    }
    assert.fail(`accepted ${JSON.stringify(raw)}`);
}

describe("17.1: stack keys have rows in the one table", () => {
    it("every stack key of the table is known to the validator, secrets flagged", () => {
        for (const r of STACK_KEYS) {
            assert.ok(KNOWN_KEYS.includes(r.key), r.key);
        }
        assert.deepEqual([...SECRET_KEYS].sort(), ["bastionPrivateKey", "heartbeatUrl", "pagerdutyRoutingKey", "sshPrivateKey", "webhookUrl"]);
    });
    it("issue 15's keys are rows: validated, defaulted to []", () => {
        const c = validateConfig(good({ securityGroupId: "sg-0123456789abcdef0", sharedSecurityGroupInstances: '["i-0123abcd"]' }), ENGINE);
        assert.deepEqual(c.sharedSecurityGroupInstances, ["i-0123abcd"]);
        assert.deepEqual(validateConfig(good(), ENGINE).keepSecurityGroupIds, []);
        assert.deepEqual(validateConfig(good(), ENGINE).sharedSecurityGroupInstances, []);
        assert.match(refusal(good({ keepSecurityGroupIds: '["vpc-0123abcd"]' })).message, /^hostguard:keepSecurityGroupIds\[0\] must be a security group id: sg- and 8 to 17/);
    });
    it("messages say what is allowed in words, never a regex", () => {
        for (const raw of [good({ sshUser: "Root!" }), good({ vpcId: "vpc-XYZ" }), good({ securityGroupId: "sg-1" }), good({ securityGroupName: "é" }),
            good({ hosts: JSON.stringify([{ name: "web1", host: "10.0.1.10", hostKey: ED, user: "1x" }]) })]) {
            const e = refusal(raw);
            assert.doesNotMatch(e.message, /\/\^|\$\/|\[a-z|\{0,/, e.message);
        }
        assert.match(refusal(good({ sshUser: "Root!" })).message, /^hostguard:sshUser must be a user name: a lower-case letter or _/);
    });
});

describe("16.1: semantic checks", () => {
    it("adminCidrs whose union opens SSH to half the internet are refused (0.0.0.0/1 + 128.0.0.0/1)", () => {
        const e = refusal(good({ adminCidrs: '["0.0.0.0/1","128.0.0.0/1"]' }));
        assert.equal(e.key, "adminCidrs");
        assert.match(e.message, /more than a \/16/);
        assert.equal(refusal(good({ adminCidrs: '["203.0.0.0/15"]' })).key, "adminCidrs");
        assert.equal(refusal(good({ adminCidrs: '["203.0.0.0/16","198.51.0.0/16"]' })).key, "adminCidrs", "two /16s are more than a /16 in total");
        assert.equal(refusal(good({ adminCidrs: '["2001:db8::/31"]' })).key, "adminCidrs");
    });
    it("accepts a /16 of public IPv4, a /32 of IPv6, and private ranges of any size", () => {
        validateConfig(good({ adminCidrs: '["203.0.0.0/16","2001:db8::/32","10.0.0.0/8","fd00::/8"]' }), ENGINE);
    });
    it("banIgnoreIps never covers everyone or a large public share", () => {
        for (const list of ['["0.0.0.0/0"]', '["::/0"]', '["0.0.0.0/1","128.0.0.0/1"]', '["198.0.0.0/8"]']) {
            const e = refusal(good({ banIgnoreIps: list }));
            assert.equal(e.key, "banIgnoreIps");
            assert.match(e.message, /the jail would never ban them/);
        }
        validateConfig(good({ banIgnoreIps: '["10.0.0.0/8","198.51.100.7"]' }), ENGINE);
        assert.deepEqual(validateConfig(good({ ...QUIET, banIgnoreIps: '["10.0.0.0/8","10.2.3.4"]' }), ENGINE).warnings,
            ["hostguard:banIgnoreIps[1] 10.2.3.4 lies inside banIgnoreIps[0] 10.0.0.0/8 (one entry is enough)"]);
    });
    it("appProperties must be a Spring .properties or YAML file outside system directories", () => {
        for (const [v, why] of [["/etc/passwd", /ending in \.properties, \.yml or \.yaml/], ["/etc/app/application.properties", /system directory \/etc/],
            ["/usr/share/app.properties", /system directory \/usr/], ["/root/a.properties", /\/root/], ["/opt/app/application.txt", /ending in/],
            ["/etc/app/application.yml", /system directory \/etc/]] as const) {
            const e = refusal(good({ appProperties: v }));
            assert.equal(e.key, "appProperties");
            assert.match(e.message, why);
        }
        for (const v of ["/opt/app/config/application.properties", "/opt/app/application.yml", "/opt/app/application.yaml"]) {
            assert.equal(validateConfig(good({ appProperties: v }), ENGINE).settings.appProperties, v);
        }
    });
    it("nginxServerConf must be a file nginx reads", () => {
        for (const v of ["/etc/passwd", "/opt/nginx/site", "/etc/nginx/mime.types", "/etc/nginx/sites-available/a/b"]) {
            assert.equal(refusal(good({ nginxServerConf: v })).key, "nginxServerConf", v);
        }
        for (const v of ["/etc/nginx/nginx.conf", "/etc/nginx/conf.d/app.conf", "/etc/nginx/sites-available/default", "/etc/nginx/sites-enabled/app"]) {
            validateConfig(good({ nginxServerConf: v }), ENGINE);
        }
    });
    it("two hosts with the same address and port are refused; another port is another sshd", () => {
        const h = (host: string, port?: number) => ({ host, hostKey: ED, ...(port ? { port } : {}) });
        const e = refusal(good({ hosts: JSON.stringify([{ name: "a", ...h("10.0.1.10") }, { name: "b", ...h("10.0.1.10", 22) }]) }));
        assert.equal(e.key, "hosts[1].host");
        assert.match(e.message, /same machine as hosts\[0\]/);
        assert.equal(refusal(good({ hosts: JSON.stringify([{ name: "a", ...h("2001:db8::1") }, { name: "b", ...h("2001:DB8:0::1") }]) })).key, "hosts[1].host");
        assert.equal(refusal(good({ hosts: JSON.stringify([{ name: "a", ...h("Web.example.test") }, { name: "b", ...h("web.example.test") }]) })).key, "hosts[1].host");
        validateConfig(good({ hosts: JSON.stringify([{ name: "a", ...h("10.0.1.10") }, { name: "b", ...h("10.0.1.10", 2222) }]) }), ENGINE);
    });
    it("overlapping CIDRs are reported (warnings); a repeated block is refused, however it is written (EC2 refuses the whole call)", () => {
        const c = validateConfig(good({ ...QUIET, adminCidrs: '["203.0.113.0/24","203.0.113.128/25"]', privateCidrs: '["10.0.0.0/8","10.1.0.0/16"]' }), ENGINE);
        assert.deepEqual(c.warnings, [
            "hostguard:privateCidrs[1] 10.1.0.0/16 lies inside privateCidrs[0] 10.0.0.0/8 (one entry is enough)",
            "hostguard:adminCidrs[1] 203.0.113.128/25 lies inside adminCidrs[0] 203.0.113.0/24 (one entry is enough)",
        ]);
        const e = refusal(good({ adminCidrs: '["203.0.113.0/24","198.51.100.0/24","203.0.113.0/24"]' }));
        assert.equal(e.key, "adminCidrs[2]");
        assert.match(e.message, /203\.0\.113\.0\/24 repeats adminCidrs\[0\] 203\.0\.113\.0\/24: EC2 refuses a rule that lists a block twice/);
        assert.equal(refusal(good({ adminCidrs: '["2001:db8::/48","2001:db8:0::/48"]' })).key, "adminCidrs[1]", "the non-canonical spelling is refused first");
    });
    it("an IPv6 CIDR not written as EC2 stores it is refused with the canonical spelling", () => {
        for (const [bad, canonical] of [["2001:DB8::/48", "2001:db8::/48"], ["2001:db8:0:0::/48", "2001:db8::/48"], ["fd00:0::/8", "fd00::/8"], ["::0/0", "::/0"]]) {
            const e = refusal(good({ privateCidrs: JSON.stringify([bad]) }));
            assert.equal(e.key, "privateCidrs[0]", bad);
            assert.match(e.message, new RegExp(`not written as EC2 stores it \\(${canonical.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}\\)`), bad);
        }
        assert.deepEqual(validateConfig(good({ privateCidrs: '["fd00::/8","10.0.0.0/8"]' }), ENGINE).privateCidrs, ["fd00::/8", "10.0.0.0/8"]);
    });
});

describe("16.2: typos anywhere", () => {
    it("a namespace close to hostguard is refused naming it, with did you mean", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-typo-"));
        try {
            for (const [bad, want] of [["hostgaurd:cpuThreshold", "cpuThreshold"], ["HostGuard:cpuThreshold", "cpuThreshold"], ["host-guard:diskThreshold", "diskThreshold"],
                ["hostgard:cpuTreshold", "cpuThreshold"], ["hostguar:hosts", "hosts"]]) {
                fs.writeFileSync(path.join(dir, "Pulumi.t.yaml"), [
                    "config:", "  aws:region: eu-west-1", "  pulumi:tags: {a: b}", "  hostguard:aws: false",
                    `  hostguard:hosts: [{name: t1, host: 127.0.0.1, hostKey: ${ED}}]`, `  ${bad}: "70"`, "",
                ].join("\n"));
                assert.throws(() => renderStack(dir, "t", path.join(dir, "out"), 0),
                    (e: Error) => e.message === `${bad} is not in the hostguard namespace and would be ignored: did you mean hostguard:${want}?`, bad);
            }
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
    it("an unknown hostguard key names the closest known key instead of the whole list", () => {
        const e = refusal(good({ cpuTreshold: "50" }));
        assert.equal(e.message, "hostguard:cpuTreshold is not a known key: did you mean hostguard:cpuThreshold? (docs/configuration.md lists every key)");
        assert.match(refusal(good({ adminCIDRs: "[]" })).message, /did you mean hostguard:adminCidrs\?/);
    });
});

describe("16.3: secrets must be secret", () => {
    for (const key of ["webhookUrl", "heartbeatUrl", "sshPrivateKey", "bastionPrivateKey"]) {
        it(`${key} in plain text is refused at preview, naming the key and the --secret command`, () => {
            const value = key.endsWith("Url") ? SENTINEL : PEM;
            const e = refusal(good({ [key]: value }), { secretKeys: SECRET_KEYS.filter((k) => k !== key) });
            assert.equal(e.key, key);
            assert.match(e.message, new RegExp(`set in plain text.*\`pulumi config set --secret hostguard:${key} \\.\\.\\.\``));
        });
    }
    it("npm run render refuses a plain webhook in the stack file, accepts an encrypted one", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-plain-"));
        try {
            const base = ["config:", "  hostguard:aws: false", `  hostguard:hosts: [{name: t1, host: 127.0.0.1, hostKey: ${ED}}]`];
            fs.writeFileSync(path.join(dir, "Pulumi.t.yaml"), [...base, `  hostguard:webhookUrl: ${SENTINEL}`, ""].join("\n"));
            assert.throws(() => renderStack(dir, "t", path.join(dir, "out"), 0),
                (e: Error) => /^hostguard:webhookUrl is set in plain text/.test(e.message) && !e.message.includes("SENTINEL"));
            fs.writeFileSync(path.join(dir, "Pulumi.t.yaml"), [...base, "  hostguard:webhookUrl:", "    secure: v1:abc", ""].join("\n"));
            renderStack(dir, "t", path.join(dir, "out"), 0);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe("16.2 and 16.3 at preview: what the engine hands the program", () => {
    const config = {
        "aws:region": "eu-west-1", "hostguard:aws": "false", "hostguard:hosts": JSON.stringify([{ name: "t1", host: "127.0.0.1", hostKey: ED }]),
        "hostguard:webhookUrl": SENTINEL, "hostguard:sshPrivateKey": PEM,
    };
    it("the keys the engine marks secret pass; one it does not mark is refused", () => {
        pulumi.runtime.setAllConfig(config, ["hostguard:webhookUrl", "hostguard:sshPrivateKey"]);
        assert.deepEqual(stackSecretKeys()?.sort(), ["sshPrivateKey", "webhookUrl"]);
        assert.equal(validateConfig(rawStackConfig(), { secretKeys: stackSecretKeys() }).hasWebhookUrl, true);
        pulumi.runtime.setAllConfig(config, ["hostguard:sshPrivateKey"]);
        assert.equal(refusal(rawStackConfig(), { secretKeys: stackSecretKeys() }).key, "webhookUrl");
    });
    it("a namespace typo among all the stack's keys is refused; aws: and pulumi: pass", () => {
        pulumi.runtime.setAllConfig({ ...config, "pulumi:disable-default-providers": "[]", "hostgaurd:cpuThreshold": "70" }, []);
        assert.throws(() => rawStackConfig(), /^ConfigError: hostgaurd:cpuThreshold is not in the hostguard namespace and would be ignored: did you mean hostguard:cpuThreshold\?$/);
        pulumi.runtime.setAllConfig({ ...config, "pulumi:disable-default-providers": "[]" }, []);
        assert.equal(rawStackConfig().aws, "false");
    });
});

describe("16.5: host keys parsed, not matched", () => {
    const withKey = (hostKey: string) => good({ hosts: JSON.stringify([{ name: "web1", host: "10.0.1.10", hostKey }]) });
    it("accepts real ed25519, ecdsa-p256 and rsa-2048 keys", () => {
        for (const k of [ED, sshKey("p256"), sshKey("rsa2048")]) {
            assert.equal(validateConfig(withKey(k), ENGINE).hosts[0].hostKey, k);
        }
    });
    it("refuses a cut key, a wrong label, a short RSA key and bad base64, saying why", () => {
        const [label, b64] = ED.split(" ");
        const cases: Array<[string, RegExp]> = [
            ["ssh-ed25519 AAAA", /is cut short|not a whole|base64/],
            [`ssh-rsa ${b64}`, /labelled ssh-rsa but the key inside is "ssh-ed25519"/],
            [`${label} ${b64.slice(0, -8)}`, /not a whole ssh-ed25519 key|base64/],
            [sshKey("rsa1024"), /RSA key of 1024 bits: at least 2048/],
            [`${label} ${b64.slice(0, 20)}B${b64.slice(21)}`.replace(/A$/, "B"), /base64|not a whole|labelled/],
        ];
        for (const [k, why] of cases) {
            const e = refusal(withKey(k));
            assert.equal(e.key, "hosts[0].hostKey");
            assert.match(e.message, why, k);
        }
    });
    it("a pasted ssh-keyscan line gets: drop the host name", () => {
        const e = refusal(withKey(`10.0.1.10 ${ED}`));
        assert.match(e.message, /ssh-keyscan line: drop the host name "10\.0\.1\.10"/);
    });
});

describe("16.6: warnings for values that are legal but surely wrong", () => {
    it("threshold 0 or 100, alertRepeatInterval under the cron interval", () => {
        const c = validateConfig(good({ ...QUIET, cpuThreshold: "0", diskThreshold: "100", alertRepeatInterval: "5m" }), ENGINE);
        assert.equal(c.warnings.length, 3);
        assert.match(c.warnings[0], /^hostguard:cpuThreshold is 0: it fires on every run/);
        assert.match(c.warnings[1], /^hostguard:diskThreshold is 100: it can never fire/);
        assert.match(c.warnings[2], /^hostguard:alertRepeatInterval is 5m, shorter than the monitors' 10 minutes/);
        assert.deepEqual(validateConfig(good({ ...QUIET, alertRepeatInterval: "0" }), ENGINE).warnings, []);
        assert.deepEqual(validateConfig(good({ ...QUIET, alertRepeatInterval: "10m" }), ENGINE).warnings, []);
    });
    it("npm run render prints the INSECURE host-key warning and the others", () => {
        // The tool reads Pulumi.<stack>.yaml beside package.json: a throw-away stack file there, removed after.
        const stack = `hg-test-warn-${process.pid}`;
        const file = path.join(ROOT, `Pulumi.${stack}.yaml`);
        const out = fs.mkdtempSync(path.join(os.tmpdir(), "hg-warn-"));
        try {
            fs.writeFileSync(file, [
                "config:", "  hostguard:aws: false", "  hostguard:insecureAcceptAnyHostKey: true", "  hostguard:hosts: [{name: t1, host: 127.0.0.1}]",
                '  hostguard:cpuThreshold: "100"', "",
            ].join("\n"));
            const r = runRenderOk(["--stack", stack, "--out", out]);
            assert.match(r, /^render: warning: INSECURE: hostguard:insecureAcceptAnyHostKey is true/m);
            assert.match(r, /^render: warning: hostguard:cpuThreshold is 100: it can never fire/m);
        } finally {
            fs.rmSync(file, { force: true });
            fs.rmSync(out, { recursive: true, force: true });
        }
    });
});

describe("example stacks: render names each placeholder and each fix that would not take effect (issue 35)", () => {
    it("npm run render renders the shipped stacks, names every placeholder and exits 1; filled in, it exits 0 without a word", () => {
        const out = fs.mkdtempSync(path.join(os.tmpdir(), "hg-placeholders-"));
        const stack = `hg-test-filled-${process.pid}`;
        const file = path.join(ROOT, `Pulumi.${stack}.yaml`);
        try {
            for (const [name, keys] of [["dev", ["hosts[0].hostKey", "hosts[0].instanceId", "vpcId", "securityGroupId"]],
                ["prod", ["hosts[0].instanceId", "hosts[1].instanceId", "bastion.hostKey", "bastion.securityGroupId", "vpcId", "securityGroupId"]]] as const) {
                const r = runRender(["--stack", name, "--out", out]);
                assert.equal(r.status, 1, r.stderr);
                for (const key of keys) {
                    assert.ok(r.stderr.split("\n").some((l) => l.startsWith(`render: not deployable: hostguard:${key} is still the example stack's placeholder `)), `${name}: ${key}\n${r.stderr}`);
                }
                assert.match(r.stderr, new RegExp(`^render: \\d+ placeholder\\(s\\) left in Pulumi\\.${name}\\.yaml: pulumi preview and up refuse the stack`, "m"));
                assert.ok(fs.existsSync(path.join(out, name, `${name}-web1`, "manifest.json")), "rendered for review all the same");
            }
            fs.writeFileSync(file, filledPlaceholders(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8")));
            assert.equal(runRenderOk(["--stack", stack, "--out", out]), "", "the example, filled in, warns about nothing");
        } finally {
            fs.rmSync(file, { force: true });
            fs.rmSync(out, { recursive: true, force: true });
        }
    });

    it("npm run render warns, naming the key, about an empty nginxServerConf or appProperties and a group created on no instance", () => {
        const stack = `hg-test-web-${process.pid}`;
        const file = path.join(ROOT, `Pulumi.${stack}.yaml`);
        const out = fs.mkdtempSync(path.join(os.tmpdir(), "hg-web-"));
        try {
            fs.writeFileSync(file, ["config:", "  hostguard:vpcId: vpc-0123456789abcdef0", "  hostguard:adminCidrs: [203.0.113.0/24]",
                `  hostguard:hosts: [{name: t1, host: 10.0.1.10, hostKey: ${ED}}]`, ""].join("\n"));
            const r = runRenderOk(["--stack", stack, "--out", out]);
            assert.match(r, /^render: warning: hostguard:nginxServerConf is empty: the nginx deny rule .* is installed but no server block includes it/m);
            assert.match(r, /^render: warning: hostguard:appProperties is empty: the Spring property spring\.web\.resources\.add-mappings=false is set nowhere/m);
            assert.match(r, /^render: warning: hostguard:hosts\[\]\.instanceId is set for no host: the security group would be created attached to no instance/m);
            assert.equal(r.split("\n").filter((l) => l !== "").length, 3, r);
        } finally {
            fs.rmSync(file, { force: true });
            fs.rmSync(out, { recursive: true, force: true });
        }
    });
});

/** The CLI run that must succeed: its stderr. */
function runRenderOk(args: string[]): string {
    const r = spawnSync(process.execPath, ["--import", "tsx", path.join(ROOT, "tools/render.ts"), ...args], { cwd: ROOT, timeout: 60_000, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return r.stderr;
}

/** The CLI as `npm run render` runs it, from ROOT: exit status and stderr. */
function runRender(args: string[]): { status: number; stderr: string } {
    try {
        execFileSync(process.execPath, ["--import", "tsx", path.join(ROOT, "tools/render.ts"), ...args], { cwd: ROOT, timeout: 60_000, stdio: "pipe" });
        return { status: 0, stderr: "" };
    } catch (e: any) {
        return { status: e.status ?? 1, stderr: String(e.stderr) };
    }
}

describe("16.7: messages for people", () => {
    it("a path with a space, or a trailing /, gets the right reason", () => {
        assert.match(refusal(good({ nginxAccessLog: "/var/log/nginx/my access.log" })).message, /holds a space/);
        assert.match(refusal(good({ nginxAccessLog: "/var/log/nginx/" })).message, /ends with \/ \(a directory\); name the file/);
        assert.match(refusal(good({ notifyCaFile: "/etc/ssl/../x" })).message, /\. or \.\. segment/);
        assert.match(refusal(good({ notifyCaFile: "etc/ssl/ca.pem" })).message, /does not start with \//);
    });
    it("render answers --stack nosuch and --cron-minute abc in one line", () => {
        for (const [args, want] of [
            [["--stack", "nosuch"], /^render: no stack file Pulumi\.nosuch\.yaml in .* \(stacks: dev, prod\)\n$/],
            [["--stack", "dev", "--cron-minute", "abc"], /^render: --cron-minute must be an integer 0-9, got "abc"\n$/],
        ] as const) {
            const r = runRender([...args, "--out", path.join(os.tmpdir(), "hg-render-msg")]);
            assert.equal(r.status, 1);
            assert.match(r.stderr, want);
        }
    });
});

describe("the stack-key defaults: one typed table (issue 33, item 6)", () => {
    const README = fs.readFileSync(path.join(__dirname, "../../docs/configuration.md"), "utf8");
    it("every default value of STACK_KEYS is what the validator gives an unset key, and the README's words are rendered from it", () => {
        const rows = (STACK_KEYS as readonly StackKeyRow[]).filter((r) => r.value !== undefined);
        assert.ok(rows.length >= 10, rows.map((r) => r.key).join(", "));
        const c = validateConfig(good({ adminCidrs: undefined, bastion: JSON.stringify({ host: "10.0.0.5", hostKey: ED, securityGroupId: "sg-0123456789abcdef0" }) }), ENGINE);
        // Where each default lands in the validated config (a default given to the created group is read by its component).
        const got: Record<string, unknown> = {
            sshUser: c.hosts[0].user, insecureAcceptAnyHostKey: c.insecureAcceptAnyHostKey, pagerdutyRegion: c.pagerdutyRegion, aws: c.aws,
            securityGroupDescription: DEFAULT_SECURITY_GROUP_DESCRIPTION, sharedSecurityGroupInstances: c.sharedSecurityGroupInstances,
            keepSecurityGroupIds: c.keepSecurityGroupIds, keepSecurityGroupsLimit: c.keepSecurityGroupsLimit, privateCidrs: c.privateCidrs,
            privateCidrsAllowPublic: c.privateCidrsAllowPublic, adminCidrs: c.adminCidrs, delivery: c.delivery,
        };
        // The fleet's rows land in a stack of delivery ssm.
        const fleet = validateConfig({
            delivery: "ssm", vpcId: "vpc-0123456789abcdef0", fleetPermissionsBoundary: "arn:aws:iam::123456789012:policy/hostguard-boundary-hostguard-test",
            webhookUrl: "https://hooks.example.test/x",
        }, { requireSecrets: false }).fleet!;
        Object.assign(got, {
            fleetSchedule: fleet.schedule, fleetMaxConcurrency: fleet.maxConcurrency, fleetMaxErrors: fleet.maxErrors, fleetRunsExpireDays: fleet.runsExpireDays,
        });
        assert.deepEqual(Object.keys(got).sort(), rows.map((r) => r.key).sort(), "every row with a value is checked here");
        for (const r of rows) {
            assert.deepEqual(got[r.key], r.value, r.key);
            assert.ok(README.includes(`| \`${r.key}\` | ${defaultWords(r)} |`), `README row of ${r.key} says ${defaultWords(r)}`);
        }
        const port = (STACK_KEYS as readonly StackKeyRow[]).find((r) => r.key === "hosts")!.fields!.find((f) => f.name === "port")!;
        assert.equal(c.hosts[0].port, port.value);
        assert.equal(c.bastion!.port, port.value);
        assert.equal(defaultWords({ value: ["10.0.0.0/8", "fc00::/7"] }), "`10.0.0.0/8, fc00::/7`");
        assert.equal(defaultWords({ value: [] }), "`[]`");
        assert.equal(defaultWords({ default: "(required)" }), "(required)");
    });
});
