# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side operations: small functions over an injected runner (see runner.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
