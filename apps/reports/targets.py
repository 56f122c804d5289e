"""What management reads the figures against. The brief names effective rate ≥ 99%,
cluster MTBF > 15 days and MFU up to 60%; the availability target is ours."""

TARGETS = {
    "effective_rate": 0.99,
    "mtbf_hours": 15 * 24.0,
    "mean_mfu": 0.60,
    "availability": 0.99,
}
