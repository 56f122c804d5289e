"""The repairs page's forms: add a step (engineers), return the node (operators)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.repairs.choices import RepairAction


class StepForm(forms.Form):
    """One step done to the node."""

    action = forms.ChoiceField(choices=RepairAction.choices, label=_("Action"))
    note = forms.CharField(max_length=2000, required=False, label=_("Note"))
    ticket = forms.CharField(
        max_length=200, required=False, label=_("Ticket"), help_text=_("RMA or vendor case")
    )


class ReturnForm(forms.Form):
    """Return the node: burn-in unless an engineer skips it."""

    skip_burn_in = forms.BooleanField(required=False, label=_("Skip burn-in (engineers)"))
