"""kuae-agent: runs on a GPU node, reads dcgm-exporter (or nvidia-smi) and the GEMM probe,
and posts to KUAE Ops — buffering to disk while the server is unreachable."""
