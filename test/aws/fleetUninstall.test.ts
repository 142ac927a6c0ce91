// delivery ssm against moto: `pulumi destroy` uninstalls the fleet (components/fleetUninstall.ts, issue 41 item 6).
// The delete sends one Run Command (AWS-RunShellScript, the installed
// `install uninstall`) to exactly the instances carrying the stack's tag, and
// reads each invocation's status, through the SDK's SSM client (here the
// request's shape is what is shown).
// moto runs nothing on an instance (every invocation says Success), so an
// instance that did not answer is shown through unreachedRefusal; the run
// on real hosts is scenario 16's destroy (test/e2e/lib/fleet.sh).
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { CreateTagsCommand, StopInstancesCommand } from "@aws-sdk/client-ec2";
import { ListCommandsCommand } from "@aws-sdk/client-ssm";
import { FLEET_UNINSTALL_KIND, fleetUninstallProvider, ssmClient, UNINSTALL_COMMAND, uninstallFleet, unreachedRefusal, type FleetUninstallState } from "../../components/fleetUninstall";
import { FLEET_TAG, fleetNames } from "../../components/ssmDocument";
import { motoAccount } from "./harness";
import { REGION } from "./moto";

const aws = motoAccount();

function state(tagValue: string): FleetUninstallState {
    return { kind: FLEET_UNINSTALL_KIND, region: REGION, tagKey: FLEET_TAG, tagValue, waitSeconds: 30 };
}

async function launch(tagValue?: string): Promise<string> {
    const { instanceId } = await aws.account.instance([await aws.account.group([], "fleet")]);
    if (tagValue !== undefined) {
        await aws.account.client.send(new CreateTagsCommand({ Resources: [instanceId], Tags: [{ Key: FLEET_TAG, Value: tagValue }] }));
    }
    return instanceId;
}

describe("fleet destroy uninstalls (delivery ssm)", () => {
    it("one Run Command of the installed uninstall to exactly the tagged instances; each answered", async () => {
        const tag = fleetNames("shop", "prod").tagValue;
        const a = await launch(tag);
        const b = await launch(tag);
        await launch();
        await launch(fleetNames("blog", "prod").tagValue);
        const status = await uninstallFleet(state(tag), 100);
        assert.deepEqual(status, { [a]: "Success", [b]: "Success" });
        const commands = (await ssmClient(REGION).send(new ListCommandsCommand({}))).Commands;
        assert.equal(commands.length, 1);
        const c = commands[0];
        assert.deepEqual([c.DocumentName, c.Parameters.commands], ["AWS-RunShellScript", [UNINSTALL_COMMAND]]);
        assert.equal(UNINSTALL_COMMAND, "if [ -x /usr/local/lib/hostguard/install ]; then exec /usr/local/lib/hostguard/install uninstall; fi");
        // moto adds every instance of the account to a command sent without Targets (its _get_instance_ids_from_targets
        // with no filter); the request named the tagged ones, and only theirs are read (status above).
        assert.ok([a, b].every((i) => c.InstanceIds.includes(i)));
        assert.match(c.Comment, /^hostguard: pulumi destroy of hostguard-stack=shop\/prod$/);
        // The provider's delete: no refusal when every instance answered Success.
        await (fleetUninstallProvider as Required<typeof fleetUninstallProvider>).delete("fleet-uninstall/shop/prod", state(tag));
    });

    it("a fleet with no tagged instance sends nothing", async () => {
        const before = (await ssmClient(REGION).send(new ListCommandsCommand({}))).Commands.length;
        assert.deepEqual(await uninstallFleet(state(fleetNames("empty", "prod").tagValue), 100), {});
        assert.equal((await ssmClient(REGION).send(new ListCommandsCommand({}))).Commands.length, before);
    });

    it("an instance not reached is named with its status and the way on; a terminated one is not a target", async () => {
        const s = state("shop/stage");
        const reason = unreachedRefusal(s, { "i-0aaa": "Success", "i-0bbb": "InProgress", "i-0ccc": "Undeliverable" });
        assert.match(reason, /^hostguard was not uninstalled from 2 instance\(s\) tagged hostguard-stack=shop\/stage within 30 s: i-0bbb \(InProgress\), i-0ccc \(Undeliverable\)\. /);
        assert.match(reason, /The stack's resources stay: .* run pulumi destroy again/);
        assert.equal(unreachedRefusal(s, { "i-0aaa": "Success" }), "");
        const stopped = await launch("shop/stage");
        await aws.account.client.send(new StopInstancesCommand({ InstanceIds: [stopped] }));
        const gone = await launch("shop/stage");
        await aws.account.terminate(gone);
        const status = await uninstallFleet(s, 100);
        assert.deepEqual(Object.keys(status), [stopped], "a stopped instance is a target (it keeps the payload), a terminated one is not");
    });

    it("an instance SSM does not manage (no agent, not registered) is named; the other instances of its call are still uninstalled", async () => {
        // SSM refuses a whole SendCommand naming one instance it does not manage (InvalidInstanceId,
        // "Instances [[i-...]] not in a valid state"); moto runs no agent, so a proxy in front of it answers that.
        const tag = fleetNames("shop", "unmanaged").tagValue;
        const good = await launch(tag);
        const unmanaged = await launch(tag);
        const sent: string[][] = [];
        const proxy = http.createServer(async (req, res) => {
            const chunks: Buffer[] = [];
            for await (const c of req) {
                chunks.push(c as Buffer);
            }
            const body = Buffer.concat(chunks);
            if (String(req.headers["x-amz-target"]) === "AmazonSSM.SendCommand") {
                const ids: string[] = JSON.parse(body.toString("utf8")).InstanceIds ?? [];
                sent.push(ids);
                if (ids.includes(unmanaged)) {
                    res.writeHead(400, { "content-type": "application/x-amz-json-1.1" })
                        .end(JSON.stringify({ __type: "InvalidInstanceId", message: `Instances [[${unmanaged}]] not in a valid state for account 123456789012` }));
                    return;
                }
            }
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(req.headers)) {
                if (typeof v === "string" && !["host", "content-length", "connection"].includes(k)) {
                    headers[k] = v;
                }
            }
            const up = await fetch(`${aws.moto.endpoint}${req.url}`, { method: req.method, headers, ...(body.length > 0 ? { body } : {}) });
            res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/x-amz-json-1.1" }).end(Buffer.from(await up.arrayBuffer()));
        });
        await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
        process.env.AWS_ENDPOINT_URL_SSM = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
        try {
            const status = await uninstallFleet(state(tag), 100);
            assert.equal(status[good], "Success", "the managed instance of the same call is uninstalled");
            assert.match(status[unmanaged], /^NotManaged/);
            assert.ok(sent.some((ids) => ids.length === 1 && ids[0] === good), JSON.stringify(sent));
            const err = await (fleetUninstallProvider as Required<typeof fleetUninstallProvider>).delete("fleet-uninstall/shop/unmanaged", state(tag)).then(() => undefined, (e: Error) => e);
            assert.match(String(err?.message), new RegExp(`not uninstalled from 1 instance\\(s\\) tagged hostguard-stack=shop/unmanaged within 30 s: ${unmanaged} \\(NotManaged[^)]*\\)\\. `));
            assert.match(String(err?.message), /take its tag hostguard-stack off/);
        } finally {
            delete process.env.AWS_ENDPOINT_URL_SSM;
            proxy.closeAllConnections();
            await new Promise<void>((r) => proxy.close(() => r()));
        }
    });
});
