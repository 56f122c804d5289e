"""Writes of the reports app: sending the weekly report, storing the overview's snapshot."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.utils import translation
from django.utils.translation import gettext as _

from apps.common.weeks import WEEK, week_label
from apps.fleet.models import Cluster
from apps.reports.export import headline, weekly_pdf
from apps.reports.models import ReportDelivery, Snapshot
from apps.reports.weekly import (
    week_so_far_compute,
    week_so_far_key,
    weekly_report,
    weekly_trends,
)
from apps.reports.weekly_tables import weekly_zip


def weekly_report_send(*, cluster: Cluster, start: dt.datetime, now: dt.datetime) -> bool:
    """E-mail the week's report (text, PDF, and its tables as tidy CSV in a ZIP) to
    KUAE_REPORT_EMAILS, once per cluster and week, in the site's language (KUAE_LANGUAGE);
    False when already sent or nobody is on the list."""
    with translation.override(settings.KUAE_LANGUAGE):
        return _weekly_report_send(cluster=cluster, start=start, now=now)


def _weekly_report_send(*, cluster: Cluster, start: dt.datetime, now: dt.datetime) -> bool:
    week = week_label(start)
    recipients = list(settings.KUAE_REPORT_EMAILS)
    if not recipients or ReportDelivery.objects.filter(cluster=cluster, week=week).exists():
        return False
    report = weekly_report(cluster=cluster, start=start, now=now)
    previous = weekly_report(cluster=cluster, start=start - WEEK, now=now)
    width = max(len(k) for k, _, _ in headline(report))
    lines = [f"{k:<{width}}  {v:>12}  {t}".rstrip() for k, v, t in headline(report)]
    words = {
        "cluster": cluster.name,
        "week": week,
        "start": f"{report['start']:%Y-%m-%d}",
        "end": f"{report['end']:%Y-%m-%d}",
    }
    body = (
        _("KUAE Ops weekly report for %(cluster)s, %(week)s (%(start)s to %(end)s UTC)") % words
        + "\n\n"
        + "\n".join(lines)
        + "\n\n"
        + _("On the dashboard:")
        + f" {settings.KUAE_BASE_URL}/reports/weekly/?cluster={cluster.name}&week={week}\n"
    )
    name = f"kuae-weekly-{cluster.name}-{week}"
    message = EmailMessage(
        "[KUAE Ops] " + _("%(cluster)s weekly report %(week)s") % words, body, None, recipients
    )
    message.attach(f"{name}.zip", weekly_zip(report, now=now, folder=name), "application/zip")
    trends = weekly_trends(cluster=cluster, start=start, now=now)
    message.attach(f"{name}.pdf", weekly_pdf(report, previous, trends), "application/pdf")
    with transaction.atomic():
        # Claim the week first: a concurrent sender fails here; a failed send rolls it back.
        try:
            ReportDelivery.objects.create(
                cluster=cluster, week=week, recipients=", ".join(recipients)
            )
        except IntegrityError:
            return False
        message.send()
    return True


def snapshot_refresh(*, cluster: Cluster, now: dt.datetime) -> dict[str, Any]:
    """Compute the overview's slow KPIs for `cluster` and store them as its snapshot (the
    only writer of the row; beat calls it every minute). Returns what was stored."""
    data = week_so_far_compute(cluster=cluster, now=now)
    Snapshot.objects.update_or_create(
        key=week_so_far_key(cluster.pk), defaults={"computed_at": now, "data": data}
    )
    return data
