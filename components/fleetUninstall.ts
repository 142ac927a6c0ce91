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
// SSM is called through the SDK's SSM client, with its credential chain
// (aws:profile included) and the same retry settings as the EC2 client.
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

/** The SDK's SSM client for REGION (and PROFILE), retrying as the EC2 client does. */
export function ssmClient(region: string, profile?: string): { send(command: unknown): Promise<any> } {
    const sdk = require("@aws-sdk/client-ssm");
    const attempts = Number(process.env.AWS_MAX_ATTEMPTS);
    return new sdk.SSMClient({
        region, ...(profile ? { profile } : {}),
        maxAttempts: Number.isInteger(attempts) && attempts > 0 ? attempts : 10,
        retryMode: process.env.AWS_RETRY_MODE || "adaptive",
    });
}

/** The status of an instance SSM refused as a target (InvalidInstanceId): no command reached it. */
const NOT_MANAGED = "NotManaged: SSM refused it as a target, its agent not running or not registered or no instance profile";
const DONE = new Set([NOT_MANAGED, "Success", "Failed", "Cancelled", "TimedOut", "Undeliverable", "Terminated", "InvalidPlatform", "AccessDenied"]);

/**
 * Runs UNINSTALL_COMMAND on every tagged instance and waits for their
 * answers until WAITSECONDS; returns each instance's last status (an instance
 * with no answer in time keeps `Pending`/`InProgress`, or `NoInvocation`).
 */
export async function uninstallFleet(s: FleetUninstallState, pollMs = 5000): Promise<Record<string, string>> {
    const ids = await taggedInstances(ec2.ec2Client(s.region, s.profile), s.tagKey, s.tagValue);
    const status: Record<string, string> = Object.fromEntries(ids.map((i) => [i, "NoInvocation"]));
    const deadline = Date.now() + s.waitSeconds * 1000;
    const { SendCommandCommand, GetCommandInvocationCommand } = require("@aws-sdk/client-ssm");
    const ssm = ssmClient(s.region, s.profile);
    const commands: Array<{ commandId: string; ids: string[] }> = [];
    const send = async (chunk: string[]) => {
        const out = await ssm.send(new SendCommandCommand({
            DocumentName: "AWS-RunShellScript", InstanceIds: chunk, TimeoutSeconds: Math.max(30, s.waitSeconds),
            Parameters: { commands: [UNINSTALL_COMMAND] }, MaxConcurrency: "100%", MaxErrors: "100%",
            Comment: `hostguard: pulumi destroy of ${s.tagKey}=${s.tagValue}`.slice(0, 100),
        }));
        commands.push({ commandId: out.Command.CommandId, ids: chunk });
    };
    for (let i = 0; i < ids.length; i += 50) {
        const chunk = ids.slice(i, i + 50);
        try {
            await send(chunk);
        } catch (e) {
            // SSM refuses the whole call when one instance is not a managed node (no agent, not registered, no
            // profile): each instance alone, so the others are still uninstalled and the refused ones are named.
            if (!ec2.hasCode(e, ["InvalidInstanceId"])) {
                throw e;
            }
            for (const id of chunk) {
                try {
                    await send([id]);
                } catch (one) {
                    if (!ec2.hasCode(one, ["InvalidInstanceId"])) {
                        throw one;
                    }
                    status[id] = NOT_MANAGED;
                }
            }
        }
    }
    for (;;) {
        for (const c of commands) {
            for (const id of c.ids.filter((x) => !DONE.has(status[x]))) {
                try {
                    const inv = await ssm.send(new GetCommandInvocationCommand({ CommandId: c.commandId, InstanceId: id }));
                    status[id] = String(inv.Status);
                } catch (e) {
                    if (!ec2.hasCode(e, ["InvocationDoesNotExist"])) {
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
