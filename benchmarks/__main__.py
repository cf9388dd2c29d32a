"""``python -m benchmarks [--quick]``: every benchmark module, one table."""

import sys

from benchmarks.run import main

sys.exit(main())
