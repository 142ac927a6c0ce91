// The calls of a fleet (hostguard:delivery ssm) against moto, with what the
// Pulumi program renders: the document registers and the association's
// parameters validate against its patterns as registered; each bundle
// round-trips by its content-addressed key and S3's SHA-256 checksum; the
// webhook SecureString round-trips and rotates (and one version is read by
// name:VERSION, as the step does); with moto's IAM enforcement on, the hosts'
// grants read bundles/* and write runs/* and nothing else of the bucket, read
// the stack's own SecureString and no other parameter (where the role with
// AmazonSSMManagedInstanceCore read an unrelated String), and still let the
// agent read its document. boto3 makes the calls (test/aws/fleet_contract.py,
// the moto venv's python), the same API calls @pulumi/aws and the step make.
// What moto cannot show: real KMS encryption and the kms:ViaService
// condition, State Manager itself.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { renderHost, sha256, tarFiles } from "../../components/bundles";
import { DEFAULT_SETTINGS } from "../../components/config";
import { associationParameters, bundleKey, bundlesValue, fleetNames, hostPolicy, lifecycleRules, renderDocument } from "../../components/ssmDocument";
import { MOTO_VENV } from "./moto";

let dir = "";
let shas: Record<string, string> = {};

function contract(mode: "calls" | "iam"): any {
    const r = spawnSync(path.join(MOTO_VENV, "bin", "python"), [path.join(__dirname, "fleet_contract.py"), mode, dir], { encoding: "utf8", timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hg-fleet-contract-"));
    const bundles = await Promise.all(renderHost(DEFAULT_SETTINGS).bundles.map(async (b) => ({ part: b.part, tar: await tarFiles(b.files) })));
    for (const b of bundles) {
        fs.writeFileSync(path.join(dir, `${b.part}.tar`), b.tar);
        shas[b.part] = sha256(b.tar);
    }
    fs.writeFileSync(path.join(dir, "document.json"), renderDocument());
    fs.writeFileSync(path.join(dir, "lifecycle.json"), JSON.stringify(lifecycleRules(30)));
    fs.writeFileSync(path.join(dir, "policy.json"), hostPolicy("BUCKET_ARN", "PARAMETER_ARN", "KEY_ARN"));
    fs.writeFileSync(path.join(dir, "names.json"), JSON.stringify({
        own: fleetNames("hostguard", "test").webhookParameter, otherStack: fleetNames("hostguard", "other").webhookParameter,
        otherProject: fleetNames("shop", "test").webhookParameter,
    }));
    fs.writeFileSync(path.join(dir, "params.json"), JSON.stringify(associationParameters({
        bucket: "hostguard-test-bundles", bundles: bundlesValue(bundles.map((b) => ({ part: b.part, tarSha256: sha256(b.tar) }))),
        webhookParameter: fleetNames("hostguard", "test").webhookParameter, webhookVersion: "1",
    })));
});
after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
});

describe("the fleet's calls against moto", () => {
    it("the document registers as rendered; the association's parameters match its patterns, a quote or a command does not", () => {
        const out = contract("calls");
        assert.equal(out.documentHash, out.contentSha256);
        assert.deepEqual(out.registeredParameters, ["Bucket", "Bundles", "WebhookParameter", "WebhookVersion"]);
        assert.deepEqual(out.paramsValid, { Bucket: true, Bundles: true, WebhookParameter: true, WebhookVersion: true });
        assert.deepEqual(out.badValid, { Bucket: true, Bundles: false, WebhookParameter: true, WebhookVersion: false });

        assert.deepEqual(out.lifecycle, [{
            ID: "hostguard-runs-expire", Status: "Enabled", Filter: { Prefix: "runs/" }, Expiration: { Days: 30 },
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
        }]);
        assert.equal(out.objects.length, 4);
        for (const o of out.objects) {
            const part = o.key.split("/")[1];
            assert.equal(o.key, bundleKey(part, shas[part]));
            assert.equal(o.inParams, true, `${o.key} is what the association names`);
            assert.equal(o.checksum, o.wanted, `${o.key}: S3's SHA-256 checksum is the tar's`);
            assert.equal(o.putChecksum, o.wanted);
            assert.equal(o.same, true);
        }

        assert.deepEqual(out.parameter, {
            versions: [1, 2], type: "SecureString", latest: 'url=https://hooks.example.test/two\n', version: 2,
            byVersion: 'url=https://hooks.example.test/one\n',
        });
    });

    it("with IAM enforcement, the hosts' role reads its own SecureString and no other parameter; bundles/* and runs/* only of the bucket", () => {
        const out = contract("iam");
        assert.deepEqual(out.s3, {
            "GetObject bundles/base/x.tar": "allowed",
            "GetObject runs/old/stdout": "AccessDenied",
            "GetObject other/secret.txt": "AccessDenied",
            "PutObject runs/i-test/stdout": "allowed",
            "PutObject bundles/base/x.tar": "AccessDenied",
            "DeleteObject bundles/base/x.tar": "AccessDenied",
            "ListObjectsV2": "AccessDenied",
        });
        assert.deepEqual(out.ssm, {
            "own SecureString": "allowed",
            "own SecureString, the version the association names": "allowed",
            "another stack's SecureString": "AccessDenied",
            "another project's SecureString of a stack of the same name": "AccessDenied",
            "an unrelated String": "AccessDenied",
        });
        // The control shows the check can fail: the managed policy the role had reads any parameter.
        assert.equal(out.ssmWithManagedCore["an unrelated String"], "allowed");
        assert.equal(out.ssmWithManagedCore["another stack's SecureString"], "allowed");
        assert.deepEqual(out.agent, { GetDocument: "allowed", DescribeDocument: "allowed" });
    });
});
