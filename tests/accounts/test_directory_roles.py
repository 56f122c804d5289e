"""KUAE_ROLE_GROUPS: a directory's groups to roles (docs/sign-in.md)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.accounts.directory import RoleGroups, normalise_group

MAPPING = (
    "operator=cn=gpu-oncall,ou=groups,dc=example,dc=com;"
    " manager = CN=GPU-Mgmt, OU=groups, DC=example, DC=com ;"
    "engineer=kuae-engineers;"
)


def test_highest_role_of_several_groups_wins() -> None:
    groups = RoleGroups.parse(MAPPING)
    both = ["cn=gpu-mgmt,ou=groups,dc=example,dc=com", "cn=gpu-oncall,ou=groups,dc=example,dc=com"]
    assert groups.role_for(both) == "operator"
    assert groups.role_for(both + ["kuae-engineers"]) == "engineer"
    assert groups.role_for(["CN=gpu-mgmt, ou=Groups,dc=EXAMPLE,dc=com"]) == "manager"


def test_no_mapped_group_is_no_role() -> None:
    groups = RoleGroups.parse(MAPPING)
    assert groups.role_for([]) is None
    assert groups.role_for(["cn=interns,ou=groups,dc=example,dc=com"]) is None
    assert normalise_group(" CN=A , DC=B ") == "cn=a,dc=b"


@pytest.mark.parametrize(
    ("text", "named"),
    [("operator", "'operator' is not role=group"), ("agent=cn=bots", "role must be one of")],
)
def test_malformed_mapping_fails_naming_the_entry(text: str, named: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=named):
        RoleGroups.parse(text)


def test_empty_mapping_maps_nothing() -> None:
    assert RoleGroups.parse("").pairs == () and RoleGroups.parse(" ; ").groups == frozenset()
