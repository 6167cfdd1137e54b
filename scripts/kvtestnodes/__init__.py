"""The local SSH test nodes of scripts/testnodes.py, one concern per module.

scripts/testnodes.py is the command (``python3 scripts/testnodes.py up N
--state-dir DIR``) and stays a thin entry point: it puts scripts/ on sys.path,
re-exports the names it always had and calls cli.main. The package is named
``kvtestnodes``, not ``testnodes``: a ``testnodes/`` package next to
``testnodes.py`` in one directory would shadow the file for ``import
testnodes`` (a package directory wins over a module of the same name), so the
entry point would import the package instead of itself.

Modules, lowest first (each imports only modules above it in this list):

* base        -- the error type, output, the command runner, atomic writes;
* state       -- the state directory's paths, its lock and nodes.json;
* procs       -- processes and mount namespaces read from /proc, signals;
* mounts      -- /proc/PID/mountinfo, unmounting inside a namespace;
* loops       -- the loop devices backed by files of the state directory;
* ports       -- choosing a free port, checking who listens on it;
* sshd        -- the client key, node host keys, sshd_config;
* sshclient   -- ssh logins that probe a node, the ControlMaster processes;
* clientfiles -- known_hosts, ssh_config, the inventory, `env` exports;
* nodeinit    -- the `_init` run inside a node's new namespaces (execs sshd);
* nodes       -- one node's start, readiness, stop and cleanup;
* up / down / status -- the commands of the same names;
* cli         -- the argument parser and dispatch.

Stdlib only, Python 3.9+: the nodes' init and the host's /usr/bin/python3 run it.
"""
