"""The ``varagity`` commands, one module per command group. Each module's ``register``
adds its commands to the top-level parser (:func:`varagity_cli.main.build_parser`) and
binds each to a ``cmd_*`` function with a typed signature; the functions import the
heavier parts of the library when they run, so ``varagity --help`` starts fast."""
