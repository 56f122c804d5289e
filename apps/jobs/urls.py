"""Job pages and the job page's chart."""

from django.urls import path

from apps.jobs import views

urlpatterns = [
    path("jobs/", views.job_list_page, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail_page, name="job-detail"),
    path("jobs/<int:pk>/ranks/", views.job_ranks_fragment, name="job-ranks"),
    path("charts/jobs/<int:pk>/progress.json", views.job_progress_chart, name="chart-job-progress"),
]
