"""Filling a Snapshot from a live cluster with only the requests a diagnosis needs.

For ``diagnose pod``: the pod; its events (by field selector); the nodes; the
non-terminated pods bound to the candidate nodes (per node when there are few
candidates, else one paged cluster-wide list); the device-plugin pods (by label
selector) and, for GPU nodes that advertise no or unhealthy GPUs, their logs
(bounded by tailLines/limitBytes); the namespace's quotas; the PVCs, queue and DRA objects the pod names. Every request that fails becomes a Gap; only
a failure to read the target itself ends the command.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any, Callable, Optional

from ..model.requests import is_extended
from ..errors import SourceError, TargetNotFound
from ..knowledge import catalog
from ..model import snapshot as S
from ..model.objects import Node, Pod, decode_salvaging
from ..model.quantity import parse_quantity
from ..model.requests import pod_requests
from .kube import ApiFailure, KubeAPI, gap_from
from .kube import path_segment

PER_NODE_POD_QUERIES = 20     # above this many candidate nodes, one cluster-wide list is cheaper
MAX_PLUGIN_LOG_NODES = 5
NON_TERMINATED = "status.phase!=Succeeded,status.phase!=Failed"
KUEUE_VERSIONS = ("v1beta1", "v1beta2")
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
SUGGEST_PAGE = 500            # "did you mean" reads one page of names, never a whole list
MAX_KUEUE_NAMESPACES = 10     # Workloads are read in at most this many namespaces feeding a pod's ClusterQueue
VISIBILITY_LIMIT = 1000       # the visibility API's own default page of pending workloads
MAX_VISIBILITY_QUEUES = 20    # diagnose pending: the visibility API is asked for at most this many ClusterQueues


def now() -> dt.datetime:
    """The clock, or GPUCTL_NOW (RFC 3339) for reproducible ages in docs and tests."""
    fixed = S.parse_time(os.environ.get("GPUCTL_NOW"))
    return fixed or dt.datetime.now(dt.timezone.utc)


class LiveCollector:
    def __init__(self, api: KubeAPI):
        self.api = api
        self.snap = S.Snapshot(source="live", context=api.context_name, captured_at=now(), collected=set())

    # ------------------------------------------------------------ plumbing
    def _try(self, key: str, what: str, verb: str, resource: str, fn: Callable[[], Any],
             namespace: Optional[str] = None, group: str = "", missing_ok: bool = False) -> Any:
        self.snap.collected.add(key)
        try:
            return fn()
        except ApiFailure as e:
            if e.reason == "unauthorized" and key == S.NODES:
                raise SourceError("the cluster refused the credentials (401 Unauthorized)",
                                  HINT_CREDENTIALS) from None
            if e.reason == "unreachable" and key == S.NODES and e.hint:    # TLS: nothing else will be read either
                raise _fatal(e, what) from None
            if missing_ok and e.reason == "not-found":
                return None
            if key not in self.snap.gaps:
                self.snap.gaps[key] = gap_from(e, what, verb, resource, namespace, group)
            return None

    def covered(self, *keys: str) -> None:
        """These data sets were considered for the target: what it names of them is
        fetched (or its gap recorded), and there may be none of it to read."""
        self.snap.collected.update(keys)

    def _add_all(self, kind: str, items: Optional[list[Any]]) -> None:
        for it in items or []:
            self.snap.add(kind, it)

    # ------------------------------------------------------------ the target
    def pod(self, ns: str, name: str) -> Pod:
        path = f"/api/v1/namespaces/{path_segment(ns)}/pods/{path_segment(name)}"
        try:
            data = self.api.get_bytes(path)
        except ApiFailure as e:
            if e.reason == "not-found":
                raise TargetNotFound(f'pod "{name}" not found in namespace {ns}', self._suggest(ns, name)) from None
            raise _fatal(e, f"get pod {ns}/{name}") from None
        pod = self.target("Pod", data, path, f"pod {ns}/{name}")
        self.snap.add("Pod", pod)
        return pod

    def target(self, kind: str, data: bytes, path: str, what: str) -> Any:
        """The target's record, kept with its unreadable fields emptied and named
        (snap.malformed); one that cannot be read at all ends the command (exit 4)."""
        rec, problems = decode_salvaging(kind, data, source=path)
        self.snap.malformed.extend(problems)
        if rec is None:
            bad = problems[-1] if problems else None
            raise SourceError(f"{what} could not be read: " + (f"{bad.field + ': ' if bad.field else ''}{bad.problem}"
                                                                if bad else "not a Kubernetes object"),
                              "the object is malformed where gpuctl reads it; check it with kubectl get -o json")
        return rec

    def _names_page(self, path: str, query: Optional[dict[str, Any]] = None) -> list[dict]:
        """The items of one bounded page (500) of a list, for "did you mean": one
        request, never a paged walk; [] when it cannot be read."""
        import msgspec

        try:
            page = msgspec.json.decode(self.api.get_bytes(path, dict(query or {}, limit=SUGGEST_PAGE)))
        except (ApiFailure, msgspec.DecodeError):
            return []
        items = page.get("items") if isinstance(page, dict) else None
        return [i for i in items or [] if isinstance(i, dict) and isinstance(i.get("metadata"), dict)
                and isinstance(i["metadata"].get("name"), str)]

    def _suggest_node(self, name: str) -> Optional[str]:
        from ..model.names import suggest

        return suggest(name, [i["metadata"]["name"] for i in self._names_page("/api/v1/nodes")])

    def suggest_workload(self, group: str, versions: tuple[str, ...], plural: str, ns: str, name: str) -> Optional[str]:
        """One bounded list (500 names) of that kind in the namespace, for "did you mean"."""
        from ..model.names import suggest

        for v in versions:
            items = self._names_page(f"/apis/{group}/{v}/namespaces/{path_segment(ns)}/{plural}")
            if items:
                return suggest(name, [i["metadata"]["name"] for i in items])
        return None

    def _suggest(self, ns: str, name: str) -> Optional[str]:
        """Why pod NAME is not in NS, in at most two one-page requests: the pods of
        that exact name elsewhere (the server filters by field selector), else one
        page of the namespace's pods for a workload of that name and close names."""
        from ..model.names import suggest, workload_of_pods

        same = self._names_page("/api/v1/pods", {"fieldSelector": f"metadata.name={name}"})
        spaces = sorted({i["metadata"].get("namespace") for i in same if i["metadata"].get("namespace")})
        if spaces:
            return f"a pod of that name exists in namespace(s) {', '.join(spaces)}: try -n {spaces[0]}"
        if self.api.down is not None:
            return None
        items = self._names_page(f"/api/v1/namespaces/{path_segment(ns)}/pods")
        owners = workload_of_pods(name, [(o.get("kind", ""), o.get("name", ""),
                                          (i["metadata"].get("labels") or {}).get("pod-template-hash"))
                                         for i in items for o in i["metadata"].get("ownerReferences") or []
                                         if isinstance(o, dict)])
        if owners:
            return f"{name} is {' and '.join(owners)}: gpuctl diagnose pod {owners[0]} -n {ns}"
        return suggest(name, [i["metadata"]["name"] for i in items])

    # ------------------------------------------------------------ pieces
    def events(self, ns: str, kind: str, name: str, uid: Optional[str] = None) -> None:
        sel = f"involvedObject.kind={kind},involvedObject.name={name}"
        if uid:
            sel += f",involvedObject.uid={uid}"
        items = self._try(S.EVENTS, f"list events of {kind.lower()}/{name}", "list", "events",
                          lambda: self.api.list(f"/api/v1/namespaces/{path_segment(ns)}/events", "Event", {"fieldSelector": sel}),
                          namespace=ns)
        self._add_all("Event", items)

    def node_events(self, name: str) -> None:
        """A Node's events (cluster-scoped: one list by field selector)."""
        items = self._try(S.EVENTS, f"list events of node/{name}", "list", "events",
                          lambda: self.api.list("/api/v1/events", "Event",
                                                {"fieldSelector": f"involvedObject.kind=Node,involvedObject.name={name}"}))
        self._add_all("Event", items)

    def nodes(self) -> None:
        items = self._try(S.NODES, "list nodes (cluster-wide)", "list", "nodes",
                          lambda: self.api.list("/api/v1/nodes", "Node", malformed=self.snap.malformed))
        self._add_all("Node", items)

    def bound_pods(self, node_names: list[str], labels: bool = True, full: bool = False) -> None:
        """Non-terminated pods on these nodes, as slim records (without labels when
        no pod-affinity rule needs them), or full ones for a node report; records
        which nodes are complete."""
        kind = "Pod" if full else "BoundPod" if labels else "BoundPodLite"

        def fetch() -> list[Any]:
            if len(node_names) <= PER_NODE_POD_QUERIES and not getattr(self.api, "prefers_bulk", False):
                out: list[Any] = []
                for n in node_names:
                    out += self.api.list("/api/v1/pods", kind, {"fieldSelector": f"spec.nodeName={n},{NON_TERMINATED}"},
                                         malformed=self.snap.malformed)
                return out
            wanted = set(node_names)
            return [p for p in self.api.list("/api/v1/pods", kind, {"fieldSelector": f"spec.nodeName!=,{NON_TERMINATED}"},
                                             malformed=self.snap.malformed) if p.spec.nodeName in wanted]
        items = self._try(S.PODS, "list pods bound to the candidate nodes", "list", "pods", fetch)
        if items is not None:
            self._add_all(kind, items)
            self.snap.pods_known_for = set(node_names)

    def device_plugins(self, gpu_nodes: list[Node], log_nodes: list[str]) -> None:
        """The device-plugin pods of the nodes whose plugin state matters (those that
        advertise no or unhealthy GPUs, and the target's node): all pods of each such
        node when there are few (one request a node), else one list per known
        plugin label selector; and their logs for ``log_nodes``."""
        from ..knowledge.catalog import labels_mark_device_plugin

        def is_device_plugin_pod(p: Pod) -> bool:
            return labels_mark_device_plugin(p.metadata.labels, p.metadata.namespace)

        self.snap.collected.update((S.DEVICE_PLUGINS, S.LOGS) if log_nodes else (S.DEVICE_PLUGINS,))
        found: list[Pod] = []
        failure: Optional[ApiFailure] = None
        wanted_nodes = [n.metadata.name for n in gpu_nodes]
        if len(wanted_nodes) <= PER_NODE_POD_QUERIES:
            for n in wanted_nodes:
                try:
                    found += [p for p in self.api.list("/api/v1/pods", "Pod", {"fieldSelector": f"spec.nodeName={n}"})
                              if is_device_plugin_pod(p)]
                except ApiFailure as e:
                    failure = e
        else:
            wanted = set(wanted_nodes)
            for kind in catalog.device_plugin_selectors():
                try:
                    found += [p for p in self.api.list("/api/v1/pods", "Pod", {"labelSelector": kind.label_selector})
                              if p.spec.nodeName in wanted]
                except ApiFailure as e:
                    failure = e
        if failure is not None and not found:
            self.snap.gaps[S.DEVICE_PLUGINS] = gap_from(failure, "list device-plugin pods", "list", "pods")
            return
        self._add_all("Pod", found)
        wanted = set(log_nodes)
        for p in found:
            if p.spec.nodeName not in wanted:
                continue
            restarted = {cs.name for cs in p.status.containerStatuses if cs.restartCount > 0}
            for c in p.spec.containers:
                for previous in (False, True):
                    if previous and c.name not in restarted:
                        continue
                    try:
                        text = self.api.log_text(p.metadata.namespace or "", p.metadata.name, c.name, previous)
                        self.snap.logs.put(p.metadata.namespace or "", p.metadata.name, c.name, previous, text)
                    except ApiFailure as e:
                        self.snap.log_gaps[f"{p.metadata.namespace}/{p.metadata.name}/{c.name}"] = gap_from(
                            e, f"read log of {p.metadata.name}/{c.name}", "get", "pods/log", p.metadata.namespace)

    def replacements(self, pod: Pod) -> None:
        """A Failed pod's siblings (one list by the label its controller stamps,
        job-name or pod-template-hash): whether the owner already replaced it."""
        self.covered(S.OWNERS)
        if pod.phase != "Failed" or not pod.metadata.ownerReferences:
            return
        labels = pod.metadata.labels
        key = next((k for k in ("batch.kubernetes.io/job-name", "job-name", "pod-template-hash",
                                "controller-revision-hash") if labels.get(k)), None)
        if key is None:
            return
        ns = pod.metadata.namespace or "default"
        for p in self._try(S.OWNERS, f"list pods {key}={labels[key]}", "list", "pods",
                           lambda: self.api.list(f"/api/v1/namespaces/{path_segment(ns)}/pods", "Pod",
                                                 {"labelSelector": f"{key}={labels[key]}"}),
                           namespace=ns) or []:
            if p.key not in self.snap.pods:
                self.snap.add("Pod", p)

    def unserved_plugins(self, pod: Pod) -> None:
        """A well-known GPU resource the pod requests and no node advertises: the
        device-plugin DaemonSets and pods of every known kind, cluster-wide (one list
        each, by label selector), with the logs of a few, to say why nobody serves it."""
        self.covered(S.DAEMONSETS)
        if S.NODES in self.snap.gaps:
            return
        advertised = {r for n in self.snap.nodes.values() for r in (*n.status.capacity, *n.status.allocatable)}
        unserved = [r for r in pod_requests(pod) if catalog.well_known_gpu_resource(r) and r not in advertised]
        if not unserved:
            return
        kinds = [k for r in unserved for k in catalog.serving_kinds(r)]
        items = self._try(S.DAEMONSETS, "list daemonsets (cluster-wide)", "list", "daemonsets",
                          lambda: self.api.list("/apis/apps/v1/daemonsets", "DaemonSet"), group="apps")
        for d in items or []:
            labels = ((d.spec or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
            if catalog.labels_mark_device_plugin(labels, d.metadata.namespace) or "device-plugin" in d.metadata.name:
                d.kind = "DaemonSet"
                self.snap.add("DaemonSet", d)
        found: dict[str, Pod] = {}
        for selector in sorted({k.label_selector for k in kinds}):
            for p in self._try(S.DEVICE_PLUGINS, f"list pods -l {selector} (cluster-wide)", "list", "pods",
                               lambda selector=selector: self.api.list("/api/v1/pods", "Pod", {"labelSelector": selector})) or []:
                found.setdefault(p.key, p)
        for p in list(found.values())[:MAX_PLUGIN_LOG_NODES]:
            self.snap.add("Pod", p)
            for cs in p.status.containerStatuses:
                for previous in (False, True) if cs.restartCount else (False,):
                    try:
                        self.snap.logs.put(p.metadata.namespace or "", p.metadata.name, cs.name, previous,
                                           self.api.log_text(p.metadata.namespace or "", p.metadata.name, cs.name, previous))
                    except ApiFailure:
                        pass
        for p in list(found.values())[MAX_PLUGIN_LOG_NODES:]:
            self.snap.add("Pod", p)

    def quotas(self, ns: str) -> None:
        items = self._try(S.QUOTAS, f"list resourcequotas in {ns}", "list", "resourcequotas",
                          lambda: self.api.list(f"/api/v1/namespaces/{path_segment(ns)}/resourcequotas", "ResourceQuota"), namespace=ns)
        self._add_all("ResourceQuota", items)

    def pvcs(self, ns: str, names: list[str]) -> None:
        for n in names:
            pvc = self._try(S.PVCS, f"get persistentvolumeclaim {n}", "get", "persistentvolumeclaims",
                            lambda n=n: self.api.get(f"/api/v1/namespaces/{path_segment(ns)}/persistentvolumeclaims/{path_segment(n)}",
                                                     "PersistentVolumeClaim"), namespace=ns, missing_ok=True)
            if pvc is None:
                continue
            self.snap.add("PersistentVolumeClaim", pvc)
            sc_name = pvc.spec.storageClassName
            if sc_name and sc_name not in self.snap.storage_classes:
                sc = self._try(S.STORAGECLASSES, f"get storageclass {sc_name}", "get", "storageclasses",
                               lambda: self.api.get(f"/apis/storage.k8s.io/v1/storageclasses/{path_segment(sc_name)}", "StorageClass"),
                               group="storage.k8s.io", missing_ok=True)
                if sc is not None:
                    self.snap.add("StorageClass", sc)

    def generic(self, key: str, group: str, versions: tuple[str, ...], plural: str, kind: str,
                ns: Optional[str] = None, name: Optional[str] = None, required: bool = False) -> None:
        """A CRD or optional API: tries each version; a 404 on all means not installed (no
        gap), unless ``required``: the pod says the system is there (a Kueue queue label),
        so a kind it does not serve is a gap the checks say, not silence."""
        self.snap.collected.add(key)
        for v in versions:
            base = f"/apis/{group}/{v}" + (f"/namespaces/{path_segment(ns)}" if ns else "") + f"/{plural}"
            try:
                if name:
                    self.snap.add(kind, self.api.get(f"{base}/{path_segment(name)}", kind))
                else:
                    self._add_all(kind, self.api.list(base, kind))
                return
            except ApiFailure as e:
                if e.reason == "not-found":
                    continue
                self.snap.gaps.setdefault(key, gap_from(e, f"{'get' if name else 'list'} {plural}.{group}", "get" if name else "list",
                                                        plural, ns, group))
                return
        if required and not name:
            self.snap.gaps.setdefault(key, S.Gap(f"list {plural}.{group}", "not-found",
                                                 f"not served at {', '.join(versions)}: is it installed?",
                                                 resource=plural, namespace=ns, group=group))

    def kueue(self, ns: str, queue: str) -> None:
        """What a Kueue-queued pod's admission needs, bounded: the LocalQueues,
        ClusterQueues, ResourceFlavors and Cohorts (one list each, cluster-scoped
        and small; Cohorts are 404 on Kueue before v0.11), the Workloads of the
        namespaces whose LocalQueues feed the pod's ClusterQueue or its cohort (at
        most MAX_KUEUE_NAMESPACES), and the visibility API's pending workloads of
        the pod's ClusterQueue (a 403 or 404 there leaves the order to be computed
        from the Workloads; docs/runbooks/queue-not-admitted.md)."""
        import msgspec

        from ..model import kueue as K
        from ..model import objects as O

        done: set = self.__dict__.setdefault("_kueue_done", set())
        if "cluster" not in done:
            done.add("cluster")
            for plural, kind in (("localqueues", "LocalQueue"), ("clusterqueues", "ClusterQueue"),
                                 ("resourceflavors", "ResourceFlavor")):
                self.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, plural, kind, required=True)
            self.generic(S.QUEUES, "kueue.x-k8s.io", ("v1beta1", "v1beta2", "v1alpha1"), "cohorts", "Cohort")
        lq = next((o for o in self.snap.objects("LocalQueue") if o.metadata.namespace == ns and o.metadata.name == queue), None)
        cq = str((lq.spec or {}).get("clusterQueue") or "") if lq is not None and isinstance(lq.spec, dict) else ""
        if not cq or ("cq", cq) in done:
            return
        done.add(("cq", cq))
        tree = K.QuotaTree(self.snap.objects("ClusterQueue"), self.snap.objects("Cohort"))
        parent = tree.nodes["cq/" + cq].parent if tree.has(cq) else None
        members = set(tree.cohort_members(parent)) if parent else set()
        members.add(cq)
        feeding = sorted({o.metadata.namespace or "" for o in self.snap.objects("LocalQueue")
                          if isinstance(o.spec, dict) and o.spec.get("clusterQueue") in members} - {ns})
        for other in [ns, *feeding][:MAX_KUEUE_NAMESPACES]:
            if ("ns", other) not in done:
                done.add(("ns", other))
                if any(w.metadata.namespace == other for w in self.snap.objects("Workload")):
                    continue   # listed already (pod_extras lists the pod's namespace)
                self.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, "workloads", "Workload", ns=other, required=True)
        visibility = sum(1 for d in done if isinstance(d, tuple) and d[0] == "cq")
        if not path_segment(cq) or visibility > MAX_VISIBILITY_QUEUES:
            return
        for v in ("v1beta1", "v1beta2"):
            try:
                data = self.api.get_bytes(f"/apis/visibility.kueue.x-k8s.io/{v}/clusterqueues/{path_segment(cq)}/pendingworkloads",
                                          {"limit": VISIBILITY_LIMIT})
                doc = msgspec.json.decode(data)
            except ApiFailure as e:
                if e.reason == "not-found":
                    continue      # not served at this version (or the ClusterQueue is gone)
                return            # refused: the position is computed from the Workloads
            except msgspec.DecodeError:   # not the visibility API's shape: compute the order instead
                return
            items = doc.get("items") if isinstance(doc, dict) else None
            if not isinstance(items, list):
                return
            # gpuctl's record of the answer: named after the ClusterQueue, its items under status.items
            self.snap.add("PendingWorkloadsSummary", O.GenericObject(
                apiVersion=f"visibility.kueue.x-k8s.io/{v}", kind="PendingWorkloadsSummary",
                metadata=O.ObjectMeta(name=cq), status={"items": [i for i in items if isinstance(i, dict)]}))
            return

    def kueue_quotas(self) -> None:
        """``nodes capacity``'s optional queues section: the ClusterQueues and
        ResourceFlavors (one list each; nothing when Kueue is not installed). A
        refusal leaves the section out rather than marking the capacity report partial."""
        had = S.QUEUES in self.snap.gaps
        for plural, kind in (("clusterqueues", "ClusterQueue"), ("resourceflavors", "ResourceFlavor")):
            self.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, plural, kind)
        if not had:
            self.snap.gaps.pop(S.QUEUES, None)

    def pod_extras(self, pod: Pod, bulk: bool = False) -> None:
        """What a pod names beyond the nodes: PVCs, Kueue workloads, a Volcano
        PodGroup, DRA claims and their classes and slices. ``bulk``: PVCs and the
        queue objects' events were listed per namespace already (diagnose pending)."""
        c, ns = self, pod.metadata.namespace or "default"
        c.covered(S.PVCS, S.QUEUES, S.DRA)
        claims = [v.persistentVolumeClaim.claimName for v in pod.spec.volumes if v.persistentVolumeClaim]
        if claims and not bulk:
            c.pvcs(ns, claims)
        if pod.spec.schedulingGates or "kueue.x-k8s.io/queue-name" in pod.metadata.labels:
            if not c.snap.objects("Workload") and S.QUEUES not in c.snap.gaps:
                c.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, "workloads", "Workload", ns=ns,
                          required="kueue.x-k8s.io/queue-name" in pod.metadata.labels)
            owners = {o.uid for o in pod.metadata.ownerReferences} | {pod.metadata.uid}
            for w in c.snap.objects("Workload") if not bulk else []:
                if any(o.uid in owners for o in w.metadata.ownerReferences) and not c.snap.events_for("Workload", ns, w.metadata.name):
                    c.events(ns, "Workload", w.metadata.name)
            queue = pod.metadata.labels.get("kueue.x-k8s.io/queue-name") or next(
                (str((w.spec or {}).get("queueName") or "") for w in c.snap.objects("Workload")
                 if w.metadata.namespace == ns and isinstance(w.spec, dict)
                 and any(o.uid in owners for o in w.metadata.ownerReferences)), "")
            if queue:
                c.kueue(ns, queue)
        if "kai.scheduler/queue" in pod.metadata.labels or pod.spec.schedulerName == "kai-scheduler":
            if not any((q.apiVersion or "").startswith("scheduling.run.ai/") for q in c.snap.objects("Queue")):
                c.generic(S.QUEUES, "scheduling.run.ai", ("v2",), "queues", "Queue")
            kai_group = pod.metadata.annotations.get("pod-group-name")   # KAI's podgrouper names the pod's PodGroup
            if kai_group and not any((g.apiVersion or "").startswith("scheduling.run.ai/") and g.metadata.name == kai_group
                                     and g.metadata.namespace == ns for g in c.snap.objects("PodGroup")):
                c.generic(S.QUEUES, "scheduling.run.ai", ("v2alpha2",), "podgroups", "PodGroup", ns=ns, name=kai_group)
                if not bulk:
                    c.events(ns, "PodGroup", kai_group)
        group = (pod.metadata.annotations.get("scheduling.k8s.io/group-name")
                 or pod.metadata.annotations.get("scheduling.volcano.sh/group-name"))
        if group and c.snap.find("PodGroup", ns, group) is None:
            c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup", ns=ns, name=group)
            if not bulk:
                c.events(ns, "PodGroup", group)
        vpg = next((g for g in c.snap.objects("PodGroup") if group and g.metadata.name == group and g.metadata.namespace == ns
                    and (g.apiVersion or "").startswith("scheduling.volcano.sh/")), None)
        listed = self.__dict__.setdefault("_volcano_podgroup_namespaces", set())
        if vpg is not None and pod.spec.schedulerName == "volcano" and ns not in listed \
                and (vpg.status or {}).get("phase") in ("Pending", "Inqueue", "Unknown", None):
            # the namespace's other PodGroups: finished jobs' groups that still hold queue share (volcano#2633)
            listed.add(ns)
            mine = {(g.metadata.namespace, g.metadata.name) for g in c.snap.objects("PodGroup")}
            before = len(c.snap.objects("PodGroup"))
            c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup", ns=ns)
            fresh = c.snap.objects("PodGroup")[before:]
            c.snap.generic["PodGroup"] = c.snap.objects("PodGroup")[:before] + [
                g for g in fresh if (g.metadata.namespace, g.metadata.name) not in mine]
        if vpg is not None and pod.spec.schedulerName == "volcano":   # the Volcano Queue the gang waits in, and its parents
            vq = str((vpg.spec or {}).get("queue") or "default") if isinstance(vpg.spec, dict) else "default"
            for _ in range(8):
                known = next((q for q in c.snap.objects("Queue") if (q.apiVersion or "").startswith("scheduling.volcano.sh/")
                              and q.metadata.name == vq), None)
                if known is None:
                    c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "queues", "Queue", name=vq)
                    known = next((q for q in c.snap.objects("Queue") if (q.apiVersion or "").startswith("scheduling.volcano.sh/")
                                  and q.metadata.name == vq), None)
                vq = str((known.spec or {}).get("parent") or "") if known is not None and isinstance(known.spec, dict) else ""
                if not vq:
                    break
        if pod.spec.resourceClaims and not c.snap.objects("DeviceClass"):
            c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceclaims", "ResourceClaim", ns=ns)
            c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "deviceclasses", "DeviceClass")
            c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceslices", "ResourceSlice")
            c.dra_plugin_pods()

    def dra_plugin_pods(self) -> None:
        """NVIDIA's DRA driver kubelet-plugin pods (its chart's component label), cluster-wide:
        a node whose plugin is down publishes no ResourceSlice (gpuctl/model/dra.py
        plugin_pods). Full records (their containers' states: a crash-looping plugin
        publishes nothing), as --snapshot reads them (collect/files.py need_for),
        replacing a slim one of the same pod."""
        for p in self._try(S.DEVICE_PLUGINS, "list DRA kubelet-plugin pods (cluster-wide)", "list", "pods",
                           lambda: self.api.list("/api/v1/pods", "Pod",
                                                 {"labelSelector": "nvidia-dra-driver-gpu-component=kubelet-plugin"})) or []:
            self.snap.add("Pod", p)

    def container_logs(self, pod: Pod, tail_lines: int = 200) -> None:
        """The pod's own logs, current and (after a restart) previous, bounded."""
        self.snap.collected.add(S.LOGS)
        ns = pod.metadata.namespace or "default"
        statuses = [*pod.status.initContainerStatuses, *pod.status.containerStatuses]   # validators run CUDA in init containers
        restarted = {cs.name for cs in statuses if cs.restartCount > 0}
        started = {cs.name for cs in statuses if cs.state and (cs.state.running or cs.state.terminated)}
        for cs in statuses:
            for previous in (False, True):
                if (previous and cs.name not in restarted) or (not previous and cs.name not in started):
                    continue
                try:
                    text = self.api.log_text(ns, pod.metadata.name, cs.name, previous, tail_lines=tail_lines)
                    self.snap.logs.put(ns, pod.metadata.name, cs.name, previous, text)
                except ApiFailure as e:
                    if e.reason != "not-found" and not (previous and e.status == 400):
                        self.snap.log_gaps[f"{ns}/{pod.metadata.name}/{cs.name}"] = gap_from(
                            e, f"read log of {pod.metadata.name}/{cs.name}", "get", "pods/log", ns)

    def runtime_classes(self) -> None:
        items = self._try(S.RUNTIMECLASSES, "list runtimeclasses", "list", "runtimeclasses",
                          lambda: self.api.list("/apis/node.k8s.io/v1/runtimeclasses", "RuntimeClass"), group="node.k8s.io")
        self._add_all("RuntimeClass", items)

    def node_metrics(self, node_name: str, dcgm_url: Optional[str] = None, prometheus_url: Optional[str] = None) -> None:
        """DCGM exporter metrics of one node: --dcgm-url, --prometheus-url, else the
        exporter pod on the node through the API server's pod proxy."""
        from .metrics import MetricsUnavailable, dcgm_direct, dcgm_via_proxy, prometheus_query

        self.snap.collected.add(S.METRICS)   # no exporter on the node: nothing to read, none missed
        try:
            if dcgm_url:
                text = dcgm_direct(dcgm_url, self.api.timeout)
            elif prometheus_url:
                text = prometheus_query(prometheus_url, node_name, self.api.timeout)
            else:
                exporters = [p for p in self.snap.pods.values() if p.spec.nodeName == node_name and not p.terminated
                             and (p.metadata.labels.get("app") == "nvidia-dcgm-exporter"
                                  or p.metadata.labels.get("app.kubernetes.io/name") == "dcgm-exporter")]
                if not exporters:
                    return
                text = dcgm_via_proxy(self.api, node_name, exporters, timeout=self.api.timeout)
        except MetricsUnavailable as e:
            self.snap.gaps.setdefault(S.METRICS, S.Gap(f"read DCGM metrics of {node_name}", e.reason, e.detail))
            return
        except ApiFailure as e:
            self.snap.gaps.setdefault(S.METRICS, gap_from(e, f"read DCGM metrics of {node_name} through the pod proxy",
                                                          "get", "pods/proxy"))
            return
        self.snap.metrics[node_name] = text

    def owner_objects(self, pod: Pod) -> None:
        ns = pod.metadata.namespace or "default"
        for o in pod.metadata.ownerReferences:
            if o.kind == "ReplicaSet":
                rs = self._try(S.OWNERS, f"get replicaset {o.name}", "get", "replicasets",
                               lambda: self.api.get(f"/apis/apps/v1/namespaces/{path_segment(ns)}/replicasets/{path_segment(o.name)}", "ReplicaSet"),
                               namespace=ns, group="apps", missing_ok=True)
                if rs is not None:
                    rs.kind = "ReplicaSet"
                    self.snap.add("ReplicaSet", rs)
                    for d in rs.metadata.ownerReferences:
                        if d.kind == "Deployment":
                            self.deployment_history(ns, d.name)
            elif o.kind == "Job":   # fixes patch what its template holds (tolerations, generated labels)
                self.generic("owners", "batch", ("v1",), "jobs", "Job", ns=ns, name=o.name)

    def deployment_history(self, ns: str, name: str) -> None:
        """The Deployment and its ReplicaSets (one list, by its selector): an older
        revision that did not have the problem is offered as a rollback."""
        self.generic("owners", "apps", ("v1",), "deployments", "Deployment", ns=ns, name=name)
        dep = self.snap.find("Deployment", ns, name)
        match = ((dep.spec or {}).get("selector") or {}).get("matchLabels") if dep is not None else None
        if not isinstance(match, dict) or not match:
            return
        selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
        found = self._try(S.OWNERS, f"list replicasets of deployment {name}", "list", "replicasets",
                          lambda: self.api.list(f"/apis/apps/v1/namespaces/{path_segment(ns)}/replicasets", "ReplicaSet",
                                                {"labelSelector": selector}),
                          namespace=ns, group="apps", missing_ok=True)
        have = {r.metadata.name for r in self.snap.objects("ReplicaSet")}
        for rs in found or []:
            if rs.metadata.name not in have:
                rs.kind = "ReplicaSet"
                self.snap.add("ReplicaSet", rs)


# The API server's 403 text (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/
# errors.go, forbiddenMessage): User "U" cannot VERB resource "RES[/SUB]" in API group "G"
# (in the namespace "NS" | at the cluster scope)
_FORBIDDEN = re.compile(r'cannot (?P<verb>[a-z]+) resource "(?P<res>[^"]+)" in API group "(?P<group>[^"]*)"'
                        r'(?: in the namespace "(?P<ns>[^"]+)"| at the (?P<cluster>cluster) scope)')


def _rbac_hint(message: str, verb: str) -> str:
    """What to ask the cluster admin for, from the 403's own words."""
    m = _FORBIDDEN.search(message or "")
    if not m:
        return f"ask for RBAC '{verb}' on that resource (deploy/rbac.yaml's gpuctl-reader ClusterRole has every read)"
    group = f" in API group '{m['group']}'" if m["group"] else ""
    if m["ns"]:
        return f"ask for RBAC '{m['verb']}' on '{m['res']}'{group} in namespace {m['ns']}"
    return (f"ask for RBAC '{m['verb']}' on '{m['res']}'{group} cluster-wide: a ClusterRole binding "
            f"(deploy/rbac.yaml's gpuctl-reader has it)")


HINT_CREDENTIALS = ("the credentials were refused: refresh your login (the kubeconfig user's token, client "
                    "certificate or exec plugin), or check --context/--token")
HINT_NETWORK = ("check the network/VPN, and that --context (the kubeconfig's server address) is the cluster "
                "you mean")
HINT_HUNG = ("the API server accepted the connection but did not answer: check the network/VPN (a proxy or "
             "load balancer that accepts and hangs) and --context, or raise --request-timeout")


def _fatal(e: ApiFailure, what: str) -> SourceError:
    if e.reason == "unauthorized":
        return SourceError(f"{what}: the cluster refused the credentials (401 Unauthorized)",
                           HINT_CREDENTIALS)
    if e.reason == "forbidden":
        return SourceError(f"{what}: forbidden ({e.message})", _rbac_hint(e.message, what.split()[0]))
    if e.reason == "unreachable":
        return SourceError(f"cannot reach the API server: {e.message}", e.hint or HINT_NETWORK)
    if e.reason == "timeout":
        return SourceError(f"{what}: {e.message}", e.hint or HINT_HUNG)
    return SourceError(f"{what}: {e.message}")


def needs_pod_labels(pod: Pod) -> bool:
    """Whether the pod has inter-pod rules (required pod (anti-)affinity, or topology
    spread that the scheduler enforces), which match other pods' labels."""
    aff = pod.spec.affinity
    return bool(aff and any(a and a.requiredDuringSchedulingIgnoredDuringExecution
                            for a in (aff.podAntiAffinity, aff.podAffinity))) or any(
        c.whenUnsatisfiable == "DoNotSchedule" for c in pod.spec.topologySpreadConstraints)


INTER_POD_WORDS = ("affinity rules", "anti-affinity rules", "topology spread constraints")


def needs_every_node(snap: S.Snapshot, pod: Pod) -> bool:
    """Whether the pods of every node matter, not only those of the candidate nodes:
    the pod's own inter-pod rules reach pods anywhere in a topology domain, and so do
    placed pods' anti-affinity rules when the scheduler names them."""
    return needs_pod_labels(pod) or any(
        e.reason == "FailedScheduling" and any(w in (e.message or "") for w in INTER_POD_WORDS)
        for e in snap.events)


def candidate_nodes(snap: S.Snapshot, pod: Pod) -> list[str]:
    """Nodes whose bound pods matter: those advertising a device the pod requests,
    or every node when it requests none (the same rule as the fit matrix)."""
    devices = [r for r in pod_requests(pod) if is_extended(r)]
    out = []
    for n in snap.nodes.values():
        if not devices:
            out.append(n.metadata.name)
            continue
        for r in devices:
            try:
                if parse_quantity(n.status.capacity.get(r, 0)) > 0 or parse_quantity(n.status.allocatable.get(r, 0)) > 0:
                    out.append(n.metadata.name)
                    break
            except ValueError:
                continue
    return sorted(out)


def troubled_nodes(snap: S.Snapshot) -> list[str]:
    """GPU nodes that advertise no GPUs, or unhealthy ones: their device plugin matters."""
    out = []
    for n in snap.nodes.values():
        advertised = [r for r in n.status.capacity if catalog.is_gpu_resource(r)]
        if not advertised and catalog.node_has_gpus(n.metadata.labels) is None:
            continue
        try:
            none = not any(parse_quantity(n.status.capacity.get(r, 0)) > 0 for r in advertised)
            unhealthy = any(parse_quantity(n.status.capacity.get(r, 0)) > parse_quantity(n.status.allocatable.get(r, 0))
                            for r in advertised)
        except ValueError:
            continue
        if none or unhealthy:
            out.append(n.metadata.name)
    return sorted(out)


CONDITIONS_OK = {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False",
                 "NetworkUnavailable": "False"}   # any other condition: a health condition, "False" when healthy


def nodes_showing_a_problem(snap: S.Snapshot) -> list[str]:
    """GPU nodes that show a problem in the snapshot (what gpuctl serve diagnoses each
    pass): ``troubled_nodes``, and nodes not Ready or under pressure, cordoned, with a
    health condition raised, a health controller's taint, or a Warning event on the
    Node (Xid, ECC, fallen off the bus, reboots)."""
    from ..knowledge.state_taints import state_taint

    out = set(troubled_nodes(snap))
    for n in snap.nodes.values():
        if n.metadata.name in out:
            continue
        if not any(catalog.is_gpu_resource(r) for r in n.status.capacity) and catalog.node_has_gpus(n.metadata.labels) is None:
            continue
        if n.spec.unschedulable or any(c.status != CONDITIONS_OK.get(c.type, "False") for c in n.status.conditions) \
                or any(state_taint(t.key) is not None for t in n.spec.taints) \
                or any(e.type == "Warning" for e in snap.events_for("Node", None, n.metadata.name)):
            out.add(n.metadata.name)
    return sorted(out)


def plugin_log_nodes(snap: S.Snapshot) -> tuple[list[Node], list[str]]:
    """GPU nodes, and those whose plugin log is worth reading (at most MAX_PLUGIN_LOG_NODES)."""
    gpu_nodes = [n for n in snap.nodes.values()
                 if catalog.node_has_gpus(n.metadata.labels) is not None or any(catalog.is_gpu_resource(r) for r in n.status.capacity)]
    return gpu_nodes, troubled_nodes(snap)[:MAX_PLUGIN_LOG_NODES]


def _failing(pod: Pod) -> bool:
    statuses = pod.status.containerStatuses
    return not (pod.status.phase == "Running" and statuses and all(cs.ready for cs in statuses)) and pod.status.phase != "Succeeded"


def find_pod_namespace(api: KubeAPI, name: str) -> str:
    """``diagnose pod -A NAME``: one list of the pods of that name in every
    namespace (a field selector: the server does the search)."""
    from ..errors import UsageError

    try:
        pods = api.list("/api/v1/pods", "Pod", {"fieldSelector": f"metadata.name={name}"})
    except ApiFailure as e:
        raise _fatal(e, f"list pods named {name} in all namespaces") from None
    spaces = sorted(p.metadata.namespace or "default" for p in pods)
    if len(spaces) == 1:
        return spaces[0]
    if spaces:
        raise UsageError(f"{len(spaces)} pods are named {name}: " + ", ".join(f"{s}/{name}" for s in spaces)
                         + "; give one as NAMESPACE/NAME")
    from ..model.names import suggest

    others = LiveCollector(api)._names_page("/api/v1/pods")
    raise TargetNotFound(f'pod "{name}" not found in any namespace',
                         suggest(name, [f"{i['metadata'].get('namespace') or 'default'}/{i['metadata']['name']}" for i in others]))


def collect_for_pod(api: KubeAPI, ns: str, name: str, pod: Optional[Pod] = None, dcgm_url: Optional[str] = None,
                    prometheus_url: Optional[str] = None) -> S.Snapshot:
    c = LiveCollector(api)
    pod = pod or c.pod(ns, name)
    c.snap.add("Pod", pod)
    c.events(ns, "Pod", name, pod.metadata.uid or None)
    c.owner_objects(pod)
    c.replacements(pod)
    c.nodes()
    if pod.spec.nodeName:
        c.bound_pods([pod.spec.nodeName])
    elif S.NODES not in c.snap.gaps:
        every = needs_every_node(c.snap, pod)
        c.bound_pods(sorted(c.snap.nodes) if every else candidate_nodes(c.snap, pod), labels=every)
    elif S.PODS not in c.snap.gaps:
        c.snap.gaps[S.PODS] = S.Gap("list pods bound to the candidate nodes", "absent", "skipped: the nodes could not be read")
    gpu_nodes, log_nodes = plugin_log_nodes(c.snap)
    bound_failing = bool(pod.spec.nodeName) and _failing(pod)
    if bound_failing and pod.spec.nodeName not in log_nodes:
        log_nodes.append(pod.spec.nodeName)
    troubled = set(troubled_nodes(c.snap))
    plugin_nodes = [n for n in gpu_nodes if n.metadata.name in troubled or n.metadata.name == pod.spec.nodeName]
    if plugin_nodes:
        c.device_plugins(plugin_nodes, log_nodes)
    c.covered(S.DEVICE_PLUGINS)   # no node it may use has a troubled plugin: nothing to read
    c.unserved_plugins(pod)
    c.quotas(ns)
    c.pod_extras(pod)
    if pod.spec.runtimeClassName or (pod.spec.nodeName and _failing(pod)
                                      and any(catalog.is_gpu_resource(r) for r in pod_requests(pod))):
        c.runtime_classes()   # a failing GPU pod without one: is the NVIDIA runtime a RuntimeClass here?
    if pod.spec.nodeName:
        c.container_logs(pod)   # bounded; a Running pod can still have lost its GPU
    c.covered(S.LOGS, S.RUNTIMECLASSES)   # an unbound pod has no logs; one without runtimeClassName names none
    if bound_failing:
        if any(catalog.is_gpu_resource(r) for r in pod_requests(pod)):
            c.node_metrics(pod.spec.nodeName, dcgm_url, prometheus_url)
            c.node_events(pod.spec.nodeName)   # kernel Xid lines a node-problem-detector posts on the Node
    return c.snap


WORKLOAD_APIS = {
    "Job": ("batch", ("v1",), "jobs"), "Deployment": ("apps", ("v1",), "deployments"),
    "StatefulSet": ("apps", ("v1",), "statefulsets"), "ReplicaSet": ("apps", ("v1",), "replicasets"),
    "DaemonSet": ("apps", ("v1",), "daemonsets"), "PyTorchJob": ("kubeflow.org", ("v1",), "pytorchjobs"),
    "MPIJob": ("kubeflow.org", ("v2beta1", "v1"), "mpijobs"), "JobSet": ("jobset.x-k8s.io", ("v1alpha2",), "jobsets"),
    "PodGroup": ("scheduling.volcano.sh", ("v1beta1",), "podgroups"), "Workload": ("kueue.x-k8s.io", KUEUE_VERSIONS, "workloads"),
}


def collect_for_workload(api: KubeAPI, ns: str, alias: str, name: str) -> S.Snapshot:
    from ..model.workloads import pods_of, resolve_kind

    kind = resolve_kind(alias)
    group, versions, plural = ("batch.volcano.sh", ("v1alpha1",), "jobs") if alias == "vcjob" else WORKLOAD_APIS[kind]
    c = LiveCollector(api)
    c.generic("workload", group, versions, plural, kind, ns=ns, name=name)
    if api.down is not None:
        raise _fatal(api.down, f"get {alias}/{name}")
    if "workload" in c.snap.gaps:
        raise _fatal(ApiFailure(None, c.snap.gaps["workload"].reason, c.snap.gaps["workload"].describe()), f"get {alias}/{name}")
    obj = c.snap.find(kind, ns, name)
    if obj is None:
        raise TargetNotFound(f"{kind} {name!r} not found in namespace {ns}", c.suggest_workload(group, versions, plural, ns, name))
    obj.kind = kind
    if kind == "Deployment":
        c.generic("owners", "apps", ("v1",), "replicasets", "ReplicaSet", ns=ns)
    items = c._try(S.PODS, f"list pods in {ns}", "list", "pods",
                   lambda: c.api.list(f"/api/v1/namespaces/{path_segment(ns)}/pods", "Pod"), namespace=ns)
    c._add_all("Pod", items)
    pods = pods_of(c.snap, obj, alias)
    c.snap.pods = {p.key: p for p in pods}
    c.events(ns, kind, name)
    for rs in c.snap.objects("ReplicaSet") if kind == "Deployment" else []:
        if any(o.uid == obj.metadata.uid for o in rs.metadata.ownerReferences):
            c.events(ns, "ReplicaSet", rs.metadata.name)   # FailedCreate lands on the ReplicaSet
    c.quotas(ns)
    c.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, "workloads", "Workload", ns=ns)
    if not pods and isinstance(obj.spec, dict) and obj.spec.get("suspend") is True:   # a Job Kueue has not admitted
        queue = obj.metadata.labels.get("kueue.x-k8s.io/queue-name") or next(
            (str(w.spec.get("queueName") or "") for w in c.snap.objects("Workload") if isinstance(w.spec, dict)
             and any(o.uid == obj.metadata.uid for o in w.metadata.ownerReferences)), "")
        if queue:
            c.kueue(ns, queue)   # what checks/kueue.py explain_workload reads
    if not pods:   # gang-scheduled workloads wait as a PodGroup in a queue (Volcano, coscheduling)
        c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup", ns=ns)
        c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "queues", "Queue")
        for g in c.snap.objects("PodGroup"):
            c.events(ns, "PodGroup", g.metadata.name)
    waiting = [p for p in pods if not p.spec.nodeName or p.phase != "Running"]
    if waiting:
        c.nodes()
        for p in waiting[:20]:
            c.events(ns, "Pod", p.metadata.name, p.metadata.uid or None)
            c.pod_extras(p)
        if S.NODES not in c.snap.gaps:
            cands = sorted({n for p in waiting for n in candidate_nodes(c.snap, p)})
            c.bound_pods(cands)
        gpu_nodes, log_nodes = plugin_log_nodes(c.snap)
        wanted = set(troubled_nodes(c.snap)) | {p.spec.nodeName for p in waiting if p.spec.nodeName}
        plugin_nodes = [n for n in gpu_nodes if n.metadata.name in wanted]
        if plugin_nodes:
            c.device_plugins(plugin_nodes, log_nodes)
    return c.snap


def collect_for_node(api: KubeAPI, name: str, dcgm_url: Optional[str] = None,
                     prometheus_url: Optional[str] = None) -> S.Snapshot:
    """One node, its pods and events, its device-plugin log, the nodes of its pool
    (same instance type or GPU product) and its DCGM metrics."""
    c = LiveCollector(api)
    try:
        path = f"/api/v1/nodes/{path_segment(name)}"
        node = c.target("Node", api.get_bytes(path), path, f"node {name}")
    except ApiFailure as e:
        if e.reason == "not-found":
            raise TargetNotFound(f'node "{name}" not found', c._suggest_node(name)) from None
        raise _fatal(e, f"get node {name}") from None
    c.snap.add("Node", node)
    labels = node.metadata.labels
    for key in ("node.kubernetes.io/instance-type", "nvidia.com/gpu.product"):
        if labels.get(key):
            peers = c._try(S.POOL, f"list nodes with {key}={labels[key]}", "list", "nodes",
                           lambda key=key: api.list("/api/v1/nodes", "Node", {"labelSelector": f"{key}={labels[key]}"}))
            for p in peers or []:
                if p.metadata.name != name:
                    c.snap.add("Node", p)
    c.bound_pods([name], full=True)
    c.node_events(name)
    c.device_plugins([node], [name])
    c.node_metrics(name, dcgm_url, prometheus_url)
    if node.spec.unschedulable:   # which Pending pods wait for it: one list, unbound Pending pods only
        c._add_all("Pod", c._try(S.PENDING_PODS, "list Pending pods", "list", "pods",
                                 lambda: api.list("/api/v1/pods", "Pod", {"fieldSelector": "status.phase=Pending,spec.nodeName="})))
    return c.snap


AUTOSCALER_REASONS = ("FailedScheduling", "NotTriggerScaleUp", "TriggeredScaleUp", "FailedScaleUp", "Nominated")


def collect_cluster(api: KubeAPI, namespace: Optional[str] = None, selector: Optional[str] = None,
                    for_pending: bool = False, progress: Optional[Callable[[str], None]] = None,
                    node_warnings: bool = False) -> S.Snapshot:
    """One snapshot of the cluster's GPU picture for `nodes capacity` and
    `diagnose pending`: the nodes (optionally by label selector), the
    non-terminated pods bound to them as slim records, the Pending pods in full,
    DRA slices and claims; for `diagnose pending` also the scheduler's and
    autoscalers' events, quotas, device-plugin pods of troubled nodes and the queue,
    volume and DRA objects the Pending pods name. No per-pod round trips.
    ``node_warnings`` (gpuctl serve) adds the Warning events of every Node, one list:
    the Xid, ECC and fallen-off-the-bus lines a node-problem-detector posts, so the GPU
    nodes they name are diagnosed though they still look healthy."""
    say = progress or (lambda msg: None)
    c = LiveCollector(api)
    say("reading nodes")
    items = c._try(S.NODES, "list nodes", "list", "nodes",
                   lambda: api.list("/api/v1/nodes", "Node", {"labelSelector": selector} if selector else None,
                                    malformed=c.snap.malformed))
    if items is None and S.NODES in c.snap.gaps and c.snap.gaps[S.NODES].reason in ("unreachable", "unauthorized", "timeout"):
        raise _fatal(ApiFailure(None, c.snap.gaps[S.NODES].reason, c.snap.gaps[S.NODES].detail), "list nodes")
    c._add_all("Node", items)
    say(f"reading Pending pods ({len(c.snap.nodes)} nodes)")
    pending_path = f"/api/v1/namespaces/{path_segment(namespace)}/pods" if namespace and for_pending else "/api/v1/pods"
    pending = c._try(S.PENDING_PODS, "list Pending pods", "list", "pods",
                     lambda: api.list(pending_path, "Pod", {"fieldSelector": "status.phase=Pending,spec.nodeName="}),
                     namespace=namespace if for_pending else None)
    c._add_all("Pod", pending)
    labels = any(needs_pod_labels(p) for p in pending or [])
    say("reading the pods bound to the nodes")
    c.bound_pods(sorted(c.snap.nodes), labels=labels)
    say("reading DRA devices and claims")
    c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceslices", "ResourceSlice")
    c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "deviceclasses", "DeviceClass")
    c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceclaims", "ResourceClaim")
    if node_warnings:
        c._add_all("Event", c._try(S.EVENTS, "list Warning events of nodes", "list", "events",
                                   lambda: api.list("/api/v1/events", "Event",
                                                    {"fieldSelector": "involvedObject.kind=Node,type=Warning"})))
    if not for_pending:
        c.kueue_quotas()
        return c.snap
    say("reading scheduler and autoscaler events")
    ev_path = f"/api/v1/namespaces/{path_segment(namespace)}/events" if namespace else "/api/v1/events"
    for reason in AUTOSCALER_REASONS:
        ev = c._try(S.EVENTS, f"list {reason} events", "list", "events",
                    lambda reason=reason: api.list(ev_path, "Event", {"fieldSelector": f"involvedObject.kind=Pod,reason={reason}"}),
                    namespace=namespace)
        c._add_all("Event", ev)
    quota_path = f"/api/v1/namespaces/{path_segment(namespace)}/resourcequotas" if namespace else "/api/v1/resourcequotas"
    c._add_all("ResourceQuota", c._try(S.QUOTAS, "list resourcequotas", "list", "resourcequotas",
                                       lambda: api.list(quota_path, "ResourceQuota"), namespace=namespace))
    gpu_nodes, log_nodes = plugin_log_nodes(c.snap)
    troubled = set(nodes_showing_a_problem(c.snap) if node_warnings else troubled_nodes(c.snap))
    plugin_nodes = [n for n in gpu_nodes if n.metadata.name in troubled]
    if plugin_nodes:
        say("reading device-plugin pods of nodes without healthy GPUs")
        c.device_plugins(plugin_nodes, log_nodes)
    namespaces = sorted({p.metadata.namespace or "default" for p in pending or []})
    if any(v.persistentVolumeClaim for p in pending or [] for v in p.spec.volumes):
        for ns in namespaces:
            c._add_all("PersistentVolumeClaim", c._try(S.PVCS, f"list persistentvolumeclaims in {ns}", "list",
                                                       "persistentvolumeclaims",
                                                       lambda ns=ns: api.list(f"/api/v1/namespaces/{path_segment(ns)}/persistentvolumeclaims",
                                                                              "PersistentVolumeClaim"), namespace=ns))
        c._add_all("StorageClass", c._try(S.STORAGECLASSES, "list storageclasses", "list", "storageclasses",
                                          lambda: api.list("/apis/storage.k8s.io/v1/storageclasses", "StorageClass"),
                                          group="storage.k8s.io"))
    for kind in ("Workload", "PodGroup"):
        if any(("kueue.x-k8s.io/queue-name" in p.metadata.labels) if kind == "Workload"
               else ("scheduling.k8s.io/group-name" in p.metadata.annotations) for p in pending or []):
            c._add_all("Event", c._try(S.EVENTS, f"list {kind} events", "list", "events",
                                       lambda kind=kind: api.list(ev_path, "Event", {"fieldSelector": f"involvedObject.kind={kind}"}),
                                       namespace=namespace))
    for p in pending or []:
        c.pod_extras(p, bulk=True)
    return c.snap


def collect_nodes(api: KubeAPI, names: Optional[list[str]] = None, selector: Optional[str] = None) -> S.Snapshot:
    """The nodes label-nodes works on: the named ones (one GET each), else one
    list (by label selector when given)."""
    c = LiveCollector(api)
    try:
        if names:
            for n in names:
                try:
                    c.snap.add("Node", api.get(f"/api/v1/nodes/{path_segment(n)}", "Node"))
                except ApiFailure as e:
                    if e.reason != "not-found":
                        raise
        else:
            for n in api.list("/api/v1/nodes", "Node", {"labelSelector": selector} if selector else None,
                              malformed=c.snap.malformed):
                c.snap.add("Node", n)
    except ApiFailure as e:
        raise _fatal(e, "list nodes") from None
    return c.snap


PROBE_MAX_AGE_SECONDS = 30 * 60   # three probe intervals (deploy/probe-daemonset.yaml)


def probes_from_pods(api: KubeAPI, namespace: str, selector: str, tail_lines: int = 5) -> dict[str, dict]:
    """The newest gpuctl/probe/v1 document each probe pod printed (the probe
    DaemonSet writes one JSON document per line), by node name. A document counts
    only for the node its pod runs on (a probe cannot speak for another node) and
    only if it is fresh; pods that cannot be read or printed nothing valid are
    skipped, and the labeller falls back to the node's labels."""
    import json as _json

    out: dict[str, dict] = {}
    try:
        pods = api.list(f"/api/v1/namespaces/{path_segment(namespace)}/pods", "Pod", {"labelSelector": selector})
    except ApiFailure:
        return out
    for p in pods:
        container = p.spec.containers[0].name if p.spec.containers else ""
        try:
            text = api.log_text(namespace, p.metadata.name, container, False, tail_lines=tail_lines)
        except ApiFailure:
            continue
        for line in reversed(text.splitlines()):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                doc = _json.loads(line)
            except ValueError:
                continue
            if not (isinstance(doc, dict) and doc.get("schema") == "gpuctl/probe/v1" and doc.get("node") == p.spec.nodeName):
                continue
            taken = S.parse_time(doc.get("capturedAt"))
            if taken is None or (now() - taken).total_seconds() > PROBE_MAX_AGE_SECONDS:
                break   # the newest document is stale: fall back to labels
            out[doc["node"]] = doc
            break
    return out


def collect_for_fit(api: KubeAPI, pods: list[Pod], free_nodes: Optional[list[str]] = None,
                    kueue_namespaces: Optional[list[str]] = None, volcano: bool = False,
                    progress: Optional[Callable[[str], None]] = None) -> S.Snapshot:
    """``gpuctl fit``: what placing ``pods`` (records made from the manifests' pod
    templates, not in the cluster) needs, and no more: the nodes; the
    non-terminated pods bound to the nodes they may use (every node's, with labels,
    when one has inter-pod rules; else the candidate nodes', without labels: for
    ``--gpus`` this is what ``nodes capacity`` reads); the device-plugin pods of
    troubled GPU nodes; the pods' namespaces' quotas; the PVCs, DRA objects and
    queues they name; the full pods of the nodes ``--assume free=NODE`` empties (to
    keep their DaemonSet pods). No events: pods that do not exist have none."""
    say = progress or (lambda msg: None)
    c = LiveCollector(api)
    say("reading nodes")
    c.nodes()
    if S.NODES in c.snap.gaps and c.snap.gaps[S.NODES].reason in ("unreachable", "unauthorized", "timeout"):
        raise _fatal(ApiFailure(None, c.snap.gaps[S.NODES].reason, c.snap.gaps[S.NODES].detail), "list nodes")
    c.covered(S.EVENTS, S.LOGS, S.RUNTIMECLASSES, S.OWNERS, S.PENDING_PODS, S.METRICS, S.POOL)
    if S.NODES not in c.snap.gaps:
        every = any(needs_pod_labels(p) for p in pods)
        wanted = sorted(c.snap.nodes) if every else sorted({n for p in pods for n in candidate_nodes(c.snap, p)})
        say(f"reading the pods bound to {len(wanted)} nodes")
        c.bound_pods(wanted, labels=every)
    elif S.PODS not in c.snap.gaps:
        c.snap.gaps[S.PODS] = S.Gap("list pods bound to the candidate nodes", "absent", "skipped: the nodes could not be read")
    for n in free_nodes or []:
        items = c._try(S.PODS, f"list pods on node {n}", "list", "pods",
                       lambda n=n: api.list("/api/v1/pods", "Pod", {"fieldSelector": f"spec.nodeName={n},{NON_TERMINATED}"}))
        c._add_all("Pod", items)
    gpu_nodes, log_nodes = plugin_log_nodes(c.snap)
    troubled = set(troubled_nodes(c.snap))
    plugin_nodes = [n for n in gpu_nodes if n.metadata.name in troubled]
    if plugin_nodes:
        c.device_plugins(plugin_nodes, log_nodes)
    c.covered(S.DEVICE_PLUGINS)
    if pods:
        c.unserved_plugins(pods[0])
    for ns in sorted({p.metadata.namespace or "default" for p in pods}):
        c.quotas(ns)
    c.covered(S.PVCS, S.QUEUES, S.DRA)
    for p in pods:
        ns = p.metadata.namespace or "default"
        claims = [v.persistentVolumeClaim.claimName for v in p.spec.volumes if v.persistentVolumeClaim]
        if claims:
            c.pvcs(ns, [x for x in claims if f"{ns}/{x}" not in c.snap.pvcs])
        if p.spec.resourceClaims and not c.snap.objects("DeviceClass"):
            c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceclaims", "ResourceClaim", ns=ns)
            if any(rc.resourceClaimTemplateName for rc in p.spec.resourceClaims):    # the claims its pods will get
                c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceclaimtemplates", "ResourceClaimTemplate", ns=ns)
            c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "deviceclasses", "DeviceClass")
            c.generic(S.DRA, "resource.k8s.io", DRA_VERSIONS, "resourceslices", "ResourceSlice")
            c.dra_plugin_pods()
    groups = sorted({(p.metadata.namespace or "default", g) for p in pods
                     for g in [p.metadata.annotations.get("scheduling.k8s.io/group-name")
                               or p.metadata.annotations.get("scheduling.volcano.sh/group-name")] if g})
    for ns, g in groups:    # a template naming an existing PodGroup: the gang's state (no events)
        if c.snap.find("PodGroup", ns, g) is None:
            c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup", ns=ns, name=g)
    volcano = volcano or bool(groups)
    for p in pods:    # KAI's queues, and a PodGroup a template names (as pod_extras reads them; no events)
        ns = p.metadata.namespace or "default"
        if "kai.scheduler/queue" in p.metadata.labels or p.spec.schedulerName == "kai-scheduler":
            if not any((q.apiVersion or "").startswith("scheduling.run.ai/") for q in c.snap.objects("Queue")):
                c.generic(S.QUEUES, "scheduling.run.ai", ("v2",), "queues", "Queue")
            kai_group = p.metadata.annotations.get("pod-group-name")
            if kai_group and not any((g.apiVersion or "").startswith("scheduling.run.ai/") and g.metadata.name == kai_group
                                     for g in c.snap.objects("PodGroup")):
                c.generic(S.QUEUES, "scheduling.run.ai", ("v2alpha2",), "podgroups", "PodGroup", ns=ns, name=kai_group)
    for ns in kueue_namespaces or []:
        c.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, "localqueues", "LocalQueue", ns=ns)
    if kueue_namespaces:    # what Kueue's flavor assignment reads (gpuctl/model/kueue.py)
        c.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, "clusterqueues", "ClusterQueue")
        c.generic(S.QUEUES, "kueue.x-k8s.io", KUEUE_VERSIONS, "resourceflavors", "ResourceFlavor")
        c.generic(S.QUEUES, "kueue.x-k8s.io", ("v1beta1", "v1beta2", "v1alpha1"), "cohorts", "Cohort")
    if volcano:
        c.generic(S.QUEUES, "scheduling.volcano.sh", ("v1beta1",), "queues", "Queue")
    return c.snap
