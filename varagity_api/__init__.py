"""Varagity's HTTP service (``uvicorn varagity_api.main:app``)."""
