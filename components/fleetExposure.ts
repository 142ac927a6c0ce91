// delivery ssm: the whole-host check for a fleet. Its instances are not
// named in the config: they are the ones carrying the stack's tag
// (hostguard-stack=<project>/<stack>) when preview or up runs. A read-only
// dynamic resource whose `check` (run by every preview and up) reads every
// group on every interface of each tagged instance (hostExposure.ts
// openGroups, the same reading as the create and adopt paths) and refuses,
// naming instance, interface and group, one that lets in more than TCP 443
// from anywhere. It changes nothing in EC2; an instance launched later is
// checked at the next preview. The fleet's group itself is the create path's
// (components/securityGroup.ts): a group the launch template names, carried
// by no instance of the config, so no instance of the fleet is "foreign".
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "./ec2Reconcile";
import * as exposure from "./hostExposure";

export const FLEET_EXPOSURE_KIND = "hostguard:fleet-exposure";

export interface FleetExposureState {
    kind: string;
    region: string;
    /** aws:profile, when set. */
    profile?: string;
    /** The tag that puts an instance in the fleet: its key (hostguard-stack) and value (an input: the provider captures no other module). */
    tagKey: string;
    tagValue: string;
    /** hostguard's inbound rules (they are on every fleet instance, through the launch template's group). */
    ingress: ec2.WantedRule[];
    /** Shown by preview: each tagged instance and what it lets in from anywhere. */
    worldReachable?: Record<string, string[]>;
}

/** The instances carrying the fleet's tag, not terminated, sorted. */
export async function taggedInstances(client: ec2.Ec2, tagKey: string, tagValue: string): Promise<string[]> {
    const sdk = require("@aws-sdk/client-ec2");
    const ids: string[] = [];
    let token: string | undefined;
    do {
        const out = await client.send(new sdk.DescribeInstancesCommand({
            Filters: [
                { Name: `tag:${tagKey}`, Values: [tagValue] },
                { Name: "instance-state-name", Values: ["pending", "running", "stopping", "stopped"] },
            ],
            ...(token ? { NextToken: token } : {}),
        }));
        for (const r of out.Reservations ?? []) {
            ids.push(...(r.Instances ?? []).map((i: { InstanceId: string }) => i.InstanceId));
        }
        token = out.NextToken;
    } while (token);
    return [...new Set(ids)].sort();
}

/** The refusal for the fleet's instances, or "" (what check reports). */
export async function fleetRefusal(s: FleetExposureState): Promise<{ refusal: string; reachable: Record<string, string[]> }> {
    const client = ec2.ec2Client(s.region, s.profile);
    const ids = await taggedInstances(client, s.tagKey, s.tagValue);
    const found = await exposure.openGroups(client, ids, { own: ec2.wantedAtoms(s.ingress ?? []) });
    const refusal = exposure.openGroupsRefusal(found.open, `An instance of the fleet (tag ${s.tagKey}=${s.tagValue}) carries every group of its `
        + "launch template and any group given it later: remove those rules from the group, or take the group off the launch template and the instance.");
    return { refusal, reachable: found.reachable };
}

export const fleetExposureProvider: pulumi.dynamic.ResourceProvider = {
    async check(_olds: FleetExposureState, news: FleetExposureState) {
        if (typeof news.region !== "string" || typeof news.tagValue !== "string") {
            return { inputs: news, failures: [] };
        }
        let found: Awaited<ReturnType<typeof fleetRefusal>>;
        try {
            found = await fleetRefusal(news);
        } catch (e) {
            throw new Error(`reading the instances tagged ${news.tagKey}=${news.tagValue} and their groups failed (region ${news.region}): ${(e as Error).message}`);
        }
        const failures = found.refusal ? [{ property: "tagValue", reason: found.refusal }] : [];
        return { inputs: { ...news, worldReachable: found.reachable }, failures };
    },

    async diff(_id: string, olds: FleetExposureState, news: FleetExposureState) {
        const changes = JSON.stringify([olds.region, olds.profile, olds.tagKey, olds.tagValue, olds.ingress, olds.worldReachable])
            !== JSON.stringify([news.region, news.profile, news.tagKey, news.tagValue, news.ingress, news.worldReachable]);
        return { changes };
    },

    async create(inputs: FleetExposureState) {
        return { id: `fleet-exposure/${inputs.tagValue}`, outs: inputs };
    },

    async update(_id: string, _olds: FleetExposureState, news: FleetExposureState) {
        return { outs: news };
    },
};

export interface FleetExposureArgs {
    region: pulumi.Input<string>;
    profile?: pulumi.Input<string>;
    tagKey: string;
    tagValue: pulumi.Input<string>;
    ingress: ec2.WantedRule[];
}

/** Nothing to create or delete in EC2: its check is the whole-host check of every tagged instance. */
export class FleetExposure extends pulumi.dynamic.Resource {
    declare public readonly worldReachable: pulumi.Output<Record<string, string[]>>;

    constructor(name: string, args: FleetExposureArgs, opts?: pulumi.CustomResourceOptions) {
        super(fleetExposureProvider, name, { kind: FLEET_EXPOSURE_KIND, ...args, worldReachable: undefined }, opts);
    }
}
