"""Benchmark commands (``varagity bench``, ``varagity models bench``): synthetic corpora,
timed runs, printed tables. They drive the domain library and the stack and are never
imported by either; tests never assert on their timings.
"""
