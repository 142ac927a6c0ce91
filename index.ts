// hostguard: a security group for the server and, per host, the monitors, the
// ban jail and the nginx deny rule shipped over SSH. Config is validated in full
// before any resource exists; a bad value stops `pulumi preview` naming its key.
import { validateConfig } from "./components/config";
import { buildStack, rawStackConfig, stackSecretKeys } from "./components/stack";

const config = validateConfig(rawStackConfig(), { secretKeys: stackSecretKeys() });
const stack = buildStack(config);

export const securityGroupId = stack.securityGroupId;
export const securityGroupIngress = stack.securityGroupIngress;
export const securityGroupInterfaceIds = stack.securityGroupInterfaceIds;
export const hosts = stack.hosts;
/** hostguard:delivery ssm: the bucket, document, association, instance profile and policy of the fleet. */
export const fleet = stack.fleet;
