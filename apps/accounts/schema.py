"""OpenAPI description of the token scheme (drf-spectacular extension)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class HashedTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Token <token>`."""

    target_class = "apps.accounts.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):  # noqa: ANN001, ANN201
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>` — `manage.py create_user NAME --role ROLE` prints one.",
        }
