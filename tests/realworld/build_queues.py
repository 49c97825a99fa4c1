"""Real-world cases for quotas and queues (ResourceQuota refusals, Kueue, Volcano,
KAI), multi-resource requests, inter-pod constraints, state taints and near-miss
selectors. Run ``python tests/realworld/build_queues.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (NOW, Case, cond, container, cpu_node, event, gpu_node, job, obj, pod, quota, taint, unschedulable)  # noqa: E402
# ------------------------------------------------------------------ helpers (local to this area)


def gen_event(kind: str, name: str, namespace: Optional[str], reason: str, message: str, api: str,
              type_: str = "Warning", count: int = 1, source: str = "default-scheduler", at: str = NOW) -> dict:
    """An event on a non-core object (involvedObject.apiVersion set)."""
    e = event(kind, name, namespace, reason, message, type_=type_, count=count, source=source, at=at)
    e["involvedObject"]["apiVersion"] = api
    return e


def failed_scheduling(p: dict, message: str, count: int = 1, source: str = "default-scheduler") -> dict:
    m = p["metadata"]
    return event("Pod", m["name"], m["namespace"], "FailedScheduling", message, count=count, source=source)


# ------------------------------------------------------------------ Kueue


KUEUE = "kueue.x-k8s.io/v1beta1"
KUEUE_DOCS = "https://github.com/kubernetes-sigs/kueue/blob/main/site/content/en/docs/tasks/troubleshooting/"
EFA_IMAGE = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.3.3"


def kueue_clusterqueue_missing_flavor() -> Case:
    """headlamp-k8s/plugins#1191: the sample ClusterQueue names flavors that were never
    created; the ClusterQueue is inactive and every Workload behind it stays pending."""
    frag = "Can't admit new workloads: references missing ResourceFlavor(s): default,spot."
    c = Case("headlamp-plugins-1191-kueue-clusterqueue-missing-flavor",
             source="https://github.com/headlamp-k8s/plugins/issues/1191",
             fragment=frag,
             where="ClusterQueue status condition Active=False (reason FlavorNotFound); the Workload of the Job "
                   "stays QuotaReserved=False and the Job suspended",
             expect="queue-not-admitted",
             resolution="The sample ClusterQueue team-a references ResourceFlavors 'default' and 'spot' while the "
                        "supplied ResourceFlavor manifests are named 'default-flavor' and 'spot-flavor'. The "
                        "ClusterQueue is inactive (FlavorNotFound), the LocalQueue reports ClusterQueueIsInactive and "
                        "the Job is never admitted; fixing the flavor names in the ClusterQueue (PR #1177/#1192) "
                        "makes it Active and the workload is admitted and runs.",
             target={"namespace": "default", "target": "job/sample-job"},
             must_not=["insufficient-gpu", "insufficient-cpu", "insufficient-memory", "quota-exceeded"],
             k8s="v1.34.8 (kind), Kueue v0.19.0")
    c.add(cpu_node("kind-control-plane", cpu="8", memory="16Gi", kubelet="v1.34.8"))
    for f in ("default-flavor", "spot-flavor"):
        c.add(obj(KUEUE, "ResourceFlavor", f, spec={}))
    c.add(obj(KUEUE, "ClusterQueue", "team-a",
              spec={"namespaceSelector": {}, "resourceGroups": [
                  {"coveredResources": ["cpu", "memory"], "flavors": [
                      {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "9"},
                                                        {"name": "memory", "nominalQuota": "36Gi"}]},
                      {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "9"},
                                                     {"name": "memory", "nominalQuota": "36Gi"}]}]}]},
              status={"pendingWorkloads": 1, "admittedWorkloads": 0,
                      "conditions": [cond("Active", "False", "FlavorNotFound", frag)]}))
    c.add(obj(KUEUE, "LocalQueue", "team-a", "default", spec={"clusterQueue": "team-a"},
              status={"pendingWorkloads": 1, "admittedWorkloads": 0,
                      "conditions": [cond("Active", "False", "ClusterQueueIsInactive",
                                          "Can't submit new workloads to clusterQueue")]}))
    tmpl = {"containers": [container("dummy-job", image="registry.k8s.io/e2e-test-images/agnhost:2.53",
                                     requests={"cpu": "1", "memory": "200Mi"})],
            "restartPolicy": "Never"}
    j = job("sample-job", "default", tmpl, suspend=True, labels={"kueue.x-k8s.io/queue-name": "team-a"}, parallelism=3)
    c.add(j)
    c.add(obj(KUEUE, "Workload", "job-sample-job-3f2a1", "default", owner=("batch/v1", "Job", "sample-job"),
              labels={"kueue.x-k8s.io/job-uid": "uid-default-sample-job"},
              spec={"queueName": "team-a", "podSets": [{"name": "main", "count": 3, "template": {"spec": tmpl}}]},
              status={"conditions": [cond("QuotaReserved", "False", "Inadmissible",
                                          "ClusterQueue team-a is inactive")]}))
    c.add(gen_event("Workload", "job-sample-job-3f2a1", "default", "Pending", "ClusterQueue team-a is inactive",
                    api=KUEUE, type_="Normal", source="kueue-admission", count=14))
    return c


def kueue_localqueue_does_not_exist() -> Case:
    """Kueue's 'Troubleshooting Jobs' guide: a Job that names a LocalQueue missing from its
    namespace stays suspended with 'LocalQueue user-queue doesn't exist' (Inadmissible)."""
    frag = "LocalQueue user-queue doesn't exist"
    c = Case("kueue-docs-troubleshooting-jobs-localqueue-does-not-exist",
             source=KUEUE_DOCS + "troubleshooting_jobs.md",
             fragment=frag,
             where="Workload status condition QuotaReserved=False (reason Inadmissible); the Job stays suspended",
             expect="queue-not-admitted",
             resolution="Kueue's troubleshooting guide: when a Job references a LocalQueue that doesn't exist (or a "
                        "misconfigured LocalQueue/ClusterQueue), the Workload carries this condition and the Job is never "
                        "admitted; point kueue.x-k8s.io/queue-name at a LocalQueue of the Job's namespace. Free GPUs on "
                        "the nodes do not matter while the Job is suspended.",
             target={"namespace": "my-namespace", "target": "job/my-job"},
             must_not=["insufficient-gpu", "quota-exceeded", "scheduler-not-found"],
             k8s="v1.29 (Kueue v0.6)")
    c.add(*(gpu_node(f"gpu-node-{i}", gpus=8, product="NVIDIA-A100-SXM4-80GB") for i in (1, 2)))
    c.add(obj(KUEUE, "ResourceFlavor", "default-flavor", spec={}))
    c.add(obj(KUEUE, "ClusterQueue", "cluster-queue", spec={"namespaceSelector": {}, "resourceGroups": [
        {"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": "default-flavor", "resources": [
            {"name": "cpu", "nominalQuota": "96"}, {"name": "memory", "nominalQuota": "1000Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}]},
        status={"admittedWorkloads": 0, "conditions": [cond("Active", "True", "Ready", "Can admit new workloads")]}))
    c.add(obj(KUEUE, "LocalQueue", "team-queue", "my-namespace", spec={"clusterQueue": "cluster-queue"},
              status={"conditions": [cond("Active", "True", "Ready", "Can submit new workloads to clusterQueue")]}))
    tmpl = {"containers": [container("trainer", requests={"cpu": "8", "memory": "64Gi"}, gpus=2)],
            "restartPolicy": "Never"}
    c.add(job("my-job", "my-namespace", tmpl, suspend=True, labels={"kueue.x-k8s.io/queue-name": "user-queue"}))
    c.add(obj(KUEUE, "Workload", "job-my-job-19797", "my-namespace", owner=("batch/v1", "Job", "my-job"),
              labels={"kueue.x-k8s.io/job-uid": "uid-my-namespace-my-job"},
              spec={"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": tmpl}}]},
              status={"conditions": [cond("QuotaReserved", "False", "Inadmissible", frag)]}))
    c.add(gen_event("Job", "my-job", "my-namespace", "CreatedWorkload", "Created Workload: my-namespace/job-my-job-19797",
                    api="batch/v1", type_="Normal", source="batch/job-kueue-controller"))
    return c


def kueue_pod_group_fewer_pods() -> Case:
    """Kueue's 'Troubleshooting Pods' guide: a plain-pod group stays gated because not all
    of its pods exist yet, so Kueue has not even created the Workload."""
    frag = "'my-pod-group' group has fewer runnable pods than expected"
    c = Case("kueue-docs-troubleshooting-pods-group-fewer-runnable-pods",
             source=KUEUE_DOCS + "troubleshooting_pods.md",
             fragment=frag,
             where="event (Warning, reason ErrWorkloadCompose, from pod-kueue-controller) on a pod of the group; the "
                   "pods keep the kueue.x-k8s.io/admission scheduling gate",
             expect="queue-not-admitted",
             resolution="Kueue's troubleshooting guide: before creating a Workload for a pod group Kueue waits until all "
                        "pods with the same kueue.x-k8s.io/pod-group-name exist, as many as the annotation "
                        "kueue.x-k8s.io/pod-group-total-count says; until then no Workload exists and the pods stay gated. "
                        "Create the missing pod (or fix the total count); do not remove Kueue's gate by hand.",
             target={"pod": "my-namespace/my-pod-group-0"},
             must_not=["insufficient-gpu", "scheduler-not-found", "scheduling-in-progress"],
             k8s="v1.29 (Kueue v0.6)")
    c.add(gpu_node("gpu-node-1", gpus=8, product="NVIDIA-H100-80GB-HBM3"))
    c.add(obj(KUEUE, "LocalQueue", "user-queue", "my-namespace", spec={"clusterQueue": "cluster-queue"}))
    for i in range(3):
        p = pod(f"my-pod-group-{i}", "my-namespace", gpus=1,
                labels={"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/pod-group-name": "my-pod-group",
                        "kueue.x-k8s.io/managed": "true"},
                annotations={"kueue.x-k8s.io/pod-group-total-count": "4"},
                spec={"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
                conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                             "message": "Scheduling is blocked due to non-empty scheduling gates",
                             "lastTransitionTime": NOW}])
        c.add(p)
    c.add(event("Pod", "my-pod-group-0", "my-namespace", "ErrWorkloadCompose", frag, source="pod-kueue-controller"))
    return c


# ------------------------------------------------------------------ Volcano


VOLCANO_SCHED = "scheduling.volcano.sh/v1beta1"
VOLCANO_BATCH = "batch.volcano.sh/v1alpha1"


def volcano_stale_podgroups() -> Case:
    """volcano-sh/volcano#2633: new jobs stay Pending with 'resource in cluster is
    overused' on a nearly idle cluster; PodGroups of jobs whose pods were deleted by
    hand still hold their minResources in the queue."""
    frag_gang = ("1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; "
                 "Pending: 1 Unschedulable")
    frag = "resource in cluster is overused"
    c = Case("volcano-2633-stale-podgroups-overuse-queue",
             source="https://github.com/volcano-sh/volcano/issues/2633",
             fragment=frag,
             where="event (Normal, reason Unschedulable, from volcano) on the PodGroup, next to the Warning "
                   "'tasks in gang unschedulable' event",
             expect="queue-not-admitted", trap=True,
             resolution="Both worker nodes were at 7% and 20% utilisation. Jobs had completed and their pods had "
                        "been deleted by hand, but their PodGroups remained and still occupied minResources in the "
                        "queue, so the proportion plugin considered the queue overused. Deleting the stale PodGroups "
                        "let the pending pods run one by one (maintainers: the minResource of completed PodGroups "
                        "must be released by GC).",
             target={"pod": "default/test-task-job-7-worker-0"},
             must_not=["insufficient-cpu", "insufficient-memory", "insufficient-gpu"],
             k8s="v1.23 (Volcano v1.6.0)")
    c.add(cpu_node("worker-1", cpu="32", memory="128Gi", kubelet="v1.23.10"),
          cpu_node("worker-2", cpu="32", memory="128Gi", kubelet="v1.23.10"))
    c.add(obj(VOLCANO_SCHED, "Queue", "default", spec={"weight": 1, "reclaimable": True},
              status={"state": "Open", "running": 6, "pending": 1}))
    # the stale PodGroups: their jobs finished, their pods were deleted by hand
    for i in range(1, 7):
        c.add(obj(VOLCANO_SCHED, "PodGroup", f"test-task-job-{i}-{1000 + i}", "default",
                  spec={"minMember": 1, "queue": "default", "minResources": {"cpu": "8", "memory": "32Gi"}},
                  status={"phase": "Running", "running": 0, "succeeded": 1}))
    pg = "test-task-job-7-1007"
    c.add(obj(VOLCANO_SCHED, "PodGroup", pg, "default",
              spec={"minMember": 1, "queue": "default", "minResources": {"cpu": "8", "memory": "32Gi"}},
              status={"phase": "Pending", "conditions": [
                  cond("Unschedulable", "True", "NotEnoughResources", frag_gang)]}))
    c.add(gen_event("PodGroup", pg, "default", "Unschedulable", frag_gang, api=VOLCANO_SCHED, count=12,
                    source="volcano"))
    c.add(gen_event("PodGroup", pg, "default", "Unschedulable", frag, api=VOLCANO_SCHED, type_="Normal",
                    count=13, source="volcano"))
    p = pod("test-task-job-7-worker-0", "default",
            containers=[container("worker", image="busybox:1.36", requests={"cpu": "8", "memory": "32Gi"})],
            annotations={"scheduling.k8s.io/group-name": pg, "volcano.sh/job-name": "test-task-job-7"},
            labels={"volcano.sh/job-name": "test-task-job-7"},
            conditions=[unschedulable(frag_gang)])
    p["spec"]["schedulerName"] = "volcano"
    c.add(p, event("Pod", p["metadata"]["name"], "default", "FailedScheduling", frag_gang, count=12,
                   source="volcano"))
    c.add(running_pod("web-0", "default", "worker-1", cpu="2", memory="8Gi"),
          running_pod("web-1", "default", "worker-2", cpu="6", memory="24Gi"))
    return c


def running_pod(name: str, namespace: str, node: str, cpu: str = "1", memory: str = "1Gi", gpus: int = 0,
                labels: Optional[dict] = None, affinity: Optional[dict] = None,
                owner: Optional[tuple[str, str]] = None, image: str = "nginx:1.25") -> dict:
    lim = {"nvidia.com/gpu": str(gpus)} if gpus else None
    ct = container(name.split("-")[0] or "main", image=image, requests={"cpu": cpu, "memory": memory}, limits=lim)
    return pod(name, namespace, phase="Running", node=node, containers=[ct], labels=labels, affinity=affinity,
               owner=owner)


# ------------------------------------------------------------------ KAI scheduler


KAI_Q = "scheduling.run.ai/v2"


def kai_top_level_queue() -> Case:
    """kai-scheduler/KAI-Scheduler#621: a workload that names a top-level queue is never
    grouped nor scheduled; the pod-grouper even says the pod is not found."""
    frag = 'Pod "qa-build-preemptible" not found'
    c = Case("kai-scheduler-621-top-level-queue-not-schedulable",
             source="https://github.com/kai-scheduler/KAI-Scheduler/issues/621",
             fragment=frag,
             where="event (Warning, reason PodGrouperWarning, from pod-grouper) on the pod itself, with "
                   "'Unable to schedule pod' Unschedulable events from kai-scheduler",
             expect="queue-not-admitted", trap=True,
             resolution="The pod references a top-level queue (one without parentQueue). KAI-Scheduler only "
                        "schedules workloads submitted to leaf queues; the maintainers confirmed this is a current "
                        "implementation limitation (the quickstart references the child of default-parent-queue). "
                        "Submitting to a leaf queue schedules the pod; the pod is not actually missing.",
             target={"pod": "ci/qa-build-preemptible"},
             must_not=["scheduler-not-found", "insufficient-gpu", "insufficient-cpu"],
             k8s="v1.32 (KAI-Scheduler v0.9)")
    c.add(gpu_node("gpu-node-1", gpus=8, product="NVIDIA-H100-80GB-HBM3", kubelet="v1.32.5"),
          cpu_node("cpu-node-1", kubelet="v1.32.5"))
    c.add(obj(KAI_Q, "Queue", "qa", spec={"resources": {"cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                                         "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                                         "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}))
    c.add(obj(KAI_Q, "Queue", "default-parent-queue", spec={"resources": {
        "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}, "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}))
    c.add(obj(KAI_Q, "Queue", "default-queue", spec={"parentQueue": "default-parent-queue", "resources": {
        "cpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1}, "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1},
        "memory": {"quota": 0, "limit": -1, "overQuotaWeight": 1}}}))
    for comp in ("scheduler", "pod-grouper", "binder", "admission", "queue-controller", "podgroup-controller"):
        sp = pod(f"{comp}-6c9d8f7b5-x2k4q", "kai-scheduler", phase="Running", node="cpu-node-1",
                 containers=[container(comp, image=f"ghcr.io/nvidia/kai-scheduler/{comp}:v0.9.7")],
                 labels={"app": comp})
        c.add(sp)
    p = pod("qa-build-preemptible", "ci",
            containers=[container("build", image="ubuntu:22.04", requests={"cpu": "2", "memory": "4Gi"},
                                  command=["sleep", "infinity"])],
            labels={"kai.scheduler/queue": "qa"},
            conditions=[unschedulable("Unable to schedule pod")])
    p["spec"]["schedulerName"] = "kai-scheduler"
    c.add(p)
    c.add(event("Pod", "qa-build-preemptible", "ci", "PodGrouperWarning", frag, source="pod-grouper"))
    c.add(event("Pod", "qa-build-preemptible", "ci", "Unschedulable", "Unable to schedule pod", count=599,
                source="kai-scheduler"))
    return c


def kai_non_preemptible_exact_quota() -> Case:
    """kai-scheduler/KAI-Scheduler#2209: a non-preemptible fractional-GPU pod whose request
    exactly fills the queue's remaining quota is refused as NonPreemptibleOverQuota."""
    frag = ("Non-preemptible workload is over quota. Workload requested 0.2 GPUs, but aafa quota is 0.3 GPUs, "
            "while 0.1 GPUs are already allocated for non-preemptible pods.")
    msg = "NonPreemptibleOverQuota: " + frag + " Use a preemptible workload to go over quota."
    c = Case("kai-scheduler-2209-non-preemptible-exact-quota-rejected",
             source="https://github.com/kai-scheduler/KAI-Scheduler/issues/2209",
             fragment=frag,
             where="event (Warning, reason Unschedulable, from kai-scheduler) on the pending pod",
             expect="queue-not-admitted", trap=True,
             resolution="The project quota is 0.3 GPUs, 0.1 GPUs are held by non-preemptible pods and the new "
                        "non-preemptible pod asks for 0.2: allocated plus request equals the quota exactly, which should "
                        "fit. KAI's over-quota check rejects the exact match (reported as a bug by a maintainer); raising "
                        "the quota from 0.30 to 0.31 lets the workload schedule. The GPUs on the node are free; the "
                        "queue's quota check holds the pod.",
             target={"pod": "aafa/aafa-parser-table-detection-5d8f7b6c9-m4tkx"},
             must_not=["insufficient-gpu", "quota-exceeded", "scheduler-not-found"],
             k8s="v1.31 (OpenShift 4.18, KAI-Scheduler)")
    c.add(gpu_node("gpu-worker-0", gpus=1, product="NVIDIA-L40S", kubelet="v1.31.6"))
    c.add(obj(KAI_Q, "Queue", "aafa-department", spec={"resources": {
        "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}, "cpu": {"quota": -1, "limit": -1},
        "memory": {"quota": -1, "limit": -1}}}))
    c.add(obj(KAI_Q, "Queue", "aafa", spec={"parentQueue": "aafa-department", "resources": {
        "gpu": {"quota": 0.3, "limit": -1, "overQuotaWeight": 1}, "cpu": {"quota": -1, "limit": -1},
        "memory": {"quota": -1, "limit": -1}}},
        status={"allocated": {"nvidia.com/gpu": "100m"}, "requested": {"nvidia.com/gpu": "300m"}}))
    sp = pod("scheduler-7c9d5f8b6-h2x9q", "kai-scheduler", phase="Running", node="gpu-worker-0",
             containers=[container("scheduler", image="ghcr.io/nvidia/kai-scheduler/scheduler:v0.14.0")],
             labels={"app": "scheduler"})
    c.add(sp)
    lab = {"kai.scheduler/queue": "aafa"}
    run = pod("aafa-ocr-76c9f8d7b-q7n2p", "aafa", phase="Running", node="gpu-worker-0",
              containers=[container("ocr", image="registry.example/aafa/ocr:1.4")], labels=lab,
              annotations={"gpu-fraction": "0.1"}, spec={"schedulerName": "kai-scheduler",
                                                         "priorityClassName": "inference"})
    p = pod("aafa-parser-table-detection-5d8f7b6c9-m4tkx", "aafa",
            containers=[container("parser", image="registry.example/aafa/parser-table-detection:2.0")],
            labels=lab, annotations={"gpu-fraction": "0.2"},
            owner=("ReplicaSet", "aafa-parser-table-detection-5d8f7b6c9"),
            spec={"schedulerName": "kai-scheduler", "priorityClassName": "inference"},
            conditions=[unschedulable(msg)])
    c.add(run, p, event("Pod", p["metadata"]["name"], "aafa", "Unschedulable", msg, count=42, source="kai-scheduler"))
    return c


# ------------------------------------------------------------------ inter-pod constraints


def deepops_coredns_single_node() -> Case:
    """NVIDIA/deepops#378: on a single-node DGX Station one of the two CoreDNS replicas
    stays Pending; their required anti-affinity keeps them on different nodes."""
    msg = ("0/1 nodes are available: 1 node(s) didn't match pod affinity/anti-affinity, 1 node(s) didn't "
           "satisfy existing pods anti-affinity rules.")
    c = Case("deepops-378-coredns-anti-affinity-single-node",
             source="https://github.com/NVIDIA/deepops/issues/378",
             fragment=msg,
             where="FailedScheduling event and PodScheduled condition of the Pending coredns pod",
             expect="pod-topology-constraint",
             resolution="DeepOps launches two CoreDNS replicas with required pod anti-affinity on the hostname; on a "
                        "single-node DGX Station the second replica can never be placed and stays Pending. The "
                        "maintainer: this is typically not a real issue, everything else on the cluster works.",
             target={"pod": "kube-system/coredns-74c9d4d795-bmcvh"},
             must_not=["untolerated-taint", "insufficient-cpu", "insufficient-memory", "node-not-ready"],
             k8s="v1.15 (DeepOps 19.10)")
    c.add(gpu_node("dgx-station", gpus=4, product="Tesla-V100-DGXS-32GB", gfd=False, kubelet="v1.15.3",
                   cpu="40", memory="256Gi"))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [{"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]},
        "topologyKey": "kubernetes.io/hostname"}]}}
    rs = ("ReplicaSet", "coredns-74c9d4d795")
    dns = lambda: [container("coredns", image="coredns/coredns:1.6.0",  # noqa: E731
                             requests={"cpu": "100m", "memory": "70Mi"}, limits={"memory": "170Mi"})]
    ok = pod("coredns-74c9d4d795-fgxbc", "kube-system", phase="Running", node="dgx-station", containers=dns(),
             labels={"k8s-app": "kube-dns"}, affinity=anti, owner=rs)
    p = pod("coredns-74c9d4d795-bmcvh", "kube-system", containers=dns(), labels={"k8s-app": "kube-dns"},
            affinity=anti, owner=rs, conditions=[unschedulable(msg)])
    c.add(ok, p, failed_scheduling(p, msg, count=18))
    return c


# ------------------------------------------------------------------ state taints


def hetzner_ccm_cannot_initialize() -> Case:
    """devantler-tech/ksail#4321: every node keeps node.cloudprovider.kubernetes.io/uninitialized
    because the Hetzner CCM cannot match the nodes' private IPs (HCLOUD_NETWORK unset)."""
    frag = "failed to get node address from cloud provider that matches ip: 10.0.1.1"
    log = ("E0424 09:12:41.118305       1 node_controller.go:281] error syncing 'dev-control-plane-1': failed to "
           "get node modifiers from cloud provider: provided node ip for node \"dev-control-plane-1\" is not valid: "
           "failed to get node address from cloud provider that matches ip: 10.0.1.1, requeuing\n")
    msg = ("0/5 nodes are available: 5 node(s) had untolerated taint(s). preemption: 0/5 nodes are available: "
           "5 Preemption is not helpful for scheduling.")
    c = Case("ksail-4321-hetzner-ccm-uninitialized-taint",
             source="https://github.com/devantler-tech/ksail/issues/4321",
             fragment=frag,
             where="log of the hcloud-cloud-controller-manager container; the pending pod's FailedScheduling event "
                   "names only untolerated taints",
             expect="node-not-ready", trap=True,
             resolution="The nodes advertise their private IPs but the CCM was installed without HCLOUD_NETWORK, so it "
                        "cannot match them to Hetzner servers and never clears node.cloudprovider.kubernetes.io/"
                        "uninitialized; hcloud-csi-controller and metrics-server stay Pending. Fix: set HCLOUD_NETWORK "
                        "in the CCM's Helm values so it initialises the nodes. Tolerating the taint is not the fix.",
             target={"pod": "kube-system/hcloud-csi-controller-6d9f7c8b5-vq2lp"},
             k8s="v1.34 (Talos v1.11.2)")
    uninit = taint("node.cloudprovider.kubernetes.io/uninitialized", "true")
    for i in (1, 2, 3):
        c.add(cpu_node(f"dev-control-plane-{i}", cpu="2", memory="4Gi", kubelet="v1.34.1",
                       taints=[uninit, taint("node-role.kubernetes.io/control-plane")],
                       labels={"node-role.kubernetes.io/control-plane": ""}))
    for i in (1, 2):
        c.add(cpu_node(f"dev-worker-{i}", cpu="2", memory="4Gi", kubelet="v1.34.1", taints=[uninit]))
    ccm = pod("hcloud-cloud-controller-manager-7b9d6f5c4-hx8tn", "kube-system", phase="Running",
              node="dev-control-plane-1",
              containers=[container("hcloud-cloud-controller-manager",
                                    image="docker.io/hetznercloud/hcloud-cloud-controller-manager:v1.24.0")],
              labels={"app.kubernetes.io/name": "hcloud-cloud-controller-manager"},
              tolerations=[{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists",
                            "effect": "NoSchedule"}, {"key": "node-role.kubernetes.io/control-plane",
                                                      "operator": "Exists", "effect": "NoSchedule"}])
    c.add(ccm).log("kube-system", ccm["metadata"]["name"], "hcloud-cloud-controller-manager", log * 3)
    p = pod("hcloud-csi-controller-6d9f7c8b5-vq2lp", "kube-system",
            containers=[container("hcloud-csi-driver", image="docker.io/hetznercloud/hcloud-csi-driver:v2.16.0",
                                  requests={"cpu": "10m", "memory": "40Mi"})],
            labels={"app.kubernetes.io/name": "hcloud-csi", "app.kubernetes.io/component": "controller"},
            owner=("ReplicaSet", "hcloud-csi-controller-6d9f7c8b5"), conditions=[unschedulable(msg)])
    c.add(p, failed_scheduling(p, msg, count=40))
    return c


def volcano_queue_capability_scalar_pods_zero() -> Case:
    """volcano-sh/volcano#3220: 'queue resource quota insufficient' on a queue whose
    capability is 9999 GPUs; listing extended resources in the capability makes the
    unlisted scalar dimensions (pods) count as 0, so no job is ever enqueued."""
    frag = "queue resource quota insufficient"
    gang = "0/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable"
    c = Case("volcano-3220-queue-capability-extended-resources-blocks-enqueue",
             source="https://github.com/volcano-sh/volcano/issues/3220",
             fragment=frag,
             where="event (Normal, reason Unschedulable, from volcano) on the PodGroup, with the Warning "
                   "'0/0 tasks in gang unschedulable' event; the job's pods are never created",
             expect="queue-not-admitted", trap=True,
             resolution="The queue's capability (cpu 99999, memory 999999Gi, momenta.ai/rdma 9999, nvidia.com/gpu 9999) "
                        "is far above the request, yet the PodGroup never becomes Inqueue. The reporter found that removing "
                        "the momenta.ai/rdma and nvidia.com/gpu entries from the capability let the job schedule at once; "
                        "the maintainers explained the same symptom in volcano#3426: once extended resources are listed, "
                        "the unlisted 'pods' dimension of the capability is 0 and the proportion plugin cannot enqueue the "
                        "job. The queue definition, not cluster capacity, holds the job.",
             target={"namespace": "default", "target": "vcjob/rdma-train-13"},
             must_not=["insufficient-gpu", "insufficient-resource", "quota-exceeded", "unknown-resource-name"],
             k8s="v1.25 (Volcano v1.8)")
    for i in (1, 2):
        c.add(gpu_node(f"nv3090-{i:02d}", gpus=8, product="NVIDIA-GeForce-RTX-3090", kubelet="v1.25.9",
                       extra_capacity={"momenta.ai/rdma": "1"}))
    c.add(obj(VOLCANO_SCHED, "Queue", "tmp-nv3090-13",
              spec={"capability": {"cpu": "99999", "memory": "999999Gi", "momenta.ai/rdma": "9999",
                                   "nvidia.com/gpu": "9999"}, "reclaimable": False, "weight": 1},
              status={"allocated": {"cpu": "0", "memory": "0"}, "pending": 1, "reservation": {}, "state": "Open"}))
    tmpl = {"spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [
        container("trainer", requests={"cpu": "16", "memory": "64Gi"},
                  limits={"nvidia.com/gpu": "8", "momenta.ai/rdma": "1"})]}}
    c.add(obj(VOLCANO_BATCH, "Job", "rdma-train-13", "default",
              spec={"minAvailable": 1, "schedulerName": "volcano", "queue": "tmp-nv3090-13",
                    "tasks": [{"name": "worker", "replicas": 1, "template": tmpl}]},
              status={"state": {"phase": "Pending"}, "minAvailable": 1}))
    pg = "rdma-train-13-3a0c8f21-5d1e-4b8a-9c2f-0e7d6b1a4c55"
    c.add(obj(VOLCANO_SCHED, "PodGroup", pg, "default", owner=("batch.volcano.sh/v1alpha1", "Job", "rdma-train-13"),
              spec={"minMember": 1, "queue": "tmp-nv3090-13",
                    "minResources": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "momenta.ai/rdma": "1"}},
              status={"phase": "Pending", "conditions": [cond("Unschedulable", "True", "NotEnoughResources", gang)]}))
    c.add(gen_event("PodGroup", pg, "default", "Unschedulable", gang, api=VOLCANO_SCHED, count=12, source="volcano"))
    c.add(gen_event("PodGroup", pg, "default", "Unschedulable", frag, api=VOLCANO_SCHED, type_="Normal", count=13,
                    source="volcano"))
    return c


def volcano_webhook_podgroup_pending() -> Case:
    """volcano-sh/volcano#621: the job controller cannot create the pods: Volcano's pod
    admission webhook refuses them while the PodGroup is still Pending (not Inqueue)."""
    line = ('E1216 12:31:28.678835       1 job_controller_actions.go:252] Failed to create pod failed-delete-job-fail-0 '
            'for Job failed-delete-job, err &errors.StatusError{ErrStatus:v1.Status{TypeMeta:v1.TypeMeta{Kind:"", '
            'APIVersion:""}, ListMeta:v1.ListMeta{SelfLink:"", ResourceVersion:"", Continue:""}, Status:"Failure", '
            'Message:"admission webhook \\"validatepod.volcano.sh\\" denied the request: failed to create pod '
            '<test/failed-delete-job-fail-0> as the podgroup phase is Pending", Reason:"", '
            'Details:(*v1.StatusDetails)(nil), Code:400}}\n')
    frag = ('admission webhook \\"validatepod.volcano.sh\\" denied the request: failed to create pod '
            '<test/failed-delete-job-fail-0> as the podgroup phase is Pending')
    c = Case("volcano-621-admission-webhook-denies-pod-podgroup-pending",
             source="https://github.com/volcano-sh/volcano/issues/621",
             fragment=frag,
             where="log of the volcano-controllers container (job controller), when it creates the job's pods",
             expect="queue-not-admitted",
             resolution="Volcano's validating webhook only admits pods of a PodGroup that has left Pending. The PodGroup "
                        "phase is set by the scheduler, which runs periodically, so until the scheduler enqueues the "
                        "PodGroup (Inqueue) the job controller's pod creations are denied; the job waits on the queue, "
                        "not on nodes or on the webhook itself.",
             target={"namespace": "test", "target": "vcjob/failed-delete-job"},
             must_not=["insufficient-gpu", "insufficient-cpu", "quota-exceeded"],
             k8s="v1.16 (Volcano v0.3)")
    c.add(gpu_node("gpu-node-1", gpus=4, product="Tesla-V100-SXM2-16GB", kubelet="v1.16.3", gfd=False),
          cpu_node("node-1", kubelet="v1.16.3"))
    c.add(obj(VOLCANO_SCHED, "Queue", "default", spec={"weight": 1}, status={"state": "Open", "pending": 1}))
    tmpl = {"spec": {"schedulerName": "volcano", "restartPolicy": "Never",
                     "containers": [container("fail", image="busybox:1.31", command=["sh", "-c", "exit 1"],
                                              requests={"cpu": "1", "memory": "1Gi"})]}}
    c.add(obj(VOLCANO_BATCH, "Job", "failed-delete-job", "test",
              spec={"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                    "tasks": [{"name": "fail", "replicas": 1, "template": tmpl}]},
              status={"state": {"phase": "Pending"}, "minAvailable": 1}))
    c.add(obj(VOLCANO_SCHED, "PodGroup", "failed-delete-job", "test",
              owner=("batch.volcano.sh/v1alpha1", "Job", "failed-delete-job"),
              spec={"minMember": 1, "queue": "default", "minResources": {"cpu": "1", "memory": "1Gi"}},
              status={"phase": "Pending"}))
    ctl = pod("volcano-controllers-6d9b6f8c7-q2xvz", "volcano-system", phase="Running", node="node-1",
              containers=[container("volcano-controllers", image="volcanosh/vc-controller-manager:v0.3")],
              labels={"app": "volcano-controller"})
    c.add(ctl).log("volcano-system", ctl["metadata"]["name"], "volcano-controllers", line * 2)
    return c


def kueue_borrowing_limit_bug() -> Case:
    """kubernetes-sigs/kueue#1344: a Workload stays pending with 'borrowing limit ...
    exceeded' on the first flavor although the second flavor of the ClusterQueue has
    free quota; Kueue's scheduler used a stale ClusterQueue snapshot."""
    frag = "couldn't assign flavors to pod set main: borrowing limit for cpu in flavor flav-1 exceeded"
    c = Case("kueue-1344-borrowing-limit-message-second-flavor-free",
             source="https://github.com/kubernetes-sigs/kueue/issues/1344",
             fragment=frag,
             where="Workload status condition QuotaReserved=False (reason Pending); the Job stays suspended",
             expect="queue-not-admitted", trap=True,
             resolution="The ClusterQueue has two flavors with 2 CPUs each and whenCanPreempt: Preempt; the third "
                        "1-CPU job is never admitted although flav-2 is empty. No borrowing limit is involved: the "
                        "contributor found the ClusterQueue's AllocatableResourceGeneration changed after the job was "
                        "first considered, so the scheduler kept evaluating only flav-1; adding a check on the resource "
                        "groups fixed it. The workload is held by Kueue (a Kueue bug), not by nodes.",
             target={"namespace": "default", "target": "job/sample-job-3"},
             must_not=["insufficient-cpu", "insufficient-memory", "quota-exceeded"],
             k8s="v1.27.4 (Kueue built from main, v0.5.0 manifests)")
    c.add(cpu_node("kind-worker", cpu="8", memory="32Gi", kubelet="v1.27.4"))
    for f in ("flav-1", "flav-2"):
        c.add(obj(KUEUE, "ResourceFlavor", f, spec={}))
    c.add(obj(KUEUE, "ClusterQueue", "cluster-queue", spec={
        "namespaceSelector": {}, "preemption": {"reclaimWithinCohort": "Any",
                                                "withinClusterQueue": "LowerOrNewerEqualPriority"},
        "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "flav-1", "resources": [{"name": "cpu", "nominalQuota": "2"}]},
            {"name": "flav-2", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]},
        status={"admittedWorkloads": 2, "pendingWorkloads": 1,
                "flavorsUsage": [{"name": "flav-1", "resources": [{"name": "cpu", "total": "2"}]},
                                 {"name": "flav-2", "resources": [{"name": "cpu", "total": "0"}]}],
                "conditions": [cond("Active", "True", "Ready", "Can admit new workloads")]}))
    c.add(obj(KUEUE, "LocalQueue", "user-queue", "default", spec={"clusterQueue": "cluster-queue"}))
    tmpl = {"containers": [container("dummy-job", image="gcr.io/k8s-staging-perf-tests/sleep:v0.1.0",
                                     requests={"cpu": "1"})], "restartPolicy": "Never"}
    for i in (1, 2, 3):
        j = job(f"sample-job-{i}", "default", tmpl, suspend=(i == 3), labels={"kueue.x-k8s.io/queue-name": "user-queue"})
        c.add(j)
        conds = ([cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue"),
                  cond("Admitted", "True", "Admitted", "The workload is admitted")] if i < 3 else
                 [cond("QuotaReserved", "False", "Pending", frag)])
        c.add(obj(KUEUE, "Workload", f"job-sample-job-{i}-5c1e{i}", "default",
                  owner=("batch/v1", "Job", f"sample-job-{i}"),
                  spec={"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": tmpl}}]},
                  status={"conditions": conds}))
        if i < 3:
            c.add(pod(f"sample-job-{i}-x{i}k7q", "default", phase="Running", node="kind-worker",
                      containers=[container("dummy-job", image="gcr.io/k8s-staging-perf-tests/sleep:v0.1.0",
                                            requests={"cpu": "1"})],
                      labels={"job-name": f"sample-job-{i}"}, owner=("Job", f"sample-job-{i}")))
    return c


# ------------------------------------------------------------------ ResourceQuota


def statefulset_failed_quota_must_specify() -> Case:
    """hmcts/cnp-flux-config#13765: a ResourceQuota refuses the pods of a StatefulSet
    that set no requests; cleaning the namespace up (the first advice) changes nothing."""
    frag = "is forbidden: failed quota: fpl-quota: must specify requests.cpu,requests.memory"
    msg = ('create Pod fpl-case-service-pr-3308-es-master-0 in StatefulSet fpl-case-service-pr-3308-es-master failed '
           'error: pods "fpl-case-service-pr-3308-es-master-0" is forbidden: failed quota: fpl-quota: must specify '
           'requests.cpu,requests.memory')
    ns = "fpl"
    c = Case("hmcts-cnp-flux-config-13765-failed-quota-must-specify-requests",
             source="https://github.com/hmcts/cnp-flux-config/pull/13765",
             fragment=frag,
             where="event (Warning, reason FailedCreate, from statefulset-controller) on the StatefulSet; its pod is "
                   "never created",
             expect="quota-exceeded", trap=True,
             resolution="The reviewer first asked to clean up the namespace; the author deleted all pods and the "
                        "StatefulSet still failed with the same error. The namespace quota fpl-quota tracks requests.cpu "
                        "and requests.memory, so every pod must specify them, and the PR environment's Elasticsearch, "
                        "Redis and Logstash pods did not; the team disabled those components until requests are set. "
                        "Free quota was never the problem.",
             target={"namespace": ns, "target": "statefulset/fpl-case-service-pr-3308-es-master"},
             must_not=["insufficient-cpu", "insufficient-memory"],
             k8s="v1.21 (AKS)")
    c.add(*(cpu_node(f"aks-linux-{i}", cpu="8", memory="32Gi", kubelet="v1.21.7") for i in range(3)))
    c.add(quota("fpl-quota", ns, hard={"requests.cpu": "8", "requests.memory": "16Gi", "pods": "60"},
                used={"requests.cpu": "1500m", "requests.memory": "3Gi", "pods": "4"}))
    tmpl = {"metadata": {"labels": {"app": "fpl-case-service-pr-3308-es-master"}},
            "spec": {"containers": [container("elasticsearch",
                                              image="docker.elastic.co/elasticsearch/elasticsearch:7.11.1")]}}
    c.add(obj("apps/v1", "StatefulSet", "fpl-case-service-pr-3308-es-master", ns,
              spec={"replicas": 1, "serviceName": "fpl-case-service-pr-3308-es-master", "template": tmpl},
              status={"replicas": 0, "readyReplicas": 0, "currentReplicas": 0}))
    c.add(gen_event("StatefulSet", "fpl-case-service-pr-3308-es-master", ns, "FailedCreate", msg, api="apps/v1",
                    count=39, source="statefulset-controller"))
    return c


# ------------------------------------------------------------------ inter-pod: more


def nack_anti_affinity_single_node_rollout() -> Case:
    """nats-io/k8s#522: upgrading the NACK chart on a one-node cluster leaves the new pod
    Pending: its required anti-affinity excludes the node that still runs the old replica."""
    msg = "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."
    c = Case("nats-k8s-522-anti-affinity-blocks-rollout-single-node",
             source="https://github.com/nats-io/k8s/issues/522",
             fragment=msg,
             where="FailedScheduling event and PodScheduled condition of the new ReplicaSet's pod",
             expect="pod-topology-constraint",
             resolution="The NACK Deployment carries a required pod anti-affinity on its own app label; during a rolling "
                        "update the old replica still runs on the only node, so the new pod cannot be placed. Deleting "
                        "the old replica lets the rollout finish; the maintainer agreed the anti-affinity can be removed "
                        "from that Deployment.",
             target={"pod": "nats/nack-6b8d7f9c4d-p2kqz"},
             must_not=["insufficient-cpu", "insufficient-memory", "untolerated-taint"],
             k8s="v1.24")
    c.add(cpu_node("k3s-server", cpu="4", memory="16Gi", kubelet="v1.24.2+k3s1"))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "nack"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    ct = lambda tag: [container("jsc", image=f"natsio/jetstream-controller:{tag}",  # noqa: E731
                                requests={"cpu": "50m", "memory": "64Mi"})]
    old = pod("nack-5f7c9d8b6-7xwlm", "nats", phase="Running", node="k3s-server", containers=ct("0.7.2"),
              labels={"app": "nack"}, affinity=anti, owner=("ReplicaSet", "nack-5f7c9d8b6"))
    new = pod("nack-6b8d7f9c4d-p2kqz", "nats", containers=ct("0.7.4"), labels={"app": "nack"}, affinity=anti,
              owner=("ReplicaSet", "nack-6b8d7f9c4d"), conditions=[unschedulable(msg)])
    c.add(old, new, failed_scheduling(new, msg, count=7))
    return c


# ------------------------------------------------------------------ state taints: more


def minikube_not_ready_missing_cni() -> Case:
    """kubernetes/minikube#14924: pods Pending on 'untolerated taint node.kubernetes.io/not-ready';
    the node is NotReady because no CNI plugins are installed (a comment suggests
    removing the taint)."""
    frag = "network plugin is not ready"
    cond_msg = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                "message:docker: network plugin is not ready: cni config uninitialized")
    msg = ("0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "
           "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    c = Case("minikube-14924-not-ready-taint-missing-cni-plugins",
             source="https://github.com/kubernetes/minikube/issues/14924",
             fragment=frag,
             where="node condition Ready=False (reason KubeletNotReady); the pending pod's FailedScheduling event "
                   "names the node.kubernetes.io/not-ready taint",
             expect="node-not-ready", trap=True,
             resolution="The node carries node.kubernetes.io/not-ready because the kubelet reports the network plugin "
                        "not ready (no CNI configuration/plugins on the none-driver host). Installing the CNI plugins "
                        "(as in minikube#14724) made the node Ready and the pods scheduled. A comment's advice to remove "
                        "the not-ready taint by hand does not fix the node.",
             target={"pod": "default/hello-minikube-7ddcb6b7d5-kx9qv"},
             must_not=["untolerated-taint"],
             k8s="v1.25.0 (minikube, none driver)")
    n = cpu_node("minikube", cpu="8", memory="16Gi", kubelet="v1.25.0",
                 taints=[taint("node.kubernetes.io/not-ready")])
    n["status"]["conditions"][0].update({"status": "False", "reason": "KubeletNotReady", "message": cond_msg})
    c.add(n)
    p = pod("hello-minikube-7ddcb6b7d5-kx9qv", "default",
            containers=[container("echo-server", image="k8s.gcr.io/echoserver:1.4")],
            labels={"app": "hello-minikube"}, owner=("ReplicaSet", "hello-minikube-7ddcb6b7d5"),
            conditions=[unschedulable(msg)])
    c.add(p, failed_scheduling(p, msg, count=11))
    return c


# ------------------------------------------------------------------ near-miss selectors


def ingress_nginx_os_label_prefix() -> Case:
    """kubernetes/ingress-nginx#4775: the controller selects kubernetes.io/os=linux on GKE
    nodes that only carry beta.kubernetes.io/os=linux."""
    frag = "node(s) didn't match node selector"
    msg = "0/2 nodes are available: 2 node(s) didn't match node selector."
    c = Case("ingress-nginx-4775-os-label-only-beta-prefix",
             source="https://github.com/kubernetes/ingress-nginx/issues/4775",
             fragment=frag,
             where="FailedScheduling event of the controller pod (GKE console: PodUnschedulable)",
             expect="node-selector-mismatch",
             resolution="The mandatory.yaml Deployment has nodeSelector kubernetes.io/os: linux, while the cluster's "
                        "nodes carry only beta.kubernetes.io/os=linux. Labelling the nodes kubernetes.io/os=linux (or "
                        "removing the selector) let the pod schedule; the user confirmed the labelling worked.",
             target={"pod": "ingress-nginx/nginx-ingress-controller-7995bd9c47-q8lzx"},
             must_not=["untolerated-taint", "insufficient-cpu"],
             k8s="v1.13 (GKE)")
    for i in (1, 2):
        n = cpu_node(f"gke-standard-cluster-1-default-pool-5b1f{i}", cpu="2", memory="7680Mi",
                     kubelet="v1.13.11-gke.14")
        lab = n["metadata"]["labels"]
        lab.pop("kubernetes.io/os", None)
        lab.pop("kubernetes.io/arch", None)
        lab.update({"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
                    "cloud.google.com/gke-nodepool": "default-pool"})
        c.add(n)
    p = pod("nginx-ingress-controller-7995bd9c47-q8lzx", "ingress-nginx",
            containers=[container("nginx-ingress-controller",
                                  image="quay.io/kubernetes-ingress-controller/nginx-ingress-controller:0.26.1",
                                  requests={"cpu": "100m", "memory": "90Mi"})],
            labels={"app.kubernetes.io/name": "ingress-nginx"}, node_selector={"kubernetes.io/os": "linux"},
            owner=("ReplicaSet", "nginx-ingress-controller-7995bd9c47"), conditions=[unschedulable(msg)])
    c.add(p, failed_scheduling(p, msg, count=9))
    return c


# ------------------------------------------------------------------ multi-resource


def efa_plugin_not_running() -> Case:
    """aws-samples/aws-efa-eks#8: every node 'Insufficient vpc.amazonaws.com/efa' because the
    EFA device plugin crashes when forced to run as non-root, so no node advertises EFA."""
    msg = "0/64 nodes are available: 64 Insufficient vpc.amazonaws.com/efa."
    c = Case("aws-efa-eks-8-efa-device-plugin-not-running",
             source="https://github.com/aws-samples/aws-efa-eks/issues/8",
             fragment=msg,
             where="FailedScheduling event of the worker pod; the EFA device plugin pods crash-loop",
             expect="device-plugin-not-running", trap=True,
             also_ok={"insufficient-resource": "the nodes lack the second extended resource the pod requests; the "
                                               "runbook routes a missing NIC resource to that resource's device plugin"},
             resolution="The nodes are EFA-enabled hpc6a instances, but the eksctl-installed EFA device plugin had been "
                        "switched to runAsNonRoot and could not start, so no node advertised vpc.amazonaws.com/efa. "
                        "Running the plugin as root (the custom manifest / efa-device-plugin Helm chart) fixed it; the "
                        "cluster was not short of EFA devices and the resource name was correct.",
             target={"pod": "flux-operator/flux-sample-0-9x8pq"},
             must_not=["unknown-resource-name"],
             k8s="v1.23 (EKS, eksctl)")
    for i in range(64):
        n = cpu_node(f"ip-192-168-{10 + i // 32}-{10 + i % 32}.us-east-2.compute.internal", cpu="96",
                     memory="374Gi", kubelet="v1.23.15-eks-49d8fe8",
                     labels={"node.kubernetes.io/instance-type": "hpc6a.48xlarge", "fluxoperator": "true",
                             "vpc.amazonaws.com/efa.present": "true", "topology.kubernetes.io/zone": "us-east-2b"})
        c.add(n)
        if i < 3:
            dp = pod(f"aws-efa-k8s-device-plugin-daemonset-{i:05d}", "kube-system", phase="Running", node=n["metadata"]["name"],
                     containers=[container("aws-efa-k8s-device-plugin", image=EFA_IMAGE)],
                     labels={"name": "aws-efa-k8s-device-plugin"},
                     owner=("DaemonSet", "aws-efa-k8s-device-plugin-daemonset"),
                     statuses=[{"name": "aws-efa-k8s-device-plugin", "ready": False, "restartCount": 7,
                                "image": EFA_IMAGE,
                                "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                      "message": "back-off 5m0s restarting failed container"}},
                                "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                             "startedAt": "2026-11-19T09:00:00Z",
                                                             "finishedAt": NOW}}}])
            c.add(dp)
    p = pod("flux-sample-0-9x8pq", "flux-operator",
            containers=[container("flux-sample", image="ghcr.io/rse-ops/lammps-efa:ubuntu-20.04",
                                  limits={"vpc.amazonaws.com/efa": "1", "memory": "340G", "cpu": "94"})],
            owner=("Job", "flux-sample"), conditions=[unschedulable(msg)])
    c.add(p, failed_scheduling(p, msg, count=11))
    return c


CASES = [kueue_clusterqueue_missing_flavor, kueue_localqueue_does_not_exist, kueue_pod_group_fewer_pods,
         volcano_stale_podgroups, kai_top_level_queue,
         volcano_queue_capability_scalar_pods_zero, kai_non_preemptible_exact_quota, volcano_webhook_podgroup_pending,
         kueue_borrowing_limit_bug,
         statefulset_failed_quota_must_specify,
         deepops_coredns_single_node, nack_anti_affinity_single_node_rollout,
         hetzner_ccm_cannot_initialize, minikube_not_ready_missing_cni,
         ingress_nginx_os_label_prefix, efa_plugin_not_running]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
