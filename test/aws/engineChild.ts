// A `pulumi up` of the stack's EC2 resources in a process of its own, so that
// a test can kill it with SIGKILL mid-way (engine.ts models the engine). The
// one argument is JSON: {stack: "adopt", groupId, ingress} or {stack:
// "create", instanceId, vpcId, groups}, and `file`, the checkpoint it writes
// after each completed step. The endpoint and credentials come from the
// environment, as for the parent.
import { adoptStack, createStack, up } from "./engine";

const spec = JSON.parse(process.argv[2]);
const steps = spec.stack === "adopt" ? adoptStack(spec.groupId, spec.ingress) : createStack(spec.instanceId, spec.vpcId, spec.groups);
up(steps, {}, spec.file).then(() => process.exit(0), (e) => {
    console.error(e);
    process.exit(1);
});
