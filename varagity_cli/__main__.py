"""``python -m varagity_cli``: the same as the ``varagity`` console script."""

import sys

from varagity_cli.main import main

sys.exit(main())
