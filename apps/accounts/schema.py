"""OpenAPI: the token scheme (drf-spectacular extension) and the schema view for readers."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
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
