"""Process metrics exported to Prometheus."""
