"""The location's definitions, one folder per domain, loaded by ``definitions.py``.

Every module here is searched for assets, checks, jobs and sensors; helpers that define
none of those may live beside them.
"""
