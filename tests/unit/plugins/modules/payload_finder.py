"""Print, as JSON, the files Ansible puts in the AnsiballZ payload of each named module of a collection.

Run as a script (``python payload_finder.py [--sizes | --zip DIR] COLLECTIONS_DIR MODULES_DIR NAME...``; ``--sizes``:
each file's bytes too; ``--zip DIR``: also write the collection's files of each payload and the module as
``DIR/NAME.zip``, to run the module from them alone) in its own process: it installs
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


def main(collections, modules_dir, names, sizes=False, zip_dir=None):
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
        if zip_dir:  # the collection's part of the payload, and the module itself, as a zip to run the module from
            with zipfile.ZipFile(os.path.join(zip_dir, name + ".zip"), "w") as ours:
                for info in payload.infolist():
                    if info.filename.startswith("ansible_collections/"):
                        ours.writestr(info.filename, payload.read(info.filename))
                modules = "ansible_collections/kubevol/volumes/plugins/modules/"
                for package in ("", "__internal/") if name.startswith("__internal.") else ("",):
                    ours.writestr(modules + package + "__init__.py", "")  # zipimport finds no namespace package
                ours.writestr(modules + name.replace(".", "/") + ".py", data)
        if sizes:  # bench/bench_payload.py: each file's bytes, as the payload holds them
            out[name] = dict((info.filename, info.file_size) for info in payload.infolist())
        else:
            out[name] = sorted(payload.namelist())
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "--sizes":
        main(sys.argv[2], sys.argv[3], sys.argv[4:], sizes=True)
    elif sys.argv[1] == "--zip":
        main(sys.argv[3], sys.argv[4], sys.argv[5:], zip_dir=sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3:])
