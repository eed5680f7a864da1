"""Backups: one zip per corpus export, verified before it counts, and restores."""
