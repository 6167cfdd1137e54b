"""The inventory as AWX holds it, and AWX's job slicing of it.

AWX imports an inventory into its database and hands each job the inventory's script data: groups with their
hosts, children and variables, and each host's own variables (awx/main/models/inventory.py
``Inventory.get_script_data``). A sliced job (``job_slice_count`` N) gets slice k of it: the hosts ordered by name,
every N-th from the k-th (``hosts[offset::slice_count]``), in every group they belong to; not a ``--limit`` of the
whole inventory, so ``groups['all']`` is the slice's hosts. Here ``ansible-inventory --list --export`` gives the same
data (groups with their variables, hosts with their own), and each job's private data directory gets it as a static
inventory file (``inventory/hosts.json``, the YAML inventory plugin's layout in JSON).
"""

import json
import subprocess

from kvworkflow.errors import InventoryUnreadable


class Inventory:
    """``hosts`` (sorted by name), ``groups`` ({group: {hosts, children, vars}}), ``hostvars`` ({host: vars})."""

    def __init__(self, script_data):
        meta = script_data.get("_meta") or {}
        self.hostvars = dict(meta.get("hostvars") or {})
        self.groups = {}
        for name, group in script_data.items():
            if name == "_meta" or not isinstance(group, dict):
                continue
            self.groups[name] = {"hosts": list(group.get("hosts") or ()), "children": list(group.get("children") or ()),
                                 "vars": dict(group.get("vars") or {})}
        names = set(self.hostvars)
        for group in self.groups.values():
            names.update(group["hosts"])
        self.hosts = sorted(names)

    @classmethod
    def read(cls, path, ansible_inventory="ansible-inventory", env=None):
        """The inventory at ``path`` (anything ``-i`` takes), as ``ansible-inventory --list --export`` gives it."""
        try:
            proc = subprocess.run([ansible_inventory, "-i", path, "--list", "--export"], env=env, check=False,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        except OSError as err:
            raise InventoryUnreadable(inventory=path, detail=str(err))
        if proc.returncode != 0:
            raise InventoryUnreadable(inventory=path, detail=" ".join(proc.stderr.split())[-600:] or
                                      "exit status %d" % proc.returncode)
        try:
            data = json.loads(proc.stdout)
        except ValueError as err:
            raise InventoryUnreadable(inventory=path, detail="its output is not JSON: %s" % err)
        inventory = cls(data)
        if not inventory.hosts:
            raise InventoryUnreadable(inventory=path, detail="it has no host")
        return inventory

    def slices(self, count):
        """AWX's job slicing: slice k (1..count) is every count-th host by name from the k-th. Only non-empty slices
        are run (a job_slice_count above the number of hosts runs one job per host)."""
        return [self.hosts[offset::count] for offset in range(min(max(count, 1), len(self.hosts)))]

    def data(self, hosts=None):
        """The inventory restricted to ``hosts`` (None: every host), in the YAML inventory plugin's layout: every
        group with its variables and children, holding only those hosts; each host's own variables on its entry
        under ``all``."""
        keep = set(self.hosts if hosts is None else hosts)
        top = {"hosts": dict((host, self.hostvars.get(host) or None) for host in self.hosts if host in keep),
               "children": {}}
        root = self.groups.get("all") or {}
        if root.get("vars"):
            top["vars"] = root["vars"]
        for name, group in sorted(self.groups.items()):
            if name in ("all", "ungrouped"):
                continue
            entry = {"hosts": dict((host, None) for host in group["hosts"] if host in keep)}
            if group["vars"]:
                entry["vars"] = group["vars"]
            if group["children"]:
                entry["children"] = dict((child, None) for child in group["children"])
            top["children"][name] = entry
        return {"all": top}

    def write(self, path, hosts=None):
        with open(path, "w") as handle:
            json.dump(self.data(hosts), handle, indent=1, sort_keys=True)
