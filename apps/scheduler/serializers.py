"""API shapes of the scheduler app."""

from __future__ import annotations

from rest_framework import serializers

from apps.fleet.models import Node, NodeStateChange
from apps.scheduler.models import Actuation


class ActuationSerializer(serializers.ModelSerializer):
    """One drain or resume KUAE asked of the scheduler, and what became of it."""

    node: serializers.SlugRelatedField[Node] = serializers.SlugRelatedField(
        slug_field="hostname", read_only=True
    )
    state_change: serializers.PrimaryKeyRelatedField[NodeStateChange] = (
        serializers.PrimaryKeyRelatedField(read_only=True)
    )

    class Meta:
        model = Actuation
        fields = [
            "id",
            "node",
            "action",
            "reason",
            "requested_at",
            "sent_at",
            "result",
            "error",
            "attempts",
            "state_change",
        ]
        read_only_fields = fields


class SlurmResultSerializer(serializers.Serializer):
    """Jobs created and updated; what the NODE_FAIL attempts not seen before did
    (docs/integrations.md, 4. Slurm)."""

    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    incidents = serializers.IntegerField(
        help_text="node_unreachable incidents opened: one per node the NODE_FAIL records name"
    )
    folded = serializers.IntegerField(
        help_text="NODE_FAIL records folded into another record's incident: they name its node"
    )
    skipped = serializers.IntegerField(
        help_text="NODE_FAIL records that opened no incident: past the bound of 200 incidents "
        "per request (their jobs are stored)"
    )
