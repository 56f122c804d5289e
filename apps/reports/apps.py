from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "apps.reports"
    label = "reports"

    def ready(self) -> None:
        # Jobs may not import reports: a job's chart reads its cluster's MFU target through this.
        from apps.jobs import readers as job_readers
        from apps.reports.panels import panels_lend
        from apps.reports.selectors import mfu_lines

        job_readers.lend(mfu_lines=mfu_lines)
        panels_lend()  # the job page's effective-rate card
