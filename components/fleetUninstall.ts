// delivery ssm: `pulumi destroy` uninstalls the fleet (issue 41, item 6).
// A dynamic resource with nothing to create: its delete runs the installed
// `install uninstall` on every instance carrying the fleet's tag, through one
// Run Command (AWS-RunShellScript), and waits a bounded time for each
// instance's answer. In the graph it sits between the association (which
// depends on it, so State Manager stops applying first) and what the command
// still needs (the hosts' role and profile: the agent's credentials) and what
// must outlive it (the document, the parameter, the bucket): destroy deletes
// dependents first. An instance the command did not reach (stopped, agent
// down, no answer in time) fails the delete, named, with the way on: the
// stack's resources stay, and `pulumi destroy` again retries.
//
// SSM is called with the SDK's credential chain (aws:profile included) and
// SigV4 here: the repository carries the SDK's EC2 client, not its SSM one.
import * as crypto from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";
import { taggedInstances } from "./fleetExposure";

export const FLEET_UNINSTALL_KIND = "hostguard:fleet-uninstall";

/**
 * What each instance runs: the installed uninstall of every part, newest first (the step's own
 * fleet.applied goes with base: scripts/hostguard/runtime_files.py); nothing to do where nothing was installed.
 */
export const UNINSTALL_COMMAND = "if [ -x /usr/local/lib/hostguard/install ]; then exec /usr/local/lib/hostguard/install uninstall; fi";

export interface FleetUninstallState {
    kind: string;
    region: string;
    profile?: string;
    tagKey: string;
    tagValue: string;
    /** How long delete waits for every instance's answer (the command's own timeout too). */
    waitSeconds: number;
}

/** One SSM JSON call, SigV4-signed with the SDK's default credentials; the answer's JSON, or an Error naming the service's code. */
export async function ssmCall(region: string, profile: string | undefined, action: string, body: Record<string, unknown>): Promise<any> {
    const { defaultProvider } = require("@aws-sdk/credential-provider-node");
    const creds = await defaultProvider(profile ? { profile } : {})();
    const endpoint = new URL(process.env.AWS_ENDPOINT_URL_SSM || process.env.AWS_ENDPOINT_URL || `https://ssm.${region}.amazonaws.com`);
    const payload = JSON.stringify(body);
    const now = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const day = now.slice(0, 8);
    const headers: Record<string, string> = {
        "content-type": "application/x-amz-json-1.1", host: endpoint.host, "x-amz-date": now, "x-amz-target": `AmazonSSM.${action}`,
        ...(creds.sessionToken ? { "x-amz-security-token": creds.sessionToken } : {}),
    };
    const names = Object.keys(headers).sort();
    const hash = (s: string) => crypto.createHash("sha256").update(s).digest("hex");
    const canonical = ["POST", endpoint.pathname || "/", "", ...names.map((n) => `${n}:${headers[n]}`), "", names.join(";"), hash(payload)].join("\n");
    const scope = `${day}/${region}/ssm/aws4_request`;
    const hmac = (key: crypto.BinaryLike, s: string) => crypto.createHmac("sha256", key).update(s).digest();
    const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, day), region), "ssm"), "aws4_request");
    const signature = crypto.createHmac("sha256", key).update(["AWS4-HMAC-SHA256", now, scope, hash(canonical)].join("\n")).digest("hex");
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}`;
    const res = await fetch(endpoint, { method: "POST", headers, body: payload, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    let json: any;
    try {
        json = text ? JSON.parse(text) : {};
    } catch {
        // An error of the HTTP layer in front of the service (XML or text): its code, if it names one.
        json = { __type: /<Code>([^<]+)<\/Code>/.exec(text)?.[1], message: /<Message>([^<]+)<\/Message>/.exec(text)?.[1] ?? text.slice(0, 200) };
    }
    if (!res.ok) {
        const code = String(json.__type ?? res.status).split("#").pop();
        throw Object.assign(new Error(`SSM ${action} (${endpoint.host}): ${code}: ${json.message ?? json.Message ?? text.slice(0, 200)}`), { code });
    }
    return json;
}

const DONE = new Set(["Success", "Failed", "Cancelled", "TimedOut", "Undeliverable", "Terminated", "InvalidPlatform", "AccessDenied"]);

/**
 * Runs UNINSTALL_COMMAND on every tagged instance and waits for their
 * answers until WAITSECONDS; returns each instance's last status (an instance
 * with no answer in time keeps `Pending`/`InProgress`, or `NoInvocation`).
 */
export async function uninstallFleet(s: FleetUninstallState, pollMs = 5000): Promise<Record<string, string>> {
    const ids = await taggedInstances(ec2.ec2Client(s.region, s.profile), s.tagKey, s.tagValue);
    const status: Record<string, string> = Object.fromEntries(ids.map((i) => [i, "NoInvocation"]));
    const deadline = Date.now() + s.waitSeconds * 1000;
    const commands: Array<{ commandId: string; ids: string[] }> = [];
    for (let i = 0; i < ids.length; i += 50) {
        const chunk = ids.slice(i, i + 50);
        const out = await ssmCall(s.region, s.profile, "SendCommand", {
            DocumentName: "AWS-RunShellScript", InstanceIds: chunk, TimeoutSeconds: Math.max(30, s.waitSeconds),
            Parameters: { commands: [UNINSTALL_COMMAND] }, MaxConcurrency: "100%", MaxErrors: "100%",
            Comment: `hostguard: pulumi destroy of ${s.tagKey}=${s.tagValue}`.slice(0, 100),
        });
        commands.push({ commandId: out.Command.CommandId, ids: chunk });
    }
    for (;;) {
        for (const c of commands) {
            for (const id of c.ids.filter((x) => !DONE.has(status[x]))) {
                try {
                    const inv = await ssmCall(s.region, s.profile, "GetCommandInvocation", { CommandId: c.commandId, InstanceId: id });
                    status[id] = String(inv.Status);
                } catch (e) {
                    if ((e as { code?: string }).code !== "InvocationDoesNotExist") {
                        throw e;
                    }
                }
            }
        }
        if (ids.every((i) => DONE.has(status[i])) || Date.now() >= deadline) {
            return status;
        }
        await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(0, deadline - Date.now()))));
    }
}

/** The refusal for the instances not uninstalled, or "" (every tagged instance answered Success). */
export function unreachedRefusal(s: FleetUninstallState, status: Record<string, string>): string {
    const missed = Object.entries(status).filter(([, v]) => v !== "Success");
    if (missed.length === 0) {
        return "";
    }
    return `hostguard was not uninstalled from ${missed.length} instance(s) tagged ${s.tagKey}=${s.tagValue} within ${s.waitSeconds} s: `
        + `${missed.map(([i, v]) => `${i} (${v})`).join(", ")}. They keep the payload and the webhook file and keep posting. `
        + "The stack's resources stay: start the instance (or its SSM agent) and run pulumi destroy again, or terminate it, "
        + `or take its tag ${s.tagKey} off (it is then left as it is) and run pulumi destroy again`;
}

export const fleetUninstallProvider: pulumi.dynamic.ResourceProvider = {
    async diff(_id: string, olds: FleetUninstallState, news: FleetUninstallState) {
        const keys: Array<keyof FleetUninstallState> = ["region", "profile", "tagKey", "tagValue", "waitSeconds"];
        return { changes: keys.some((k) => olds[k] !== news[k]) };
    },

    async create(inputs: FleetUninstallState) {
        return { id: `fleet-uninstall/${inputs.tagValue}`, outs: inputs };
    },

    async update(_id: string, _olds: FleetUninstallState, news: FleetUninstallState) {
        return { outs: news };
    },

    async delete(_id: string, props: FleetUninstallState) {
        const refusal = unreachedRefusal(props, await uninstallFleet(props));
        if (refusal) {
            throw new Error(refusal);
        }
    },
};

export interface FleetUninstallArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    tagKey: string;
    tagValue: pulumi.Input<string>;
    waitSeconds: number;
}

/** Nothing in AWS: its delete uninstalls the fleet (see the header). */
export class FleetUninstall extends pulumi.dynamic.Resource {
    constructor(name: string, args: FleetUninstallArgs, opts?: pulumi.CustomResourceOptions) {
        super(fleetUninstallProvider, name, { kind: FLEET_UNINSTALL_KIND, ...args }, opts);
    }
}
