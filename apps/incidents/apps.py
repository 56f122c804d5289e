from django.apps import AppConfig


class IncidentsConfig(AppConfig):
    name = "apps.incidents"
    label = "incidents"

    def ready(self) -> None:
        # Jobs and the fleet may not import incidents: they read open incidents through these.
        from apps.fleet import readers as fleet_readers
        from apps.fleet import transitions
        from apps.incidents import (
            alerts_out,  # noqa: F401 - registry of alert producers, checked at start-up
            checks,  # noqa: F401 - registers the deploy checks
            silences,  # noqa: F401 - registry, checked at start-up
        )
        from apps.incidents.alerts_soon import connect
        from apps.incidents.conditions import job_incidents, node_incidents
        from apps.incidents.panels import panels_lend
        from apps.incidents.recovery import job_recorded, mitigation_follow, road_check_many
        from apps.incidents.selectors import job_interruptions
        from apps.jobs import readers as job_readers

        fleet_readers.lend(node_incidents=node_incidents)
        job_readers.lend(
            job_incidents=job_incidents,
            interruptions=job_interruptions,
            # a job that keeps making progress is not interrupted; one that restarted has
            # its road back read (docs/incidents.md, The road back)
            progressed=job_recorded,
            restarted=road_check_many,
        )
        panels_lend()  # the job page's incidents card
        transitions.follow(name="incidents.mitigation", follower=mitigation_follow)
        connect()  # an incident's alert goes out when it commits, not on the next tick
