"""The OpenSearch proxy of the IAM-enforced tests grants what an identity policy grants."""

from __future__ import annotations

from tests.harness.iam_policy import allows

DOMAIN = "arn:aws:es:us-east-1:123456789012:domain/prme-search"
GRANT = {
    "Effect": "Allow",
    "Action": ["es:ESHttpGet", "es:ESHttpPost"],
    "Resource": f"{DOMAIN}/*",
}


def test_a_granted_verb_on_the_domain_is_allowed() -> None:
    assert allows([GRANT], "es:ESHttpPost", f"{DOMAIN}/prme-nodes/_bulk")
    assert allows([GRANT], "es:ESHttpGet", f"{DOMAIN}/prme-nodes/_search")


def test_another_verb_domain_or_a_deny_is_refused() -> None:
    assert not allows([GRANT], "es:ESHttpDelete", f"{DOMAIN}/prme-nodes")
    other = "arn:aws:es:us-east-1:123456789012:domain/other/prme-nodes/_search"
    assert not allows([GRANT], "es:ESHttpGet", other)
    deny = {**GRANT, "Effect": "Deny", "Action": "es:ESHttpPost"}
    assert not allows([GRANT, deny], "es:ESHttpPost", f"{DOMAIN}/prme-nodes/_bulk")
    assert not allows([], "es:ESHttpGet", f"{DOMAIN}/x")
