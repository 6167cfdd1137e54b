"""The node operations ask the volume's node handler and never its kind (node/operations.py): one handler per volume
kind, named by dotted path in NODE_HANDLER on the plugin's or the driver's class and chosen by NodeContext.handler,
each with every phase verb the operations call."""
import ast

from ansible_collections.kubevol.volumes.plugins.module_utils.common import registry
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import external_driver_class
from ansible_collections.kubevol.volumes.plugins.module_utils.node import operations
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.driver_ops import DriverHandler
from ansible_collections.kubevol.volumes.plugins.module_utils.node.external_ops import ExternalHandler
from ansible_collections.kubevol.volumes.plugins.module_utils.node.plugin_ops import PluginHandler
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

LOCAL = "kubernetes.io/local-volume"
HOST = "kubernetes.io/host-path"
EXTERNAL = "hostpath.csi.k8s.io"
VERBS = ("attach", "mount", "publish_ephemeral", "unpublish_ephemeral", "expand_controller", "expand_node", "unmount")


def ctx_for(tmp_path):
    def refuse(argv, data=None):
        raise AssertionError("no command runs here: %r" % (argv,))
    return NodeContext(refuse, node_name="node1", kubelet_dir=str(tmp_path / "kubelet"),
                       driver_options={LOCAL: {"paths": [str(tmp_path)]}, HOST: {"paths": [str(tmp_path)]},
                                       EXTERNAL: {"socket": str(tmp_path / "csi.sock")}})


def test_the_context_chooses_each_kinds_handler_by_its_class_data(tmp_path):
    ctx = ctx_for(tmp_path)
    loop = volume_item({"pv_name": "pv-a", "driver": "loop.kubevol.io", "volume_handle": "pv-a.img"})
    external = volume_item({"pv_name": "pv-e", "driver": EXTERNAL, "volume_handle": "vol-1"})
    local = volume_item({"pv_name": "pv-l", "plugin": LOCAL, "path": str(tmp_path)})
    host = volume_item({"pv_name": "pv-h", "plugin": HOST, "path": str(tmp_path), "host_path_type": "Directory"})
    assert ctx.handler(loop).__class__ is DriverHandler
    assert ctx.handler(external).__class__ is ExternalHandler
    assert ctx.handler(local).__class__ is PluginHandler and ctx.handler(host).__class__ is PluginHandler
    assert ctx.handler(loop) is ctx.handler(loop)  # one handler object per kind, loaded once


def test_every_handler_the_classes_name_has_the_verbs_the_operations_call():
    paths = set(cls.NODE_HANDLER for cls in list(registry.PLUGIN_REGISTRY.values()) + list(
        registry.DRIVER_REGISTRY.values()) if cls.NODE_HANDLER)
    paths.add(external_driver_class(EXTERNAL).NODE_HANDLER)
    assert len(paths) == 3, sorted(paths)
    for path in paths:
        handler = registry.load(path)()
        missing = [verb for verb in VERBS if not callable(getattr(handler, verb, None))]
        assert not missing, (path, missing)
    # the verbs above are the ones node/operations.py calls
    with open(operations.__file__) as handle:
        tree = ast.parse(handle.read())
    called = set(node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call)
                 and getattr(node.func.value.func, "attr", None) == "handler") | set(
        node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", None) == "handler")
    assert called == set(VERBS), sorted(called)


def test_the_operations_never_ask_the_volumes_kind():
    """No branch on the kind in node/operations.py: not the plugin, not the driver, not whether it is external."""
    with open(operations.__file__) as handle:
        source = handle.read()
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    asked = names & {"csi", "plugin", "driver", "is_external", "plugin_ops", "external_ops", "driver_ops",
                     "ephemeral", "external_ephemeral", "DeviceDriver"}
    # ``item.ephemeral`` is the volume's lifecycle mode (persistent or inline), which every kind has; the handler
    # modules are named once, in the finder's import lines
    assert asked <= {"ephemeral", "plugin_ops", "external_ops", "driver_ops"}, sorted(asked)
    body = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    used = set(n.id for f in body for n in ast.walk(f) if isinstance(n, ast.Name))
    assert not used & {"plugin_ops", "external_ops", "driver_ops"}, sorted(used)
