// Issue 33 against moto's EC2 API through the fault proxy: what destroy must
// restore is in the state before the first EC2 change is sent. An up killed
// with SIGKILL right after its first change (a child process running it, the
// engine's checkpoint in a file), a change EC2 applied whose answer was lost,
// a half-changed original refused, an interface whose original groups are all
// gone, and interfaces that outlive or leave their instance. engine.ts plays
// the engine; what EC2 ends up with is read by the test itself.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import {
    CreateSubnetCommand, CreateVpcCommand, DeleteSecurityGroupCommand,
    DescribeSecurityGroupsCommand, ModifyNetworkInterfaceAttributeCommand, RunInstancesCommand,
} from "@aws-sdk/client-ec2";
import { interfaceGroupsProvider, type InterfaceGroupsState } from "../../components/interfaceGroups";
import { adoptStack, createStack, destroy, refresh, RULES, up, type Checkpoint } from "./engine";
import { ALLOW_ALL, messyIngress, wantedLines } from "./fixtures";
import { motoAccount, warningsOf, withFaultProxy } from "./harness";
import { REGION, useEndpoint } from "./moto";

const q = interfaceGroupsProvider as Required<typeof interfaceGroupsProvider>;

const aws = motoAccount();
withFaultProxy(aws);

const CHANGES = ["AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress", "UpdateSecurityGroupRuleDescriptionsIngress", "ModifyNetworkInterfaceAttribute"];

/** The live processes of session SID (a zombie is dead: left out), from /proc. */
function sessionPids(sid: number): number[] {
    const out: number[] = [];
    for (const d of fs.readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
        let stat: string;
        try {
            stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
        } catch {
            continue;
        }
        // After "pid (comm) ": state, ppid, pgrp, session.
        const [state, , , session] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(session) === sid && state !== "Z") {
            out.push(Number(d));
        }
    }
    return out;
}

/**
 * SIGKILLs every process left in session SID (the killed child's: spawned
 * detached, it leads a session of its own, which every process it started
 * stays in whatever its process group) until none is left: the ones it found.
 */
async function reapSession(sid: number): Promise<number[]> {
    const found = new Set<number>();
    for (let i = 0; i < 100; i++) {
        const pids = sessionPids(sid);
        if (pids.length === 0) {
            return [...found];
        }
        for (const p of pids) {
            found.add(p);
            try {
                process.kill(p, "SIGKILL");
            } catch {
                // Gone meanwhile.
            }
        }
        await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`processes of session ${sid} outlived SIGKILL: ${sessionPids(sid).join(", ")}`);
}

/**
 * Runs an up of SPEC in a child process through the proxy, holds its first EC2
 * change (applied, unanswered) and kills the child with SIGKILL there, then
 * every process it started (none may be left): what the engine had
 * checkpointed by then is returned.
 */
async function killedUp(spec: Record<string, unknown>): Promise<Checkpoint> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hostguard-i33-${process.pid}-`));
    const file = path.join(dir, "checkpoint.json");
    let first = true;
    const held = new Promise<string>((resolve) => {
        aws.proxy.rule = (action) => {
            if (first && CHANGES.includes(action)) {
                first = false;
                setImmediate(() => resolve(action));
                return "hold";
            }
            return false;
        };
    });
    const child = spawn(process.execPath, ["--import", "tsx", path.join(__dirname, "engineChild.ts"), JSON.stringify({ ...spec, file })], {
        env: { ...process.env, AWS_ENDPOINT_URL: aws.proxy.endpoint }, stdio: ["ignore", "ignore", "pipe"], detached: true,
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const action = await Promise.race([held, exited.then((code) => { throw new Error(`the up ended (${code}) before any change: ${stderr}`); })]);
    child.kill("SIGKILL");
    await exited;
    assert.deepEqual(await reapSession(child.pid!), [], "the killed up left no process behind");
    aws.proxy.rule = () => false;
    assert.ok(CHANGES.includes(action));
    const cp = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) as Checkpoint : {};
    fs.rmSync(dir, { recursive: true, force: true });
    return cp;
}

/**
 * The create path's killed up: a host with two interfaces (allow-all; allow-all and web), killed once the
 * first was set to hostguard's group; the record is checkpointed, the enforcing resource's create was pending.
 */
async function killedCreate() {
    const allowAll = await aws.account.group(ALLOW_ALL, "default");
    const web = await aws.account.group([], "web");
    const hostguard = await aws.account.group([], "hostguard");
    const host = await aws.account.instance([allowAll]);
    const second = await aws.account.secondaryInterface(host.instanceId, [allowAll, web]);
    const cp = await killedUp({ stack: "create", instanceId: host.instanceId, vpcId: aws.account.vpcId, groups: [hostguard] });
    assert.deepEqual(Object.keys(cp), ["record"]);
    assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard], "the first interface was changed");
    return { allowAll, web, hostguard, host, second, cp };
}

describe("an up killed with SIGKILL after its first EC2 change", () => {
    it("adopt: the second up and destroy restore every original rule", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "killed");
        const before = await aws.account.snapshot(groupId);
        const cp = await killedUp({ stack: "adopt", groupId, ingress: RULES });
        assert.deepEqual(Object.keys(cp), ["record"], "the record was checkpointed; the change was pending");
        assert.notDeepEqual(await aws.account.ingress(groupId), before.ingress, "the first change reached EC2");

        const steps = adoptStack(groupId, RULES);
        await up(steps, cp);
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.snapshot(groupId), before, "every original rule is back");
    });

    it("create path: the second up and destroy restore every interface's groups", async () => {
        const { allowAll, web, hostguard, host, second, cp } = await killedCreate();

        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        await up(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard]);
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll, web].sort());
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: hostguard }));
    });

    it("a record made after such a kill without one (another stack, a deleted state) is refused, naming what to do", async () => {
        const groupId = await aws.account.group([], "already-hostguards");
        const steps = adoptStack(groupId, RULES);
        await up(steps);
        const err = await up(adoptStack(groupId, RULES)).then(() => null, (e: Error) => e);
        assert.match(String(err?.message), new RegExp(`security group ${groupId} already holds hostguard's inbound rules.*run up again`));

        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([hostguard, allowAll]);
        const refused = await up(createStack(host.instanceId, aws.account.vpcId, [hostguard])).then(() => null, (e: Error) => e);
        assert.match(String(refused?.message), new RegExp(`network interface ${host.networkInterfaceId} of instance ${host.instanceId} already carries hostguard's group ${hostguard}`));
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard, allowAll].sort(), "nothing changed");
    });
});

describe("issue 41: an up killed after its first EC2 change, then destroy with no up between", () => {
    it("adopt: the record's delete puts every original rule back (the pending create is not in the state)", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "killed-destroy");
        const before = await aws.account.snapshot(groupId);
        const cp = await killedUp({ stack: "adopt", groupId, ingress: RULES });
        assert.deepEqual(Object.keys(cp), ["record"]);
        assert.notDeepEqual(await aws.account.snapshot(groupId), before, "the first change reached EC2");
        const warnings = await warningsOf(() => destroy(adoptStack(groupId, RULES), cp));
        assert.deepEqual(await aws.account.snapshot(groupId), before, "every original rule is back");
        assert.ok(warnings.some((w) => w.includes(`security group ${groupId} was still changed by hostguard`)), warnings.join("\n"));
    });

    it("create path: the record's delete gives the changed interface its groups back and leaves the unchanged one alone", async () => {
        const { allowAll, web, hostguard, host, second, cp } = await killedCreate();
        useEndpoint(aws.proxy.endpoint);
        aws.proxy.calls.length = 0;
        await destroy(createStack(host.instanceId, aws.account.vpcId, [hostguard]), cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll, web].sort());
        assert.deepEqual(aws.proxy.calls.filter((c) => CHANGES.includes(c)), ["ModifyNetworkInterfaceAttribute"], "only the changed interface is set");
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: hostguard }));
    });

    it("create path, instance terminated before destroy: destroy succeeds and names each interface it could not restore, nothing secret", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const cp = await killedUp({ stack: "create", instanceId: host.instanceId, vpcId: aws.account.vpcId, groups: [hostguard] });
        await aws.account.terminate(host.instanceId);
        process.env.AWS_SECRET_ACCESS_KEY = "sentinel-secret-key-41";
        const warnings = await warningsOf(() => destroy(createStack(host.instanceId, aws.account.vpcId, [hostguard]), cp));
        assert.ok(warnings.some((w) => w.includes(`network interface ${host.networkInterfaceId} of ${host.instanceId} no longer exists`)
            && w.includes(`its groups before hostguard (${allowAll}) were not restored`)), warnings.join("\n"));
        assert.ok(!warnings.join("\n").includes("sentinel-secret-key-41"));
    });

    it("after a complete up, destroy's record delete sends no change (the enforcing resource already restored)", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "full-destroy");
        const before = await aws.account.snapshot(groupId);
        const steps = adoptStack(groupId, RULES);
        const cp = await up(steps);
        const deleteIngress = adoptedDelete(steps, cp);
        await deleteIngress();
        useEndpoint(aws.proxy.endpoint);
        aws.proxy.calls.length = 0;
        const warnings = await warningsOf(() => destroy(steps, cp));
        assert.deepEqual(aws.proxy.calls.filter((c) => CHANGES.includes(c)), [], "nothing is sent");
        assert.deepEqual(warnings, []);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });
});

describe("destroy after the group or interface is gone: what was not restored is said once (the record's delete says it)", () => {
    const notRestored = (warnings: string[]) => warnings.filter((w) => /were not restored|are left as they are/.test(w));

    it("adopt: the group deleted after a complete up: one line, from the record's delete", async () => {
        const groupId = await aws.account.group([], "deleted-adopted");
        const steps = adoptStack(groupId, RULES);
        const cp = await up(steps);
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: groupId }));
        const warnings = await warningsOf(() => destroy(steps, cp));
        assert.deepEqual(notRestored(warnings), [`hostguard: security group ${groupId} no longer exists; its recorded inbound rules were not restored`], warnings.join("\n"));
        assert.deepEqual(cp, {}, "both resources leave the state");
    });

    it("create path: the instance terminated after a complete up: one line", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        await aws.account.terminate(host.instanceId);
        const warnings = await warningsOf(() => destroy(steps, cp));
        assert.equal(notRestored(warnings).length, 1, warnings.join("\n"));
        assert.match(notRestored(warnings)[0], new RegExp(`network interface ${host.networkInterfaceId} of ${host.instanceId} no longer exists.*\\(${allowAll}\\) were not restored`));
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: hostguard }));
    });
});

/** The enforcing resource's delete alone, as destroy calls it first; it leaves the record in CP. */
function adoptedDelete(steps: ReturnType<typeof adoptStack>, cp: Checkpoint): () => Promise<void> {
    return async () => {
        await steps[1].provider.delete!(cp.ingress.id, cp.ingress.outs);
        delete cp.ingress;
    };
}

describe("a change EC2 applied whose answer was lost (fault proxy: forwarded, then 503)", () => {
    it("adopt: the authorize's retry is refused as a duplicate; the rule shows, so the up goes on; destroy restores", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "lost-answer");
        const before = await aws.account.snapshot(groupId);
        useEndpoint(aws.proxy.endpoint);
        // The first authorize of this test (the proxy's count includes the earlier tests').
        let lost = false;
        aws.proxy.rule = (action) => (action === "AuthorizeSecurityGroupIngress" && !lost ? (lost = true, "lose") : false);
        const steps = adoptStack(groupId, RULES);
        const cp = await up(steps);
        assert.ok(aws.proxy.calls.includes("!AuthorizeSecurityGroupIngress"));
        assert.deepEqual(await aws.account.ingress(groupId), wantedLines(RULES));
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.snapshot(groupId), before);
    });

    it("adopt: when the read after it fails too, the failure counts as changed: the state keeps the resource and destroy restores", async () => {
        const groupId = await aws.account.group(messyIngress(await aws.account.group(), await aws.account.prefixList()), "lost-unread");
        const before = await aws.account.snapshot(groupId);
        useEndpoint(aws.proxy.endpoint);
        process.env.AWS_MAX_ATTEMPTS = "1";
        let lost = false;
        aws.proxy.rule = (action) => {
            if (action === "AuthorizeSecurityGroupIngress" && !lost) {
                lost = true;
                return "lose";
            }
            return lost && action === "DescribeSecurityGroups";
        };
        const cp: Checkpoint = {};
        const steps = adoptStack(groupId, RULES);
        const err = await up(steps, cp).then(() => null, (e) => e);
        assert.match(String(err?.message), /changing the inbound rules of .* failed/);
        assert.equal(err.id, groupId, "an initialization failure: the engine keeps the resource");
        aws.proxy.rule = () => false;
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.snapshot(groupId), before, "hostguard's authorized rules are gone again");
    });

    it("create path: a modify applied and unanswered on every try reads back as done; destroy restores", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        useEndpoint(aws.proxy.endpoint);
        process.env.AWS_MAX_ATTEMPTS = "2";
        aws.proxy.rule = (action) => (action === "ModifyNetworkInterfaceAttribute" ? "lose" : false);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        assert.ok(aws.proxy.calls.includes("!ModifyNetworkInterfaceAttribute"));
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [hostguard]);
        aws.proxy.rule = () => false;
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
    });

    it("create path: a lost modify whose read-back fails counts as changed; destroy takes hostguard's group off", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        useEndpoint(aws.proxy.endpoint);
        process.env.AWS_MAX_ATTEMPTS = "1";
        let lost = false;
        aws.proxy.rule = (action) => {
            if (action === "ModifyNetworkInterfaceAttribute" && !lost) {
                lost = true;
                return "lose";
            }
            return lost && action === "DescribeNetworkInterfaces";
        };
        const cp: Checkpoint = {};
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const err = await up(steps, cp).then(() => null, (e) => e);
        assert.ok(err?.id, `an initialization failure: ${err?.message}`);
        aws.proxy.rule = () => false;
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
    });
});

describe("interfaces whose originals are gone, that outlive or leave their instance, or sit in another VPC", () => {
    it("every original group deleted meanwhile: destroy gives the interface the VPC's default group", async () => {
        const temp = await aws.account.group([], "temporary");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([temp]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        await aws.account.client.send(new DeleteSecurityGroupCommand({ GroupId: temp }));
        const warnings = await warningsOf(() => destroy(steps, cp));
        const vpcDefault = (await aws.account.client.send(new DescribeSecurityGroupsCommand({
            Filters: [{ Name: "vpc-id", Values: [aws.account.vpcId] }, { Name: "group-name", Values: ["default"] }],
        }))).SecurityGroups![0].GroupId!;
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [vpcDefault]);
        assert.ok(warnings.some((w) => w.includes(`gets ${aws.account.vpcId}'s default group ${vpcDefault}`)), warnings.join("\n"));
    });

    it("a terminated instance with a surviving secondary interface: refresh keeps it, destroy puts its groups back", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const second = await aws.account.secondaryInterface(host.instanceId, [allowAll]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        await aws.account.terminate(host.instanceId);
        await refresh(steps, cp);
        assert.deepEqual(Object.keys(cp.record?.outs.originals ?? {}), [second], "only the gone primary is dropped");
        assert.deepEqual(Object.keys(cp.interfaces?.outs.originals ?? {}), [second]);
        assert.deepEqual(await aws.account.groupsOn(second), [hostguard]);
        await destroy(steps, cp);
        assert.deepEqual(await aws.account.groupsOn(second), [allowAll], "hostguard's group is off the detached interface");
    });

    it("an interface moved to another instance is left as it is by destroy, with a warning; the others are restored", async () => {
        const allowAll = await aws.account.group(ALLOW_ALL, "default");
        const hostguard = await aws.account.group([], "hostguard");
        const host = await aws.account.instance([allowAll]);
        const other = await aws.account.instance([allowAll]);
        const floating = await aws.account.secondaryInterface(host.instanceId, [allowAll]);
        const steps = createStack(host.instanceId, aws.account.vpcId, [hostguard]);
        const cp = await up(steps);
        await aws.account.move(floating, other.instanceId);
        await aws.account.client.send(new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: floating, Groups: [hostguard] }));
        const warnings = await warningsOf(() => destroy(steps, cp));
        assert.deepEqual(await aws.account.groupsOn(floating), [hostguard], "the other server's interface is not opened");
        // Said once: by the record's delete, not by the enforcing resource's too.
        assert.equal(warnings.filter((w) => w.includes(`${floating} moved from ${host.instanceId} to ${other.instanceId}`)).length, 1, warnings.join("\n"));
        assert.deepEqual(await aws.account.groupsOn(host.networkInterfaceId), [allowAll]);
    });

    it("preview refuses an instance in another VPC than hostguard:vpcId (moto would accept the cross-VPC group EC2 refuses)", async () => {
        const vpc = await aws.account.client.send(new CreateVpcCommand({ CidrBlock: "10.9.0.0/16" }));
        const subnet = await aws.account.client.send(new CreateSubnetCommand({ VpcId: vpc.Vpc!.VpcId!, CidrBlock: "10.9.1.0/24" }));
        const r = await aws.account.client.send(new RunInstancesCommand({ ImageId: aws.account.imageId, MinCount: 1, MaxCount: 1, SubnetId: subnet.Subnet!.SubnetId! }));
        const instanceId = r.Instances![0].InstanceId!;
        const hostguard = await aws.account.group([], "hostguard");
        const inputs: InterfaceGroupsState = { kind: "hostguard:interface-groups", region: REGION, instanceId, vpcId: aws.account.vpcId, groups: [hostguard], ingress: RULES, originals: {} };
        const checked = await q.check({}, inputs);
        assert.equal(checked.failures![0]?.property, "vpcId");
        assert.match(checked.failures![0].reason, new RegExp(`is in ${vpc.Vpc!.VpcId}, not in hostguard:vpcId ${aws.account.vpcId}`));
    });
});
