"""The thresholds form operators edit on the health page."""

from __future__ import annotations

from django import forms

from apps.health.models import Thresholds


class ThresholdsForm(forms.ModelForm):
    """Every threshold of CONTRACT §5, with its unit in the help text."""

    class Meta:
        model = Thresholds
        fields = [
            "heartbeat_s",
            "heartbeat_cluster_share",
            "hang_min_s",
            "hang_step_factor",
            "hang_window",
            "hang_no_metrics_s",
            "slow_factor",
            "slow_samples",
            "slow_min_samples",
            "slow_min_nodes",
            "gemm_factor",
            "sdc_round_s",
            "temp_c",
            "mem_temp_c",
            "drain_cap_share",
        ]

    def clean(self) -> dict:
        data = super().clean()
        for name in ("slow_factor",):
            if data.get(name) is not None and data[name] <= 1:
                self.add_error(name, "must be above 1")
        for name in ("gemm_factor", "heartbeat_cluster_share", "drain_cap_share"):
            if data.get(name) is not None and not 0 < data[name] <= 1:
                self.add_error(name, "must be in (0, 1]")
        return data
