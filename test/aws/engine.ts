// The Pulumi engine's part in the EC2 tests, for the stack's dynamic
// resources: the resources in the order the stack registers them (a record
// before the resource that takes its output), each create, update and delete
// as the engine calls it, and the checkpoint the engine keeps. What the
// engine writes to the state is what this checkpoint holds: a completed step
// (the outputs), an initialization failure (the error's id and properties),
// nothing for a create that failed otherwise or was killed while pending.
// `engineChild.ts` runs an up in a child process that the test can kill -9.
import * as fs from "node:fs";
import type * as pulumi from "@pulumi/pulumi";
import { ADOPTED_GROUP_KIND, ADOPTED_GROUP_RECORD_KIND, adoptedGroupProvider, adoptedGroupRecordProvider } from "../../components/adoptedGroup";
import { INTERFACE_GROUPS_KIND, INTERFACE_RECORD_KIND, interfaceGroupsProvider, interfaceRecordProvider } from "../../components/interfaceGroups";
import type { WantedRule } from "../../components/ec2Reconcile";
import { ingressRules } from "../../components/securityGroup";
import { REGION } from "./moto";

/** hostguard's rules for the tests' stacks. */
export const RULES = ingressRules({ privateCidrs: ["10.0.0.0/8"], adminCidrs: ["203.0.113.0/24"] });

export type Checkpoint = Record<string, { id: string; outs: any }>;

export interface Step {
    name: string;
    provider: pulumi.dynamic.ResourceProvider;
    inputs: (cp: Checkpoint) => any;
}

/** The adopt path's resources for GROUP_ID (stack.ts registers them in this order). */
export function adoptStack(groupId: string, ingress: WantedRule[], stackInstanceIds: string[] = []): Step[] {
    const where = { region: REGION, groupId, ingress };
    return [
        { name: "record", provider: adoptedGroupRecordProvider, inputs: () => ({ kind: ADOPTED_GROUP_RECORD_KIND, region: REGION, groupId }) },
        {
            name: "ingress", provider: adoptedGroupProvider,
            inputs: (cp) => ({ kind: ADOPTED_GROUP_KIND, ...where, stackInstanceIds, sharedInstances: [], original: cp.record.outs.original }),
        },
    ];
}

/** The create path's resources for one instance (hostguard's group already created: its id is GROUPS[0]). */
export function createStack(instanceId: string, vpcId: string, groups: string[], ingress: WantedRule[] = RULES): Step[] {
    const where = { region: REGION, instanceId };
    return [
        { name: "record", provider: interfaceRecordProvider, inputs: () => ({ kind: INTERFACE_RECORD_KIND, ...where, hostguardGroupId: groups[0] }) },
        {
            name: "interfaces", provider: interfaceGroupsProvider,
            inputs: (cp) => ({ kind: INTERFACE_GROUPS_KIND, ...where, vpcId, groups, ingress, originals: cp.record.outs.originals }),
        },
    ];
}

function save(cp: Checkpoint, file?: string): void {
    if (file) {
        fs.writeFileSync(`${file}.tmp`, JSON.stringify(cp));
        fs.renameSync(`${file}.tmp`, file);
    }
}

/**
 * One `pulumi up`: check each resource, then create it (absent from CP) or
 * diff and update it; each completed step is checkpointed (to FILE too)
 * before the next resource starts. Throws the first failure, as the engine
 * stops there.
 */
export async function up(steps: Step[], cp: Checkpoint = {}, file?: string): Promise<Checkpoint> {
    for (const s of steps) {
        const p = s.provider as Required<pulumi.dynamic.ResourceProvider>;
        const old = cp[s.name];
        // A dynamic provider without check takes the inputs as they are.
        const checked = s.provider.check ? await p.check(old?.outs ?? {}, s.inputs(cp)) : { inputs: s.inputs(cp), failures: [] };
        if ((checked.failures ?? []).length > 0) {
            throw new Error(`${s.name}: ${checked.failures!.map((f) => f.reason).join("; ")}`);
        }
        try {
            if (old === undefined) {
                const r = await p.create(checked.inputs);
                cp[s.name] = { id: r.id, outs: r.outs };
            } else if ((await p.diff(old.id, old.outs, checked.inputs)).changes) {
                cp[s.name] = { id: old.id, outs: (await p.update(old.id, old.outs, checked.inputs)).outs };
            }
        } catch (e) {
            const init = e as { id?: string; properties?: unknown };
            if (init.id) {
                cp[s.name] = { id: init.id, outs: init.properties };
                save(cp, file);
            }
            throw e;
        }
        save(cp, file);
    }
    return cp;
}

/** `pulumi refresh`: read each resource; one read as gone leaves the state. */
export async function refresh(steps: Step[], cp: Checkpoint): Promise<Checkpoint> {
    for (const s of steps.filter((x) => cp[x.name] !== undefined)) {
        const r = await (s.provider as Required<pulumi.dynamic.ResourceProvider>).read(cp[s.name].id, cp[s.name].outs);
        if (r.id === "") {
            delete cp[s.name];
        } else {
            cp[s.name] = { id: r.id!, outs: r.props };
        }
    }
    return cp;
}

/** `pulumi destroy`: delete in reverse order (dependents first). */
export async function destroy(steps: Step[], cp: Checkpoint): Promise<void> {
    for (const s of [...steps].reverse().filter((x) => cp[x.name] !== undefined)) {
        await s.provider.delete?.(cp[s.name].id, cp[s.name].outs);
        delete cp[s.name];
    }
}
