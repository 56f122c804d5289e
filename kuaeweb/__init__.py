"""KUAE Ops project wiring: settings, URLs, the Celery app."""

from kuaeweb.celery import app as celery_app

__all__ = ["celery_app"]
