# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records a run writes, as data: what Kubernetes' status updaters, binder and provisioners write back (a
node's volumesAttached and volumesInUse, a VolumeAttachment, a claim's capacity and conditions, a PV), each record's
shape and the pure functions that apply it to a List.

The lowest of the controller's folders: it imports common/ and provision/ only. A store applies the records
(stores/ imports records/, never the reverse), and the task that hands them to a store is the run's
(run/record_task.py), so records/ knows no store, no run lock and no run.
"""
