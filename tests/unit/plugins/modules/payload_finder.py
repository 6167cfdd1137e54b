"""Print, as JSON, the files Ansible puts in the AnsiballZ payload of each named module of a collection.

Run as a script (``python payload_finder.py COLLECTIONS_DIR MODULES_DIR NAME...``) in its own process: it installs
Ansible's collection loader, which the test process must not get. It asks Ansible's own dependency finder
(ansible.executor.module_common.recursive_finder, the code that builds every module payload, on every controller
version this project supports) with the module file's bytes, as a task's module run does.
"""
import datetime
import io
import json
import os
import sys
import zipfile


def main(collections, modules_dir, names):
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

    _AnsibleCollectionFinder(paths=[collections])._install()
    from ansible.executor import module_common

    kwargs = {}
    try:  # ansible-core >= 2.19 builds payloads with an extension manager (debugger, coverage)
        from ansible._internal._ansiballz import _builder

        kwargs["extension_manager"] = _builder.ExtensionManager()
    except ImportError:
        pass
    out = {}
    for name in names:
        with open(os.path.join(modules_dir, *name.split(".")) + ".py", "rb") as handle:  # __internal.X: a subdir
            data = handle.read()
        payload = zipfile.ZipFile(io.BytesIO(), "w")
        module_common.recursive_finder(name, "ansible_collections.kubevol.volumes.plugins.modules." + name, data,
                                       payload, datetime.datetime(2020, 1, 1), **kwargs)
        out[name] = sorted(payload.namelist())
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
