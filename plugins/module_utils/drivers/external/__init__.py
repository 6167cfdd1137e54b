# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive any CSI driver over its sockets, as the kubelet and the external-attacher and -resizer do.

driver.py (``ExternalCsiDriver``, ``external_driver_class(name)``, ``configured_drivers(driver_options)``),
requests.py (the requests, pure), endpoint.py and registration.py (finding the socket), errors.py (how a
volume fails), secrets.py (a PV's secrets from its Secret objects, for the controller side).
docs/csi.md says how to point kubevol at a driver.
"""
