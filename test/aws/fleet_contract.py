"""The calls of a fleet (components/fleet.ts, scripts/hostguard/fleet/ssmstep.py) against moto, with boto3.

Run by test/aws/fleet.test.ts with the moto venv's python: `fleet_contract.py
calls|iam DIR`. DIR holds what the Pulumi program renders (document.json,
policy.json with BUCKET_ARN, PARAMETER_ARN and KEY_ARN placeholders,
params.json, names.json: the stack's parameter and another stack's, the
bundles as PART.tar). Prints one JSON object of observations; the TS test
asserts on them. `iam` starts moto with its IAM enforcement on
(INITIAL_NO_AUTH_ACTION_COUNT: the first calls make an admin, every later
call is authorized by its caller's policies) and AWS's managed policies loaded
(the control role holds AmazonSSMManagedInstanceCore).

moto 5.2.5 authorizes S3 calls against the object's ARN but every SSM call
against the resource `*` (moto/core/responses.py call_action: only a response
class with `_determine_resource` names one). Here SSM's parameter reads name
the parameter's ARN, as AWS's authorization reference defines the resource of
GetParameter and GetParameters; moto's own policy evaluator decides.
"""

import base64
import hashlib
import json
import os
import re
import sys

MODE, DIR = sys.argv[1], sys.argv[2]
if MODE == "iam":
    os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"
    os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"
os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"})
for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
    os.environ.pop(k, None)

import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402
from moto.ssm.responses import SimpleSystemManagerResponse  # noqa: E402


def _parameter_resource(self):
    """The ARN a parameter read is authorized against (one name; several: `*`, as before)."""
    names = [self._get_param("Name")] if self._get_action() == "GetParameter" else []
    if len(names) != 1 or not names[0]:
        return "*"
    name = names[0].split(":")[0]
    return "arn:aws:ssm:%s:%s:parameter%s" % (self.region, self.current_account, name if name.startswith("/") else "/" + name)


SimpleSystemManagerResponse._determine_resource = _parameter_resource  # noqa: SLF001 - see the docstring

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
server.start()
URL = "http://127.0.0.1:%d" % server._server.server_port  # noqa: SLF001 - the port moto chose


def client(service, **creds):
    return boto3.client(service, endpoint_url=URL, region_name="us-east-1", **creds)


def read(name):
    with open(os.path.join(DIR, name), "rb") as f:
        return f.read()


def parts():
    return [p for p in ("base", "monitors", "bantool", "web") if os.path.exists(os.path.join(DIR, p + ".tar"))]


def calls():
    out = {}
    ssm, s3, kms = client("ssm"), client("s3"), client("kms")
    content = read("document.json").decode()
    doc = ssm.create_document(Content=content, Name="hostguard-test-apply", DocumentType="Command", DocumentFormat="JSON")
    out["documentHash"] = doc["DocumentDescription"]["Hash"]
    out["contentSha256"] = hashlib.sha256(content.encode()).hexdigest()
    registered = json.loads(ssm.get_document(Name="hostguard-test-apply")["Content"])
    out["registeredParameters"] = sorted(registered["parameters"])
    # The association's parameters against the patterns of the document as registered.
    params = json.loads(read("params.json"))
    patterns = {k: v["allowedPattern"] for k, v in registered["parameters"].items()}
    out["paramsValid"] = {k: bool(re.fullmatch(patterns[k].strip("^$"), v)) for k, v in params.items()}
    bad = dict(params, Bundles="base:abc; rm -rf /", WebhookVersion="1 && id")
    out["badValid"] = {k: bool(re.fullmatch(patterns[k].strip("^$"), v)) for k, v in bad.items()}
    # Bundles round-trip by key and checksum.
    s3.create_bucket(Bucket=params["Bucket"])
    # The lifecycle rule as @pulumi/aws puts it, read back. The bucket policy is not put: moto 5.2.5
    # evaluates its Deny without the Bool condition (moto/iam/policy_conditions.py knows StringEquals
    # only), so over HTTPS too it would refuse every object call below.
    rules = json.loads(read("lifecycle.json"))
    s3.put_bucket_lifecycle_configuration(Bucket=params["Bucket"], LifecycleConfiguration={"Rules": [{
        "ID": r["id"], "Status": r["status"], "Filter": {"Prefix": r["filter"]["prefix"]}, "Expiration": {"Days": r["expiration"]["days"]},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": r["abortIncompleteMultipartUpload"]["daysAfterInitiation"]},
    } for r in rules]})
    out["lifecycle"] = s3.get_bucket_lifecycle_configuration(Bucket=params["Bucket"])["Rules"]
    out["objects"] = []
    for part in parts():
        body = read(part + ".tar")
        sha = hashlib.sha256(body).hexdigest()
        key = "bundles/%s/%s.tar" % (part, sha)
        put = s3.put_object(Bucket=params["Bucket"], Key=key, Body=body, ChecksumAlgorithm="SHA256")
        got = s3.get_object(Bucket=params["Bucket"], Key=key, ChecksumMode="ENABLED")
        data = got["Body"].read()
        out["objects"].append({
            "key": key, "inParams": "%s:%s" % (part, sha) in params["Bundles"].split(),
            "checksum": got.get("ChecksumSHA256"), "putChecksum": put.get("ChecksumSHA256"),
            "wanted": base64.b64encode(hashlib.sha256(body).digest()).decode(), "same": data == body,
        })
    # The SecureString round-trips and rotates; the step reads one version by name:VERSION.
    key_id = kms.create_key(Description="hostguard test")["KeyMetadata"]["Arn"]
    name = params["WebhookParameter"]
    v1 = ssm.put_parameter(Name=name, Value='url=https://hooks.example.test/one\n', Type="SecureString", KeyId=key_id)["Version"]
    v2 = ssm.put_parameter(Name=name, Value='url=https://hooks.example.test/two\n', Type="SecureString", KeyId=key_id, Overwrite=True)["Version"]
    p = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]
    old = ssm.get_parameter(Name="%s:%d" % (name, v1), WithDecryption=True)["Parameter"]
    out["parameter"] = {"versions": [v1, v2], "type": p["Type"], "latest": p["Value"], "version": p["Version"], "byVersion": old["Value"]}
    return out


def iam():
    admin_policy = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
    boot = client("iam")
    admin_arn = boot.create_user(UserName="admin")["User"]["Arn"]
    boot.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=admin_policy)
    k = boot.create_access_key(UserName="admin")["AccessKey"]
    admin = {"aws_access_key_id": k["AccessKeyId"], "aws_secret_access_key": k["SecretAccessKey"]}
    s3, iam_, sts = client("s3", **admin), client("iam", **admin), client("sts", **admin)
    bucket = json.loads(read("params.json"))["Bucket"]
    s3.create_bucket(Bucket=bucket)
    for key in ("bundles/base/x.tar", "runs/old/stdout", "other/secret.txt"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    names = json.loads(read("names.json"))
    ssm = client("ssm", **admin)
    key_arn = client("kms", **admin).create_key(Description="the stack's key")["KeyMetadata"]["Arn"]
    own = ssm.put_parameter(Name=names["own"], Value="url = x", Type="SecureString", KeyId=key_arn)
    ssm.put_parameter(Name=names["otherStack"], Value="url = y", Type="SecureString", KeyId=key_arn)
    ssm.put_parameter(Name=names["otherProject"], Value="url = z", Type="SecureString", KeyId=key_arn)
    ssm.put_parameter(Name="/app/db-host", Value="db.internal", Type="String")
    ssm.create_document(Content=read("document.json").decode(), Name="hostguard-test-apply", DocumentType="Command", DocumentFormat="JSON")
    parameter_arn = "arn:aws:ssm:us-east-1:123456789012:parameter" + names["own"]
    policy = (
        read("policy.json").decode()
        .replace("BUCKET_ARN", "arn:aws:s3:::" + bucket)
        .replace("PARAMETER_ARN", parameter_arn)
        .replace("KEY_ARN", key_arn)
    )
    # Stands in for EC2's assumption of the instance role (moto cannot evaluate a Service-only trust).
    trust = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": admin_arn}, "Action": "sts:AssumeRole"}]})
    role = iam_.create_role(RoleName="hostguard-host", AssumeRolePolicyDocument=trust)["Role"]
    iam_.put_role_policy(RoleName="hostguard-host", PolicyName="hostguard", PolicyDocument=policy)
    # The control: the role as it was, AWS's managed policy for the agent beside the stack's grants.
    control = iam_.create_role(RoleName="managed-core", AssumeRolePolicyDocument=trust)["Role"]
    iam_.attach_role_policy(RoleName="managed-core", PolicyArn="arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore")

    def session(role_arn):
        c = sts.assume_role(RoleArn=role_arn, RoleSessionName="i-test")["Credentials"]
        return {"aws_access_key_id": c["AccessKeyId"], "aws_secret_access_key": c["SecretAccessKey"], "aws_session_token": c["SessionToken"]}

    host_creds = session(role["Arn"])
    host, host_ssm = client("s3", **host_creds), client("ssm", **host_creds)
    control_ssm = client("ssm", **session(control["Arn"]))

    def verdict(call, **kw):
        try:
            call(**kw)
            return "allowed"
        except ClientError as exc:
            # moto's SSM answers a refusal in a body botocore does not parse: the code is then the status.
            error = exc.response["Error"]
            if error["Code"] == "AccessDenied" or (error["Code"] == "403" and "is not authorized to perform" in str(exc.response)):
                return "AccessDenied"
            return error["Code"] + " " + str(error.get("Message", ""))[:200]

    def reads(ssm_client):
        return {
            "own SecureString": verdict(ssm_client.get_parameter, Name=names["own"], WithDecryption=True),
            "own SecureString, the version the association names": verdict(
                ssm_client.get_parameter, Name="%s:%d" % (names["own"], own["Version"]), WithDecryption=True
            ),
            "another stack's SecureString": verdict(ssm_client.get_parameter, Name=names["otherStack"], WithDecryption=True),
            "another project's SecureString of a stack of the same name": verdict(
                ssm_client.get_parameter, Name=names["otherProject"], WithDecryption=True
            ),
            "an unrelated String": verdict(ssm_client.get_parameter, Name="/app/db-host"),
        }

    return {
        "s3": {
            "GetObject bundles/base/x.tar": verdict(host.get_object, Bucket=bucket, Key="bundles/base/x.tar"),
            "GetObject runs/old/stdout": verdict(host.get_object, Bucket=bucket, Key="runs/old/stdout"),
            "GetObject other/secret.txt": verdict(host.get_object, Bucket=bucket, Key="other/secret.txt"),
            "PutObject runs/i-test/stdout": verdict(host.put_object, Bucket=bucket, Key="runs/i-test/stdout", Body=b"out"),
            "PutObject bundles/base/x.tar": verdict(host.put_object, Bucket=bucket, Key="bundles/base/x.tar", Body=b"evil"),
            "DeleteObject bundles/base/x.tar": verdict(host.delete_object, Bucket=bucket, Key="bundles/base/x.tar"),
            "ListObjectsV2": verdict(host.list_objects_v2, Bucket=bucket),
        },
        "ssm": reads(host_ssm),
        "ssmWithManagedCore": reads(control_ssm),
        # What the agent reads of the association's document (GetDocument, DescribeDocument) stays allowed.
        "agent": {
            "GetDocument": verdict(host_ssm.get_document, Name="hostguard-test-apply"),
            "DescribeDocument": verdict(host_ssm.describe_document, Name="hostguard-test-apply"),
        },
    }


try:
    print(json.dumps(calls() if MODE == "calls" else iam()))
finally:
    server.stop()
