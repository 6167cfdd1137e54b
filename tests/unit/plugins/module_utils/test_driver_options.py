"""common/driver_options.py: the one mapping of every plugin's and driver's options, its defaults, its checks,
the deprecated loop_pools alias, and the node context that carries it to the drivers."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as do
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import context_from

LOOP = "loop.kubevol.io"


def no_commands(argv, **kwargs):
    raise AssertionError("no command expected: %s" % (argv,))


def test_defaults_are_the_contract():
    assert do.defaults() == {LOOP: {"pools": ["/var/lib/kubevol/pool"]},
                             "kubernetes.io/local-volume": {"paths": ["/mnt/disks"]},
                             "kubernetes.io/host-path": {"paths": []}}
    # written once: the node modules' alias default and the names module's pool are the same
    assert node_args.DEFAULT_LOOP_POOLS == do.DEFAULTS[LOOP]["pools"]


def test_options_for_merges_defaults_per_name_and_never_shares_them():
    given = {"kubernetes.io/host-path": {"paths": ["/srv/data"]}}
    assert do.options_for(given, "kubernetes.io/host-path") == {"paths": ["/srv/data"]}
    assert do.options_for(given, LOOP) == {"pools": ["/var/lib/kubevol/pool"]}
    assert do.options_for(None, "kubernetes.io/local-volume") == {"paths": ["/mnt/disks"]}
    assert do.options_for({}, "kubernetes.io/csi") == {}
    do.options_for({}, LOOP)["pools"].append("/x")
    assert do.DEFAULTS[LOOP]["pools"] == ["/var/lib/kubevol/pool"]


def test_validate_accepts_every_known_name():
    given = {LOOP: {"pools": ["/var/lib/kubevol/pool", "/srv/pool"]},
             "kubernetes.io/local-volume": {"paths": ["/mnt/disks", "/mnt/ssd"]},
             "kubernetes.io/host-path": {"paths": []}, "kubernetes.io/csi": {}}
    assert do.validate(given) == given
    assert do.validate(None) == {} and do.validate({}) == {}
    assert do.validate({LOOP: None}) == {LOOP: {}}


@pytest.mark.parametrize("given, words", [
    ({"loop.kubevol.oi": {"pools": ["/p"]}}, ["'loop.kubevol.oi'", "kubernetes.io/local-volume", LOOP]),
    ({"kubernetes.io/local": {}}, ["'kubernetes.io/local'", "kubernetes.io/host-path"]),
    ({LOOP: {"pool": ["/p"]}}, [LOOP, "'pool'", "its options: pools"]),
    ({"kubernetes.io/csi": {"paths": ["/p"]}}, ["kubernetes.io/csi", "'paths'", "none"]),
    ({LOOP: {"pools": "/p"}}, ["loop.kubevol.io.pools", "list of absolute paths"]),
    ({LOOP: {"pools": ["relative"]}}, ["loop.kubevol.io.pools", "'relative'", "absolute"]),
    ({"kubernetes.io/local-volume": {"paths": ["/mnt/disks/../etc"]}}, ["kubernetes.io/local-volume.paths",
                                                                        "normalized", "'/mnt/etc'"]),
    ({"kubernetes.io/host-path": {"paths": ["/srv/"]}}, ["normalized", "'/srv'"]),
    ({"kubernetes.io/host-path": {"paths": ["//srv"]}}, ["normalized", "write '/srv'"]),
    ({LOOP: ["/p"]}, ["options of loop.kubevol.io must be a mapping"]),
    (["/p"], ["mapping of plugin or driver name"]),
])
def test_validate_refuses_naming_the_key_and_what_is_allowed(given, words):
    with pytest.raises(InvalidInput) as err:
        do.validate(given)
    assert "driver_options" in err.value.msg
    for word in words:
        assert word in err.value.msg


def test_a_drivers_own_options_spec_is_read_from_its_class(monkeypatch):
    from ansible_collections.kubevol.volumes.plugins.module_utils import drivers

    class Fake:
        OPTIONS = {"endpoints": "paths"}

    registry = dict(drivers.DRIVERS, **{"fake.example.com": Fake})
    monkeypatch.setattr(drivers, "DRIVERS", registry)
    monkeypatch.setattr(drivers, "get_driver", lambda name, volume=None: registry[name])
    assert do.validate({"fake.example.com": {"endpoints": ["/run/x"]}}) == {"fake.example.com": {"endpoints": ["/run/x"]}}
    with pytest.raises(InvalidInput) as err:
        do.validate({"fake.example.com": {"pools": ["/p"]}})
    assert "its options: endpoints" in err.value.msg


@pytest.mark.parametrize("path, roots, ok", [
    ("/mnt/disks/a", ["/mnt/disks"], True),
    ("/mnt/disks", ["/mnt/disks"], True),
    ("/mnt/disksX", ["/mnt/disks"], False),
    ("/mnt/disks/../etc", ["/mnt/disks"], False),
    ("/mnt/disks/./a", ["/mnt/disks"], False),
    ("/mnt//disks/a", ["/mnt/disks"], False),
    ("/mnt/disks/a/", ["/mnt/disks"], False),
    ("mnt/disks/a", ["/mnt/disks"], False),
    ("/etc", ["/mnt/disks", "/srv"], False),
    ("/srv/x", ["/mnt/disks", "/srv"], True),
    ("/anything", ["/"], True),
    ("/mnt/disks/a", [], False),
    ("/mnt/disks/a", ["/mnt/disks/"], False),  # a root that is not normalized allows nothing
    ("/mnt/disks/\x00a", ["/mnt/disks"], False),
    (None, ["/"], False),
])
def test_allowed_is_a_pure_string_check(path, roots, ok):
    assert do.allowed(path, roots) is ok


def test_loop_pools_alias_sets_the_loop_pools_and_conflicts_are_refused():
    assert do.with_loop_pools_alias({}, None) == {}
    assert do.with_loop_pools_alias({}, ["/srv/pool"]) == {LOOP: {"pools": ["/srv/pool"]}}
    same = {LOOP: {"pools": ["/srv/pool"]}}
    assert do.with_loop_pools_alias(same, ["/srv/pool"]) == same
    with pytest.raises(InvalidInput) as err:
        do.with_loop_pools_alias({LOOP: {"pools": ["/a"]}}, ["/b"], alias="kubevol_loop_pools")
    assert "kubevol_loop_pools" in err.value.msg and "'/a'" in err.value.msg


def test_the_node_context_carries_the_mapping_and_each_drivers_settings():
    ctx = NodeContext(no_commands, node_name="n1", kubelet_dir="/k",
                      driver_options={"kubernetes.io/host-path": {"paths": ["/srv"]}}, force_release_holders=["n2"])
    assert ctx.driver_options == {"kubernetes.io/host-path": {"paths": ["/srv"]}}
    assert ctx.options_for("kubernetes.io/host-path") == {"paths": ["/srv"]}
    assert ctx.options_for(LOOP) == {"pools": ["/var/lib/kubevol/pool"]}
    settings = ctx.driver_settings(LOOP)
    # what drivers/loop.py reads today (loop_pools, force_release_holders) and its own options (pools)
    assert settings["pools"] == settings["loop_pools"] == ["/var/lib/kubevol/pool"]
    assert list(settings["force_release_holders"]) == ["n2"]
    assert [d.NAME for d in ctx.all_drivers()] == [LOOP]
    assert ctx.all_drivers()[0].options["loop_pools"] == ["/var/lib/kubevol/pool"]


def test_the_node_context_takes_the_deprecated_loop_pools():
    ctx = NodeContext(no_commands, node_name="n1", kubelet_dir="/k", loop_pools=["/srv/pool"])
    assert ctx.options_for(LOOP) == {"pools": ["/srv/pool"]}
    assert ctx.driver_settings(LOOP)["loop_pools"] == ["/srv/pool"]
    with pytest.raises(InvalidInput):
        NodeContext(no_commands, node_name="n1", kubelet_dir="/k", loop_pools=["/srv/pool"],
                    driver_options={LOOP: {"pools": ["/other"]}})
    with pytest.raises(InvalidInput) as err:
        NodeContext(no_commands, node_name="n1", kubelet_dir="/k", driver_options={"nfs": {}})
    assert "'nfs'" in err.value.msg


class Module:
    check_mode = False

    def __init__(self, **params):
        self.params = params


def test_context_from_passes_the_modules_driver_options():
    ctx = context_from(Module(node_name="n1", kubelet_dir="/k", driver_options={LOOP: {"pools": ["/srv/pool"]}}))
    assert ctx.options_for(LOOP)["pools"] == ["/srv/pool"]


def test_the_node_modules_argspec():
    spec = node_args.volumes_argspec()
    assert spec["driver_options"] == {"type": "dict", "default": {}}
    assert spec["loop_pools"]["removed_in_version"] == "2.0.0" and "default" not in spec["loop_pools"]
    assert spec["loop_pools"]["removed_from_collection"] == "kubevol.volumes"
    for specs in (node_args.setup_argspec(), node_args.node_phases_argspec()):
        assert specs["driver_options"] == spec["driver_options"] and specs["loop_pools"] == spec["loop_pools"]


def test_a_refusal_names_the_setting_as_its_reader_sets_it():
    """The operator running the role reads kubevol_driver_options, a module's caller driver_options (common/words.py)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common import words as said

    with pytest.raises(InvalidInput) as err:
        do.validate({"no.such.driver": {}})
    assert said.say(err.value.msg, said.ROLE).startswith("invalid kubevol_driver_options: 'no.such.driver': ")
    assert said.say(err.value.msg, said.MODULE).startswith("invalid driver_options: 'no.such.driver': ")
