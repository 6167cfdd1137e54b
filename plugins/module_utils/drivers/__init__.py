# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver registry: CSI driver name -> driver class. Adding a driver means adding one class here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnknownDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import LoopDriver

DRIVERS = {
    LoopDriver.NAME: LoopDriver,
}


def get_driver(name, volume=None):
    """The driver class registered for CSI driver ``name``; raises UnknownDriver."""
    try:
        return DRIVERS[name]
    except (KeyError, TypeError):
        raise UnknownDriver(driver=name, volume=volume, known=", ".join(sorted(DRIVERS)))
