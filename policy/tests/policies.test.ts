// Policy tests in the style of pulumi-policy-aws: call validateResource with
// fake args and collect the violations. Each policy: compliant, non-compliant,
// missing property.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ResourceValidationArgs, ResourceValidationPolicy, StackValidationPolicy } from "@pulumi/policy";
import { noAllProtocolsInbound, noWorldInboundExceptHttps, remoteCommandHostKey, sshSourcesLimited, webhookInputsSecret } from "../policies";

function args(type: string, props: Record<string, any>, additionalSecretOutputs: string[] = []): ResourceValidationArgs {
    return {
        type, props, urn: `urn:pulumi:test::hostguard::${type}::r`, name: "r",
        opts: { protect: false, ignoreChanges: [], aliases: [], additionalSecretOutputs, customTimeouts: { createSeconds: 0, updateSeconds: 0, deleteSeconds: 0 } },
        stackTags: new Map(),
        isType: () => false,
        asType: () => undefined,
        getConfig: () => ({}) as any,
    } as unknown as ResourceValidationArgs;
}

async function violations(policy: ResourceValidationPolicy, a: ResourceValidationArgs): Promise<string[]> {
    const out: string[] = [];
    const validate = policy.validateResource;
    if (!validate) {
        return out;
    }
    for (const v of Array.isArray(validate) ? validate : [validate]) {
        await v(a, (m) => out.push(m));
    }
    return out;
}

const SG = "aws:ec2/securityGroup:SecurityGroup";
const RULE = "aws:ec2/securityGroupRule:SecurityGroupRule";
const VPC = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule";
const DYNAMIC = "pulumi-nodejs:dynamic:Resource";
const https = { protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], ipv6CidrBlocks: ["::/0"] };

describe("no-world-inbound-except-https", () => {
    const p = noWorldInboundExceptHttps();
    it("passes the hostguard group: 443 public, 8080 and 22 from private ranges", async () => {
        assert.deepEqual(await violations(p, args(SG, { ingress: [
            https,
            { protocol: "tcp", fromPort: 8080, toPort: 8080, cidrBlocks: ["10.0.0.0/8"], ipv6CidrBlocks: [] },
            { protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["203.0.113.0/24"], securityGroups: [] },
        ] })), []);
    });
    it("flags SSH from ::/0 in an inline rule", async () => {
        const v = await violations(p, args(SG, { ingress: [https, { protocol: "tcp", fromPort: 22, toPort: 22, ipv6CidrBlocks: ["::/0"] }] }));
        assert.equal(v.length, 1);
        assert.match(v[0], /ingress\[1\] opens protocol tcp ports 22-22 to ::\/0/);
    });
    it("flags port 80 from 0.0.0.0/0 on a standalone ingress rule, ignores egress", async () => {
        assert.equal((await violations(p, args(RULE, { type: "ingress", protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"] }))).length, 1);
        assert.deepEqual(await violations(p, args(RULE, { type: "egress", protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] })), []);
    });
    it("flags SSH to 0.0.0.0/1 and 128.0.0.0/1 on two rules (the union rule of components/cidr.ts), not a private range beside them", async () => {
        const v = await violations(p, args(SG, { ingress: [
            https,
            { protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["0.0.0.0/1"] },
            { protocol: "tcp", fromPort: 20, toPort: 30, cidrBlocks: ["128.0.0.0/1", "10.0.0.0/8"] },
            { protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["10.0.0.0/8"] },
        ] }));
        assert.deepEqual(v.map((m) => m.split(" opens")[0]), ["ingress[1]", "ingress[2]"]);
        assert.match(v[0], /the world on tcp 20-30/);
        assert.deepEqual(await violations(p, args(SG, { ingress: [https, { protocol: "-1", ipv6CidrBlocks: ["::/1"] }, { protocol: "-1", ipv6CidrBlocks: ["8000::/1"] }] })).then((x) => x.length), 2);
    });
    it("flags a port range around 443 on a vpc ingress rule, passes exact 443", async () => {
        assert.equal((await violations(p, args(VPC, { ipProtocol: "tcp", fromPort: 0, toPort: 65535, cidrIpv4: "0.0.0.0/0" }))).length, 1);
        assert.deepEqual(await violations(p, args(VPC, { ipProtocol: "tcp", fromPort: 443, toPort: 443, cidrIpv6: "::/0" })), []);
    });
    it("passes resources with the property missing", async () => {
        assert.deepEqual(await violations(p, args(SG, {})), []);
        assert.deepEqual(await violations(p, args(SG, { ingress: [{ protocol: "tcp", fromPort: 22, toPort: 22 }] })), []);
        assert.deepEqual(await violations(p, args(VPC, { ipProtocol: "tcp", fromPort: 22, toPort: 22 })), []);
    });
    it("ignores other resource types", async () => {
        assert.deepEqual(await violations(p, args("aws:s3/bucket:Bucket", { ingress: [{ protocol: "-1", cidrBlocks: ["0.0.0.0/0"] }] })), []);
    });
});

describe("the SG rules on hostguard's adopted-group dynamic resource", () => {
    const ADOPTED = { kind: "hostguard:adopted-group-ingress", region: "eu-west-1", groupId: "sg-0123456789abcdef0" };
    const world = noWorldInboundExceptHttps();
    const all = noAllProtocolsInbound();
    it("passes hostguard's wanted rules", async () => {
        const props = { ...ADOPTED, ingress: [https, { protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["203.0.113.0/24"], ipv6CidrBlocks: [], securityGroups: [] }] };
        assert.deepEqual(await violations(world, args(DYNAMIC, props)), []);
        assert.deepEqual(await violations(all, args(DYNAMIC, props)), []);
    });
    it("flags 80 and SSH from anywhere, and all protocols, in its wanted rules", async () => {
        const props = { ...ADOPTED, ingress: [
            https,
            { protocol: "tcp", fromPort: 80, toPort: 80, cidrBlocks: ["0.0.0.0/0"], ipv6CidrBlocks: [] },
            { protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: [], ipv6CidrBlocks: ["::/0"] },
            { protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["10.0.0.0/8"] },
        ] };
        assert.deepEqual((await violations(world, args(DYNAMIC, props))).map((m) => m.split(" opens")[0]), ["ingress[1]", "ingress[2]"]);
        assert.deepEqual((await violations(all, args(DYNAMIC, props))).map((m) => m.split(" allows")[0]), ["ingress[3]"]);
    });
    it("passes it with the rules missing, and ignores other dynamic resources", async () => {
        assert.deepEqual(await violations(world, args(DYNAMIC, ADOPTED)), []);
        assert.deepEqual(await violations(world, args(DYNAMIC, { ...ADOPTED, ingress: [{ protocol: "tcp", fromPort: 22, toPort: 22 }] })), []);
        const other = { kind: "someone-else", ingress: [{ protocol: "-1", cidrBlocks: ["0.0.0.0/0"] }] };
        assert.deepEqual(await violations(world, args(DYNAMIC, other)), []);
        assert.deepEqual(await violations(all, args(DYNAMIC, other)), []);
    });
});

describe("no-all-protocols-inbound", () => {
    const p = noAllProtocolsInbound();
    it("passes named protocols and an all-protocols egress", async () => {
        assert.deepEqual(await violations(p, args(SG, { ingress: [https], egress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"] }] })), []);
    });
    it("flags protocol -1 inbound even from a private range, on each type", async () => {
        assert.equal((await violations(p, args(SG, { ingress: [{ protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["10.0.0.0/8"] }] }))).length, 1);
        assert.equal((await violations(p, args(RULE, { type: "ingress", protocol: "all", fromPort: 0, toPort: 0, sourceSecurityGroupId: "sg-1" }))).length, 1);
        assert.equal((await violations(p, args(VPC, { ipProtocol: "-1", referencedSecurityGroupId: "sg-1" }))).length, 1);
    });
    it("passes when the protocol property is missing", async () => {
        assert.deepEqual(await violations(p, args(SG, { ingress: [{ fromPort: 443, toPort: 443 }] })), []);
        assert.deepEqual(await violations(p, args(VPC, {})), []);
    });
});

describe("webhook-inputs-secret", () => {
    const p = webhookInputsSecret();
    const RC = "command:remote:Command";
    const good = { create: "sudo -n sh -c '/usr/local/lib/hostguard/install set-webhook'", stdin: "url = \"https://hooks.example.test/services/X\"\n", logging: "none" };
    it("passes the hostguard webhook command", async () => {
        assert.deepEqual(await violations(p, args(RC, good, ["stdin", "stdout", "stderr"])), []);
    });
    it("flags a webhook command that logs or keeps stdin in plain state", async () => {
        const v = await violations(p, args(RC, { ...good, logging: "stdoutAndStderr" }, ["stdout"]));
        assert.deepEqual(v.map((m) => m.split(" must")[0].split(":")[0]), [
            "the set-webhook command", "the set-webhook command", "the set-webhook command",
        ]);
        assert.ok(v.some((m) => /logging/.test(m)) && v.some((m) => /"stdin"/.test(m)) && v.some((m) => /"stderr"/.test(m)));
    });
    it("flags a webhook URL in command text, environment or triggers of any command", async () => {
        const url = "https://hooks.example.test/services/T/B/x";
        assert.equal((await violations(p, args(RC, { create: `curl -d x ${url}` }))).length, 1);
        assert.equal((await violations(p, args("command:local:Command", { create: "true", environment: { URL: url } }))).length, 1);
        assert.equal((await violations(p, args(RC, { create: "true", triggers: [url] }))).length, 1);
    });
    it("flags a webhook command with the stdin missing", async () => {
        const v = await violations(p, args(RC, { create: good.create, logging: "none" }, ["stdin", "stdout", "stderr"]));
        assert.deepEqual(v, ["the set-webhook command has no stdin: the webhook must arrive on stdin."]);
    });
    it("holds the heartbeat command to the same rules", async () => {
        const hb = { create: "sudo -n sh -c '/usr/local/lib/hostguard/install set-heartbeat'", stdin: "url = \"https://hc-ping.example.test/x\"\n", logging: "none" };
        assert.deepEqual(await violations(p, args(RC, hb, ["stdin", "stdout", "stderr"])), []);
        const v = await violations(p, args(RC, { create: hb.create, logging: "stdoutAndStderr" }, ["stdin", "stdout", "stderr"]));
        assert.deepEqual(v, [
            "the set-heartbeat command has no stdin: the heartbeat URL must arrive on stdin.",
            "the set-heartbeat command must set logging to \"none\" (is \"stdoutAndStderr\").",
        ]);
    });
    it("passes other commands and other types", async () => {
        assert.deepEqual(await violations(p, args(RC, { create: "install install --part base", stdin: "dGFy" })), []);
        assert.deepEqual(await violations(p, args(SG, { create: "set-webhook" })), []);
    });
});

describe("remote-command-host-key", () => {
    const p = remoteCommandHostKey();
    const RC = "command:remote:Command";
    const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake";
    const conn = { host: "10.0.1.10", port: 22, user: "admin", privateKey: "k", hostKey: key };
    it("passes a connection with a host key, and with a bastion that has one", async () => {
        assert.deepEqual(await violations(p, args(RC, { create: "true", connection: conn })), []);
        assert.deepEqual(await violations(p, args(RC, { create: "true", connection: { ...conn, proxy: { host: "b", hostKey: key } } })), []);
    });
    it("flags a connection without a host key, or with an empty one", async () => {
        for (const hostKey of [undefined, "", "  "]) {
            assert.deepEqual(await violations(p, args(RC, { create: "true", connection: { ...conn, hostKey } })), [
                "connection to 10.0.1.10 has no hostKey: any server is accepted; set hostguard:hosts[i].hostKey (ssh-keyscan over a trusted path).",
            ]);
        }
    });
    it("flags a bastion (proxy) without a host key", async () => {
        assert.deepEqual(await violations(p, args(RC, { create: "true", connection: { ...conn, proxy: { host: "bastion.example.test" } } })), [
            "proxy bastion.example.test has no hostKey: any bastion is accepted; set hostguard:bastion.hostKey.",
        ]);
    });
    it("flags a remote command with the connection missing", async () => {
        assert.deepEqual(await violations(p, args(RC, { create: "true" })), ["the remote command has no connection, so no host key: set connection.hostKey."]);
    });
    it("ignores local commands and other types", async () => {
        assert.deepEqual(await violations(p, args("command:local:Command", { create: "true" })), []);
        assert.deepEqual(await violations(p, args(SG, { connection: { host: "h" } })), []);
    });
});

async function stackViolations(policy: StackValidationPolicy, resources: Array<{ type: string; props: Record<string, any> }>): Promise<string[]> {
    const out: string[] = [];
    await policy.validateStack!({ resources: resources.map((r) => ({ ...r, urn: `urn:${r.type}`, name: "r" })), getConfig: () => ({}) } as any, (m) => out.push(m));
    return out;
}

describe("ssh-sources-limited", () => {
    const p = sshSourcesLimited();
    const ssh = (cidrBlocks: string[], ipv6CidrBlocks: string[] = []) => ({ protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks, ipv6CidrBlocks });
    it("passes the hostguard group: SSH from one admin /24, 443 public", async () => {
        assert.deepEqual(await stackViolations(p, [{ type: SG, props: { ingress: [https, ssh(["203.0.113.0/24"])] } }]), []);
    });
    it("flags 0.0.0.0/1 + 128.0.0.0/1 on SSH, inline or split over standalone rules", async () => {
        const v = await stackViolations(p, [{ type: SG, props: { ingress: [ssh(["0.0.0.0/1", "128.0.0.0/1"])] } }]);
        assert.equal(v.length, 1);
        assert.match(v[0], /together cover 4239261696 public IPv4 addresses \(98\.7% of IPv4\), more than a \/16/);
        assert.equal((await stackViolations(p, [
            { type: RULE, props: { type: "ingress", protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["0.0.0.0/1"] } },
            { type: VPC, props: { ipProtocol: "tcp", fromPort: 0, toPort: 1024, cidrIpv4: "128.0.0.0/1" } },
        ])).length, 1);
    });
    it("counts IPv6 and all-protocol rules; private ranges do not count; 443 alone is not SSH", async () => {
        assert.equal((await stackViolations(p, [{ type: SG, props: { ingress: [ssh([], ["2000::/3"])] } }])).length, 1);
        assert.equal((await stackViolations(p, [{ type: VPC, props: { ipProtocol: "-1", cidrIpv4: "11.0.0.0/8" } }])).length, 1);
        assert.deepEqual(await stackViolations(p, [{ type: SG, props: { ingress: [ssh(["10.0.0.0/8", "172.16.0.0/12"])] } }]), []);
        assert.deepEqual(await stackViolations(p, [{ type: SG, props: { ingress: [{ ...https, cidrBlocks: ["0.0.0.0/1", "128.0.0.0/1"] }] } }]), []);
    });
    it("passes resources with the properties missing", async () => {
        assert.deepEqual(await stackViolations(p, [{ type: SG, props: {} }, { type: VPC, props: { ipProtocol: "tcp" } }]), []);
    });
});
