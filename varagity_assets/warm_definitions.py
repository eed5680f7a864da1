"""Imported by the code server's forkserver (:data:`varagity_assets.code_server.WARM_MODULES`):
builds the location's definitions once, before any run worker is forked from it, so
that no run rebuilds them. Nothing else imports it."""

from varagity_assets.definitions import build

build()
