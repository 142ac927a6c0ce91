// The policies of the hostguard pack, one factory each (model:
// pulumi/pulumi-policy-aws src/network.ts). Types are matched by their token,
// so the pack needs no provider SDK. Exported for the tests in tests/.
import { EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy, StackValidationPolicy } from "@pulumi/policy";
import { admits, isHttpsOnly, parseBlock, publicSize, rangeText, widePublicReason, worldOpenings } from "../components/cidr";
const SG = "aws:ec2/securityGroup:SecurityGroup";
const SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule";
const VPC_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule";
/** Every dynamic resource has this type; hostguard's adopted group is told apart by its `kind` input. */
const DYNAMIC = "pulumi-nodejs:dynamic:Resource";
const ADOPTED_GROUP_KIND = "hostguard:adopted-group-ingress";
const REMOTE_COMMAND = "command:remote:Command";
const COMMANDS = new Set([REMOTE_COMMAND, "command:local:Command"]);

/** One inbound rule, whatever resource type it came from. */
interface Inbound {
    where: string;
    protocol: string;
    fromPort?: number;
    toPort?: number;
    sources: string[];
}

/** Inbound rules of every security-group resource type (and hostguard's adopted group); [] for other types or missing properties. */
export function inboundRules(args: Pick<ResourceValidationArgs, "type" | "props">): Inbound[] {
    const p = args.props ?? {};
    const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
    const inline = (ingress: unknown): Inbound[] => (Array.isArray(ingress) ? ingress : []).map((r: any, i: number) => ({
        where: `ingress[${i}]`, protocol: String(r?.protocol ?? ""), fromPort: r?.fromPort, toPort: r?.toPort,
        sources: [...list(r?.cidrBlocks), ...list(r?.ipv6CidrBlocks)],
    }));
    switch (args.type) {
        case SG:
            return inline(p.ingress);
        case DYNAMIC:
            // The rules an adopted group is made to have (same shape as the group's inline ingress).
            return p.kind === ADOPTED_GROUP_KIND ? inline(p.ingress) : [];
        case SG_RULE:
            return p.type === "ingress"
                ? [{ where: "rule", protocol: String(p.protocol ?? ""), fromPort: p.fromPort, toPort: p.toPort, sources: [...list(p.cidrBlocks), ...list(p.ipv6CidrBlocks)] }]
                : [];
        case VPC_INGRESS:
            return [{
                where: "rule", protocol: String(p.ipProtocol ?? ""), fromPort: p.fromPort, toPort: p.toPort,
                sources: [p.cidrIpv4, p.cidrIpv6].filter((x): x is string => typeof x === "string"),
            }];
        default:
            return [];
    }
}

const isAllProtocols = (r: Inbound) => ["-1", "all"].includes(r.protocol.toLowerCase());

/** True when one of SOURCES holds a public address (a private range alone never opens anything to the world). */
const hasPublic = (sources: string[]) => sources.some((c) => {
    const b = parseBlock(c);
    return b !== null && publicSize([b], b.family) > 0n;
});

/**
 * The world is components/cidr.ts's worldOpenings (the union rule the
 * validator and the whole-host check use): 0.0.0.0/1 and 128.0.0.0/1 on two
 * rules of one resource are the world too. Every rule with a public source
 * that admits part of a range open to the world beyond TCP 443 is named.
 */
export function noWorldInboundExceptHttps(level: EnforcementLevel = "mandatory"): ResourceValidationPolicy {
    return {
        name: "no-world-inbound-except-https",
        description: "Only TCP 443 may be open to the world (sources that together cover more than a /16 of public IPv4 or a /32 of public IPv6).",
        enforcementLevel: level,
        validateResource: (args, report) => {
            const rules = inboundRules(args);
            const beyond = worldOpenings(rules).filter((r) => !isHttpsOnly(r));
            for (const r of rules.filter((x) => hasPublic(x.sources) && beyond.some((b) => admits(x, b)))) {
                const open = beyond.filter((b) => admits(r, b)).map(rangeText).join(", ");
                report(`${r.where} opens protocol ${r.protocol} ports ${r.fromPort}-${r.toPort} to ${r.sources.join(" and ")}; with the resource's other `
                    + `sources that is the world on ${open}: only TCP 443 may be public.`);
            }
        },
    };
}

export function noAllProtocolsInbound(level: EnforcementLevel = "mandatory"): ResourceValidationPolicy {
    return {
        name: "no-all-protocols-inbound",
        description: "No inbound rule with protocol -1 (all traffic).",
        enforcementLevel: level,
        validateResource: (args, report) => {
            for (const r of inboundRules(args)) {
                if (isAllProtocols(r)) {
                    report(`${r.where} allows all protocols inbound (protocol ${r.protocol}); name the protocol and ports.`);
                }
            }
        },
    };
}

/** Host commands that read a secret URL on stdin (install set-webhook, install set-heartbeat). */
const SECRET_STDIN_COMMANDS = ["set-webhook", "set-heartbeat"] as const;

const WEBHOOK_LIKE = /https:\/\/[^\s"']*(hooks\.|\/services\/|webhook)/i;

/**
 * A policy sees secrets unwrapped, so it cannot test the secret flag of stdin
 * itself; it checks what makes the secret stay secret: the webhook command
 * declares stdin/stdout/stderr as secret outputs (so the state stores them
 * encrypted), logs nothing, and no command text, environment or trigger of any
 * command holds a webhook-looking URL.
 */
export function webhookInputsSecret(level: EnforcementLevel = "mandatory"): ResourceValidationPolicy {
    return {
        name: "webhook-inputs-secret",
        description: "The webhook reaches hosts only on a secret stdin of a command that logs nothing.",
        enforcementLevel: level,
        validateResource: (args, report) => {
            if (!COMMANDS.has(args.type)) {
                return;
            }
            const p = args.props ?? {};
            for (const k of ["create", "update", "delete", "environment", "triggers"]) {
                if (p[k] !== undefined && WEBHOOK_LIKE.test(JSON.stringify(p[k]))) {
                    report(`${k} holds a webhook URL in plain text; pass it on stdin from a secret.`);
                }
            }
            // The webhook and the heartbeat URL are secrets of the same kind.
            const command = SECRET_STDIN_COMMANDS.find((name) => [p.create, p.update].some((c) => typeof c === "string" && c.includes(name)));
            if (command === undefined) {
                return;
            }
            if (typeof p.stdin !== "string" || p.stdin.length === 0) {
                report(`the ${command} command has no stdin: the ${command === "set-webhook" ? "webhook" : "heartbeat URL"} must arrive on stdin.`);
            }
            if (p.logging !== "none") {
                report(`the ${command} command must set logging to "none" (is ${JSON.stringify(p.logging ?? "unset")}).`);
            }
            const secretOutputs = args.opts?.additionalSecretOutputs ?? [];
            for (const k of ["stdin", "stdout", "stderr"]) {
                if (!secretOutputs.includes(k)) {
                    report(`the ${command} command must list "${k}" in additionalSecretOutputs.`);
                }
            }
        },
    };
}

const hasHostKey = (c: any): boolean => typeof c?.hostKey === "string" && c.hostKey.trim() !== "";

/**
 * Without a host key @pulumi/command accepts any server (InsecureIgnoreHostKey): whoever
 * sits on the network path receives the commands and their stdin (scripts, the webhook).
 * Every remote command's connection, and its proxy (bastion) when there is one, names the key.
 */
export function remoteCommandHostKey(level: EnforcementLevel = "mandatory"): ResourceValidationPolicy {
    return {
        name: "remote-command-host-key",
        description: "Every remote command checks the server's SSH host key (connection.hostKey, and proxy.hostKey through a bastion).",
        enforcementLevel: level,
        validateResource: (args, report) => {
            if (args.type !== REMOTE_COMMAND) {
                return;
            }
            const c = args.props?.connection;
            if (c === undefined || c === null) {
                report("the remote command has no connection, so no host key: set connection.hostKey.");
                return;
            }
            if (!hasHostKey(c)) {
                report(`connection to ${String(c.host ?? "?")} has no hostKey: any server is accepted; set hostguard:hosts[i].hostKey (ssh-keyscan over a trusted path).`);
            }
            if (c.proxy !== undefined && c.proxy !== null && !hasHostKey(c.proxy)) {
                report(`proxy ${String(c.proxy.host ?? "?")} has no hostKey: any bastion is accepted; set hostguard:bastion.hostKey.`);
            }
        },
    };
}

/** True when the rule lets TCP port 22 in (a range holding it, or every protocol). */
const reachesSsh = (r: Inbound) => isAllProtocols(r)
    || (["tcp", "6"].includes(r.protocol.toLowerCase()) && typeof r.fromPort === "number" && typeof r.toPort === "number" && r.fromPort <= 22 && 22 <= r.toPort);

/**
 * The validator's adminCidrs rule, on what the stack really creates: the
 * union of every source that reaches SSH, over all security-group resources
 * of the stack (inline rules and standalone ones alike), may cover at most a
 * /16 of public IPv4 and a /32 of public IPv6 (components/cidr.ts). Several
 * narrower rules that add up to half the internet are caught too.
 */
export function sshSourcesLimited(level: EnforcementLevel = "mandatory"): StackValidationPolicy {
    return {
        name: "ssh-sources-limited",
        description: "All inbound SSH sources of the stack together cover at most a /16 of public IPv4 and a /32 of public IPv6.",
        enforcementLevel: level,
        validateStack: (args, report) => {
            const sources = args.resources.flatMap((res) => inboundRules(res).filter(reachesSsh).flatMap((r) => r.sources));
            const why = widePublicReason(sources);
            if (why !== null) {
                report(`the inbound SSH sources of the stack (${sources.join(", ")}) ${why}.`);
            }
        },
    };
}
