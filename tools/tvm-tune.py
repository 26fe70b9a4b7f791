#!/usr/bin/env python3
"""tvm-tune: AutoTVM over te templates (a thin script over tvmd.tools.tune_main)."""
import sys

from tvmd.tools.tune_main import main

sys.exit(main())
