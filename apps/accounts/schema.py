"""OpenAPI: the token scheme (drf-spectacular extension) and the schema view for readers."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.views import SpectacularAPIView
from rest_framework.authentication import SessionAuthentication

from apps.accounts.authentication import HashedTokenAuthentication
from apps.accounts.choices import READERS
from apps.accounts.permissions import RolePermission


class HashedTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Token <token>` (or `Bearer <token>`)."""

    target_class = "apps.accounts.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):  # noqa: ANN001, ANN201
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>` or `Bearer <token>` — "
            "`manage.py create_user NAME --role ROLE` prints one.",
        }


class ReaderSchemaView(SpectacularAPIView):
    """The OpenAPI document, for readers (a role check like every endpoint); the Swagger UI
    page fetches it with the browser's session."""

    roles = {"GET": READERS}
    authentication_classes = [HashedTokenAuthentication, SessionAuthentication]
    permission_classes = [RolePermission]


# What an agent's write answers instead of the object (agents never read, CONTRACT §1).
AGENT_JOB_ID: dict[str, Any] = {
    "type": "object",
    "title": "agent answer",
    "properties": {"id": {"type": "integer", "description": "the job's id"}},
    "required": ["id"],
    "additionalProperties": False,
}
AGENT_ACCEPTED: dict[str, Any] = {
    "type": "object",
    "title": "agent answer",
    "properties": {"accepted": {"type": "integer", "description": "items stored or known"}},
    "required": ["accepted"],
    "additionalProperties": False,
}


def person_or_agent(component: str, agent: dict[str, Any]) -> OpenApiResponse:
    """A write's answer: the object `component` for people, only `agent` for an agent token
    (`anyOf`, not `oneOf`: an object with the same keys may match both)."""
    keys = ", ".join(agent["properties"])
    return OpenApiResponse(
        response={"anyOf": [{"$ref": f"#/components/schemas/{component}"}, agent]},
        description=f"the {component.lower()}; an agent gets only `{{{keys}}}`",
    )
