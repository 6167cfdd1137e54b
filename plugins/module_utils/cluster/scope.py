# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubevol_scope: a JMESPath expression over the List's items that selects the pods kubevol manages.

Example: ``[?kind=='Pod' && metadata.namespace=='prod']``. The expression must return objects
(a list of them, or one); only the Pods among them count. An empty scope means "no scoping".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, SettingRefused
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import MissingLibrary

JMESPATH_IMPORT_ERROR = None
try:
    import jmespath
    from jmespath.exceptions import JMESPathError
except ImportError:
    jmespath = None
    JMESPATH_IMPORT_ERROR = traceback.format_exc()


SCOPE = setting("scope")


def search(expression, data, field, error=InvalidInput):
    """jmespath.search with kubevol errors: ``error`` (InvalidInput, or SettingRefused for a setting) carries
    jmespath's own message, on one line."""
    if jmespath is None:
        raise MissingLibrary("jmespath", "to evaluate %s" % field, JMESPATH_IMPORT_ERROR)
    if not isinstance(expression, str):
        raise error(field=field, value=expression, reason="must be a JMESPath expression string")
    try:
        compiled = jmespath.compile(expression)
    except JMESPathError as err:
        raise error(field=field, value=expression, reason="must be a JMESPath expression (%s)" % _one_line(err))
    try:
        return compiled.search(data)
    except JMESPathError as err:
        raise error(field=field, value=expression, reason="must evaluate (JMESPath evaluation failed: %s)"
                    % _one_line(err))


def _one_line(err):
    return " ".join(str(err).split())


def select_pods(cluster_list, expression, field=SCOPE):
    """The set of (namespace, name) of the Pods the expression selects; None when there is no scope.

    field: the setting errors name (common/words.py token: the role's kubevol_scope, the planner module's scope).
    """
    if expression is None or (isinstance(expression, str) and not expression.strip()):
        return None
    items = cluster_list.get("items") if isinstance(cluster_list, dict) else None
    result = search(expression, items if isinstance(items, list) else [], field, SettingRefused)
    if isinstance(result, dict):
        result = [result]
    if not isinstance(result, list) or any(not isinstance(obj, dict) for obj in result):
        raise SettingRefused(field=field, value=expression,
                             reason="must select objects from the items, e.g. [?kind=='Pod' && metadata.namespace=='prod'], "
                                    "but it returned %s" % _describe(result))
    selected = set()
    for obj in result:
        if obj.get("kind") != "Pod":
            continue
        meta = obj.get("metadata") or {}
        if meta.get("name"):
            selected.add((meta.get("namespace") or "default", meta["name"]))
    return selected


def _describe(value):
    if value is None:
        return "null"
    if isinstance(value, list):
        kinds = sorted(set(type(v).__name__ for v in value if not isinstance(v, dict)))
        return "a list containing %s" % ", ".join(kinds)
    return "a %s" % type(value).__name__
