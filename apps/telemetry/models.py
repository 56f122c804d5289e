"""What the fleet's GPUs, ports and ranks reported that matters later (events) and each
node's telemetry per 5 minutes (rollups).

Both were the fleet's until telemetry became an app of its own (docs/architecture.md): the
migrations fleet.0018 and telemetry.0001 moved Django's record of them here, and their
tables kept their names (`fleet_telemetryevent`, `fleet_noderollup`, the latter partitioned
by day on PostgreSQL with partitions named after it), rows and ids with them.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.common.words import Words
from apps.fleet.models import Node
from apps.telemetry.host_kinds import SUBJECT_LENGTH
from apps.telemetry.monitored import event_kinds
from apps.telemetry.names import ROLLUP_METRICS
from apps.telemetry.ports import COUNTERS, STATE_LENGTH, Growth, counter_growth


class TelemetryEvent(models.Model):
    """Something a GPU reported that matters later: an XID, a counter that grew, a reset.

    From telemetry (`source` exporter: the XID gauge changed, a counter grew) or from the
    node's kernel log (`source` kernel: every `NVRM: Xid` line, docs/xid.md). An XID's
    `value` is its code (also in `code`). A kernel XID names the GPU by PCI address; `gpu` is
    None until the node's telemetry has said which index has that address.
    """

    # The columns a bulk insert names, every one of them: INSERT OR IGNORE would also skip a
    # row for a missing NOT NULL column. (`subject`, for the intake's port and rank events
    # alone, takes its database default there: empty.)
    INSERT_COLUMNS = (
        "node_id",
        "gpu",
        "at",
        "kind",
        "value",
        "previous",
        "code",
        "pci_bus",
        "message",
        "source",
        "recorded_at",
    )

    class Kind(models.TextChoices):
        XID = "xid", _("XID error")
        ECC_SBE = "ecc_sbe", _("ECC single-bit errors grew")
        ECC_DBE = "ecc_dbe", _("ECC double-bit errors grew")
        NVLINK_CRC = "nvlink_crc", _("NVLink CRC errors grew")
        PCIE_REPLAY = "pcie_replay", _("PCIe replays grew")
        COUNTER_RESET = "counter_reset", _("Counter reset")

    class Source(models.TextChoices):
        EXPORTER = "exporter", pgettext_lazy("event source", "Exporter")
        KERNEL = "kernel", _("Kernel log")

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="events")
    gpu = models.PositiveSmallIntegerField(null=True, blank=True)
    at = models.DateTimeField()
    # Telemetry's own kinds (`Kind`) or one a check plug-in declares
    # (`apps.telemetry.monitored`): not a database choice, so a new check's events need no
    # migration.
    kind = models.CharField(max_length=32)
    # What the event belongs to when not a GPU: `port:mlx5_0/1`, `rank:12`; empty for a
    # GPU's event (`gpu`/`pci_bus`) or the node's own.
    subject = models.CharField(max_length=64, blank=True, default="", db_default="")
    value = models.FloatField()
    previous = models.FloatField(null=True, blank=True)
    code = models.PositiveIntegerField(null=True, blank=True, help_text="XID code")
    # Database defaults too: bulk inserts that do not name these columns stay valid.
    pci_bus = models.CharField(max_length=16, blank=True, default="", db_default="")
    message = models.CharField(max_length=500, blank=True, default="", db_default="")
    source = models.CharField(
        max_length=8, choices=Source.choices, default=Source.EXPORTER, db_default="exporter"
    )
    recorded_at = models.DateTimeField(db_default=Now(), help_text="server time it arrived")

    class Meta:
        db_table = "fleet_telemetryevent"  # the name it was made with, in the fleet
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["node", "at"], name="event_node_at"),
            models.Index(fields=["at"], name="event_at"),
            models.Index(fields=["recorded_at"], name="event_recorded_at"),
            # Kernel XIDs whose PCI address no GPU had yet (placed once telemetry tells).
            models.Index(
                fields=["node"], condition=models.Q(gpu__isnull=True), name="event_unplaced"
            ),
        ]
        constraints = [
            # Each is what makes re-posting a batch store nothing twice (insert-or-ignore).
            models.UniqueConstraint(
                fields=["node", "gpu", "at", "kind"],
                condition=models.Q(source="exporter"),
                name="event_once",
            ),
            # A kernel event is (node, PCI address or GPU, code, ts) — docs/xid.md.
            models.UniqueConstraint(
                fields=["node", "kind", "pci_bus", "code", "at"],
                condition=models.Q(source="kernel") & ~models.Q(pci_bus=""),
                name="kernel_event_bus_once",
            ),
            models.UniqueConstraint(
                fields=["node", "kind", "gpu", "code", "at"],
                condition=models.Q(source="kernel", pci_bus=""),
                name="kernel_event_gpu_once",
            ),
            # A port's or a rank's event: (node, kind, subject, ts).
            models.UniqueConstraint(
                fields=["node", "kind", "subject", "at"],
                condition=~models.Q(subject=""),
                name="subject_event_once",
            ),
        ]

    def __str__(self) -> str:
        where = self.gpu if self.gpu is not None else self.subject or self.pci_bus
        return f"{self.node_id}/{where} {self.kind}={self.value:g} @ {self.at:%Y-%m-%d %H:%M}"

    @property
    def kind_label(self) -> Words:
        """What a person reads for the event's kind."""
        lent = event_kinds().get(self.kind)
        return lent.label if lent else dict(self.Kind.choices).get(self.kind, self.kind)


def _rollup_fields() -> dict[str, models.Field]:
    fields: dict[str, models.Field] = {}
    for metric in ROLLUP_METRICS:
        fields[f"{metric}_min"] = models.FloatField(null=True)
        fields[f"{metric}_max"] = models.FloatField(null=True)
        fields[f"{metric}_sum"] = models.FloatField(default=0)
        fields[f"{metric}_n"] = models.IntegerField(default=0)
    return fields


class NodeRollupBase(models.Model):
    """Columns min/max/sum/n per rolled-up metric (mean = sum / n)."""

    class Meta:
        abstract = True


for _name, _field in _rollup_fields().items():
    NodeRollupBase.add_to_class(_name, _field)


class NodeRollup(NodeRollupBase):
    """One node's GPU telemetry over one 5-minute bucket, all its GPUs together."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="rollups")
    bucket = models.DateTimeField(help_text="start of the 5-minute bucket")

    class Meta:
        # The name it was made with, in the fleet: on PostgreSQL its day partitions are
        # named after it (apps/common/partitions.py), so it keeps it.
        db_table = "fleet_noderollup"
        constraints = [
            models.UniqueConstraint(fields=["node", "bucket"], name="rollup_node_bucket")
        ]
        indexes = [models.Index(fields=["bucket"], name="rollup_bucket")]

    def __str__(self) -> str:
        return f"{self.node_id} @ {self.bucket:%Y-%m-%d %H:%M}"

    def mean(self, metric: str) -> float | None:
        """Mean of `metric` over the bucket."""
        n = getattr(self, f"{metric}_n")
        return getattr(self, f"{metric}_sum") / n if n else None


class Port(models.Model):
    """A NIC port of a node (InfiniBand or RoCE: `device` such as mlx5_0, `port` number),
    the switch and switch port at its cable's far end when reported, and its latest reading
    with the previous reading's counters, so growth since then can be shown
    (docs/integrations.md, NIC ports). Made by the telemetry intake; at most
    `PORTS_PER_NODE` per node."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="ports")
    device = models.CharField(max_length=40)
    port = models.PositiveSmallIntegerField()
    switch = models.CharField(max_length=253, blank=True, default="")
    switch_port = models.CharField(max_length=64, blank=True, default="")
    # The latest reading: `ts` is also the port's high-water mark (older readings ignored).
    ts = models.DateTimeField(null=True, blank=True, help_text="latest reading's ts")
    # ACTIVE, DOWN, INIT, ARMED, ACTIVE_DEFER…: another state by the name it was reported with
    state = models.CharField(max_length=STATE_LENGTH, blank=True, default="")
    phys_state = models.CharField(max_length=32, blank=True, default="")  # LinkUp, Polling, …
    rate_gbps = models.FloatField(null=True, blank=True)
    counters = models.JSONField(default=dict, blank=True)
    # The reading before the latest one: its counters and time.
    prev_counters = models.JSONField(default=dict, blank=True)
    prev_ts = models.DateTimeField(null=True, blank=True)
    # The reading the fabric check judged last: the next run measures growth from it, not
    # from the previous reading (docs/checks.md, `fabric`). Written by the check's run.
    judged_ts = models.DateTimeField(null=True, blank=True)
    # (database defaults: the intake's bulk insert names only the reading's columns)
    judged_state = models.CharField(max_length=STATE_LENGTH, blank=True, default="", db_default="")
    judged_counters = models.JSONField(default=dict, blank=True, db_default={})

    class Meta:
        ordering = ["node", "device", "port"]
        constraints = [
            models.UniqueConstraint(fields=["node", "device", "port"], name="port_node_device")
        ]
        verbose_name = "NIC port"
        verbose_name_plural = "NIC ports"

    def __str__(self) -> str:
        return f"{self.node_id}/{self.device}/{self.port}"

    @property
    def state_tone(self) -> str:
        """The result colour its state badge takes (pass, warn, fail; '' when unreported):
        a state other than these four (ACTIVE_DEFER, one the kernel adds) is not ACTIVE,
        so a warning."""
        if not self.state:
            return ""
        return {"ACTIVE": "pass", "DOWN": "fail"}.get(self.state, "warn")

    @property
    def growth(self) -> list[Growth]:
        """The counters that grew (or were reset) since the previous reading."""
        return counter_growth(self.prev_counters, self.counters)


class PortRollupBase(models.Model):
    """One column per fabric counter (`apps.telemetry.ports.COUNTERS`): its growth."""

    class Meta:
        abstract = True


for _counter in COUNTERS:
    PortRollupBase.add_to_class(_counter, models.FloatField(default=0))


class PortRollup(PortRollupBase):
    """One node's NIC ports over one 5-minute bucket, all its ports together: how much each
    fabric counter grew (summed over its ports; a reset counts its new value, as
    `counter_growth` does), how many ports reported and the most of them not `ACTIVE` in one
    batch. What the node page charts when the cluster has no Prometheus (KUAE keeps no
    history per port): written by the ports intake, one upsert per batch, and pruned with
    the GPU rollups (docs/integrations.md, NIC ports)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="port_rollups")
    bucket = models.DateTimeField(help_text="start of the 5-minute bucket")
    ports = models.PositiveSmallIntegerField(default=0, help_text="ports that reported")
    not_active = models.PositiveSmallIntegerField(
        default=0, help_text="the most ports not ACTIVE in one batch"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "bucket"], name="port_rollup_node_bucket")
        ]
        indexes = [models.Index(fields=["bucket"], name="port_rollup_bucket")]

    def __str__(self) -> str:
        return f"{self.node_id} ports @ {self.bucket:%Y-%m-%d %H:%M}"


class HostReading(models.Model):
    """What a node reports about its host, one row per (node, kind, subject): a memory
    controller's error counts, a mount's space and state, a PCIe device's link and AER
    counts, the clock's offset (docs/integrations.md, Host readings). Its latest values and
    the previous reading's, so growth since then can be measured; at most
    `HOST_SUBJECTS_PER_NODE` per node. Made by the telemetry intake.

    `kind` is one of `apps.telemetry.host_kinds.HOST_KINDS` and `values` holds its declared
    names: a new kind is a declaration there, never a column or a migration here."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="host_readings")
    # Not a database choice: a kind is declared in apps/telemetry/host_kinds.py.
    kind = models.CharField(max_length=32)
    subject = models.CharField(max_length=SUBJECT_LENGTH)  # mc0, /checkpoints, 0000:17:00.0
    # The latest reading: `ts` is also the subject's high-water mark (older readings ignored).
    # (None only inside the batch that makes the row: it is made first, then given its reading.)
    ts = models.DateTimeField(null=True, blank=True, help_text="latest reading's ts")
    # (its column named apart from SQL's keyword VALUES: the intake's bulk SQL names it)
    values = models.JSONField(default=dict, blank=True, db_column="latest_values")
    # The reading before the latest one: its values and time.
    prev_values = models.JSONField(default=dict, blank=True)
    prev_ts = models.DateTimeField(null=True, blank=True)
    # agent, node_exporter, prometheus (apps.telemetry.host_kinds.Source): of the latest.
    source = models.CharField(max_length=16, default="agent")
    # The reading a check judged last: its next run measures growth from it, not from the
    # previous reading. Written by the checks' runs (database defaults: the intake's bulk
    # insert names only the reading's columns).
    judged_ts = models.DateTimeField(null=True, blank=True)
    judged_values = models.JSONField(default=dict, blank=True, db_default={})

    class Meta:
        ordering = ["node", "kind", "subject"]
        constraints = [
            models.UniqueConstraint(fields=["node", "kind", "subject"], name="host_reading_once")
        ]

    def __str__(self) -> str:
        return f"{self.node_id}/{self.kind}/{self.subject}"
