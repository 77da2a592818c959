"""What operators watch: structured logs with request ids, and Prometheus metrics (docs/monitoring.md)."""
