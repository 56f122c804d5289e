"""Forms on the incident page: edit (engineers; operators acknowledge and set times), comment."""

from __future__ import annotations

from django import forms

from apps.incidents.choices import Category, IncidentStatus, Severity

OPERATOR_STATUSES = (IncidentStatus.INVESTIGATING, IncidentStatus.MITIGATED)


class IncidentEditForm(forms.Form):
    """The fields an engineer edits in the browser; times are UTC."""

    status = forms.ChoiceField(choices=IncidentStatus.choices)
    severity = forms.ChoiceField(choices=Severity.choices)
    category = forms.ChoiceField(choices=Category.choices)
    occurred_at = forms.DateTimeField(required=False, help_text="UTC")
    detected_at = forms.DateTimeField(help_text="UTC")
    localized_at = forms.DateTimeField(required=False, help_text="UTC")
    recovered_at = forms.DateTimeField(required=False, help_text="UTC")
    resolved_at = forms.DateTimeField(required=False, help_text="UTC")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args: object, engineer: bool, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.engineer = engineer
        if not engineer:  # operators: acknowledge and set the times, nothing else
            for name in ("severity", "category", "description"):
                del self.fields[name]
            self.fields["status"].choices = [(s.value, s.label) for s in OPERATOR_STATUSES]


class CommentForm(forms.Form):
    """A comment on the incident's timeline."""

    text = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))
