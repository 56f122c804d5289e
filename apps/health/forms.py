"""The thresholds form operators edit on the health page, built from their one definition."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext as _

from apps.health.checks import SCHEDULED_KINDS, kind_label
from apps.health.limits import DEFAULTS, FIELDS, bounds, check_value
from apps.health.models import Thresholds


class _Number(forms.NumberInput):
    """A number as its default is written: 10, not 10.0 (a float's exact digits kept)."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return super().format_value(value)


class ThresholdsForm(forms.Form):
    """Every threshold of `apps.health.limits`, with its label, unit and bounds."""

    def __init__(self, *args: Any, instance: Thresholds, **kwargs: Any) -> None:
        self.instance = instance
        current = instance.limits
        kwargs["initial"] = {f.name: getattr(current, f.name) for f in FIELDS}
        super().__init__(*args, **kwargs)
        for f in FIELDS:
            whole = isinstance(f.default, int)
            field_class = forms.IntegerField if whole else forms.FloatField
            unit, check = f.metadata["unit"], f.metadata["check"]
            # A declared check that does not run yet: its thresholds can be set ahead, and
            # say so.
            waiting = (
                ""
                if check in ("*", *SCHEDULED_KINDS)
                else _(" — %(check)s, not run yet") % {"check": kind_label(check)}
            )
            self.fields[f.name] = field_class(
                widget=_Number(attrs={"step": "1" if whole else "any"}),
                label=f"{f.metadata['label']}{f' ({unit})' if unit else ''}{waiting}",
                help_text=_("default %(value)s") % {"value": f"{DEFAULTS[f.name]:g}"},
                error_messages={
                    "invalid": f"must be a {'whole ' if whole else ''}number {bounds(f.name)}"
                },
            )

    def groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """The fields by the check they belong to, as the page shows them: those every
        check shares first, then each check's, in the plug-ins' order."""
        kinds = dict.fromkeys(f.metadata["check"] for f in FIELDS)
        return [
            (
                _("Every check") if kind == "*" else str(kind_label(kind)),
                [self[f.name] for f in FIELDS if f.metadata["check"] == kind],
            )
            for kind in kinds
        ]

    def reading_groups(self) -> list[tuple[str, list[tuple[str, float, float]]]]:
        """(label, value in force, default) of every threshold, by check as `groups`."""
        return [
            (title, [(str(b.label), self.initial[b.name], DEFAULTS[b.name]) for b in fields])
            for title, fields in self.groups()
        ]

    def clean(self) -> dict[str, Any]:
        """Each value within its bounds."""
        data = super().clean() or {}
        for name, value in list(data.items()):
            problem = check_value(name, value) if value is not None else None
            if problem:
                self.add_error(name, problem)
        return data

    def save(self, *, by: str) -> Thresholds:
        """Store the values that differ from the defaults."""
        self.instance.values = {
            name: value for name, value in self.cleaned_data.items() if value != DEFAULTS[name]
        }
        self.instance.updated_by = by
        self.instance.save()
        return self.instance
