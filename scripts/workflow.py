#!/usr/bin/env python
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run kubevol's sliced reconcile workflow on ansible-runner, the way AWX / Ansible Automation Platform runs it
(docs/fleet.md):

    scripts/workflow.py -i inventory --slices 3 --rounds 5 --until-converged -e kubevol_cluster_state=/srv/cluster.json

The entry point only: the code is the package scripts/kvworkflow/ (its __init__ says what each module does).
``scripts/workflow.py --help`` describes the options.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from kvworkflow.cli import main  # noqa: E402  pylint: disable=wrong-import-position

if __name__ == "__main__":
    sys.exit(main())
