// The resource graph under pulumi.runtime.setMocks (model: pulumi/examples
// testing-unit-ts): every registered resource is recorded with its exact type,
// name and inputs; an unexpected type fails the test. The webhook is a sentinel
// that must appear nowhere but inside the secret stdin of set-webhook.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it, mock } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { SECRET_KEYS, validateConfig, type RawConfig } from "../../components/config";
import { sha256, type PayloadFile } from "../../components/bundles";
import { setWebhookCommand } from "../../components/remoteCommands";
import { buildStack, UNREAD_AWS_SETTINGS, type StackOutputs } from "../../components/stack";
import { readStackFile, renderStack } from "../../tools/render";
import { filledPlaceholders } from "./placeholders";
import { noAllProtocolsInbound, noWorldInboundExceptHttps, remoteCommandHostKey, sshSourcesLimited, webhookInputsSecret } from "../../policy/policies";

/** The pack's policies, as policy/index.ts lists them. */
const PACK = [noWorldInboundExceptHttps(), noAllProtocolsInbound(), webhookInputsSecret(), remoteCommandHostKey(), sshSourcesLimited()];

const ROOT = path.resolve(__dirname, "../..");
/** The secrets below stand for values the engine decrypted: it marks their keys secret. */
const AS_SECRETS = { secretKeys: SECRET_KEYS };

const SENTINEL = "https://hooks.example.test/services/T0/B0/SENTINEL-8c1f2a";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nKEYSENTINEL\n-----END OPENSSH PRIVATE KEY-----\n";
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyFake0000000000000000000000000000000A";
const BASTION_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBastionKeyFake0000000000000000000000000000A";
const SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

interface Recorded { type: string; name: string; inputs: Record<string, any>; importId?: string; additionalSecretOutputs: string[]; deleteBeforeReplace: boolean }
/** The options of each registration by `type::name` that the mocks' newResource does not see. */
const options = new Map<string, { additionalSecretOutputs: string[]; deleteBeforeReplace: boolean }>();
let recorded: Recorded[] = [];
/** Every provider function call (invoke) the program made, in order. */
let calls: Array<{ token: string; inputs: Record<string, any> }> = [];

const DYNAMIC = "pulumi-nodejs:dynamic:Resource";
const EXPECTED_TYPES = new Set(["hostguard:aws:SecurityGroup", "hostguard:host:HostDeployment", "aws:ec2/securityGroup:SecurityGroup", "command:remote:Command", DYNAMIC]);
const GROUP_ID = "sg-0mock0000000000001";
const VPC_ID = "vpc-0123456789abcdef0";
const RECORDED_RULES = [{ protocol: "tcp", fromPort: 22, toPort: 22, kind: "cidr4", source: "0.0.0.0/0" }];
const REGION = "eu-west-1";

before(async () => {
    await pulumi.runtime.setMocks({
        newResource(args) {
            if (!EXPECTED_TYPES.has(args.type)) {
                throw new Error(`unexpected resource ${args.type} ${args.name}`);
            }
            recorded.push({
                type: args.type, name: args.name, inputs: args.inputs, importId: args.id || undefined,
                ...options.get(`${args.type}::${args.name}`)!,
            });
            const id = args.type === "aws:ec2/securityGroup:SecurityGroup" ? GROUP_ID : args.inputs.kind === "hostguard:adopted-group-ingress" ? args.inputs.groupId : `${args.name}-id`;
            // The records' outputs (what destroy restores), to see them reach the enforcing resources.
            const record = args.inputs.kind === "hostguard:adopted-group-record" ? { original: RECORDED_RULES }
                : args.inputs.kind === "hostguard:interface-record" ? { originals: { [`eni-of-${args.inputs.instanceId}`]: ["sg-0recorded"] } } : {};
            return { id, state: { ...args.inputs, ...record } };
        },
        call(args) {
            // The program looks nothing up: the dynamic resources read EC2 themselves, at deploy time.
            calls.push({ token: args.token, inputs: args.inputs });
            throw new Error(`unexpected call ${args.token}`);
        },
    }, "hostguard", "test", false);
    // The request carries the resource options; keep what the policy pack checks.
    const monitor = pulumi.runtime.getMonitor() as any;
    const register = monitor.registerResource.bind(monitor);
    monitor.registerResource = (req: any, callback: unknown) => {
        options.set(`${req.getType()}::${req.getName()}`, { additionalSecretOutputs: req.getAdditionalsecretoutputsList(), deleteBeforeReplace: req.getDeletebeforereplace() });
        return register(req, callback);
    };
});
after(() => {
    recorded = [];
});

/** A small fake payload, so these tests do not depend on the state of scripts/. */
function payload(): PayloadFile[] {
    const f = (path: string, text: string, mode: 0o755 | 0o644 = 0o644): PayloadFile =>
        ({ path, mode, content: Buffer.from(text), sha256: sha256(text) });
    const table = [
        "base hostguard/*.py /usr/local/lib/hostguard/hostguard/ 0644", "base hostguard-notify /usr/local/lib/hostguard/hostguard-notify 0755",
        "base install /usr/local/lib/hostguard/install 0755", "base files.table /usr/local/lib/hostguard/files.table 0644",
        "base hostguard.conf /etc/hostguard/hostguard.conf 0644",
        "monitors host-monitor /usr/local/lib/hostguard/host-monitor 0755", "monitors cron.d/hostguard /etc/cron.d/hostguard 0644",
        "bantool fail2ban/jail.d/hostguard-nginx-bad-request.local /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local 0644",
        "web nginx/hostguard-deny.conf /etc/nginx/snippets/hostguard-deny.conf 0644", "",
    ].join("\n");
    return [
        f("install", "#!/usr/bin/env bash\n", 0o755), f("files.table", table), f("hostguard/paths.py", "# lib\n"),
        f("hostguard-notify", "#!/usr/bin/env bash\n", 0o755), f("host-monitor", "#!/usr/bin/env bash\n", 0o755),
        f("nginx/hostguard-deny.conf", "location ~* x { deny all; }\n"),
    ];
}

function rawConfig(hosts: string[], extra: RawConfig = {}): RawConfig {
    return {
        hosts: JSON.stringify(hosts.map((h, i) => ({ name: h, host: `10.0.1.${10 + i}`, hostKey: HOST_KEY }))),
        vpcId: "vpc-0123456789abcdef0",
        adminCidrs: JSON.stringify(["203.0.113.0/24", "2001:db8::/48"]),
        webhookUrl: SENTINEL,
        sshPrivateKey: KEY,
        ...extra,
    };
}

/** Builds the stack from raw config the way index.ts does, and waits for every resource to register. */
async function build(raw: RawConfig, region: string | null = REGION, aws: Record<string, string> = {}): Promise<{ out: StackOutputs; resources: Recorded[] }> {
    recorded = [];
    calls = [];
    pulumi.runtime.setAllConfig({
        // setAllConfig adds to what earlier builds set: "" stands for "not set".
        "aws:region": region ?? "", // null: not set
        ...Object.fromEntries(["profile", ...Object.keys(UNREAD_AWS_SETTINGS)].map((k) => [`aws:${k}`, aws[k] ?? ""])),
        ...Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined).map(([k, v]) => [`hostguard:${k}`, String(v)])),
    },
        ["hostguard:webhookUrl", "hostguard:sshPrivateKey", "hostguard:heartbeatUrl", "hostguard:pagerdutyRoutingKey"]);
    const out = buildStack(validateConfig(raw, AS_SECRETS), payload());
    await settle(out);
    return { out, resources: [...recorded].sort((a, b) => (a.name < b.name ? -1 : 1)) };
}

async function settle(out: StackOutputs): Promise<void> {
    await Promise.all(Object.values(out.hosts).map((h) => new Promise((r) => pulumi.all([h.files, h.partHashes]).apply(r))));
    if (out.securityGroupId) {
        await new Promise((r) => out.securityGroupId!.apply(r));
    }
    await Promise.all((out.securityGroupInterfaceIds ?? []).map((id) => new Promise((r) => id.apply(r))));
    await new Promise((r) => setTimeout(r, 50));
}

function unwrap(v: any): any {
    return v && typeof v === "object" && v[SECRET_SIG_KEY] === SECRET_SIG ? v.value : v;
}
function isMockSecret(v: any): boolean {
    return Boolean(v && typeof v === "object" && v[SECRET_SIG_KEY] === SECRET_SIG);
}

async function resolved<T>(o: pulumi.Output<T>): Promise<{ value: T; secret: boolean }> {
    const value = await new Promise<T>((r) => o.apply(r));
    return { value, secret: await pulumi.isSecret(o) };
}

describe("stack with one host", () => {
    it("registers exactly the security group and five remote commands", async () => {
        const { resources } = await build(rawConfig(["web1"]));
        assert.deepEqual(resources.map((r) => `${r.type} ${r.name}`), [
            "hostguard:aws:SecurityGroup hostguard",
            "aws:ec2/securityGroup:SecurityGroup hostguard-sg",
            "hostguard:host:HostDeployment web1",
            "command:remote:Command web1-bantool",
            "command:remote:Command web1-base",
            "command:remote:Command web1-monitors",
            "command:remote:Command web1-web",
            "command:remote:Command web1-webhook",
        ]);
    });

    it("gives the security group exactly 443 public, 8080 private, 22 from admins, open egress", async () => {
        const { resources } = await build(rawConfig(["web1"]));
        const sg = resources.find((r) => r.name === "hostguard-sg")!;
        assert.equal(sg.inputs.vpcId, "vpc-0123456789abcdef0");
        assert.equal(sg.importId, undefined);
        assert.deepEqual(sg.inputs.ingress, [
            { description: "HTTPS from anywhere", protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], ipv6CidrBlocks: ["::/0"], securityGroups: [] },
            { description: "application port from the private network", protocol: "tcp", fromPort: 8080, toPort: 8080, cidrBlocks: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"], ipv6CidrBlocks: [], securityGroups: [] },
            { description: "SSH for deployment from admin networks", protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["203.0.113.0/24"], ipv6CidrBlocks: ["2001:db8::/48"], securityGroups: [] },
        ]);
        assert.deepEqual(sg.inputs.egress, [{ description: "all outbound", protocol: "-1", fromPort: 0, toPort: 0, cidrBlocks: ["0.0.0.0/0"], ipv6CidrBlocks: ["::/0"] }]);
        assert.equal(sg.deleteBeforeReplace, false, "an unnamed group: the new one first (EC2 names it)");
        const named = (await build(rawConfig(["web1"], { securityGroupName: "web-hostguard" }))).resources.find((r) => r.name === "hostguard-sg")!;
        assert.equal(named.inputs.name, "web-hostguard");
        assert.equal(named.deleteBeforeReplace, true, "a named group's replacement would clash with its own name: the old one goes first");
        const ports = sg.inputs.ingress.map((r: any) => r.fromPort);
        assert.ok(!ports.includes(80) && !sg.inputs.ingress.some((r: any) => r.protocol === "-1"), "no port 80, no allow-all");
    });

    it("allows SSH only from the bastion's group when one is given", async () => {
        const { resources } = await build(rawConfig(["web1"], {
            adminCidrs: undefined, bastion: JSON.stringify({ host: "bastion.example.test", hostKey: BASTION_KEY, securityGroupId: "sg-0bbbbbbbbbbbbbbb1" }),
        }));
        const ssh = resources.find((r) => r.name === "hostguard-sg")!.inputs.ingress.find((r: any) => r.fromPort === 22);
        assert.deepEqual(ssh, { description: "SSH for deployment via the bastion", protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: [], ipv6CidrBlocks: [], securityGroups: ["sg-0bbbbbbbbbbbbbbb1"] });
        const base = resources.find((r) => r.name === "web1-base")!;
        assert.ok(isMockSecret(base.inputs.connection), "the connection is secret");
        assert.deepEqual(unwrap(base.inputs.connection).proxy, { host: "bastion.example.test", port: 22, user: "admin", privateKey: KEY, hostKey: BASTION_KEY, dialErrorLimit: 10, perDialTimeout: 15 });
    });

    it("adopts an existing group with one dynamic resource that reconciles its inbound rules, and no @pulumi/aws resource or invoke", async () => {
        const { resources, out } = await build(rawConfig(["web1"], { securityGroupId: "sg-0aaaaaaaaaaaaaaa1", securityGroupName: "launch-wizard-1", securityGroupDescription: "launch-wizard-1 created 2024-01-01" }));
        assert.deepEqual(resources.filter((r) => r.type.startsWith("aws:") || r.type === DYNAMIC).map((r) => `${r.type} ${r.name}`), [
            `${DYNAMIC} hostguard-ingress`, `${DYNAMIC} hostguard-ingress-record`,
        ]);
        assert.deepEqual(calls, []);
        const record = resources.find((r) => r.name === "hostguard-ingress-record")!;
        const adopted = resources.find((r) => r.name === "hostguard-ingress")!;
        const { __provider, ...inputs } = adopted.inputs;
        const { __provider: _p, ...recordInputs } = record.inputs;
        assert.deepEqual(recordInputs, { kind: "hostguard:adopted-group-record", region: REGION, groupId: "sg-0aaaaaaaaaaaaaaa1" });
        assert.deepEqual(inputs, {
            kind: "hostguard:adopted-group-ingress", region: REGION, groupId: "sg-0aaaaaaaaaaaaaaa1", original: RECORDED_RULES,
            ingress: [
                { description: "HTTPS from anywhere", protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: ["0.0.0.0/0"], ipv6CidrBlocks: ["::/0"], securityGroups: [] },
                { description: "application port from the private network", protocol: "tcp", fromPort: 8080, toPort: 8080, cidrBlocks: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"], ipv6CidrBlocks: [], securityGroups: [] },
                { description: "SSH for deployment from admin networks", protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["203.0.113.0/24"], ipv6CidrBlocks: ["2001:db8::/48"], securityGroups: [] },
            ],
            stackInstanceIds: [], sharedInstances: [],
        });
        // The serialized provider loads the SDK where it runs and carries no credentials or secrets.
        assert.match(__provider, /require\("@aws-sdk\/client-ec2"\)/);
        assert.doesNotMatch(__provider, /AWS_SECRET|SENTINEL|KEYSENTINEL/);
        assert.equal(await new Promise((r) => out.securityGroupId!.apply(r)), "sg-0aaaaaaaaaaaaaaa1");
    });

    it("leaves AWS out when hostguard:aws is false", async () => {
        const { resources, out } = await build(rawConfig(["web1"], { aws: "false", vpcId: undefined, adminCidrs: undefined }));
        assert.equal(resources.filter((r) => r.type.startsWith("aws:")).length, 0);
        assert.equal(out.securityGroupId, undefined);
        assert.equal(resources.length, 6);
    });

    it("wires each part: stdin tar, hash in the command, uninstall on delete, sudo for a non-root user", async () => {
        const { resources } = await build(rawConfig(["web1"]));
        for (const part of ["base", "monitors", "bantool", "web"]) {
            const c = resources.find((r) => r.name === `web1-${part}`)!;
            assert.match(c.inputs.create, new RegExp(`^sudo -n sh -c '# hostguard part ${part}: bundle sha256 [0-9a-f]{64}`));
            assert.match(c.inputs.create, new RegExp(`"\\$d/install" install --part ${part}'?$`));
            assert.equal(c.inputs.delete, `sudo -n sh -c '/usr/local/lib/hostguard/install uninstall --part ${part}'`);
            assert.equal(c.inputs.addPreviousOutputInEnv, false);
            assert.equal(c.inputs.triggers, undefined);
            assert.match(c.inputs.stdin, /^[A-Za-z0-9+/]+=*$/);
            const conn = unwrap(c.inputs.connection);
            assert.deepEqual(conn, { host: "10.0.1.10", port: 22, user: "admin", privateKey: KEY, hostKey: HOST_KEY, perDialTimeout: 15, dialErrorLimit: 10 });
        }
        const tar = Buffer.from(resources.find((r) => r.name === "web1-monitors")!.inputs.stdin, "base64").toString("latin1");
        assert.match(tar, /^0-59\/10 \* \* \* \* root sh \/usr\/local\/lib\/hostguard\/at-offset\.sh \/usr\/local\/lib\/hostguard\/host-monitor /m, "the host waits its own offset");
    });

    it("checks the host key, and runs as root without sudo", async () => {
        const hostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherHostKeyFake00000000000000000000000000A";
        const { resources } = await build(rawConfig([], { hosts: JSON.stringify([{ name: "web1", host: "h.example.test", user: "root", hostKey }]) }));
        const c = resources.find((r) => r.name === "web1-monitors")!;
        assert.equal(unwrap(c.inputs.connection).hostKey, hostKey);
        assert.ok(c.inputs.create.startsWith("# hostguard part monitors"));
        assert.equal(resources.find((r) => r.name === "web1-webhook")!.inputs.create, setWebhookCommand(false, true));
        assert.match(setWebhookCommand(false, true), /^\/usr\/local\/lib\/hostguard\/install set-webhook --verify$/m);
    });
});

describe("the monitors' schedule", () => {
    it("hostguard:cronMinute pins every host's monitors to that minute, in the one cron file", async () => {
        const { resources } = await build(rawConfig(["web1", "web2"], { cronMinute: "6" }));
        for (const host of ["web1", "web2"]) {
            const tar = Buffer.from(resources.find((r) => r.name === `${host}-monitors`)!.inputs.stdin, "base64").toString("latin1");
            assert.match(tar, /^6-59\/10 \* \* \* \* root \/usr\/local\/lib\/hostguard\/host-monitor >> /m);
        }
    });
    it("without it each host waits its own offset (at-offset.sh): nothing is drawn in the program", async () => {
        const { resources } = await build(rawConfig(["web1"]));
        const tar = Buffer.from(resources.find((r) => r.name === "web1-monitors")!.inputs.stdin, "base64").toString("latin1");
        assert.match(tar, /^0-59\/10 \* \* \* \* root sh \/usr\/local\/lib\/hostguard\/at-offset\.sh \/usr\/local\/lib\/hostguard\/host-monitor >> /m);
    });
});

describe("the webhook secret", () => {
    it("travels only in the secret stdin of the webhook command", async () => {
        const { resources, out } = await build(rawConfig(["web1", "web2"]));
        for (const r of resources) {
            const inputs = { ...r.inputs };
            if (r.name.endsWith("-webhook")) {
                assert.ok(isMockSecret(inputs.stdin), `${r.name}: stdin must be secret`);
                assert.equal(unwrap(inputs.stdin), `url=${SENTINEL}\n`);
                assert.equal(inputs.logging, "none");
                assert.equal(inputs.create, setWebhookCommand(true, true));
                assert.ok(inputs.create.startsWith("sudo -n sh -c '# hostguard webhook: a candidate, the connectivity test to it, then in place"));
                delete inputs.stdin;
            }
            delete inputs.connection; // secret, and carries the SSH key only
            const text = JSON.stringify(inputs);
            assert.ok(!text.includes("SENTINEL"), `${r.type} ${r.name} carries the webhook outside a secret stdin`);
            assert.ok(!text.includes("KEYSENTINEL"), `${r.type} ${r.name} carries the SSH key in plain text`);
            for (const k of ["create", "update", "delete", "environment", "triggers"]) {
                assert.ok(!JSON.stringify(r.inputs[k] ?? "").includes("hooks.example.test"), `${r.name}.${k}`);
            }
        }
        for (const [name, h] of Object.entries(out.hosts)) {
            for (const o of [h.files, h.partHashes]) {
                const { value, secret } = await resolved(o as pulumi.Output<unknown>);
                assert.equal(secret, false, `${name}: plain outputs stay plain`);
                assert.ok(!JSON.stringify(value).includes("SENTINEL"), `${name}: output carries the webhook`);
            }
        }
    });
});

/** A value as a policy sees it: secrets unwrapped, everywhere. */
function plain(v: any): any {
    const u = unwrap(v);
    return Array.isArray(u) ? u.map(plain) : u && typeof u === "object" ? Object.fromEntries(Object.entries(u).map(([k, x]) => [k, plain(x)])) : u;
}

/** Every message of every policy of the pack (policy/index.ts's list) over RESOURCES, as `pulumi preview --policy-pack` would give them. */
async function policyViolations(resources: Recorded[]): Promise<string[]> {
    const out: string[] = [];
    const args = resources.map((r) => ({
        type: r.type, name: r.name, urn: `urn:pulumi:test::hostguard::${r.type}::${r.name}`, props: plain(r.inputs),
        opts: { additionalSecretOutputs: r.additionalSecretOutputs, protect: false, ignoreChanges: [], aliases: [], customTimeouts: {} },
    }));
    for (const policy of PACK) {
        const report = (m: string) => out.push(`${policy.name}: ${m}`);
        if ("validateResource" in policy && policy.validateResource) {
            for (const a of args) {
                for (const v of [policy.validateResource].flat()) {
                    await v(a as any, report);
                }
            }
        }
        if ("validateStack" in policy && policy.validateStack) {
            await policy.validateStack({ resources: args } as any, report);
        }
    }
    return out;
}

describe("the policy pack on the program's own resources", () => {
    it("passes every resource of a stack with a created group on its instances and of an adopting one", async () => {
        const withInstances = JSON.stringify(JSON.parse(rawConfig(["web1", "web2"]).hosts as string).map((h: object, i: number) => ({ ...h, instanceId: `i-0${i}23456789abcdef0` })));
        for (const extra of [{ hosts: withInstances }, { securityGroupId: "sg-0aaaaaaaaaaaaaaa1" }]) {
            const { resources } = await build(rawConfig(["web1", "web2"], extra));
            assert.ok(resources.some((r) => r.name.endsWith("-webhook")));
            assert.deepEqual(await policyViolations(resources), []);
        }
    });

    it("sees the set-webhook command's secret outputs: without stdin among them the pack fails (the state would hold the URL in plain text)", async () => {
        const { resources } = await build(rawConfig(["web1"]));
        const webhook = resources.find((r) => r.name.endsWith("-webhook"))!;
        assert.deepEqual([...webhook.additionalSecretOutputs].sort(), ["connection", "stderr", "stdin", "stdout"]);
        const without = resources.map((r) => (r === webhook ? { ...r, additionalSecretOutputs: r.additionalSecretOutputs.filter((k) => k !== "stdin") } : r));
        assert.deepEqual(await policyViolations(without), ['webhook-inputs-secret: the set-webhook command must list "stdin" in additionalSecretOutputs.']);
    });
});

describe("the chat format and PagerDuty's routing key (issue 34)", () => {
    const ROUTING = "R0123456789abcdef0123456SENTINEL";
    /** Every input but the webhook command's secret stdin and the secret connection, as text. */
    function plainInputs(resources: Recorded[]): string {
        return resources.map((r) => {
            const inputs = { ...r.inputs };
            delete inputs.connection;
            if (r.name.endsWith("-webhook")) {
                delete inputs.stdin;
            }
            return JSON.stringify(inputs);
        }).join("\n");
    }
    it("the detected format travels beside the webhook in its secret stdin, never in the command", async () => {
        const teams = "https://x1.2c.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/0123/triggers/manual/paths/invoke?sig=SENTINEL";
        const { resources } = await build(rawConfig(["web1"], { webhookUrl: teams }));
        const hook = resources.find((r) => r.name === "web1-webhook")!;
        assert.ok(isMockSecret(hook.inputs.stdin));
        assert.equal(unwrap(hook.inputs.stdin), `url=${teams}\nformat=teams\n`);
        assert.equal(hook.inputs.create, setWebhookCommand(true, true));
        assert.ok(!plainInputs(resources).includes("SENTINEL") && !plainInputs(resources).includes("teams"));
    });
    it("a routing key replaces the webhook: PagerDuty's endpoint, the format and the key in the one secret stdin", async () => {
        const { resources, out } = await build(rawConfig(["web1"], { webhookUrl: undefined, pagerdutyRoutingKey: ROUTING, pagerdutyRegion: "eu", alertSendResolved: "true" }));
        const hook = resources.find((r) => r.name === "web1-webhook")!;
        assert.ok(isMockSecret(hook.inputs.stdin));
        assert.equal(unwrap(hook.inputs.stdin), `url=https://events.eu.pagerduty.com/v2/enqueue\nformat=pagerduty\nrouting_key=${ROUTING}\n`);
        assert.equal(hook.inputs.logging, "none");
        assert.ok(!plainInputs(resources).includes("SENTINEL"), "the routing key outside the secret stdin");
        for (const o of [out.hosts.web1.files, out.hosts.web1.partHashes]) {
            assert.ok(!JSON.stringify((await resolved(o as pulumi.Output<unknown>)).value).includes("SENTINEL"));
        }
    });
});

describe("alert keys, heartbeat and ban safety (issue 11)", () => {
    const HEARTBEAT = "https://hc-ping.example.test/ping/HBSENTINEL-77";
    it("a heartbeatUrl adds one command per host that writes it from a secret stdin and removes it on delete", async () => {
        const { resources, out } = await build(rawConfig(["web1"], { heartbeatUrl: HEARTBEAT }));
        const hb = resources.find((r) => r.name === "web1-heartbeat")!;
        assert.equal(hb.type, "command:remote:Command");
        assert.equal(hb.inputs.create, "sudo -n sh -c '/usr/local/lib/hostguard/install set-heartbeat'");
        assert.equal(hb.inputs.delete, "sudo -n sh -c '/usr/local/lib/hostguard/install set-heartbeat --remove'");
        assert.equal(hb.inputs.logging, "none");
        assert.ok(isMockSecret(hb.inputs.stdin), "the heartbeat URL travels only in a secret stdin");
        assert.equal(unwrap(hb.inputs.stdin), `url=${HEARTBEAT}\n`);
        for (const r of resources) {
            const inputs = { ...r.inputs };
            delete inputs.connection;
            if (r.name === "web1-heartbeat") {
                delete inputs.stdin;
            }
            assert.ok(!JSON.stringify(inputs).includes("HBSENTINEL"), `${r.name} carries the heartbeat URL outside its secret stdin`);
        }
        for (const o of [out.hosts.web1.files, out.hosts.web1.partHashes]) {
            assert.ok(!JSON.stringify((await resolved(o as pulumi.Output<unknown>)).value).includes("HBSENTINEL"));
        }
    });
    it("verifyWebhook false leaves the bare set-webhook; alert keys land in hostguard.conf, the host's name does not", async () => {
        const { resources } = await build(rawConfig(["web1"], {
            verifyWebhook: "false", alertHostLabel: "true", alertRepeatInterval: "1h", alertSendResolved: "true", alertAfterRuns: "2",
        }));
        assert.equal(resources.find((r) => r.name === "web1-webhook")!.inputs.create, "sudo -n sh -c '/usr/local/lib/hostguard/install set-webhook'");
        const tar = Buffer.from(resources.find((r) => r.name === "web1-base")!.inputs.stdin, "base64").toString("latin1");
        assert.match(tar, /^ALERT_HOST_LABEL=true\nALERT_REPEAT_INTERVAL=1h\nALERT_SEND_RESOLVED=true\nALERT_AFTER_RUNS=2$/m);
        assert.match(tar, /^HOST_NAME=$/m, "the label is the host's own name");
        assert.doesNotMatch(tar, /web1/);
    });
    it("the jail never bans loopback, the admin networks or banIgnoreIps, and grows bans with banIncrement", async () => {
        const { resources } = await build(rawConfig(["web1"], { banIgnoreIps: '["198.51.100.7"]', banIncrement: "true" }));
        const tar = Buffer.from(resources.find((r) => r.name === "web1-bantool")!.inputs.stdin, "base64").toString("latin1");
        assert.match(tar, /^ignoreip  = 127.0.0.1\/8 ::1 203.0.113.0\/24 2001:db8::\/48 198.51.100.7$/m);
        assert.match(tar, /^bantime.increment = true$/m);
    });
});

describe("stack with two hosts", () => {
    it("registers one deployment per host, each shipping the same bundles byte for byte", async () => {
        const { resources, out } = await build(rawConfig(["web1", "web2"]));
        assert.deepEqual(resources.map((r) => r.name), [
            "hostguard", "hostguard-sg",
            "web1", "web1-bantool", "web1-base", "web1-monitors", "web1-web", "web1-webhook",
            "web2", "web2-bantool", "web2-base", "web2-monitors", "web2-web", "web2-webhook",
        ]);
        assert.equal(out.hosts.web2.jail, "nginx-bad-request");
        const files = (await resolved(out.hosts.web1.files)).value;
        assert.deepEqual(files.map((f) => `${f.part} ${f.path} ${f.destination}`), [
            "base hostguard/paths.py /usr/local/lib/hostguard/hostguard/paths.py", "base hostguard-notify /usr/local/lib/hostguard/hostguard-notify",
            "base install /usr/local/lib/hostguard/install", "base files.table /usr/local/lib/hostguard/files.table",
            "base hostguard.conf /etc/hostguard/hostguard.conf",
            "monitors host-monitor /usr/local/lib/hostguard/host-monitor", "monitors cron.d/hostguard /etc/cron.d/hostguard",
            "bantool fail2ban/jail.d/hostguard-nginx-bad-request.local /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local",
            "web nginx/hostguard-deny.conf /etc/nginx/snippets/hostguard-deny.conf",
        ]);
        assert.equal(files.find((f) => f.path === "host-monitor")!.sha256, sha256("#!/usr/bin/env bash\n"));
        const stdin = (host: string, part: string) => resources.find((r) => r.name === `${host}-${part}`)!.inputs.stdin as string;
        const create = (host: string, part: string) => resources.find((r) => r.name === `${host}-${part}`)!.inputs.create as string;
        for (const part of ["base", "monitors", "bantool", "web"]) {
            assert.ok(Buffer.from(stdin("web1", part), "base64").length > 0, part);
            assert.ok(Buffer.from(stdin("web1", part), "base64").equals(Buffer.from(stdin("web2", part), "base64")), `${part}: the same bytes for both hosts`);
            assert.equal(create("web1", part), create("web2", part), `${part}: the same command (it names the bundle's hash)`);
        }
        assert.deepEqual(await resolved(out.hosts.web1.partHashes), await resolved(out.hosts.web2.partHashes));
    });
});

describe("the created group on the hosts' instances, and the adopted group's guard inputs", () => {
    const hostsWith = (ids: Array<string | undefined>) => JSON.stringify(ids.map((instanceId, i) =>
        ({ name: `web${i + 1}`, host: `10.0.1.${10 + i}`, hostKey: HOST_KEY, ...(instanceId ? { instanceId } : {}) })));
    const ADOPT = { securityGroupId: "sg-0aaaaaaaaaaaaaaa1" };
    const interfaces = (resources: Recorded[]) => resources.filter((r) => r.type === DYNAMIC && r.inputs.kind === "hostguard:interface-groups");

    it("sets each instance's interfaces to exactly the created group plus the kept ones, one resource per host", async () => {
        const { resources, out } = await build(rawConfig([], {
            hosts: hostsWith(["i-0123456789abcdef0", "i-0fedcba9"]), keepSecurityGroupIds: JSON.stringify(["sg-0cccccccccccccccc"]),
        }));
        const sg = resources.find((r) => r.type === "aws:ec2/securityGroup:SecurityGroup")!.inputs;
        assert.deepEqual(interfaces(resources).map((a) => {
            const { __provider, ...inputs } = a.inputs;
            return { name: a.name, inputs };
        }), [
            {
                name: "web1-interface-groups", inputs: {
                    kind: "hostguard:interface-groups", region: REGION, instanceId: "i-0123456789abcdef0", vpcId: VPC_ID, groups: [GROUP_ID, "sg-0cccccccccccccccc"],
                    ingress: sg.ingress,
                    originals: { "eni-of-i-0123456789abcdef0": ["sg-0recorded"] },
                },
            },
            {
                name: "web2-interface-groups", inputs: {
                    kind: "hostguard:interface-groups", region: REGION, instanceId: "i-0fedcba9", vpcId: VPC_ID, groups: [GROUP_ID, "sg-0cccccccccccccccc"],
                    ingress: sg.ingress,
                    originals: { "eni-of-i-0fedcba9": ["sg-0recorded"] },
                },
            },
        ]);
        // Each instance's record comes first, naming hostguard's group (an interface already carrying it is refused).
        assert.deepEqual(resources.filter((r) => r.inputs.kind === "hostguard:interface-record").map((r) => [r.name, r.inputs.instanceId, r.inputs.hostguardGroupId]), [
            ["web1-interface-record", "i-0123456789abcdef0", GROUP_ID], ["web2-interface-record", "i-0fedcba9", GROUP_ID],
        ]);
        // The mocks do not pass the parent, but the mock monitor's URNs carry the type chain.
        const urns = [...((pulumi.runtime.getMonitor() as any).getRegisteredResources() as Map<string, unknown>).keys()];
        for (const a of interfaces(resources)) {
            assert.ok(urns.includes(`urn:pulumi:test::hostguard::hostguard:aws:SecurityGroup$${DYNAMIC}::${a.name}`),
                `${a.name} is parented to the group component: ${urns.filter((u) => u.endsWith(a.name)).join(", ")}`);
        }
        assert.deepEqual(calls, []);
        assert.equal(out.securityGroupInterfaceIds?.length, 2);
        // Nothing else changes: the group and both deployments are still all there.
        assert.equal(resources.length, 2 + 2 + 2 + 2 * 6);
    });

    it("sets only the interfaces of hosts that name an instance", async () => {
        const { resources } = await build(rawConfig([], { hosts: hostsWith([undefined, "i-0fedcba9"]) }));
        assert.deepEqual(interfaces(resources).map((r) => [r.name, r.inputs.groups]), [["web2-interface-groups", [GROUP_ID]]]);
    });

    it("takes the region from aws:region, else AWS_REGION, and refuses to adopt or set interfaces without one", async () => {
        const saved = process.env.AWS_REGION;
        try {
            process.env.AWS_REGION = "ap-south-1";
            const { resources } = await build(rawConfig(["web1"], ADOPT), null);
            assert.equal(resources.find((r) => r.name === "hostguard-ingress")!.inputs.region, "ap-south-1");
            delete process.env.AWS_REGION;
            for (const extra of [ADOPT, { hosts: hostsWith(["i-0123456789abcdef0"]) }]) {
                await assert.rejects(build(rawConfig(["web1"], extra), null), /the AWS region is not set: set aws:region .* or AWS_REGION/);
            }
            // A created group without instances makes no EC2 call of its own: no region needed.
            assert.equal((await build(rawConfig(["web1"]), null)).resources.filter((r) => r.type === DYNAMIC).length, 0);
        } finally {
            if (saved === undefined) {
                delete process.env.AWS_REGION;
            } else {
                process.env.AWS_REGION = saved;
            }
        }
    });

    it("touches no interface when the group is adopted: the instances and the opt-in go to the guard", async () => {
        const { resources, out } = await build(rawConfig([], {
            hosts: hostsWith(["i-0123456789abcdef0", undefined]), ...ADOPT, sharedSecurityGroupInstances: JSON.stringify(["i-0fedcba9"]),
        }));
        assert.equal(interfaces(resources).length, 0);
        assert.equal(resources.filter((r) => r.type.startsWith("aws:")).length, 0);
        assert.deepEqual(calls, []);
        assert.deepEqual(out.securityGroupInterfaceIds, []);
        const adopted = resources.find((r) => r.name === "hostguard-ingress")!;
        assert.deepEqual([adopted.inputs.stackInstanceIds, adopted.inputs.sharedInstances], [["i-0123456789abcdef0"], ["i-0fedcba9"]]);
    });

    it("passes aws:profile to both dynamic resources, and refuses aws:assumeRole(s), which they cannot read (issue 24)", async () => {
        const profile = { profile: "prod-admin" };
        const created = await build(rawConfig([], { hosts: hostsWith(["i-0123456789abcdef0"]) }), REGION, profile);
        assert.equal(interfaces(created.resources)[0].inputs.profile, "prod-admin");
        const adopted = await build(rawConfig(["web1"], ADOPT), REGION, profile);
        assert.equal(adopted.resources.find((r) => r.name === "hostguard-ingress")!.inputs.profile, "prod-admin");
        assert.equal("profile" in interfaces((await build(rawConfig([], { hosts: hostsWith(["i-0123456789abcdef0"]) }))).resources)[0].inputs, false);

        for (const key of ["assumeRole", "assumeRoles"]) {
            const role = { [key]: JSON.stringify(key === "assumeRole" ? { roleArn: "arn:aws:iam::123456789012:role/x" } : [{ roleArn: "arn:aws:iam::123456789012:role/x" }]) };
            await assert.rejects(build(rawConfig(["web1"], ADOPT), REGION, role), new RegExp(`aws:${key} is set, but hostguard's EC2 calls .* set \`aws:profile\``));
            // A created group without instances makes no EC2 call of its own: @pulumi/aws reads the role.
            assert.equal((await build(rawConfig(["web1"]), REGION, role)).resources.filter((r) => r.type === DYNAMIC).length, 0);
        }
        // Every other setting of @pulumi/aws that decides the account, identity or endpoint: refused by name, never silently unused.
        for (const [key, value] of Object.entries({
            allowedAccountIds: '["123456789012"]', forbiddenAccountIds: '["210987654321"]', accessKey: "AKIAEXAMPLE", secretKey: "x", token: "t",
            sharedConfigFiles: '["/x"]', sharedCredentialsFiles: '["/x"]', assumeRoleWithWebIdentity: '{"roleArn":"arn:aws:iam::123456789012:role/x"}',
            endpoints: '[{"ec2":"http://127.0.0.1:1"}]', useFipsEndpoint: "true", useDualstackEndpoint: "true",
            ec2MetadataServiceEndpoint: "http://169.254.169.254", ec2MetadataServiceEndpointMode: "IPv6",
        })) {
            await assert.rejects(build(rawConfig([], { hosts: hostsWith(["i-0123456789abcdef0"]) }), REGION, { [key]: value }),
                new RegExp(`^Error: aws:${key} is set, but hostguard's EC2 calls .* then remove aws:${key}$`), key);
        }
    });

    it("touches no interface without instanceId (as before)", async () => {
        const { resources } = await build(rawConfig(["web1", "web2"]));
        assert.equal(resources.filter((r) => r.type === DYNAMIC).length, 0);
        assert.deepEqual(calls, []);
    });

    it("rejects a malformed instanceId naming its key, before any resource exists", () => {
        recorded = [];
        const raw = rawConfig([], { hosts: hostsWith(["i-0123456789abcdef0", "i-12345"]) });
        assert.throws(() => buildStack(validateConfig(raw, AS_SECRETS), payload()), (e: Error) => e.message.startsWith("hostguard:hosts[1].instanceId "));
        assert.deepEqual(recorded, []);
    });
});

describe("what the render tool shows is what the deploy ships", () => {
    for (const stack of ["dev", "prod"]) {
        it(`${stack}: every part's stdin unpacks to the render tool's parts/ folder, and the commands are the same`, async () => {
            const shipped = readStackFile(path.join(ROOT, `Pulumi.${stack}.yaml`));
            const raw: RawConfig = { ...JSON.parse(filledPlaceholders(JSON.stringify(shipped))), webhookUrl: SENTINEL, sshPrivateKey: KEY };
            recorded = [];
            // The stack files set aws:region (readStackFile keeps the hostguard keys only).
            pulumi.runtime.setAllConfig({
                "aws:region": REGION, ...Object.fromEntries(Object.entries(raw).map(([k, v]) => [`hostguard:${k}`, typeof v === "string" ? v : JSON.stringify(v)])),
            }, ["hostguard:webhookUrl", "hostguard:sshPrivateKey"]);
            const config = validateConfig(raw, AS_SECRETS);
            const out = buildStack(config);
            await settle(out);
            const resources = [...recorded];
            const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-ships-"));
            try {
                renderStack(ROOT, stack, dir);
                for (const host of config.hosts) {
                    const hostDir = path.join(dir, stack, host.name);
                    const manifest = JSON.parse(fs.readFileSync(path.join(hostDir, "manifest.json"), "utf8"));
                    for (const part of ["base", "monitors", "bantool", "web"]) {
                        const c = resources.find((r) => r.name === `${host.name}-${part}`)!;
                        assert.equal(c.inputs.create, manifest.parts[part].create, `${host.name}-${part} create`);
                        assert.equal(c.inputs.delete, manifest.parts[part].delete, `${host.name}-${part} delete`);
                        const unpacked = fs.mkdtempSync(path.join(os.tmpdir(), "hg-ships-tar-"));
                        try {
                            execFileSync("tar", ["-xf", "-", "-C", unpacked], { input: Buffer.from(c.inputs.stdin, "base64"), timeout: 10_000 });
                            const shown = path.join(hostDir, "parts", part);
                            assert.deepEqual(tree(unpacked), tree(shown), `${host.name}-${part}: file list`);
                            for (const rel of tree(shown)) {
                                assert.ok(fs.readFileSync(path.join(unpacked, rel)).equals(fs.readFileSync(path.join(shown, rel))), `${host.name}-${part}: ${rel}`);
                                assert.equal(fs.statSync(path.join(unpacked, rel)).mode & 0o777, fs.statSync(path.join(shown, rel)).mode & 0o777, `${rel} mode`);
                            }
                        } finally {
                            fs.rmSync(unpacked, { recursive: true, force: true });
                        }
                        assert.equal((await resolved(out.hosts[host.name].partHashes)).value[part], manifest.parts[part].sha256);
                    }
                }
            } finally {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        });
    }
});

function tree(dir: string, rel = ""): string[] {
    return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
        const p = rel ? `${rel}/${e.name}` : e.name;
        return e.isDirectory() ? tree(dir, p) : [p];
    }).sort();
}

/** The warnings buildStack logs through pulumi.log.warn while building `raw`. */
async function warningsOf(raw: RawConfig): Promise<{ warnings: string[]; resources: Recorded[] }> {
    const warn = mock.method(pulumi.log, "warn", async () => undefined);
    try {
        const { resources } = await build(raw);
        return { warnings: warn.mock.calls.map((c) => String(c.arguments[0])), resources };
    } finally {
        warn.mock.restore();
    }
}

describe("example stacks: placeholders and fixes that would not take effect (issue 35)", () => {
    const SHIPPED_PLACEHOLDERS: Record<string, string[]> = {
        dev: ["hosts[0].hostKey", "hosts[0].instanceId", "vpcId", "securityGroupId"],
        prod: ["hosts[0].hostKey", "hosts[0].instanceId", "hosts[1].hostKey", "hosts[1].instanceId", "bastion.hostKey", "bastion.securityGroupId", "vpcId", "securityGroupId"],
    };
    for (const [stack, keys] of Object.entries(SHIPPED_PLACEHOLDERS)) {
        it(`preview refuses the shipped ${stack} stack until every placeholder is replaced, naming each key, before any resource exists`, () => {
            const raw: RawConfig = { ...readStackFile(path.join(ROOT, `Pulumi.${stack}.yaml`)), webhookUrl: SENTINEL, sshPrivateKey: KEY };
            recorded = [];
            const config = validateConfig(raw, AS_SECRETS);
            assert.deepEqual(config.placeholders.map((p) => p.key), keys);
            assert.throws(() => buildStack(config, payload()), (e: Error) => {
                assert.ok(e.message.startsWith(`hostguard:${keys[0]} is still the example stack's placeholder `), e.message);
                for (const key of keys.slice(1)) {
                    assert.match(e.message, new RegExp(`^hostguard:${key.replace(/[[\].]/g, "\\$&")} is still the example stack's placeholder "[^"\n]*": replace it with `, "m"));
                }
                assert.match(e.message, /nothing was deployed\)$/);
                assert.ok(!e.message.includes("SENTINEL"));
                return true;
            });
            assert.deepEqual(recorded, []);
        });
    }

    it("a secret is never taken for a placeholder (its value would be shown)", () => {
        const raw = rawConfig(["web1"], { webhookUrl: "https://hooks.example.test/services/REPLACE-ME" });
        assert.deepEqual(validateConfig(raw, AS_SECRETS).placeholders, []);
    });

    it("preview warns, naming the key, when the deny rule or the Spring property would not take effect, and when the created group is on no instance", async () => {
        const hostsWith = (ids: Array<string | undefined>) => JSON.stringify(ids.map((instanceId, i) =>
            ({ name: `web${i + 1}`, host: `10.0.1.${10 + i}`, hostKey: HOST_KEY, ...(instanceId ? { instanceId } : {}) })));
        let { warnings } = await warningsOf(rawConfig(["web1", "web2"]));
        assert.equal(warnings.length, 3, warnings.join("\n"));
        assert.match(warnings[0], /^hostguard:nginxServerConf is empty: the nginx deny rule .* is installed but no server block includes it/);
        assert.match(warnings[1], /^hostguard:appProperties is empty: the Spring property spring\.web\.resources\.add-mappings=false is set nowhere/);
        assert.match(warnings[2], /^hostguard:hosts\[\]\.instanceId is set for no host: the security group would be created attached to no instance/);

        const web = { nginxServerConf: "/etc/nginx/sites-available/default", appProperties: "/opt/app/application.properties" };
        ({ warnings } = await warningsOf(rawConfig([], { ...web, hosts: hostsWith(["i-0123456789abcdef0", undefined]) })));
        assert.deepEqual(warnings.map((w) => w.replace(/:.*/s, "")), ["hostguard"], warnings.join("\n"));
        assert.match(warnings[0], /^hostguard:hosts\[1\]\.instanceId is not set: the created security group is not attached to web2 \(10\.0\.1\.11\)/);
        // The adopt path and a deployment without AWS attach nothing: no such warning; every setting given: none at all.
        assert.deepEqual((await warningsOf(rawConfig(["web1"], { ...web, securityGroupId: "sg-0aaaaaaaaaaaaaaa1" }))).warnings, []);
        assert.deepEqual((await warningsOf(rawConfig(["web1"], { ...web, aws: "false" }))).warnings, []);
        assert.deepEqual((await warningsOf(rawConfig([], { ...web, hosts: hostsWith(["i-0123456789abcdef0", "i-0fedcba9"]) }))).warnings, []);
    });
});

describe("host keys", () => {

    /** Settings that warn about nothing else: the web fixes' files set, no group (so none attached to no instance). */
    const QUIET: RawConfig = { nginxServerConf: "/etc/nginx/sites-available/default", appProperties: "/opt/app/application.properties", aws: "false" };

    it("warns about nothing when every host key is set", async () => {
        assert.deepEqual((await warningsOf(rawConfig(["web1"], QUIET))).warnings, []);
    });

    it("with the opt-out, warns on every build naming each unchecked connection, and sends no host key", async () => {
        const raw = rawConfig([], {
            ...QUIET, insecureAcceptAnyHostKey: "true", adminCidrs: undefined,
            hosts: JSON.stringify([{ name: "web1", host: "10.0.1.10" }, { name: "web2", host: "10.0.1.11", hostKey: HOST_KEY }]),
            bastion: JSON.stringify({ host: "bastion.example.test", securityGroupId: "sg-0bbbbbbbbbbbbbbb1" }),
        });
        for (let run = 0; run < 2; run++) {
            const { warnings, resources } = await warningsOf(raw);
            assert.equal(warnings.length, 1, `run ${run}: ${warnings.join("\n")}`);
            assert.match(warnings[0], /^INSECURE: hostguard:insecureAcceptAnyHostKey is true\. SSH accepts ANY server key for /);
            assert.ok(warnings[0].includes("hostguard:hosts[0].hostKey of web1 (10.0.1.10), hostguard:bastion.hostKey of the bastion (bastion.example.test):"), warnings[0]);
            assert.ok(!warnings[0].includes("hosts[1]"), "web2 has its key");
            const conn = unwrap(resources.find((r) => r.name === "web1-base")!.inputs.connection);
            assert.equal(conn.hostKey, undefined);
            assert.equal(conn.proxy.hostKey, undefined);
            assert.equal(unwrap(resources.find((r) => r.name === "web2-base")!.inputs.connection).hostKey, HOST_KEY);
        }
    });

    it("still warns when the opt-out is set but every key is given", async () => {
        const { warnings } = await warningsOf(rawConfig(["web1"], { ...QUIET, insecureAcceptAnyHostKey: "true" }));
        assert.equal(warnings.length, 1);
        assert.match(warnings[0], /no connection at the moment \(every host key is set; remove the key\)/);
    });
});
