"""The workflow's errors: each says what failed, where and what to do, in one sentence, and carries the code
docs/errors.md explains it under (as the collection's errors do, common/errors.py)."""


class WorkflowError(Exception):
    """Base class: ``message`` is a ``str.format`` template over the keyword arguments."""

    message = "workflow: {detail}"
    code = None  # each kind names its own

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        text = self.message.format(**kwargs)
        super().__init__("%s [%s]" % (text, self.code) if self.code else text)


class InventoryUnreadable(WorkflowError):
    message = ("workflow: the inventory {inventory} cannot be read by ansible-inventory ({detail}); no job was "
               "started: give an inventory ansible-playbook -i accepts")
    code = "KV-WORKFLOW-INVENTORY"


class ExecutionNodesInvalid(WorkflowError):
    message = ("workflow: the execution nodes file {path} is not valid ({detail}); no job was started: give a "
               "mapping of node names to {{ssh: [argv...], ansible_runner: PATH, collections_path: PATH, "
               "slices: [numbers]}}")
    code = "KV-WORKFLOW-EXECUTION-NODES"
