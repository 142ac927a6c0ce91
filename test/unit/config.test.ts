// The config validator: defaults from the SPEC, every bad value rejected with
// its key named, secrets never echoed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigError, DEFAULT_SETTINGS, validateConfig, type RawConfig } from "../../components/config";

const SENTINEL = "https://hooks.example.test/services/T000/B000/SENTINEL-not-a-real-hook";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAfake\n-----END OPENSSH PRIVATE KEY-----\n";
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A";
/** Host list JSON with every host's key set (the key is required). */
function hostsJson(...hosts: Array<Record<string, unknown>>): string {
    return JSON.stringify(hosts.map((h) => ({ hostKey: HOST_KEY, ...h })));
}

/** A good config as Pulumi hands it over: strings, JSON for lists and objects. */
function good(overrides: RawConfig = {}): RawConfig {
    return {
        hosts: hostsJson({ name: "web1", host: "10.0.1.10" }),
        vpcId: "vpc-0123456789abcdef0",
        adminCidrs: JSON.stringify(["203.0.113.0/24"]),
        webhookUrl: SENTINEL,
        sshPrivateKey: KEY,
        ...overrides,
    };
}

function rejects(raw: RawConfig, key: string, opts = {}): ConfigError {
    let caught: unknown;
    try {
        validateConfig(raw, opts);
    } catch (e) {
        caught = e;
    }
    assert.ok(caught instanceof ConfigError, `expected a ConfigError for ${key}, got ${String(caught)}`);
    assert.equal(caught.key, key);
    assert.ok(caught.message.startsWith(`hostguard:${key} `), caught.message);
    assert.ok(!caught.message.includes("SENTINEL"), `secret echoed: ${caught.message}`);
    return caught;
}

describe("validateConfig", () => {
    it("accepts a good config and applies the SPEC's defaults", () => {
        const c = validateConfig(good());
        assert.deepEqual(c.settings, DEFAULT_SETTINGS);
        assert.equal(c.settings.cpuThreshold, 80);
        assert.equal(c.settings.memoryThreshold, 90);
        assert.equal(c.settings.diskThreshold, 90);
        assert.equal(c.settings.banMaxRetry, 10);
        assert.equal(c.settings.banFindTime, "1m");
        assert.equal(c.settings.banBanTime, "10m");
        assert.deepEqual(c.hosts, [{ name: "web1", host: "10.0.1.10", port: 22, user: "admin", hostKey: HOST_KEY }]);
        assert.equal(c.aws, true);
        assert.deepEqual(c.privateCidrs, ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]);
        assert.equal(c.hasWebhookUrl, true);
        assert.equal(JSON.stringify(c).includes("SENTINEL"), false, "the typed config must not carry the secret");
    });

    it("parses values given as YAML types (render tool) and as strings (Pulumi)", () => {
        const c = validateConfig(good({
            hosts: [{ name: "a", host: "a.example.test", port: 2222, user: "deploy", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A" }],
            cpuThreshold: 70, memoryThreshold: "85.5", containerWatch: '["api","db"]', aws: "false", vpcId: undefined,
        }));
        assert.equal(c.hosts[0].port, 2222);
        assert.equal(c.settings.memoryThreshold, 85.5);
        assert.deepEqual(c.settings.containerWatch, ["api", "db"]);
        assert.equal(c.aws, false);
    });

    it("accepts encrypted secrets it cannot read when secrets are optional (render)", () => {
        const c = validateConfig(good({ webhookUrl: { secure: "v1:abc" }, sshPrivateKey: undefined }), { requireSecrets: false });
        assert.equal(c.hasWebhookUrl, true);
        assert.equal(c.hasSshPrivateKey, false);
    });

    it("rejects an http webhook without echoing it", () => {
        const e = rejects(good({ webhookUrl: SENTINEL.replace("https", "http") }), "webhookUrl");
        assert.match(e.message, /https:\/\/ URL/);
    });
    it("rejects a webhook that is no URL", () => { rejects(good({ webhookUrl: "SENTINEL" }), "webhookUrl"); });
    it("requires the webhook for a deployment", () => { rejects(good({ webhookUrl: undefined }), "webhookUrl"); });
    it("requires the SSH key for a deployment", () => { rejects(good({ sshPrivateKey: undefined }), "sshPrivateKey"); });

    for (const [key, value] of [["cpuThreshold", "101"], ["memoryThreshold", "-1"], ["diskThreshold", "ninety"], ["cpuThreshold", 100.5]] as const) {
        it(`rejects ${key}=${value} (outside 0..100)`, () => {
            const e = rejects(good({ [key]: value }), key);
            assert.match(e.message, /must be a percentage 0-100/);
        });
    }
    it("accepts thresholds at the bounds 0 and 100", () => {
        const c = validateConfig(good({ cpuThreshold: "0", diskThreshold: "100" }));
        assert.equal(c.settings.cpuThreshold, 0);
        assert.equal(c.settings.diskThreshold, 100);
    });

    it("rejects a malformed CIDR in privateCidrs", () => { rejects(good({ privateCidrs: '["10.0.0.0/33"]' }), "privateCidrs[0]"); });
    it("rejects a malformed CIDR in adminCidrs", () => { rejects(good({ adminCidrs: '["203.0.113.0/24","300.1.2.3/8"]' }), "adminCidrs[1]"); });
    it("rejects a CIDR without prefix length", () => { rejects(good({ adminCidrs: '["203.0.113.7"]' }), "adminCidrs[0]"); });
    it("rejects SSH open to the IPv4 world", () => {
        const e = rejects(good({ adminCidrs: '["0.0.0.0/0"]' }), "adminCidrs[0]");
        assert.match(e.message, /whole internet/);
    });
    it("rejects SSH open to the IPv6 world", () => { rejects(good({ adminCidrs: '["2001:db8::/32","::/0"]' }), "adminCidrs[1]"); });
    it("rejects an empty host list", () => { rejects(good({ hosts: "[]" }), "hosts"); });
    it("rejects a missing host list", () => { rejects(good({ hosts: undefined }), "hosts"); });
    it("rejects a duplicate host name", () => { rejects(good({ hosts: hostsJson({ name: "a", host: "h1" }, { name: "a", host: "h2" }) }), "hosts[1].name"); });
    it("rejects an unknown host field", () => { rejects(good({ hosts: hostsJson({ name: "a", host: "h1", pasword: "x" }) }), "hosts[0].pasword"); });
    it("rejects a malformed duration", () => { rejects(good({ banBanTime: "10 minutes" }), "banBanTime"); });
    it("rejects another malformed duration", () => { rejects(good({ banFindTime: "m1" }), "banFindTime"); });
    it("accepts fail2ban durations", () => {
        const c = validateConfig(good({ banFindTime: "600", banBanTime: "1h30m" }));
        assert.equal(c.settings.banBanTime, "1h30m");
    });
    it("rejects an unknown key", () => {
        const e = rejects(good({ cpuTreshold: "50" }), "cpuTreshold");
        assert.match(e.message, /not a known key/);
    });
    it("requires a vpcId in AWS mode", () => { rejects(good({ vpcId: undefined }), "vpcId"); });
    it("requires an SSH source in AWS mode", () => { rejects(good({ adminCidrs: undefined }), "adminCidrs"); });
    it("accepts a bastion group as the SSH source", () => {
        const c = validateConfig(good({ adminCidrs: undefined, bastion: JSON.stringify({ host: "bastion.example.test", hostKey: HOST_KEY, securityGroupId: "sg-0123456789abcdef0" }) }));
        assert.equal(c.bastion?.securityGroupId, "sg-0123456789abcdef0");
        assert.equal(c.bastion?.user, "admin");
    });
    it("adopts a group by its id alone (name and description still accepted, no longer needed)", () => {
        const c = validateConfig(good({ securityGroupId: "sg-0123456789abcdef0" }));
        assert.equal(c.securityGroupId, "sg-0123456789abcdef0");
        assert.equal(c.securityGroupName, undefined);
        assert.deepEqual(c.sharedSecurityGroupInstances, []);
        assert.deepEqual(c.keepSecurityGroupIds, []);
        assert.equal(validateConfig(good({ securityGroupId: "sg-0123456789abcdef0", securityGroupName: "launch-wizard-1" })).securityGroupName, "launch-wizard-1");
    });
    it("takes the shared-group opt-in with an adopted group only, ids checked one by one", () => {
        const adopt = { securityGroupId: "sg-0123456789abcdef0" };
        const c = validateConfig(good({ ...adopt, sharedSecurityGroupInstances: JSON.stringify(["i-0123456789abcdef0", "eni-0123456789abcdef0"]) }));
        assert.deepEqual(c.sharedSecurityGroupInstances, ["i-0123456789abcdef0", "eni-0123456789abcdef0"]);
        assert.match(rejects(good({ ...adopt, sharedSecurityGroupInstances: JSON.stringify(["i-0123456789abcdef0", "web2"]) }), "sharedSecurityGroupInstances[1]").message,
            /must be an EC2 instance id \(i-\) or a network interface id \(eni-, .*\) and 8 or 17 lower-case hex digits, got "web2"/);
        assert.match(rejects(good({ sharedSecurityGroupInstances: JSON.stringify(["i-0123456789abcdef0"]) }), "sharedSecurityGroupInstances").message,
            /only used with hostguard:securityGroupId/);
    });
    it("takes the groups to keep with a created group and an instanceId only", () => {
        const withInstance = { hosts: hostsJson({ name: "web1", host: "10.0.1.10", instanceId: "i-0123456789abcdef0" }) };
        const c = validateConfig(good({ ...withInstance, keepSecurityGroupIds: JSON.stringify(["sg-0aaaaaaaaaaaaaaa1"]) }));
        assert.deepEqual(c.keepSecurityGroupIds, ["sg-0aaaaaaaaaaaaaaa1"]);
        rejects(good({ ...withInstance, keepSecurityGroupIds: JSON.stringify(["sg-x"]) }), "keepSecurityGroupIds[0]");
        for (const other of [{}, { securityGroupId: "sg-0123456789abcdef0" }]) {
            assert.match(rejects(good({ ...other, keepSecurityGroupIds: JSON.stringify(["sg-0aaaaaaaaaaaaaaa1"]) }), "keepSecurityGroupIds").message,
                /only used with a created group and hosts\[\]\.instanceId/);
        }
    });
    it("requires each host's key, naming it and saying how to get it", () => {
        for (const [hosts, key] of [
            [JSON.stringify([{ name: "a", host: "h1" }]), "hosts[0].hostKey"],
            [JSON.stringify([{ name: "a", host: "h1", hostKey: HOST_KEY }, { name: "b", host: "h2" }]), "hosts[1].hostKey"],
            [[{ name: "a", host: "h1" }], "hosts[0].hostKey"], // YAML (render tool)
        ] as const) {
            const e = rejects(good({ hosts }), key);
            assert.match(e.message, /is required: get it over a trusted path with `ssh-keyscan -t ed25519 HOST`/);
            assert.match(e.message, /EC2 console output \(`aws ec2 get-console-output --instance-id i-\.\.\.`\)/);
            assert.match(e.message, /set hostguard:insecureAcceptAnyHostKey true$/);
        }
    });
    it("requires the bastion's key", () => {
        rejects(good({ bastion: JSON.stringify({ host: "bastion.example.test" }) }), "bastion.hostKey");
    });
    it("accepts missing host keys only with the explicit opt-out", () => {
        const raw = good({ hosts: JSON.stringify([{ name: "a", host: "h1" }]), bastion: JSON.stringify({ host: "b.example.test" }) });
        assert.equal(validateConfig(good()).insecureAcceptAnyHostKey, false);
        rejects({ ...raw, insecureAcceptAnyHostKey: "false" }, "hosts[0].hostKey");
        rejects({ ...raw, insecureAcceptAnyHostKey: "yes" }, "insecureAcceptAnyHostKey");
        for (const optOut of ["true", true]) {
            const c = validateConfig({ ...raw, insecureAcceptAnyHostKey: optOut });
            assert.equal(c.insecureAcceptAnyHostKey, true);
            assert.equal(c.hosts[0].hostKey, undefined);
            assert.equal(c.bastion?.hostKey, undefined);
        }
    });
    it("rejects a malformed host key", () => { rejects(good({ hosts: hostsJson({ name: "a", host: "h", hostKey: "AAAA" }) }), "hosts[0].hostKey"); });
    it("accepts a stack-wide cron minute 0-9, absent by default (each host derives its offset)", () => {
        assert.equal(validateConfig(good({ cronMinute: "9" })).cronMinute, 9);
        assert.equal(validateConfig(good({ cronMinute: 0 })).cronMinute, 0);
        assert.ok(!("cronMinute" in validateConfig(good({}))));
    });
    it("rejects a cron minute outside 0-9", () => { rejects(good({ cronMinute: 10 }), "cronMinute"); });
    it("rejects a non-integer cron minute", () => { rejects(good({ cronMinute: "5m" }), "cronMinute"); });
    it("refuses a per-host cron minute: the bundles are the same for every host", () => { rejects(good({ hosts: hostsJson({ name: "a", host: "h", cronMinute: 3 }) }), "hosts[0].cronMinute"); });
    it("rejects a non-boolean aws switch", () => { rejects(good({ aws: "no" }), "aws"); });
    it("needs no AWS keys when aws is false", () => {
        const c = validateConfig(good({ aws: "false", vpcId: undefined, adminCidrs: undefined }));
        assert.equal(c.aws, false);
    });
    it("accepts an instanceId of 8 or 17 hex digits per host, absent by default", () => {
        const c = validateConfig(good({ hosts: hostsJson({ name: "a", host: "h1", instanceId: "i-0123abcd" }, { name: "b", host: "h2", instanceId: "i-0123456789abcdef0" }, { name: "c", host: "h3" }) }));
        assert.deepEqual(c.hosts.map((h) => h.instanceId), ["i-0123abcd", "i-0123456789abcdef0", undefined]);
        assert.ok(!("instanceId" in c.hosts[2]));
    });
    for (const bad of ["i-0123abc", "i-0123abcde", "i-0123456789ABCDEF0", "0123456789abcdef0", "i-0123456789abcdef01", "sg-0123abcd", ""]) {
        it(`rejects instanceId ${JSON.stringify(bad)}`, () => {
            const e = rejects(good({ hosts: hostsJson({ name: "a", host: "h", instanceId: bad }) }), "hosts[0].instanceId");
            assert.match(e.message, /EC2 instance id/);
        });
    }
    it("rejects a non-string instanceId", () => { rejects(good({ hosts: hostsJson({ name: "a", host: "h", instanceId: 12345678 }) }), "hosts[0].instanceId"); });
    it("refuses an instanceId when aws is false (nothing would attach a group)", () => {
        const e = rejects(good({ aws: "false", vpcId: undefined, hosts: hostsJson({ name: "a", host: "h1" }, { name: "b", host: "h2", instanceId: "i-0123abcd" }) }), "hosts[1].instanceId");
        assert.match(e.message, /only used when hostguard:aws is true/);
    });
});

describe("alert and ban safety keys (issue 11)", () => {
    it("default to the SPEC: unlabelled, every run, no resolved message, no debounce; the webhook verified", () => {
        const s = validateConfig(good()).settings;
        assert.equal(s.alertHostLabel, false);
        assert.equal(s.alertRepeatInterval, "0");
        assert.equal(s.alertSendResolved, false);
        assert.equal(s.alertAfterRuns, 1);
        assert.equal(s.verifyWebhook, true);
        assert.deepEqual(s.banIgnoreIps, []);
        assert.equal(s.banIncrement, false);
        assert.equal(validateConfig(good()).hasHeartbeatUrl, false);
    });
    it("accept booleans as Pulumi strings and as YAML booleans, durations, counts and addresses", () => {
        const s = validateConfig(good({
            alertHostLabel: "true", alertSendResolved: true, alertRepeatInterval: "1h30m", alertAfterRuns: "3",
            verifyWebhook: false, banIncrement: "true", banIgnoreIps: '["198.51.100.7","2001:db8::/48","10.1.0.0/16"]',
        })).settings;
        assert.deepEqual([s.alertHostLabel, s.alertSendResolved, s.verifyWebhook, s.banIncrement], [true, true, false, true]);
        assert.equal(s.alertRepeatInterval, "1h30m");
        assert.equal(s.alertAfterRuns, 3);
        assert.deepEqual(s.banIgnoreIps, ["198.51.100.7", "2001:db8::/48", "10.1.0.0/16"]);
    });
    it("reject bad values naming the key", () => {
        rejects(good({ alertHostLabel: "yes" }), "alertHostLabel");
        rejects(good({ alertSendResolved: "1" }), "alertSendResolved");
        rejects(good({ verifyWebhook: "off" }), "verifyWebhook");
        rejects(good({ banIncrement: "maybe" }), "banIncrement");
        rejects(good({ alertRepeatInterval: "1 hour" }), "alertRepeatInterval");
        rejects(good({ alertRepeatInterval: "31d" }), "alertRepeatInterval");
        rejects(good({ alertAfterRuns: "0" }), "alertAfterRuns");
        rejects(good({ alertAfterRuns: "101" }), "alertAfterRuns");
        rejects(good({ banIgnoreIps: '["198.51.100.7","999.1.1.1"]' }), "banIgnoreIps[1]");
        rejects(good({ banIgnoreIps: '["10.0.0.0/33"]' }), "banIgnoreIps[0]");
        rejects(good({ banIgnoreIps: '["example.com"]' }), "banIgnoreIps[0]");
    });
    it("take heartbeatUrl as an optional https secret, never echoed", () => {
        assert.equal(validateConfig(good({ heartbeatUrl: "https://hc-ping.example.test/SENTINEL" })).hasHeartbeatUrl, true);
        assert.equal(validateConfig(good({ heartbeatUrl: { secure: "v1:abc" } }), { requireSecrets: false }).hasHeartbeatUrl, true);
        rejects(good({ heartbeatUrl: "http://hc-ping.example.test/SENTINEL" }), "heartbeatUrl");
        rejects(good({ heartbeatUrl: "SENTINEL" }), "heartbeatUrl");
    });
});
