"""``python -m training.cli``: cockroach-train."""

import sys

from training.cli.train import main

sys.exit(main())
