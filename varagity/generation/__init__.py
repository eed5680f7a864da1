"""Grounded answer generation over retrieved evidence."""
