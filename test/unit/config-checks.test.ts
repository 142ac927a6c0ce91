// The named checks of components/config.ts's validateConfig, each called alone: a value it passes,
// one it refuses with the key it names. validateConfig's own tests (config, stack-keys, fleet, ...) check the texts in place.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
    attachWarnings, ConfigError, loadBalancerWarnings, refuseAdoptedGroupWithFleet, refuseAwsWithoutSshSource, refuseAwsWithoutVpc,
    refuseBadNeverBanned, refuseFleetKeysWithSsh, refuseFleetWithoutAws, refuseInstanceIdWithoutAws, refuseKeptWithoutCreated,
    refusePagerdutyWithoutResolved, refuseRepeatedKeptGroups, refuseSharedWithoutAdopted, refuseShortFleetRate, refuseSshKeysWithFleet,
    refuseTooManyKeptGroups, refuseUncheckedHostKeys, refuseUnknownKeys, type TargetHost,
} from "../../components/config";
import { DEFAULT_SETTINGS } from "../../components/settings";

const HOST: TargetHost = { name: "web1", host: "10.0.0.9", port: 22, user: "admin", hostKey: "ssh-ed25519 AAAA", instanceId: "i-0123456789abcdef0" };
const SG = "sg-0123456789abcdef0";

function refuses(check: () => void, key: string, text: RegExp): void {
    assert.throws(check, (e: unknown) => e instanceof ConfigError && e.key === key && text.test(e.message), key);
}

describe("validateConfig's named checks, each alone", () => {
    it("keys and delivery", () => {
        refuseUnknownKeys({ cpuThreshold: "80", hosts: "[]" });
        refuses(() => refuseUnknownKeys({ cpuThreshhold: "80" }), "cpuThreshhold", /did you mean hostguard:cpuThreshold\?/);
        refuseFleetKeysWithSsh({ hosts: "[]" });
        refuses(() => refuseFleetKeysWithSsh({ fleetMaxErrors: "1" }), "fleetMaxErrors", /only used with hostguard:delivery ssm; remove it$/);
        refuseSshKeysWithFleet({ vpcId: "vpc-1" });
        refuses(() => refuseSshKeysWithFleet({ cronMinute: "3" }), "cronMinute", /remove hostguard:cronMinute, or set hostguard:delivery ssh$/);
        refuseFleetWithoutAws(true);
        refuses(() => refuseFleetWithoutAws(false), "aws", /must be true with hostguard:delivery ssm/);
        refuseAdoptedGroupWithFleet({});
        refuses(() => refuseAdoptedGroupWithFleet({ securityGroupId: SG }), "securityGroupId", /remove hostguard:securityGroupId$/);
        refuseShortFleetRate("rate(30 minutes)");
        refuseShortFleetRate("rate(1 hours)");
        refuses(() => refuseShortFleetRate("rate(29 minutes)"), "fleetSchedule", /at least rate\(30 minutes\).*got rate\(29 minutes\)$/);
    });

    it("hosts and their groups", () => {
        refuseUncheckedHostKeys({ hosts: [HOST], bastion: undefined, insecureAcceptAnyHostKey: false });
        refuseUncheckedHostKeys({ hosts: [{ ...HOST, hostKey: undefined }], bastion: undefined, insecureAcceptAnyHostKey: true });
        refuses(() => refuseUncheckedHostKeys({ hosts: [HOST], bastion: { host: "b", port: 22, user: "u" }, insecureAcceptAnyHostKey: false }),
            "bastion.hostKey", /is required: get it over a trusted path/);
        refuseInstanceIdWithoutAws({ hosts: [HOST], aws: true });
        refuses(() => refuseInstanceIdWithoutAws({ hosts: [{ ...HOST, instanceId: undefined }, HOST], aws: false }), "hosts[1].instanceId", /remove it$/);
        refuseRepeatedKeptGroups({ keepSecurityGroupIds: [SG] });
        refuses(() => refuseRepeatedKeptGroups({ keepSecurityGroupIds: [SG, SG] }), "keepSecurityGroupIds[1]", /of keepSecurityGroupIds\[0\]: list it once$/);
        refuseTooManyKeptGroups({ keepSecurityGroupIds: [SG, SG, SG, SG], keepSecurityGroupsLimit: 5 });
        refuses(() => refuseTooManyKeptGroups({ keepSecurityGroupIds: [SG, SG, SG, SG, SG], keepSecurityGroupsLimit: 5 }), "keepSecurityGroupIds", /keep at most 4/);
        refuseAwsWithoutVpc({ aws: false, vpcId: undefined });
        refuses(() => refuseAwsWithoutVpc({ aws: true, vpcId: undefined }), "vpcId", /is required when hostguard:aws is true/);
        refuseAwsWithoutSshSource({ aws: true, adminCidrs: [], bastion: { host: "b", port: 22, user: "u", securityGroupId: SG }, delivery: "ssh" });
        refuseAwsWithoutSshSource({ aws: true, adminCidrs: [], bastion: undefined, delivery: "ssm" });
        refuses(() => refuseAwsWithoutSshSource({ aws: true, adminCidrs: [], bastion: undefined, delivery: "ssh" }), "adminCidrs", /SSH is needed to deploy/);
        refuseSharedWithoutAdopted({ aws: true, securityGroupId: SG, sharedSecurityGroupInstances: ["i-0123456789abcdef1"] });
        refuses(() => refuseSharedWithoutAdopted({ aws: true, securityGroupId: undefined, sharedSecurityGroupInstances: ["i-0123456789abcdef1"] }),
            "sharedSecurityGroupInstances", /only used with hostguard:securityGroupId/);
        refuseKeptWithoutCreated({ aws: true, securityGroupId: undefined, keepSecurityGroupIds: [SG], hosts: [HOST] });
        refuses(() => refuseKeptWithoutCreated({ aws: true, securityGroupId: undefined, keepSecurityGroupIds: [SG], hosts: [{ ...HOST, instanceId: undefined }] }),
            "keepSecurityGroupIds", /only used with a created group and hosts\[\]\.instanceId/);
    });

    it("settings and destination", () => {
        refuseBadNeverBanned({ banIgnoreIps: ["192.0.2.7", "10.0.0.0/8"], trustedProxies: [] });
        refuses(() => refuseBadNeverBanned({ banIgnoreIps: ["10.0.0.300"], trustedProxies: [] }), "banIgnoreIps[0]", /must be an IP address or a CIDR block/);
        refuses(() => refuseBadNeverBanned({ banIgnoreIps: [], trustedProxies: ["0.0.0.0/0"] }), "trustedProxies", /nginx would take any of them at its word/);
        refusePagerdutyWithoutResolved({ chatFormat: "slack", settings: DEFAULT_SETTINGS });
        refusePagerdutyWithoutResolved({ chatFormat: "pagerduty", settings: { ...DEFAULT_SETTINGS, alertSendResolved: true } });
        refuses(() => refusePagerdutyWithoutResolved({ chatFormat: "pagerduty", settings: DEFAULT_SETTINGS }), "alertSendResolved", /set it to true$/);
    });

    it("the warnings: none for a sound stack, one naming each key otherwise", () => {
        assert.deepEqual(loadBalancerWarnings({ keepSecurityGroupIds: [], settings: DEFAULT_SETTINGS }), []);
        assert.deepEqual(loadBalancerWarnings({ keepSecurityGroupIds: [SG], settings: { ...DEFAULT_SETTINGS, trustedProxies: ["10.9.0.0/24"] } }), []);
        assert.match(loadBalancerWarnings({ keepSecurityGroupIds: [SG], settings: DEFAULT_SETTINGS }).join("\n"), /^hostguard:keepSecurityGroupIds is set/);
        assert.deepEqual(attachWarnings({ aws: true, delivery: "ssh", securityGroupId: undefined, hosts: [HOST] }), []);
        assert.deepEqual(attachWarnings({ aws: true, delivery: "ssm", securityGroupId: undefined, hosts: [] }), []);
        assert.deepEqual(attachWarnings({ aws: true, delivery: "ssh", securityGroupId: SG, hosts: [{ ...HOST, instanceId: undefined }] }), []);
        assert.match(attachWarnings({ aws: true, delivery: "ssh", securityGroupId: undefined, hosts: [HOST, { ...HOST, name: "web2", instanceId: undefined }] })[0],
            /^hostguard:hosts\[1\]\.instanceId is not set: .* to web2 \(10\.0\.0\.9\)/);
    });
});
