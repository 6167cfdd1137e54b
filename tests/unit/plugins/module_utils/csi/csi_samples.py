"""Every CSI message of plugins/module_utils/csi/messages.py with every field set, serialized.

Imported by test_csi_messages.py and run as a script by it under another interpreter (/usr/bin/python3 with
Debian's python3-protobuf): ``python3 csi_samples.py`` prints {sample name: serialized hex} as JSON, built
with that interpreter's protobuf. Needs only protobuf: messages.py is loaded by path.
"""
import importlib.util
import json
import os
import sys

MESSAGES_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..",
                           "plugins", "module_utils", "csi", "messages.py")


def load_messages_module():
    spec = importlib.util.spec_from_file_location("kubevol_csi_messages_samples", os.path.normpath(MESSAGES_PY))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _repeated(field):
    flag = getattr(field, "is_repeated", None)  # protobuf 7: no FieldDescriptor.label
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def _scalar(field, index):
    if field.type == field.TYPE_STRING:
        return "%s-%d" % (field.name, index)
    if field.type == field.TYPE_BOOL:
        return True
    if field.type in (field.TYPE_INT64, field.TYPE_INT32):
        return (2 ** 40 + index) if field.type == field.TYPE_INT64 else 7 + index
    if field.type == field.TYPE_ENUM:
        return field.enum_type.values[-1 - index % 2].number
    raise AssertionError("no sample for %s" % field.full_name)


def fill(message, choice=0):
    """Set every field of ``message`` (the ``choice``-th member of each oneof, wrapped around); return it."""
    for field in message.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None and list(oneof.fields).index(field) != choice % len(oneof.fields):
            continue
        if field.type == field.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            getattr(message, field.name).update({"k1": "v1-" + field.name, "k2": "v2"})
        elif field.type == field.TYPE_MESSAGE and _repeated(field):
            for _index in range(2):
                fill(getattr(message, field.name).add(), choice)
        elif field.type == field.TYPE_MESSAGE:
            sub = getattr(message, field.name)
            fill(sub, choice)
            sub.SetInParent()
        elif _repeated(field):
            getattr(message, field.name).extend([_scalar(field, 0), _scalar(field, 1)])
        else:
            setattr(message, field.name, _scalar(field, 0))
    return message


def oneof_choices(descriptor, seen=None):
    """How many variants it takes to set each member of every oneof in ``descriptor`` and below."""
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return 1
    seen.add(descriptor.full_name)
    count = max([len(o.fields) for o in descriptor.oneofs] or [1])
    for field in descriptor.fields:
        if field.type == field.TYPE_MESSAGE:
            count = max(count, oneof_choices(field.message_type, seen))
    return count


def samples(msgs):
    """{"Name#choice": message} for every message and oneof choice."""
    result = {}
    for name in msgs.names():
        cls = msgs[name]
        for choice in range(oneof_choices(cls.DESCRIPTOR)):
            result["%s#%d" % (name, choice)] = fill(cls(), choice)
    return result


def main():
    module = load_messages_module()
    msgs = module.load()
    import google.protobuf
    out = {"protobuf": google.protobuf.__version__, "samples": {}}
    for key, message in samples(msgs).items():
        out["samples"][key] = message.SerializeToString(deterministic=True).hex()
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
