"""The calls @pulumi/aws would make for the fleet's resources (e2e, delivery ssm), against moto.

`state_manager.py apply DIR` feeds it what test/e2e/lib/fleet-program.ts
prints: the inputs of every @pulumi/aws resource the program registers under
Pulumi's mocks. Applied as an up does: create what is missing, update what
changed, delete replaced bundle objects (their keys are content-addressed).
The association goes to DIR/association.json, checked against botocore's model
of CreateAssociation: moto has no SSM associations, and State Manager (the
stand-in) is what keeps them. The association's WebhookVersion is the
parameter's version in moto, as the engine passes the provider's output on.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

import boto3
from botocore.exceptions import ClientError
from botocore.validate import validate_parameters

REGION = "us-east-1"


def client(service: str) -> Any:
    return boto3.client(service, endpoint_url=os.environ["HOSTGUARD_E2E_MOTO"], region_name=REGION)


def by_type(resources: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [r for r in resources if r["type"] == type_]


def one(resources: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    found = by_type(resources, type_)
    if len(found) != 1:
        raise SystemExit(f"state_manager: the program registered {len(found)} {type_}, want 1")
    return found[0]


def physical(resource: dict[str, Any]) -> str:
    """The auto-named physical name fleet-program.ts's mocks give."""
    return f"{resource['name']}-e2e"


KNOWN = {
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketObjectv2:BucketObjectv2",
    "aws:s3/bucketPolicy:BucketPolicy",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:kms/key:Key",
    "aws:ssm/parameter:Parameter",
    "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/instanceProfile:InstanceProfile",
    "aws:iam/policy:Policy",
    "aws:ssm/document:Document",
    "aws:ssm/association:Association",
    # The hosts' network is the test's own (scenario 13 proves the group against moto).
    "aws:ec2/securityGroup:SecurityGroup",
}


def lifecycle_rules(res: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lifecycle rules as PutBucketLifecycleConfiguration takes them."""
    rules = one(res, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")["inputs"]["rules"]
    return [
        {
            "ID": r["id"],
            "Status": r["status"],
            "Filter": {"Prefix": r["filter"]["prefix"]},
            "Expiration": {"Days": r["expiration"]["days"]},
            "AbortIncompleteMultipartUpload": {
                "DaysAfterInitiation": r["abortIncompleteMultipartUpload"]["daysAfterInitiation"]
            },
        }
        for r in rules
    ]


def apply_bucket(res: list[dict[str, Any]]) -> str:
    s3 = client("s3")
    bucket = physical(one(res, "aws:s3/bucket:Bucket"))
    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError:
        s3.create_bucket(Bucket=bucket)
    pab = one(res, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")["inputs"]
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            k[0].upper() + k[1:]: pab[k]
            for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
        },
    )
    sse = one(res, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    algorithm = sse["inputs"]["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"]
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": algorithm}}]
        },
    )
    # The policy refusing plain HTTP is checked against PutBucketPolicy's model, not put: moto evaluates its
    # Deny without the Bool condition (it knows StringEquals only) and would refuse this test's HTTP.
    policy = {"Bucket": bucket, "Policy": one(res, "aws:s3/bucketPolicy:BucketPolicy")["inputs"]["policy"]}
    validate_parameters(policy, s3.meta.service_model.operation_model("PutBucketPolicy").input_shape)
    json.loads(policy["Policy"])
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": lifecycle_rules(res)})
    keys = set()
    for obj in by_type(res, "aws:s3/bucketObjectv2:BucketObjectv2"):
        key = obj["inputs"]["key"]
        keys.add(key)
        try:
            s3.head_object(Bucket=bucket, Key=key)
        except ClientError:
            s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=base64.b64decode(obj["inputs"]["contentBase64"]),
                ChecksumAlgorithm=obj["inputs"]["checksumAlgorithm"],
                ContentType=obj["inputs"]["contentType"],
            )
    # A replaced object (its key is content-addressed) is deleted once its successor exists.
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="bundles/").get("Contents", [])
    for gone in sorted({o["Key"] for o in listed} - keys):
        s3.delete_object(Bucket=bucket, Key=gone)
    return bucket


def apply_parameter(res: list[dict[str, Any]]) -> int:
    """The SecureString under the stack's key; a changed value is a new version. Returns the version."""
    ssm, kms = client("ssm"), client("kms")
    # The key has no alias: the state's key is the one of this description (one stack per moto).
    description = one(res, "aws:kms/key:Key")["inputs"]["description"]
    keys = [kms.describe_key(KeyId=k["KeyId"])["KeyMetadata"] for k in kms.list_keys()["Keys"]]
    found = [k["Arn"] for k in keys if k.get("Description") == description]
    key_arn = found[0] if found else kms.create_key(Description=description)["KeyMetadata"]["Arn"]
    p = one(res, "aws:ssm/parameter:Parameter")["inputs"]
    try:
        current = client("ssm").get_parameter(Name=p["name"], WithDecryption=True)["Parameter"]
        if current["Value"] == p["value"]:
            return int(current["Version"])
    except ClientError:
        pass
    put = ssm.put_parameter(
        Name=p["name"], Value=p["value"], Type=p["type"], KeyId=key_arn, Description=p["description"], Overwrite=True
    )
    return int(put["Version"])


def apply_iam(res: list[dict[str, Any]]) -> None:
    iam = client("iam")
    role = one(res, "aws:iam/role:Role")
    name = physical(role)
    try:
        iam.get_role(RoleName=name)
    except ClientError:
        iam.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=role["inputs"]["assumeRolePolicy"],
            PermissionsBoundary=role["inputs"]["permissionsBoundary"],
        )
        profile = physical(one(res, "aws:iam/instanceProfile:InstanceProfile"))
        iam.create_instance_profile(InstanceProfileName=profile)
        iam.add_role_to_instance_profile(InstanceProfileName=profile, RoleName=name)
        grants = one(res, "aws:iam/policy:Policy")
        iam.create_policy(PolicyName=physical(grants), PolicyDocument=grants["inputs"]["policy"])
    inline = one(res, "aws:iam/rolePolicy:RolePolicy")
    iam.put_role_policy(RoleName=name, PolicyName=physical(inline), PolicyDocument=inline["inputs"]["policy"])


def apply_document(res: list[dict[str, Any]]) -> str:
    ssm = client("ssm")
    doc = one(res, "aws:ssm/document:Document")
    name, content = physical(doc), doc["inputs"]["content"]
    try:
        registered = ssm.get_document(Name=name)["Content"]
    except ClientError:
        ssm.create_document(
            Name=name, Content=content, DocumentType=doc["inputs"]["documentType"], DocumentFormat="JSON"
        )
        return name
    if registered != content:
        version = ssm.update_document(Name=name, Content=content, DocumentVersion="$LATEST")
        ssm.update_document_default_version(
            Name=name, DocumentVersion=version["DocumentDescription"]["DocumentVersion"]
        )
    return name


def association_request(res: list[dict[str, Any]], version: int) -> dict[str, Any]:
    """CreateAssociation's input as the provider sends it, checked against botocore's model."""
    a = one(res, "aws:ssm/association:Association")["inputs"]
    params = dict(a["parameters"], WebhookVersion=str(version))
    request = {
        "Name": a["name"],
        "AssociationName": a["associationName"],
        "Targets": [{"Key": t["key"], "Values": t["values"]} for t in a["targets"]],
        "ScheduleExpression": a["scheduleExpression"],
        "MaxConcurrency": a["maxConcurrency"],
        "MaxErrors": a["maxErrors"],
        "ComplianceSeverity": a["complianceSeverity"],
        "OutputLocation": {
            "S3Location": {
                "OutputS3BucketName": a["outputLocation"]["s3BucketName"],
                "OutputS3KeyPrefix": a["outputLocation"]["s3KeyPrefix"],
            }
        },
        "Parameters": {k: [v] for k, v in params.items()},
    }
    validate_parameters(request, client("ssm").meta.service_model.operation_model("CreateAssociation").input_shape)
    return request


def apply(state: str) -> None:
    res = json.load(sys.stdin)
    unknown = sorted({r["type"] for r in res} - KNOWN)
    if unknown:
        raise SystemExit(f"state_manager: the program registers resources the stand-in does not apply: {unknown}")
    bucket = apply_bucket(res)
    version = apply_parameter(res)
    apply_iam(res)
    document = apply_document(res)
    request = association_request(res, version)
    path = os.path.join(state, "association.json")
    old: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
    association = {"request": request, "version": old.get("version", 0) + (request != old.get("request"))}
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(association, f)
    os.replace(path + ".tmp", path)
    profile = physical(one(res, "aws:iam/instanceProfile:InstanceProfile"))
    tag_value = request["Targets"][0]["Values"][0]
    applied = {"bucket": bucket, "document": document, "webhookVersion": version, "profile": profile}
    print(json.dumps({**applied, "tagValue": tag_value}))
