// Issue 24 item 5: the AWS keys say what they mean. privateCidrs (who reaches
// 8080) must be private unless opted out, no CIDR carries host bits, one
// instance is one host, and an interface's groups fit EC2's quota. Each
// refusal names the key and the fix, and never a secret.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { blockText, hostBitsFix, isPrivateBlock, parseBlock, PRIVATE_RANGES } from "../../components/cidr";
import { ConfigError, validateConfig, type RawConfig } from "../../components/config";
import { worldPorts, ruleText } from "../../components/hostExposure";
import { ingressSteps, wantedAtoms, type RuleAtom } from "../../components/ec2Reconcile";
import { ingressRules } from "../../components/securityGroup";

const SENTINEL = "https://hooks.example.test/services/T000/B000/SENTINEL-not-a-real-hook";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAfake\n-----END OPENSSH PRIVATE KEY-----\n";
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake00000000000000000000000000000000000000A";

function good(overrides: RawConfig = {}, hosts: Array<Record<string, unknown>> = [{ name: "web1", host: "10.0.1.10" }]): RawConfig {
    return {
        hosts: JSON.stringify(hosts.map((h) => ({ hostKey: HOST_KEY, ...h }))),
        vpcId: "vpc-0123456789abcdef0",
        adminCidrs: JSON.stringify(["203.0.113.0/24"]),
        webhookUrl: SENTINEL,
        sshPrivateKey: KEY,
        ...overrides,
    };
}

function refusal(raw: RawConfig, key: string): string {
    try {
        validateConfig(raw);
    } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        assert.equal(e.key, key, e.message);
        assert.ok(e.message.startsWith(`hostguard:${key} `), e.message);
        assert.ok(!e.message.includes("SENTINEL") && !e.message.includes("PRIVATE KEY"), e.message);
        return e.message;
    }
    assert.fail(`expected a refusal of ${key}`);
}

describe("CIDR host bits", () => {
    it("refuses 10.0.0.1/8 naming the key and the network meant, in both lists", () => {
        assert.match(refusal(good({ privateCidrs: JSON.stringify(["10.0.0.1/8"]) }), "privateCidrs[0]"), /10\.0\.0\.1\/8 has host bits set .*did you mean 10\.0\.0\.0\/8\?/);
        assert.match(refusal(good({ adminCidrs: JSON.stringify(["203.0.113.0/24", "198.51.100.7/24"]) }), "adminCidrs[1]"), /did you mean 198\.51\.100\.0\/24\?/);
        assert.match(refusal(good({ privateCidrs: JSON.stringify(["fd00::1/8"]) }), "privateCidrs[0]"), /did you mean fd00::\/8\?/);
    });
    it("hostBitsFix: null for a clean block or a single address, the masked form otherwise", () => {
        assert.equal(hostBitsFix("10.0.0.0/8"), null);
        assert.equal(hostBitsFix("192.0.2.7/32"), null);
        assert.equal(hostBitsFix("172.16.5.4/12"), "172.16.0.0/12");
        assert.equal(hostBitsFix("2001:db8::/48"), null);
        assert.equal(hostBitsFix("2001:db8:0:1::/48"), "2001:db8::/48");
        assert.equal(hostBitsFix("not a cidr"), null);
    });
    it("blockText prints the form parseBlock reads back", () => {
        for (const c of ["0.0.0.0/0", "10.0.0.0/8", "203.0.113.128/25", "::/0", "fc00::/7", "2001:db8::/32", "2001:db8:0:1:0:0:0:0/64", "1:0:0:2::/64"]) {
            const b = parseBlock(c)!;
            assert.deepEqual(parseBlock(blockText(b)), b, c);
        }
        assert.equal(blockText(parseBlock("2001:db8:0:1:0:0:0:0/64")!), "2001:db8:0:1::/64");
    });
});

describe("privateCidrs must be private (8080 is never public)", () => {
    it("refuses a public range up to a /16 (accepted before), naming the key, the private ranges and the opt-in", () => {
        const m = refusal(good({ privateCidrs: JSON.stringify(["10.0.0.0/8", "8.8.0.0/16"]) }), "privateCidrs[1]");
        assert.match(m, /8\.8\.0\.0\/16 is not a private network/);
        assert.match(m, /10\.0\.0\.0\/8, 172\.16\.0\.0\/12, 192\.168\.0\.0\/16, 100\.64\.0\.0\/10, fc00::\/7/);
        assert.match(m, /hostguard:privateCidrsAllowPublic true/);
        refusal(good({ privateCidrs: JSON.stringify(["2001:db8::/48"]) }), "privateCidrs[0]");
        refusal(good({ privateCidrs: JSON.stringify(["172.32.0.0/16"]) }), "privateCidrs[0]");
        refusal(good({ privateCidrs: JSON.stringify(["10.0.0.0/7"]) }), "privateCidrs[0]");
    });
    it("accepts RFC 1918, RFC 6598 and ULA ranges, and the defaults", () => {
        const c = validateConfig(good({ privateCidrs: JSON.stringify(["10.1.0.0/16", "172.31.0.0/16", "192.168.1.0/24", "100.64.0.0/10", "fd12:3456::/32"]) }));
        assert.equal(c.privateCidrsAllowPublic, false);
        assert.deepEqual(validateConfig(good()).privateCidrs, ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]);
        assert.deepEqual(PRIVATE_RANGES.filter((r) => !isPrivateBlock(r)), []);
    });
    it("with the opt-in accepts a public range, still within the /16 limit", () => {
        const c = validateConfig(good({ privateCidrs: JSON.stringify(["8.8.0.0/16"]), privateCidrsAllowPublic: "true" }));
        assert.deepEqual(c.privateCidrs, ["8.8.0.0/16"]);
        assert.match(refusal(good({ privateCidrs: JSON.stringify(["8.0.0.0/8"]), privateCidrsAllowPublic: "true" }), "privateCidrs"), /more than a \/16/);
        refusal(good({ privateCidrs: JSON.stringify(["0.0.0.0/0"]), privateCidrsAllowPublic: "true" }), "privateCidrs[0]");
        refusal(good({ privateCidrsAllowPublic: "yes" }), "privateCidrsAllowPublic");
    });
});

describe("hosts and groups per interface", () => {
    it("refuses two hosts with the same instanceId, naming the second", () => {
        const m = refusal(good({}, [
            { name: "web1", host: "10.0.1.10", instanceId: "i-0123456789abcdef0" },
            { name: "web2", host: "10.0.1.11", instanceId: "i-0123456789abcdef0" },
        ]), "hosts[1].instanceId");
        assert.match(m, /repeats i-0123456789abcdef0 of hosts\[0\]/);
    });
    const withInstance = (keep: string[], over: RawConfig = {}) => good({ keepSecurityGroupIds: JSON.stringify(keep), ...over },
        [{ name: "web1", host: "10.0.1.10", instanceId: "i-0123456789abcdef0" }]);
    const sg = (n: number) => `sg-0000000${n}`;
    it("allows 4 kept groups (5 with hostguard's), refuses 5 naming the quota and the key to raise it", () => {
        assert.equal(validateConfig(withInstance([1, 2, 3, 4].map(sg))).keepSecurityGroupIds.length, 4);
        const m = refusal(withInstance([1, 2, 3, 4, 5].map(sg)), "keepSecurityGroupIds");
        assert.match(m, /6 on each interface, more than the 5 EC2 allows/);
        assert.match(m, /hostguard:keepSecurityGroupsLimit/);
        assert.equal(validateConfig(withInstance([1, 2, 3, 4, 5].map(sg), { keepSecurityGroupsLimit: "6" })).keepSecurityGroupsLimit, 6);
        refusal(withInstance([sg(1)], { keepSecurityGroupsLimit: "17" }), "keepSecurityGroupsLimit");
    });
    it("refuses a kept group listed twice", () => {
        assert.match(refusal(withInstance([sg(1), sg(1)]), "keepSecurityGroupIds[1]"), /repeats sg-00000001 of keepSecurityGroupIds\[0\]/);
    });
});

describe("world exposure and call order (pure)", () => {
    const atom = (protocol: string, source: string, from?: number, to?: number): RuleAtom =>
        ({ protocol, kind: source.includes(":") ? "cidr6" : "cidr4", source, ...(from === undefined ? {} : { fromPort: from, toPort: to ?? from }) });
    it("open to the world is the union rule over every rule that admits a port: halves of the internet on two groups are the world", () => {
        assert.deepEqual(worldPorts([atom("tcp", "0.0.0.0/0", 443), atom("tcp", "::/0", 443)]), ["tcp 443"]);
        assert.deepEqual(worldPorts([atom("tcp", "0.0.0.0/0", 1, 65535)]), ["tcp 1-65535"]);
        assert.deepEqual(worldPorts([atom("udp", "0.0.0.0/0", 443)]), ["udp 443"]);
        assert.deepEqual(worldPorts([atom("tcp", "10.0.0.0/8", 22), atom("tcp", "203.0.113.0/24", 22)]), [], "private and a /24: not the world");
        assert.deepEqual(worldPorts([atom("tcp", "0.0.0.0/1", 22), atom("tcp", "128.0.0.0/1", 22)]), ["tcp 22"]);
        assert.deepEqual(worldPorts([atom("-1", "::/1"), atom("-1", "8000::/1")]), ["all traffic"]);
        assert.deepEqual(worldPorts([atom("tcp", "1.0.0.0/16", 22), atom("tcp", "2.0.0.0/16", 22)]), ["tcp 22"], "two /16s are more than a /16");
        assert.deepEqual(worldPorts([atom("tcp", "1.0.0.0/16", 22), atom("tcp", "1.0.0.0/16", 23)]), [], "one /16 per port is within the limit");
        // All traffic from one /16 with SSH from another: each within the limit, SSH together beyond it.
        assert.deepEqual(worldPorts([atom("-1", "1.0.0.0/16"), atom("tcp", "2.0.0.0/16", 20, 25)]), ["tcp 20-25"]);
        assert.deepEqual(worldPorts([atom("-1", "0.0.0.0/1"), atom("tcp", "128.0.0.0/1", 20, 25)]), ["all traffic", "tcp 20-25"], "half the internet is beyond a /16");
        // Ranges split at every edge: only the ports both /16s admit.
        assert.deepEqual(worldPorts([atom("tcp", "1.0.0.0/16", 1000, 2000), atom("tcp", "2.0.0.0/16", 1500, 3000)]), ["tcp 1500-2000"]);
        assert.deepEqual(worldPorts([atom("tcp", "0.0.0.0/0", 443), atom("tcp", "::/0", 443), atom("-1", "::/0"), atom("tcp", "10.0.0.0/8", 22)]), ["all traffic", "tcp 443"]);
        assert.deepEqual(worldPorts([atom("icmp", "0.0.0.0/1", 8, -1), atom("icmp", "128.0.0.0/1", 0, -1)]), ["icmp"]);
        assert.equal(ruleText({ ...atom("tcp", "0.0.0.0/0", 80), description: "http" }), 'tcp 80 from 0.0.0.0/0 ("http")');
    });
    it("ingressSteps: describe, authorize, revoke; early revokes only at the quota, never of a rule that lets 443 in", () => {
        const wanted = wantedAtoms(ingressRules({ privateCidrs: ["10.0.0.0/8"], adminCidrs: ["203.0.113.0/24"] }));
        const actual = [{ ...atom("tcp", "0.0.0.0/0", 443), description: "old" }, atom("-1", "0.0.0.0/0"), atom("tcp", "0.0.0.0/0", 80)];
        assert.deepEqual(ingressSteps(actual, wanted).map((s) => `${s.op} ${s.atoms.length}`), ["describe 1", "authorize 3", "revoke 2"]);
        const full = [...actual, ...Array.from({ length: 57 }, (_, i) => atom("tcp", `10.${i}.0.0/16`, 3000 + i))];
        const steps = ingressSteps(full, wanted);
        assert.deepEqual(steps.map((s) => s.op), ["describe", "revoke", "authorize", "revoke"]);
        assert.ok(!steps[1].atoms.some((a) => a.protocol === "-1"), "the allow-all rule (it lets 443 in) is revoked last");
        assert.deepEqual(ingressSteps(wanted, wanted), []);
    });
});

describe("at the rules quota (issue 33)", () => {
    const atom = (protocol: string, source: string, from?: number, to?: number): RuleAtom =>
        ({ protocol, kind: source.includes(":") ? "cidr6" : "cidr4", source, ...(from === undefined ? {} : { fromPort: from, toPort: to ?? from }) });
    it("a rule that admits 443 only from a private range is revoked first; the world's 443 rules last", () => {
        const wanted = wantedAtoms(ingressRules({ privateCidrs: ["10.0.0.0/8"], adminCidrs: ["203.0.113.0/24"] }));
        const actual = [atom("tcp", "0.0.0.0/0", 443), atom("tcp", "::/0", 443), atom("tcp", "10.0.0.0/8", 0, 65535), atom("-1", "172.16.0.0/12"),
            ...Array.from({ length: 56 }, (_, i) => atom("tcp", `10.${i}.0.0/16`, 3000 + i))];
        const steps = ingressSteps(actual, wanted);
        assert.deepEqual(steps.map((s) => s.op), ["describe", "revoke", "authorize"], "everything but the world's 443 goes first; nothing is left to revoke after");
        assert.ok(steps[1].atoms.some((a) => a.source === "10.0.0.0/8" && a.toPort === 65535), "the private all-ports rule is revoked first");
        assert.ok(steps[1].atoms.some((a) => a.protocol === "-1"), "so is all traffic from a private range");
    });
});
