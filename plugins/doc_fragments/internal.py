# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the reconcile role's internal node modules (plugins/modules/__internal/, docs/internal-modules.md) share:
DOCUMENTATION, their status and attributes; CONTROLLER_CALLS, what the two that make a CSI controller's calls
(csi_controller_calls, volume_provision_calls) say of secrets and check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r'''
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Internal to the reconcile role - its options and results follow the role and may change in any release. It lives
    in C(plugins/modules/__internal/), which C(ansible-doc -l) does not list, and is called by its full name,
    C(kubevol.volumes.__internal.<module>) (docs/internal-modules.md).
'''

    CONTROLLER_CALLS = r'''
attributes:
  check_mode:
    details: Makes only the read-only calls (GetPluginInfo, Probe, the capability calls).
notes:
  - Secrets travel in the volume items' or operations' C(secrets) only (no_log), never in a result or an error.
  - A failure says whether the driver may have done the call (C(uncertain), a non-final gRPC status), with the
    C(KV-...) code its message ends with (C(code)) and the driver's gRPC status (C(grpc_code)).
'''
