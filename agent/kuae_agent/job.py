"""Which KUAE job a training process reports for (docs/agent.md, The environment):
KUAE_JOB_ID, else the job whose `external_id` is the Slurm job id (SLURM_JOB_ID) in the
cluster KUAE_CLUSTER, looked up with `GET /api/v1/jobs/?external_id=&cluster=`.

One `JobRef` is shared by a Reporter's sender and its watchdog: whichever asks first looks
the job up, and the other finds it known — a rank that sends no samples resolves the job
the same way rank 0 does.
"""

from __future__ import annotations

import threading

from kuae_agent.client import Client, Outcome

LOOKUP_PATH = "/api/v1/jobs/"


class JobRef:
    """A job known by its id, or to be found by its Slurm id in a cluster."""

    def __init__(self, job_id: int | None, slurm_job_id: str = "", cluster: str = "") -> None:
        self.id = job_id
        self.slurm_job_id = slurm_job_id
        self.cluster = cluster
        self._lock = threading.Lock()

    @property
    def resolvable(self) -> bool:
        """Whether there is an id, or a Slurm id and a cluster to find it by."""
        return self.id is not None or bool(self.slurm_job_id and self.cluster)

    def resolve(self, client: Client) -> tuple[int | None, str]:
        """The job's id and '' — looked up through `client` the first time — or None and a
        short reason (the server does not know the job yet, or could not be reached)."""
        if self.id is not None:
            return self.id, ""
        if not self.resolvable:
            return None, "no job id, and no Slurm job id and cluster to find it by"
        with self._lock:  # one lookup at a time; the second asker finds the answer
            if self.id is not None:
                return self.id, ""
            outcome, answer = client.request_json(
                "GET",
                LOOKUP_PATH,
                params={"external_id": self.slurm_job_id, "cluster": self.cluster},
            )
            results = answer.get("results") if isinstance(answer, dict) else None
            if outcome is Outcome.STORED and results:
                try:
                    self.id = int(results[0]["id"])
                except (KeyError, TypeError, ValueError, IndexError):
                    return None, "the job lookup's answer has no id"
                return self.id, ""
            return None, answer if isinstance(answer, str) else "no such job (yet)"
