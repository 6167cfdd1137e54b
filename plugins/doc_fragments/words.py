# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # How remedies name a setting (module_utils/common/words.py): every module that takes words, the node modules too.
    DOCUMENTATION = r'''
options:
  words:
    description:
      - How a remedy in a message names a setting to change. V(module) - as a module's option (C(provision=true)).
        V(role) - as the reconcile role's variable (C(kubevol_provision=true)); the reconcile role sets it.
    type: str
    choices: [module, role]
    default: module
    version_added: 0.2.0
'''
