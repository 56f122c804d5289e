"""OpenAPI: the token scheme (drf-spectacular extension), the schema view for readers and
its Swagger UI page inside the app's frame."""

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny

from apps.accounts.authentication import HashedTokenAuthentication
from apps.accounts.choices import READERS
from apps.accounts.permissions import RolePermission, role_required


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

    def get_permissions(self) -> Sequence[Any]:
        """Anyone's when the site makes its docs public (`KUAE_PUBLIC_DOCS`), else readers'."""
        if settings.KUAE_PUBLIC_DOCS:
            return [AllowAny()]
        return super().get_permissions()


class SwaggerPageView(SpectacularSwaggerSplitView):
    """Swagger UI inside the app's frame (header, navigation, sign-in state): the page
    extends base.html and loads the sidecar's swagger-ui files from /static/; its init
    script is this view's `?script=` answer, so the page holds no inline script (CSP).
    Who may open it is `api_docs`'s decision."""

    template_name = "api_docs.html"
    authentication_classes = [SessionAuthentication]
    permission_classes = [AllowAny]
    url_name = "api-schema"


_swagger_page = SwaggerPageView.as_view()
_swagger_page_for_readers = role_required()(_swagger_page)


def api_docs(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The Swagger UI page and its init script: readers only (anonymous → the sign-in
    page), unless `KUAE_PUBLIC_DOCS` makes them public."""
    view = _swagger_page if settings.KUAE_PUBLIC_DOCS else _swagger_page_for_readers
    return view(request, *args, **kwargs)


# What an agent's write answers instead of the object: agents never read
# (docs/api.md, Conventions).
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
