"""The ``varagity`` command line: a front end over the domain library, the stack, the
Dagster run control and the benchmarks (everything else imports nothing from here)."""
