"""Incident and postmortem forms: file, edit (operators acknowledge and set times), comment,
the postmortem editor and its review."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.forms.utils import ErrorDict
from django.http import QueryDict
from django.utils import timezone

from apps.accounts.models import User
from apps.common.hostnames import HostlistError, Hostlists
from apps.fleet.models import Cluster
from apps.fleet.validators import nodes_named
from apps.incidents.choices import Category, IncidentStatus, Severity
from apps.incidents.policy import OPERATOR_FIELDS, status_choices
from apps.incidents.selectors import nodes_not_of_job
from apps.jobs.models import Job


class IncidentEditForm(forms.Form):
    """The fields an engineer edits in the browser; times are UTC."""

    status = forms.ChoiceField(choices=IncidentStatus.choices)
    severity = forms.ChoiceField(choices=Severity.choices)
    category = forms.ChoiceField(choices=Category.choices)
    occurred_at = forms.DateTimeField(required=False, help_text="UTC")
    detected_at = forms.DateTimeField(
        required=False, help_text="UTC; blank: when it occurred, else now"
    )
    localized_at = forms.DateTimeField(required=False, label="Localised at", help_text="UTC")
    mitigated_at = forms.DateTimeField(required=False, help_text="UTC")
    restarted_at = forms.DateTimeField(required=False, help_text="UTC")
    restored_at = forms.DateTimeField(required=False, help_text="UTC")
    recovered_at = forms.DateTimeField(required=False, help_text="UTC")
    caught_up_at = forms.DateTimeField(required=False, label="Caught up at", help_text="UTC")
    resolved_at = forms.DateTimeField(required=False, help_text="UTC")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

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
        label="Comment",
        widget=forms.Textarea(attrs={"rows": 2, "aria-label": "Comment on this incident"}),
    )


class IncidentFileForm(forms.Form):
    """An engineer files an incident; nodes as hostnames or a Slurm hostlist (gpu[001-004])."""

    title = forms.CharField(max_length=300)
    cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.order_by("name"), to_field_name="name"
    )
    category = forms.ChoiceField(choices=Category.choices)
    severity = forms.ChoiceField(choices=Severity.choices, initial=Severity.SEV3)
    occurred_at = forms.DateTimeField(required=False, help_text="UTC")
    detected_at = forms.DateTimeField(
        required=False, help_text="UTC; blank: when it occurred, else now"
    )
    localized_at = forms.DateTimeField(required=False, label="Localised at", help_text="UTC")
    recovered_at = forms.DateTimeField(required=False, help_text="UTC")
    job = forms.CharField(
        required=False, max_length=200, help_text="the job's name, number or Slurm job id"
    )
    nodes = forms.CharField(
        required=False,
        max_length=100_000,
        help_text="hostnames or hostlist, e.g. gpu[001-004]",
    )
    interrupts_job = forms.BooleanField(required=False, label="Interrupts the job")
    planned = forms.BooleanField(required=False)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

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
                self.add_error("job", f"no job {wanted_job} in cluster {cluster.name}")
        try:  # counted against the bound before any name is made (docs/operations.md, Limits)
            wanted = Hostlists().hostnames(_hostlist_text(data.get("nodes") or ""))
        except HostlistError as exc:
            self.add_error("nodes", f"not a hostlist: {exc}")
            return data
        named = nodes_named(cluster_id=cluster.pk, hostnames=wanted)
        if named.unknown:
            self.add_error("nodes", f"unknown in {cluster.name}: {', '.join(named.unknown[:10])}")
        data["nodes"] = list(named.nodes.values())
        job = data.get("job")
        wrong = nodes_not_of_job(job=job, nodes=data["nodes"]) if job else ""
        if wrong:  # another job's nodes would mark that job degraded (docs/incidents.md)
            self.add_error("nodes", wrong)
        if data.get("interrupts_job") and data.get("job") is None and not self.has_error("job"):
            self.add_error("interrupts_job", "name the job it interrupts")
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

    summary = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    root_cause = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    category = forms.ChoiceField(choices=Category.choices)
    contributing_factors = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


class TimelineItemForm(forms.Form):
    """One line of the postmortem's own timeline."""

    at = forms.DateTimeField(
        help_text="UTC", widget=forms.DateTimeInput(format="%Y-%m-%d %H:%M:%S")
    )
    text = forms.CharField(max_length=2000)


class ActionItemForm(forms.Form):
    """An action item: text, owner (a user), due date, done."""

    text = forms.CharField(max_length=2000)
    owner = forms.ModelChoiceField(
        queryset=User.objects.filter(is_active=True).order_by("username"),
        to_field_name="username",
    )
    due = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )
    done = forms.BooleanField(required=False)

    def clean_due(self) -> dt.date | None:
        """A new or moved due date is not in the past (one already there may be overdue)."""
        due = self.cleaned_data.get("due")
        if due and due < timezone.now().date() and due != self.initial.get("due"):
            raise forms.ValidationError("is in the past")
        return due


class LabelledRows(forms.BaseFormSet):
    """A formset drawn as table rows, one column per field with no <label> beside it: each
    control names its field and row for screen readers (WCAG: every control labelled)."""

    def add_fields(self, form: forms.Form, index: int | None) -> None:
        super().add_fields(form, index)
        row = "new row" if index is None else f"row {index + 1}"
        for name, field in form.fields.items():
            label = "Delete" if name == "DELETE" else (field.label or name.replace("_", " "))
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
        required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2})
    )
