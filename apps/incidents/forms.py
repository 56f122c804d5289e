"""Incident and postmortem forms: file, edit (operators acknowledge and set times), comment,
the postmortem editor and its review."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.forms.utils import ErrorDict
from django.http import QueryDict
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.accounts.models import User
from apps.common.hostnames import HostlistError, Hostlists
from apps.fleet.models import Cluster
from apps.fleet.validators import nodes_named
from apps.incidents.choices import Category, IncidentStatus, Severity
from apps.incidents.policy import OPERATOR_FIELDS, status_choices
from apps.incidents.selectors import nodes_not_of_job
from apps.jobs.models import Job


def _utc_time(label: Any) -> forms.DateTimeField:
    """One of an incident's optional times, entered in UTC."""
    return forms.DateTimeField(required=False, label=label, help_text="UTC")


# Labels both incident forms use (a page's language; the field names stay the API's).
OCCURRED = gettext_lazy("Occurred at")
DETECTED = gettext_lazy("Detected at")
DETECTED_HELP = gettext_lazy("UTC; blank: when it occurred, else now")
LOCALISED = gettext_lazy("Localised at")
RECOVERED = gettext_lazy("Recovered at")
DESCRIPTION = gettext_lazy("Description")


class IncidentEditForm(forms.Form):
    """The fields an engineer edits in the browser; times are UTC."""

    status = forms.ChoiceField(choices=IncidentStatus.choices, label=gettext_lazy("Status"))
    severity = forms.ChoiceField(choices=Severity.choices, label=gettext_lazy("Severity"))
    category = forms.ChoiceField(choices=Category.choices, label=gettext_lazy("Category"))
    occurred_at = _utc_time(OCCURRED)
    detected_at = forms.DateTimeField(required=False, label=DETECTED, help_text=DETECTED_HELP)
    localized_at = _utc_time(LOCALISED)
    mitigated_at = _utc_time(gettext_lazy("Mitigated at"))
    restarted_at = _utc_time(gettext_lazy("Restarted at"))
    restored_at = _utc_time(gettext_lazy("Restored at"))
    recovered_at = _utc_time(RECOVERED)
    caught_up_at = _utc_time(gettext_lazy("Caught up at"))
    resolved_at = _utc_time(gettext_lazy("Resolved at"))
    description = forms.CharField(
        required=False, label=DESCRIPTION, widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args: Any, engineer: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.engineer = engineer
        if not engineer:
            for name in [n for n in self.fields if n not in OPERATOR_FIELDS]:
                del self.fields[name]
        status = self.fields["status"]
        assert isinstance(status, forms.ChoiceField)  # declared above; `fields` holds Field
        status.choices = status_choices(engineer=engineer)


class CommentForm(forms.Form):
    """A comment on the incident's timeline."""

    text = forms.CharField(
        max_length=5000,
        label=gettext_lazy("Comment"),
        widget=forms.Textarea(
            attrs={"rows": 2, "aria-label": gettext_lazy("Comment on this incident")}
        ),
    )


class IncidentFileForm(forms.Form):
    """An engineer files an incident; nodes as hostnames or a Slurm hostlist (gpu[001-004])."""

    title = forms.CharField(max_length=300, label=gettext_lazy("Title"))
    cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.order_by("name"),
        to_field_name="name",
        label=gettext_lazy("Cluster"),
    )
    category = forms.ChoiceField(choices=Category.choices, label=gettext_lazy("Category"))
    severity = forms.ChoiceField(
        choices=Severity.choices, initial=Severity.SEV3, label=gettext_lazy("Severity")
    )
    occurred_at = _utc_time(OCCURRED)
    detected_at = forms.DateTimeField(required=False, label=DETECTED, help_text=DETECTED_HELP)
    localized_at = _utc_time(LOCALISED)
    recovered_at = _utc_time(RECOVERED)
    job = forms.CharField(
        required=False,
        max_length=200,
        label=gettext_lazy("Job"),
        help_text=gettext_lazy("the job's name, number or Slurm job id"),
    )
    nodes = forms.CharField(
        required=False,
        max_length=100_000,
        label=gettext_lazy("Nodes"),
        help_text=gettext_lazy("hostnames or hostlist, e.g. gpu[001-004]"),
    )
    interrupts_job = forms.BooleanField(required=False, label=gettext_lazy("Interrupts the job"))
    planned = forms.BooleanField(required=False, label=gettext_lazy("Planned"))
    description = forms.CharField(
        required=False, label=DESCRIPTION, widget=forms.Textarea(attrs={"rows": 3})
    )

    def clean(self) -> dict[str, Any]:
        """Resolve the job and the nodes within the chosen cluster."""
        super().clean()
        data = self.cleaned_data
        cluster = data.get("cluster")
        if cluster is None:
            return data
        if not data.get("detected_at"):  # filed after the fact: found when it happened
            data["detected_at"] = data.get("occurred_at") or timezone.now().replace(microsecond=0)
        wanted_job = (data.get("job") or "").strip().lstrip("#")
        data["job"] = None
        if wanted_job:
            data["job"] = job_named(cluster, wanted_job)
            if data["job"] is None:
                self.add_error(
                    "job",
                    _("no job %(job)s in cluster %(cluster)s")
                    % {"job": wanted_job, "cluster": cluster.name},
                )
        try:  # counted against the bound before any name is made (docs/operations.md, Limits)
            wanted = Hostlists().hostnames(_hostlist_text(data.get("nodes") or ""))
        except HostlistError as exc:
            self.add_error("nodes", _("not a hostlist: %(error)s") % {"error": exc})
            return data
        named = nodes_named(cluster_id=cluster.pk, hostnames=wanted)
        if named.unknown:
            unknown = ", ".join(named.unknown[:10])
            self.add_error(
                "nodes",
                _("unknown in %(cluster)s: %(nodes)s")
                % {"cluster": cluster.name, "nodes": unknown},
            )
        data["nodes"] = list(named.nodes.values())
        job = data.get("job")
        wrong = nodes_not_of_job(job=job, nodes=data["nodes"]) if job else ""
        if wrong:  # another job's nodes would mark that job degraded (docs/incidents.md)
            self.add_error("nodes", wrong)
        if data.get("interrupts_job") and data.get("job") is None and not self.has_error("job"):
            self.add_error("interrupts_job", _("name the job it interrupts"))
        return data


def job_named(cluster: Cluster, text: str) -> Job | None:
    """The job a person means: its number, its Slurm job id, or its name (the newest)."""
    jobs = Job.objects.filter(cluster=cluster)
    if text.isdigit():
        found = jobs.filter(pk=int(text)).first()
        if found is not None:
            return found
    return (
        jobs.filter(external_id=text).order_by("-id").first()
        or jobs.filter(name=text).order_by("-id").first()
    )


def _hostlist_text(text: str) -> str:
    """What a person types (`gpu1, gpu2`, `gpu[1-2, 7]`, one per line) as a hostlist."""
    return ",".join(text.replace(",", " ").split())


class PostmortemForm(forms.Form):
    """The postmortem's text fields."""

    summary = forms.CharField(
        required=False, label=gettext_lazy("Summary"), widget=forms.Textarea(attrs={"rows": 3})
    )
    root_cause = forms.CharField(
        required=False, label=gettext_lazy("Root cause"), widget=forms.Textarea(attrs={"rows": 3})
    )
    category = forms.ChoiceField(choices=Category.choices, label=gettext_lazy("Category"))
    contributing_factors = forms.CharField(
        required=False,
        label=gettext_lazy("Contributing factors"),
        widget=forms.Textarea(attrs={"rows": 3}),
    )


class TimelineItemForm(forms.Form):
    """One line of the postmortem's own timeline."""

    at = forms.DateTimeField(
        label=gettext_lazy("At"),
        help_text="UTC",
        widget=forms.DateTimeInput(format="%Y-%m-%d %H:%M:%S"),
    )
    text = forms.CharField(max_length=2000, label=gettext_lazy("Text"))


class ActionItemForm(forms.Form):
    """An action item: text, owner (a user), due date, done."""

    text = forms.CharField(max_length=2000, label=gettext_lazy("Text"))
    owner = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True).order_by("username"),
        to_field_name="username",
        label=gettext_lazy("Owner"),
    )
    due = forms.DateField(
        required=False,
        label=gettext_lazy("Due"),
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )
    done = forms.BooleanField(required=False, label=gettext_lazy("Done"))

    def clean_due(self) -> dt.date | None:
        """A new or moved due date is not in the past (one already there may be overdue)."""
        due = self.cleaned_data.get("due")
        if due and due < timezone.now().date() and due != self.initial.get("due"):
            raise forms.ValidationError(_("is in the past"))
        return due


class LabelledRows(forms.BaseFormSet):
    """A formset drawn as table rows, one column per field with no <label> beside it: each
    control names its field and row for screen readers (WCAG: every control labelled)."""

    def add_fields(self, form: forms.Form, index: int | None) -> None:
        super().add_fields(form, index)
        row = _("new row") if index is None else _("row %(n)s") % {"n": index + 1}
        for name, field in form.fields.items():
            label = _("Delete") if name == "DELETE" else (field.label or name.replace("_", " "))
            field.widget.attrs["aria-label"] = f"{str(label).capitalize()}, {row}"


def with_added_row(data: QueryDict, prefix: str, *, max_rows: int) -> QueryDict | None:
    """`data` with one more (blank) row in formset `prefix`, up to `max_rows`: the editor's
    Add buttons without JavaScript. None when the row count sent is not a count (the
    formset refuses it as it would on a save)."""
    key = f"{prefix}-TOTAL_FORMS"
    total = data.get(key, "")
    if not total.isdecimal():
        return None
    out = data.copy()
    out[key] = str(min(int(total) + 1, max_rows))
    return out


def unjudged(form: forms.Form | forms.BaseFormSet) -> None:
    """Draw a bound form or formset as typed, with no errors: adding a row is not a submit,
    so a row still being filled in is not 'required' yet (Django validates a bound form the
    first time its errors are read; this gives it none to find)."""
    if isinstance(form, forms.BaseFormSet):
        for row in form.forms:
            unjudged(row)
        form._errors = [row.errors for row in form.forms]  # type: ignore[attr-defined]
        form._non_form_errors = form.error_class()  # type: ignore[attr-defined]
    else:
        form._errors = ErrorDict()  # type: ignore[attr-defined]


TimelineFormSet = forms.formset_factory(
    TimelineItemForm, formset=LabelledRows, extra=2, can_delete=True, max_num=200
)
ActionFormSet = forms.formset_factory(
    ActionItemForm, formset=LabelledRows, extra=2, can_delete=True, max_num=200
)


class ReviewForm(forms.Form):
    """The comment that goes with submit, approve or reject."""

    comment = forms.CharField(
        required=False,
        max_length=5000,
        label=gettext_lazy("Comment"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )
