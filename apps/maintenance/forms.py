"""The booking form: a hostlist or racks, start (default now), end, reason; times in UTC."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.fleet.models import Cluster

LOCAL = "%Y-%m-%dT%H:%M"


class WindowForm(forms.Form):
    """Book a maintenance window from the page."""

    cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.order_by("name"),
        to_field_name="name",
        label=gettext_lazy("Cluster"),
    )
    nodes = forms.CharField(
        required=False,
        max_length=10_000,
        label=gettext_lazy("Nodes"),
        help_text=gettext_lazy("hostnames or a Slurm hostlist, e.g. gpu[001-016]"),
    )
    racks = forms.CharField(
        required=False,
        max_length=2000,
        label=gettext_lazy("Racks"),
        help_text=gettext_lazy("comma-separated"),
    )
    start = forms.DateTimeField(
        label=gettext_lazy("Start (UTC)"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=LOCAL),
    )
    end = forms.DateTimeField(
        label=gettext_lazy("End (UTC)"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=LOCAL),
    )
    reason = forms.CharField(
        max_length=2000,
        label=gettext_lazy("Reason"),
        help_text=gettext_lazy("what the work is, for the node history"),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        now = timezone.now().replace(second=0, microsecond=0)
        self.fields["start"].initial = now
        self.fields["end"].initial = now + dt.timedelta(hours=2)

    def clean_racks(self) -> list[str]:
        """The racks as a list, blanks dropped."""
        text = self.cleaned_data.get("racks") or ""
        return [r.strip() for r in text.split(",") if r.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not (data.get("nodes") or "").strip() and not data.get("racks"):
            self.add_error("nodes", _("name the nodes (or racks) the work is on"))
        return data
