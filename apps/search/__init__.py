"""Global search: hostnames, hostlists, jobs (name, id, Slurm id) and incident numbers."""
