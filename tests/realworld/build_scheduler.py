"""Real-world scheduler cases (issue 14): messages gpuctl has no specific code for or
reads wrongly (volumes, host ports, ephemeral storage, pod affinity), the scheduler's and
autoscalers' wordings across Kubernetes versions, and "Insufficient nvidia.com/gpu" that
was really something else (or really a shortage). Run
``python tests/realworld/build_scheduler.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (NOW, Case, container, cpu_node, device_plugin_pod, event, gpu_node, pod, taint,  # noqa: E402
                 unschedulable, waiting, bound)

# ------------------------------------------------------------------ local helpers


def zoned(node: dict, zone: str, region: Optional[str] = None, extra: Optional[dict] = None) -> dict:
    """Add the well-known topology labels to a node."""
    lab = node["metadata"]["labels"]
    lab["topology.kubernetes.io/zone"] = zone
    lab["topology.kubernetes.io/region"] = region or zone.rsplit("-", 1)[0]
    lab.update(extra or {})
    return node


def not_ready(node: dict, reason: str = "NodeStatusUnknown", message: str = "Kubelet stopped posting node status.",
              status: str = "Unknown") -> dict:
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready.update({"status": status, "reason": reason, "message": message})
    if not message:
        ready.pop("message")
    return node


def storage_class(name: str, provisioner: str, mode: str = "Immediate", default: bool = False) -> dict:
    ann = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "uid": f"uid-sc-{name}", **({"annotations": ann} if ann else {})},
            "provisioner": provisioner, "reclaimPolicy": "Delete", "volumeBindingMode": mode}


def pvc(name: str, namespace: str, phase: str = "Bound", volume: Optional[str] = None,
        storage_class_name: Optional[str] = None, size: str = "10Gi") -> dict:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                            "volumeMode": "Filesystem"}
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    if volume:
        spec["volumeName"] = volume
    st: dict[str, Any] = {"phase": phase}
    if phase == "Bound":
        st.update({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}})
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                         "creationTimestamp": "2026-11-18T09:00:00Z"},
            "spec": spec, "status": st}


def zonal_pv(name: str, zone: str, claim_ns: str, claim: str, storage_class_name: str, size: str = "10Gi",
             driver: str = "kubernetes.io/gce-pd", zone_key: str = "topology.kubernetes.io/zone") -> dict:
    """A bound PersistentVolume whose node affinity pins it to one zone (a cloud disk)."""
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "uid": f"uid-pv-{name}", "labels": {zone_key: zone}},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": storage_class_name,
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": claim_ns, "name": claim},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": zone_key, "operator": "In", "values": [zone]}]}]}},
                     **({"gcePersistentDisk": {"pdName": name, "fsType": "ext4"}} if "gce" in driver else
                        {"awsElasticBlockStore": {"volumeID": f"aws://{zone}/vol-{zlib.crc32(name.encode()) % 10**8:08d}",
                                                  "fsType": "ext4"}})},
            "status": {"phase": "Bound"}}


def pvc_volume(volume_name: str, claim: str) -> dict:
    return {"name": volume_name, "persistentVolumeClaim": {"claimName": claim}}


def scheduler_said(c: Case, kind_ns_name: tuple[str, str], message: str, count: int = 1,
                   source: str = "default-scheduler", condition: bool = True, p: Optional[dict] = None) -> None:
    """The FailedScheduling event and (on ``p``) the PodScheduled=False condition with the same message."""
    ns, name = kind_ns_name
    c.add(event("Pod", name, ns, "FailedScheduling", message, count=count, source=source))
    if condition and p is not None:
        p["status"]["conditions"] = [unschedulable(message)]


def autoscaler_said(c: Case, ns: str, name: str, reason: str, message: str, count: int = 1, at: str = NOW) -> None:
    c.add(event("Pod", name, ns, reason, message, type_="Normal", count=count, source="cluster-autoscaler", at=at))


# ------------------------------------------------------------------ not understood is not unreadable


def kubeflow_4770() -> Case:
    """GKE: the notebook's PV was provisioned in a zone with no GPUs; the scheduler says
    Insufficient nvidia.com/gpu, the autoscaler will not add a GPU node."""
    msg = "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."
    ca = "pod didn't trigger scale-up (it wouldn't fit if a new node is added):"
    c = Case("kubeflow-4770-pv-zone-has-no-gpus",
             source="https://github.com/kubeflow/kubeflow/issues/4770",
             fragment="0/5 nodes are available: 5 Insufficient nvidia.com/gpu.",
             where="FailedScheduling event on the notebook pod (the notebook-controller reissues it on the Notebook), "
                   "NotTriggerScaleUp event from cluster-autoscaler",
             expect="volume-binding", trap=True,
             also_ok={"autoscaler-no-scale-up": "the autoscaler's refusal is what keeps the pod Pending; its reason "
                                                "is the volume's zone, which a good finding names"},
             must_not=["unknown-resource-name", "device-plugin-not-running"],
             resolution="The reporter traced it: the notebook's new PersistentVolume gets created in a zone of "
                        "us-central1 where GKE has no GPUs (the GPU pool can only use us-central1-a/c), so no GPU "
                        "node can ever host the pod and the autoscaler refuses: not a GPU shortage but the volume's "
                        "zone. (Provisioning the volume where the GPU pool is, e.g. WaitForFirstConsumer binding, "
                        "avoids it.)",
             target={"pod": "rbarreto/notebook-dev-gpu2-0"}, k8s="v1.14 (GKE, Feb 2020)",
             notes="GPU node pool (us-central1-a,c) is scaled to zero; the five CPU nodes span a,b,c,f. The PV is in "
                   "us-central1-b. The autoscaler message ends with a colon in the thread; it is kept as quoted.")
    zones = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f", "us-central1-b"]
    for i, z in enumerate(zones):
        c.add(zoned(cpu_node(f"gke-kf-cpu-pool-{i}", cpu="8", memory="30Gi", kubelet="v1.14.10-gke.17",
                             labels={"cloud.google.com/gke-nodepool": "cpu-pool"}), z))
    c.add(storage_class("standard", "kubernetes.io/gce-pd", "Immediate", default=True))
    c.add(pvc("workspace-notebook-dev-gpu2", "rbarreto", "Bound", "pvc-5e0b1c2d", "standard"))
    c.add(zonal_pv("pvc-5e0b1c2d", "us-central1-b", "rbarreto", "workspace-notebook-dev-gpu2", "standard"))
    p = pod("notebook-dev-gpu2-0", "rbarreto", owner=("StatefulSet", "notebook-dev-gpu2"),
            containers=[container("notebook-dev-gpu2", image="gcr.io/kubeflow-images-public/tensorflow-1.15.2-notebook-gpu:1.0.0",
                                  gpus=1, requests={"cpu": "500m", "memory": "1Gi"})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            spec={"volumes": [pvc_volume("workspace-notebook-dev-gpu2", "workspace-notebook-dev-gpu2")]})
    scheduler_said(c, ("rbarreto", "notebook-dev-gpu2-0"), msg, count=40, p=p)
    autoscaler_said(c, "rbarreto", "notebook-dev-gpu2-0", "NotTriggerScaleUp", ca, count=60)
    c.add(p)
    c.add(event("Notebook", "notebook-dev-gpu2", "rbarreto", "FailedScheduling",
                "Reissued from pod/notebook-dev-gpu2-0: " + msg, source="notebook-controller"))
    return c


def kubeflow_7109() -> Case:
    """EKS: a notebook mounts two existing EBS volumes that live in two different zones."""
    msg = ("0/3 nodes are available: 1 Insufficient memory, 1 Too many pods, 1 node(s) had volume node affinity "
           "conflict. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No "
           "preemption victims found for incoming pod.")
    c = Case("kubeflow-7109-two-volumes-in-two-zones",
             source="https://github.com/kubeflow/kubeflow/issues/7109",
             fragment=msg, where="FailedScheduling event and PodScheduled condition of the notebook pod",
             expect="volume-binding", trap=True,
             must_not=["insufficient-gpu", "unknown-resource-name"],
             resolution="The two data volumes are EBS volumes in different availability zones; an EBS volume only "
                        "attaches to an instance in its own zone, so no node can mount both (AWS's answer in the "
                        "reposted awslabs/kubeflow-manifests#711). The memory and pod-count clauses are incidental: "
                        "even an empty node fails on the volumes.",
             target={"pod": "kubeflow-user/data-notebook-0"}, k8s="v1.25 (EKS, Apr 2023)",
             notes="Three workers, one per zone (us-east-2a/b/c); the pod's volumes are bound to PVs in 2a and 2b. "
                   "Node 2a is out of memory, node 2b at its pod limit, node 2c fails on the volumes.")
    nodes = []
    for z, n in (("us-east-2a", "ip-10-0-1-142.us-east-2.compute.internal"),
                 ("us-east-2b", "ip-10-0-2-107.us-east-2.compute.internal"),
                 ("us-east-2c", "ip-10-0-3-66.us-east-2.compute.internal")):
        nodes.append(zoned(cpu_node(n, cpu="4", memory="16Gi", kubelet="v1.25.7-eks-a59e1f0"), z))
    nodes[1]["status"]["allocatable"]["pods"] = nodes[1]["status"]["capacity"]["pods"] = "17"
    c.add(*nodes)
    c.add(bound("spark-history-0", "analytics", nodes[0]["metadata"]["name"], requests={"cpu": "1", "memory": "15616Mi"}))
    for i in range(17):
        c.add(bound(f"web-{i:02d}", "apps", nodes[1]["metadata"]["name"], requests={"cpu": "100m", "memory": "128Mi"}))
    c.add(storage_class("gp2", "kubernetes.io/aws-ebs", "WaitForFirstConsumer", default=True))
    for claim, pv, zone in (("data-volume-a", "pvc-1a2b3c", "us-east-2a"), ("data-volume-b", "pvc-4d5e6f", "us-east-2b")):
        c.add(pvc(claim, "kubeflow-user", "Bound", pv, "gp2", "20Gi"))
        c.add(zonal_pv(pv, zone, "kubeflow-user", claim, "gp2", "20Gi", driver="kubernetes.io/aws-ebs"))
    p = pod("data-notebook-0", "kubeflow-user", owner=("StatefulSet", "data-notebook"),
            containers=[container("data-notebook", image="kubeflownotebookswg/jupyter-scipy:v1.7.0",
                                  requests={"cpu": "500m", "memory": "1Gi"})],
            spec={"volumes": [pvc_volume("data-volume-a", "data-volume-a"), pvc_volume("data-volume-b", "data-volume-b")]})
    scheduler_said(c, ("kubeflow-user", "data-notebook-0"), msg, count=9, p=p)
    c.add(p)
    return c


def website_26943() -> Case:
    """kubeadm on EC2: the JupyterHub hub's claim has no StorageClass and no PV."""
    msg = "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims."
    c = Case("kubernetes-website-26943-hub-pvc-no-storageclass",
             source="https://github.com/kubernetes/website/issues/26943",
             fragment=msg, where="FailedScheduling event and PodScheduled condition of the hub pod; "
                                 "FailedBinding event on the PVC",
             expect="volume-binding",
             must_not=["insufficient-gpu", "insufficient-cpu", "insufficient-memory"],
             resolution="kubectl describe pvc hub-db-dir shows 'no persistent volumes available for this claim and no "
                        "storage class is set': the claim has no StorageClass (the cluster has no default one) and no "
                        "PV exists, so it never binds and the hub cannot schedule. Not a node or capacity problem.",
             target={"pod": "jhub/hub-5b8d96f64b-qk86l"}, k8s="v1.20 (kubeadm on EC2, Mar 2021)",
             notes="1 master and 2 t2.medium workers; no StorageClass objects at all.")
    c.add(cpu_node("ip-172-31-20-10", cpu="2", memory="4Gi", kubelet="v1.20.4",
                   labels={"node-role.kubernetes.io/master": ""},
                   taints=[taint("node-role.kubernetes.io/master")]))
    c.add(cpu_node("ip-172-31-20-11", cpu="2", memory="4Gi", kubelet="v1.20.4"))
    c.add(cpu_node("ip-172-31-20-12", cpu="2", memory="4Gi", kubelet="v1.20.4"))
    c.add(pvc("hub-db-dir", "jhub", "Pending", size="1Gi"))
    c.add(event("PersistentVolumeClaim", "hub-db-dir", "jhub", "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set", type_="Normal",
                count=42, source="persistentvolume-controller"))
    p = pod("hub-5b8d96f64b-qk86l", "jhub", owner=("ReplicaSet", "hub-5b8d96f64b"),
            labels={"app": "jupyterhub", "component": "hub"},
            containers=[container("hub", image="jupyterhub/k8s-hub:0.10.6", requests={"cpu": "200m", "memory": "512Mi"})],
            spec={"volumes": [pvc_volume("hub-db-dir", "hub-db-dir")]})
    scheduler_said(c, ("jhub", "hub-5b8d96f64b-qk86l"), msg, count=11, p=p)
    c.add(p)
    return c


def jenkins_operator_34() -> Case:
    """A hostPort in the pod template: one Jenkins per worker node."""
    msg = ("0/4 nodes are available: 1 node(s) had taints that the pod didn't tolerate, 3 node(s) didn't have free "
           "ports for the requested pod ports.")
    c = Case("jenkins-operator-34-hostport-one-per-node",
             source="https://github.com/samsung-cnct/jenkins-operator/issues/34",
             fragment=msg, where="FailedScheduling event of the fourth Jenkins instance's pod",
             expect="insufficient-resource",
             must_not=["untolerated-taint", "insufficient-gpu", "insufficient-cpu", "insufficient-memory"],
             resolution="The operator puts a hostPort in every Jenkins pod, so each of the three workers can run only "
                        "one instance; the fourth has no node with the port free. Removing the hostPort lines from "
                        "the operator fixed it. The master's taint is the normal one and not the cause.",
             target={"pod": "jenkins/jenkins-four-7c9d5b6f4-x2k8p"}, k8s="v1.15 (Oct 2019)",
             notes="gpuctl maps the NodePorts reason to insufficient-resource (scheduler_messages.yaml); "
                   "host ports are the node resource that runs out.")
    c.add(cpu_node("k8s-master", kubelet="v1.15.4", labels={"node-role.kubernetes.io/master": ""},
                   taints=[taint("node-role.kubernetes.io/master")]))

    def jenkins(name: str, node: Optional[str]) -> dict:
        ctr = container("jenkins", image="jenkins/jenkins:lts", requests={"cpu": "500m", "memory": "1Gi"})
        ctr["ports"] = [{"name": "http", "containerPort": 8080, "hostPort": 8080, "protocol": "TCP"},
                        {"name": "agent", "containerPort": 50000, "hostPort": 50000, "protocol": "TCP"}]
        if node:
            return bound(name, "jenkins", node, containers=[ctr], owner=("ReplicaSet", name.rsplit("-", 1)[0]))
        return pod(name, "jenkins", containers=[ctr], owner=("ReplicaSet", name.rsplit("-", 1)[0]))

    for i, inst in enumerate(("one", "two", "three")):
        c.add(cpu_node(f"k8s-worker-{i + 1}", kubelet="v1.15.4"))
        c.add(jenkins(f"jenkins-{inst}-5f6d7c8b9-{i}abcd", f"k8s-worker-{i + 1}"))
    p = jenkins("jenkins-four-7c9d5b6f4-x2k8p", None)
    scheduler_said(c, ("jenkins", "jenkins-four-7c9d5b6f4-x2k8p"), msg, count=15, p=p)
    c.add(p)
    return c


def soperator_378() -> Case:
    """136 nodes, every kind of reason in the histogram; ephemeral storage is what blocks."""
    msg = ("0/136 nodes are available: 126 Insufficient ephemeral-storage, 2 node(s) had untolerated taint "
           "{node.kubernetes.io/unreachable: },  31 Insufficient cpu, 5 node(s) were unschedulable, 65 Insufficient "
           "memory, 65 Insufficient nvidia.com/gpu. preemption: 0/136 nodes are available: 10 Preemption is not "
           "helpful for scheduling, 126 Insufficient ephemeral-storage, 31 Insufficient cpu, 31 Insufficient memory, "
           "31 Insufficient nvidia.com/gpu.")
    c = Case("soperator-378-worker-ephemeral-storage",
             source="https://github.com/nebius/soperator/issues/378",
             fragment="0/136 nodes are available: 126 Insufficient ephemeral-storage",
             where="FailedScheduling event of the Slurm worker pod",
             expect="insufficient-resource", trap=True,
             must_not=["insufficient-gpu", "gpu-fragmentation", "untolerated-taint", "unknown-resource-name"],
             resolution="The worker asks for more ephemeral storage than a node's allocatable (about 48Gi of the boot "
                        "disk); that is what keeps it off every GPU node, idle ones included. The maintainer: the "
                        "limit is not configurable yet, give the nodes a larger ephemeral disk (or request less). "
                        "The GPU, CPU, memory, taint and cordon clauses describe other, busy or broken nodes.",
             target={"pod": "slurm-system/worker-0"}, k8s="v1.30 (Nebius managed Kubernetes, Jan 2025)",
             notes="Allocatable of the 8xH100 nodes as in the thread (cpu 223800m, memory 2062866164Ki, "
                   "ephemeral-storage 51825717978). Groups: 64 idle GPU nodes (ephemeral only), 34 busy on GPUs and "
                   "memory, 28 busy on GPUs, cpu and memory, 3 CPU nodes with big disks, 2 unreachable, 5 cordoned. "
                   "The worker's requests (8 GPUs, 100 cpu, 1500Gi, 64Gi ephemeral) are chosen to agree with the counts.")
    gpu_kw = dict(gpus=8, product="NVIDIA-H100-80GB-HBM3", kubelet="v1.30.6", driver="550.127.08",
                  extra_capacity={"hugepages-2Mi": "16000Mi"})

    def h100(name: str, **kw: Any) -> dict:
        n = gpu_node(name, cpu="224", memory="2063000000Ki", **{**gpu_kw, **kw})
        n["status"]["allocatable"].update({"cpu": "223800m", "memory": "2062866164Ki",
                                           "ephemeral-storage": "51825717978"})
        n["status"]["capacity"]["ephemeral-storage"] = "104801604Ki"
        return n

    worker_req = {"cpu": "100", "memory": "1500Gi", "ephemeral-storage": "64Gi"}
    idx = 0
    for _ in range(64):
        c.add(h100(f"computeinstance-e00a{idx:03d}"))
        idx += 1
    for i in range(34):
        name = f"computeinstance-e00a{idx:03d}"
        c.add(h100(name))
        c.add(bound(f"train-{i:02d}", "research", name, gpus=8, requests={"cpu": "100", "memory": "1000Gi"}))
        idx += 1
    for i in range(28):
        name = f"computeinstance-e00a{idx:03d}"
        c.add(h100(name))
        c.add(bound(f"sweep-{i:02d}", "research", name, gpus=8, requests={"cpu": "200", "memory": "1000Gi"}))
        idx += 1
    for i in range(3):
        n = cpu_node(f"computeinstance-cpu{i}", cpu="64", memory="256Gi", kubelet="v1.30.6")
        n["status"]["capacity"]["ephemeral-storage"] = n["status"]["allocatable"]["ephemeral-storage"] = "1Ti"
        c.add(n)
    for i in range(2):
        c.add(not_ready(h100(f"computeinstance-e00b{i:03d}", taints=[
            taint("node.kubernetes.io/unreachable"), taint("node.kubernetes.io/unreachable", effect="NoExecute")])))
    for i in range(5):
        c.add(h100(f"computeinstance-e00c{i:03d}", unschedulable=True,
                   taints=[taint("node.kubernetes.io/unschedulable")]))
    c.add(device_plugin_pod("computeinstance-e00a000", namespace="gpu-operator",
                            labels={"app": "nvidia-device-plugin-daemonset"}))
    p = pod("worker-0", "slurm-system", owner=("StatefulSet", "worker"),
            containers=[container("slurmd", image="cr.eu-north1.nebius.cloud/soperator/worker_slurmd:1.17.0-jammy-slurm24.05.5",
                                  gpus=8, requests=worker_req, limits={"ephemeral-storage": "64Gi"})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    scheduler_said(c, ("slurm-system", "worker-0"), msg, count=31, p=p)
    c.add(p)
    return c


def pangeo_138() -> Case:
    """GKE JupyterHub: the autoscaler's 'wouldn't fit' reads as pod size; the home PVC does not exist."""
    ca = "pod didn't trigger scale-up (it wouldn't fit if a new node is added)"
    msg = 'persistentvolumeclaim "home-nfs" not found'
    c = Case("pangeo-cloud-federation-138-home-nfs-pvc-not-found",
             source="https://github.com/pangeo-data/pangeo-cloud-federation/issues/138",
             fragment=msg, where="FailedScheduling event and PodScheduled condition of the user notebook pod "
                                 "(PreFilter message), NotTriggerScaleUp event from cluster-autoscaler",
             expect="volume-binding", trap=True,
             must_not=["insufficient-cpu", "insufficient-memory", "insufficient-gpu"],
             resolution="The reporter first read 'it wouldn't fit if a new node is added' as a pod-size problem, then "
                        "found the real error: the notebook pods mount a PersistentVolumeClaim home-nfs that does not "
                        "exist (it was dropped by a recent deployment change); even the smallest pods failed.",
             target={"pod": "ocean-staging/jupyter-rabernat"}, k8s="v1.11 (GKE, Mar 2019)",
             notes="Nodes: n1-highmem-16 user pool plus the core pool, with room for the pod.")
    for i in range(2):
        c.add(cpu_node(f"gke-ocean-core-pool-{i}", cpu="4", memory="15Gi", kubelet="v1.11.7-gke.4",
                       labels={"cloud.google.com/gke-nodepool": "core-pool"}))
    c.add(cpu_node("gke-ocean-user-pool-0", cpu="16", memory="104Gi", kubelet="v1.11.7-gke.4",
                   labels={"cloud.google.com/gke-nodepool": "user-pool"}))
    p = pod("jupyter-rabernat", "ocean-staging", labels={"component": "singleuser-server"},
            containers=[container("notebook", image="pangeo/pangeo-notebook:2019.03.05",
                                  requests={"cpu": "500m", "memory": "2Gi"})],
            spec={"volumes": [pvc_volume("home", "home-nfs")]})
    scheduler_said(c, ("ocean-staging", "jupyter-rabernat"), msg, count=5, p=p)
    autoscaler_said(c, "ocean-staging", "jupyter-rabernat", "NotTriggerScaleUp", ca, count=3)
    c.add(p)
    return c


def pangeo_111() -> Case:
    """Kubernetes 1.9 predicate wording: allocatable, not capacity, decides how many 7G workers fit."""
    msg = "No nodes are available that match all of the predicates: Insufficient cpu (4), Insufficient memory (26)."
    c = Case("pangeo-111-allocatable-not-capacity",
             source="https://github.com/pangeo-data/pangeo/issues/111",
             fragment=msg, where="FailedScheduling event of a pending dask worker pod",
             expect="insufficient-memory",
             must_not=["insufficient-gpu", "unknown-resource-name"],
             resolution="yuvipanda: the nodes' allocatable memory is total RAM minus system reserved, so a 15G node "
                        "has room for one 7G worker, not two (plus the system pods). The message is right; the "
                        "dashboard's capacity figures misled.",
             target={"pod": "pangeo/dask-mrocklin-5f3a2b-0021"}, k8s="v1.9 (GKE, Feb 2018)",
             notes="Pre-1.10 FitError wording: reasons with counts in parentheses, a node counted once per failing "
                   "resource. 20 worker nodes (15GB, one 7G worker each) and 6 smaller default-pool nodes, 4 of them "
                   "also short of CPU.")
    for i in range(20):
        name = f"gke-pangeo-worker-pool-{i:02d}"
        n = cpu_node(name, cpu="4", memory="15Gi", kubelet="v1.9.2-gke.1",
                     labels={"cloud.google.com/gke-nodepool": "worker-pool"})
        n["status"]["allocatable"].update({"cpu": "3920m", "memory": "12700Mi"})
        c.add(n)
        c.add(bound(f"dask-mrocklin-5f3a2b-{i:04d}", "pangeo", name, requests={"cpu": "1500m", "memory": "7G"},
                    image="daskdev/pangeo-worker:2018-02-11"))
    for i in range(6):
        name = f"gke-pangeo-default-pool-{i}"
        n = cpu_node(name, cpu="2", memory="7680Mi", kubelet="v1.9.2-gke.1",
                     labels={"cloud.google.com/gke-nodepool": "default-pool"})
        n["status"]["allocatable"].update({"cpu": "1930m", "memory": "5700Mi"})
        c.add(n)
        if i < 4:
            c.add(bound(f"jupyter-user{i}", "pangeo", name, requests={"cpu": "1", "memory": "1Gi"},
                        image="pangeo/notebook:2018-02-11"))
    p = pod("dask-mrocklin-5f3a2b-0021", "pangeo",
            containers=[container("dask-worker", image="daskdev/pangeo-worker:2018-02-11",
                                  requests={"cpu": "1.5", "memory": "7G"}, limits={"cpu": "1.5", "memory": "7G"})],
            spec={"restartPolicy": "Never"})
    scheduler_said(c, ("pangeo", "dask-mrocklin-5f3a2b-0021"), msg, count=20, p=p)
    c.add(p)
    return c


# ------------------------------------------------------------------ scheduler and autoscaler wordings


def autoscaler_3869() -> Case:
    """EKS, JupyterHub's own scheduler: the GPU ASG at zero has no node-template tags."""
    sched = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    ca = ("pod didn't trigger scale-up (it wouldn't fit if a new node is added): 2 Insufficient nvidia.com/gpu, "
          "1 max node group size reached")
    c = Case("autoscaler-3869-gpu-asg-from-zero-no-template",
             source="https://github.com/kubernetes/autoscaler/issues/3869",
             fragment=ca, where="NotTriggerScaleUp event from cluster-autoscaler and FailedScheduling event from "
                                "jhub-user-scheduler on the JupyterHub user pod",
             expect="autoscaler-no-scale-up", trap=True,
             must_not=["unknown-resource-name", "device-plugin-not-running", "scheduler-not-found"],
             resolution="The g4dn Auto Scaling group is at zero nodes, and Cluster Autoscaler builds its template node "
                        "from the ASG: without the k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu "
                        "(and label) tags the template has no GPU, so 'it wouldn't fit if a new node is added'. Adding "
                        "the node-template tags fixed scale-from-zero (the reporter's resolution, confirmed by others). "
                        "nvidia.com/gpu is the right name; no node advertises it only because the pool is at zero.",
             target={"pod": "jhub/jupyter-artpik"}, k8s="v1.18 (EKS, CA 1.18.1)",
             notes="Two CPU nodes; the GPU ASG (g4dn.xlarge) is at 0; a third node group is at its max size. "
                   "The pod uses JupyterHub's user scheduler (a kube-scheduler named jhub-user-scheduler).")
    for i in range(2):
        c.add(cpu_node(f"ip-192-168-{10 + i}-20.ec2.internal", cpu="4", memory="16Gi", kubelet="v1.18.9-eks-d1db3c",
                       labels={"eks.amazonaws.com/nodegroup": "core", "node.kubernetes.io/instance-type": "m5.xlarge"}))
    c.add(bound("user-scheduler-6c7d8f9b5-2xkq4", "jhub", "ip-192-168-10-20.ec2.internal",
                owner=("ReplicaSet", "user-scheduler-6c7d8f9b5"), labels={"app": "jupyterhub", "component": "user-scheduler"},
                containers=[container("user-scheduler", image="k8s.gcr.io/kube-scheduler:v1.18.9",
                                      requests={"cpu": "50m", "memory": "256Mi"})]))
    p = pod("jupyter-artpik", "jhub", labels={"app": "jupyterhub", "component": "singleuser-server"},
            containers=[container("notebook", image="jupyter/tensorflow-notebook:latest", gpus=1,
                                  requests={"cpu": "2", "memory": "8Gi"})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            spec={"schedulerName": "jhub-user-scheduler"})
    scheduler_said(c, ("jhub", "jupyter-artpik"), sched, count=2, source="jhub-user-scheduler", p=p)
    autoscaler_said(c, "jhub", "jupyter-artpik", "NotTriggerScaleUp", ca, count=3)
    c.add(p)
    return c


def autoscaler_5692() -> Case:
    """GKE: the only node pool the pod may use is at its maximum size in all three zones."""
    ca = ("pod didn't trigger scale-up: 12 node(s) didn't match Pod's node affinity/selector, "
          "3 max node group size reached.")
    c = Case("autoscaler-5692-gke-max-node-group-size",
             source="https://github.com/kubernetes/autoscaler/issues/5692",
             fragment="pod didn't trigger scale-up: 12 node(s) didn't match Pod's node affinity/selector, "
                      "3 max node group size reached",
             where="NotTriggerScaleUp event from cluster-autoscaler on the pod",
             expect="autoscaler-no-scale-up", trap=True,
             must_not=["node-selector-mismatch", "node-affinity-mismatch"],
             resolution="The node group the pod is meant for has reached its configured maximum size; the other 12 "
                        "groups are correctly excluded by the pod's selector. The answer was to increase the node "
                        "pool's max size, which the reporter did.",
             target={"pod": "default/batch-worker-7d9c6b5f4-m8z2q"}, k8s="v1.24 (GKE, Apr 2023)",
             notes="GKE node pools are one managed instance group per zone: the target pool in three zones is the "
                   "'3 max node group size reached', four other pools in three zones are the 12 groups. The thread "
                   "quotes only the autoscaler's event; the pod's PodScheduled condition carries the scheduler's 1.24 "
                   "wording for this cluster, constructed from its state (not from the thread).")
    zones = ["asia-northeast1-a", "asia-northeast1-b", "asia-northeast1-c"]
    for z in zones:
        name = f"gke-prod-batch-pool-{z[-1]}-x1"
        c.add(zoned(cpu_node(name, cpu="4", memory="16Gi", kubelet="v1.24.10-gke.2300",
                             labels={"cloud.google.com/gke-nodepool": "batch-pool"}), z))
        c.add(bound(f"batch-worker-7d9c6b5f4-{z[-1]}aaaa", "default", name, requests={"cpu": "3", "memory": "10Gi"},
                    owner=("ReplicaSet", "batch-worker-7d9c6b5f4"), labels={"app": "batch-worker"}))
    for pool in ("default-pool", "web-pool", "db-pool", "infra-pool"):
        for z in zones:
            c.add(zoned(cpu_node(f"gke-prod-{pool}-{z[-1]}-x1", cpu="4", memory="16Gi", kubelet="v1.24.10-gke.2300",
                                 labels={"cloud.google.com/gke-nodepool": pool}), z))
    p = pod("batch-worker-7d9c6b5f4-m8z2q", "default", owner=("ReplicaSet", "batch-worker-7d9c6b5f4"),
            labels={"app": "batch-worker"}, node_selector={"cloud.google.com/gke-nodepool": "batch-pool"},
            containers=[container("worker", image="asia-docker.pkg.dev/prod/batch/worker:2.3",
                                  requests={"cpu": "3", "memory": "4Gi"})])
    # The thread quotes only the autoscaler; the scheduler's condition is the 1.24 wording for this cluster.
    p["status"]["conditions"] = [unschedulable(
        "0/15 nodes are available: 12 node(s) didn't match Pod's node affinity/selector, 3 Insufficient cpu. "
        "preemption: 0/15 nodes are available: 12 Preemption is not helpful for scheduling, 3 No preemption victims "
        "found for incoming pod.")]
    autoscaler_said(c, "default", "batch-worker-7d9c6b5f4-m8z2q", "NotTriggerScaleUp", ca, count=120)
    c.add(p)
    return c


def elyra_2681() -> Case:
    """Open Data Hub: the GPU nodes are tainted odh/notebook=true; the pipeline pod has no toleration."""
    msg = ("0/13 nodes are available: 3 Insufficient nvidia.com/gpu, 3 node(s) had taint "
           "{node-role.kubernetes.io/infra: }, that the pod didn't tolerate, 3 node(s) had taint "
           "{node-role.kubernetes.io/master: }, that the pod didn't tolerate, 4 node(s) had taint "
           "{odh/notebook: true}, that the pod didn't tolerate.")
    c = Case("elyra-2681-pipeline-pod-lacks-notebook-toleration",
             source="https://github.com/elyra-ai/elyra/issues/2681",
             fragment=msg, where="FailedScheduling event of the Kubeflow pipeline step pod",
             expect="untolerated-taint",
             must_not=["insufficient-gpu", "unknown-resource-name", "device-plugin-not-running"],
             resolution="The GPU nodes carry the custom taint odh/notebook=true and the pipeline's step pod has no "
                        "toleration for it; the fix asked for (and tracked in elyra#2823) is to let pipeline nodes "
                        "declare tolerations. Removing the taints would also work but was not recommended.",
             target={"pod": "ds-project/gpu-train-pipeline-x7k2p-1234567890"}, k8s="v1.22 (OpenShift 4.9, Apr 2022)",
             notes="The four odh/notebook-tainted workers are the GPU nodes (free T4s); the three untainted workers "
                   "have no GPUs. Pre-1.26 taint wording with the key shown.")
    for i in range(3):
        c.add(cpu_node(f"master-{i}", kubelet="v1.22.3+e790d7f", labels={"node-role.kubernetes.io/master": ""},
                       taints=[taint("node-role.kubernetes.io/master")]))
        c.add(cpu_node(f"infra-{i}", kubelet="v1.22.3+e790d7f", labels={"node-role.kubernetes.io/infra": ""},
                       taints=[taint("node-role.kubernetes.io/infra")]))
        c.add(cpu_node(f"worker-{i}", kubelet="v1.22.3+e790d7f", labels={"node-role.kubernetes.io/worker": ""}))
    for i in range(4):
        c.add(gpu_node(f"gpu-worker-{i}", gpus=1, product="Tesla-T4", kubelet="v1.22.3+e790d7f", cpu="16", memory="64Gi",
                       labels={"node-role.kubernetes.io/worker": ""}, taints=[taint("odh/notebook", "true")]))
        c.add(device_plugin_pod(f"gpu-worker-{i}", namespace="nvidia-gpu-operator",
                                labels={"app": "nvidia-device-plugin-daemonset"}))
    p = pod("gpu-train-pipeline-x7k2p-1234567890", "ds-project", owner=("Workflow", "gpu-train-pipeline-x7k2p"),
            containers=[container("main", image="quay.io/thoth-station/s2i-minimal-py38-notebook:v0.2.2", gpus=1,
                                  requests={"cpu": "1", "memory": "4Gi"})])
    scheduler_said(c, ("ds-project", "gpu-train-pipeline-x7k2p-1234567890"), msg, count=7, p=p)
    c.add(p)
    return c


def aibrix_909() -> Case:
    """GKE: the KV-cache pod must run on the GPU node but asks for no GPU, so GKE adds no toleration."""
    frag = "1 node(s) had untolerated taint {nvidia.com/gpu: present}"
    msg = ("0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/1 nodes "
           "are available: 1 Preemption is not helpful for scheduling.")
    c = Case("aibrix-909-kvcache-pod-gke-gpu-taint",
             source="https://github.com/vllm-project/aibrix/pull/909",
             fragment=frag, where="FailedScheduling event of the kvcache pod",
             expect="untolerated-taint",
             must_not=["insufficient-gpu", "unknown-resource-name", "device-plugin-not-running"],
             resolution="GKE taints GPU nodes nvidia.com/gpu=present:NoSchedule and adds the toleration only to pods "
                        "that request a GPU. The kvcache pod requests none, so it cannot land on the (only) GPU node; "
                        "the fix adds the toleration to the kvcache pod. The model pod crash-loops meanwhile because "
                        "the vineyard socket the kvcache pod would provide is missing.",
             target={"pod": "default/deepseek-coder-7b-kvcache-7c984cdff8-xq5pk"}, k8s="v1.31 (GKE, Mar 2025)",
             notes="The thread quotes the taint clause; the head and preemption tail are the 1.31 wording for a "
                   "one-node cluster (the GKE cluster's only pool is the GPU pool).")
    c.add(gpu_node("gke-aibrix-gpu-pool-0", gpus=1, product="NVIDIA-L4", kubelet="v1.31.5-gke.1068000", cpu="8",
                   memory="32Gi", gfd=False,
                   labels={"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-gpu": "true"},
                   taints=[taint("nvidia.com/gpu", "present")]))
    c.add(bound("deepseek-coder-7b-instruct-688778dd76-wzwmg", "default", "gke-aibrix-gpu-pool-0", gpus=1,
                owner=("ReplicaSet", "deepseek-coder-7b-instruct-688778dd76"),
                labels={"model.aibrix.ai/name": "deepseek-coder-7b-instruct"},
                statuses=[waiting("vllm-openai", "CrashLoopBackOff", "back-off 5m0s restarting failed container", restarts=13,
                                  last_exit={"reason": "Error", "exitCode": 1})]))
    c.log("default", "deepseek-coder-7b-instruct-688778dd76-wzwmg", "vllm-openai",
          "not found /var/run/vineyard.sock\n", previous=True)
    p = pod("deepseek-coder-7b-kvcache-7c984cdff8-xq5pk", "default", owner=("ReplicaSet", "deepseek-coder-7b-kvcache-7c984cdff8"),
            containers=[container("kvcache", image="aibrix/kvcache:20241120", requests={"cpu": "2", "memory": "4Gi"})])
    scheduler_said(c, ("default", "deepseek-coder-7b-kvcache-7c984cdff8-xq5pk"), msg, count=42, p=p)
    c.add(p)
    return c


def home_ops_10281() -> Case:
    """Kubernetes 1.34+: the taint's key is no longer in the message; a DRA claim pins the pod to the tainted node."""
    frag = "1 node(s) had untolerated taint(s)"
    msg = ("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 cannot allocate all claims. preemption: 0/3 "
           "nodes are available: 3 Preemption is not helpful for scheduling.")
    c = Case("home-ops-10281-dra-pins-to-tainted-node",
             known_miss=("gpuctl says dra-claim-unallocatable (forbidden) from the 'cannot allocate all claims' clause "
                         "about the two nodes without the device, though skirk's ResourceSlice has a free device; node-fit"
                         " ignores where the claim can be satisfied and misses skirk's llm-workload=true:NoSchedule taint"),
             source="https://github.com/joryirving/home-ops/pull/10281",
             fragment=frag, where="FailedScheduling event of the game-session pod",
             expect="untolerated-taint",
             must_not=["dra-claim-unallocatable", "insufficient-gpu", "unknown-resource-name"],
             resolution="The pod's DRA claim can only be satisfied on skirk (the node with the device), and skirk is "
                        "tainted llm-workload=true:NoSchedule; the fix tolerates that taint in the session pods.",
             target={"pod": "games/session-6d8f7b9c5d-k2p4w"}, k8s="v1.34 (home lab, Sep 2026)",
             notes="1.34+ hides the taint's key (kubernetes PR #134740). The thread quotes only the taint clause; "
                   "the two other nodes fail on the claim (no device there). DeviceClass and driver names are "
                   "placeholders: the thread does not name them.")
    for n in ("nami", "venti"):
        c.add(cpu_node(n, cpu="16", memory="64Gi", kubelet="v1.34.1"))
    c.add(cpu_node("skirk", cpu="32", memory="128Gi", kubelet="v1.34.1", taints=[taint("llm-workload", "true")]))
    c.add({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu", "uid": "uid-dc-gpu"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}})
    c.add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": "skirk-gpu.example.com-x8k2", "uid": "uid-rs-skirk"},
           "spec": {"driver": "gpu.example.com", "nodeName": "skirk",
                    "pool": {"name": "skirk", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}]}})
    c.add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "session-6d8f7b9c5d-k2p4w-gpu-7xq2n", "namespace": "games", "uid": "uid-games-claim"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]}},
           "status": {}})
    p = pod("session-6d8f7b9c5d-k2p4w", "games", owner=("ReplicaSet", "session-6d8f7b9c5d"),
            containers=[container("session", image="ghcr.io/games/session:1.4.2", requests={"cpu": "4", "memory": "8Gi"})],
            spec={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "session-gpu"}]})
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    p["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "session-6d8f7b9c5d-k2p4w-gpu-7xq2n"}]
    scheduler_said(c, ("games", "session-6d8f7b9c5d-k2p4w"), msg, count=12, p=p)
    c.add(p)
    return c


def couler_236() -> Case:
    """minikube in CI: the only node is still NotReady when the controller pod is created."""
    msg = "0/1 nodes are available: 1 node(s) had taint {node.kubernetes.io/not-ready: }, that the pod didn't tolerate."
    c = Case("couler-236-minikube-node-not-ready-yet",
             source="https://github.com/couler-proj/couler/pull/236",
             fragment=msg, where="FailedScheduling event of the Argo workflow-controller pod",
             expect="node-not-ready", trap=True,
             must_not=["untolerated-taint", "insufficient-gpu", "unknown-resource-name"],
             resolution="The taint is the one the node controller puts on a node that is not Ready: the freshly started "
                        "minikube node was not Ready yet (the pod was scheduled 'Successfully assigned ... to minikube' "
                        "moments later). The PR fixed the integration build by bumping minikube; no toleration is "
                        "wanted.",
             target={"pod": "argo/workflow-controller-85f776c7ff-vqfbj"}, k8s="v1.21 (minikube, Aug 2021)",
             notes="Snapshot taken at the FailedScheduling, before the node turned Ready. The Ready condition's "
                   "message is not in the thread and is left out.")
    n = cpu_node("minikube", cpu="2", memory="7Gi", kubelet="v1.21.2",
                 labels={"node-role.kubernetes.io/control-plane": ""},
                 taints=[taint("node.kubernetes.io/not-ready")])
    c.add(not_ready(n, reason="KubeletNotReady", message="", status="False"))
    p = pod("workflow-controller-85f776c7ff-vqfbj", "argo", owner=("ReplicaSet", "workflow-controller-85f776c7ff"),
            containers=[container("workflow-controller", image="argoproj/workflow-controller:v2.12.6")],
            created="2026-11-20T02:59:39Z")
    scheduler_said(c, ("argo", "workflow-controller-85f776c7ff-vqfbj"), msg, p=p)
    c.add(p)
    return c


def origin_17455() -> Case:
    """OpenShift Online Starter (1.7): the old predicate name MatchNodeSelector in the 0/N histogram."""
    msg = "0/260 nodes are available: 255 Insufficient memory, 5 MatchNodeSelector."
    c = Case("openshift-origin-17455-starter-out-of-memory",
             source="https://github.com/openshift/origin/issues/17455",
             fragment=msg, where="FailedScheduling event of the mysql deployer pod",
             expect="insufficient-memory",
             must_not=["node-selector-mismatch", "node-affinity-mismatch", "insufficient-gpu"],
             resolution="A Starter cluster capacity outage: the compute nodes were out of memory for new pods. The "
                        "operators pointed to the Starter status page and later reported the issues resolved. The 5 "
                        "MatchNodeSelector nodes are masters/infra that the project's default node selector rightly "
                        "excludes.",
             target={"pod": "syui/mysql-1-deploy"}, k8s="v1.7 (OpenShift Online 3.7, Nov 2017)",
             notes="MatchNodeSelector is the pre-1.10 predicate name for a nodeSelector mismatch. The project default "
                   "node selector is modelled as nodeSelector type=compute on the pod.")
    for i in range(5):
        c.add(cpu_node(f"ip-172-31-60-{i}.ec2.internal", cpu="8", memory="32Gi", kubelet="v1.7.6+a08f5eeb62",
                       labels={"type": "infra"}))
    for i in range(255):
        name = f"ip-172-31-{64 + i // 200}-{i % 200}.ec2.internal"
        c.add(cpu_node(name, cpu="8", memory="32Gi", kubelet="v1.7.6+a08f5eeb62", labels={"type": "compute"}))
        c.add(bound(f"app-{i:03d}", f"starter-{i % 97}", name, requests={"cpu": "500m", "memory": "32600Mi"}))
    p = pod("mysql-1-deploy", "syui", node_selector={"type": "compute"},
            labels={"openshift.io/deployer-pod-for.name": "mysql-1"},
            containers=[container("deployment", image="openshift/origin-deployer:v3.7.9",
                                  requests={"cpu": "25m", "memory": "256Mi"}, limits={"memory": "512Mi"})])
    scheduler_said(c, ("syui", "mysql-1-deploy"), msg, count=8, p=p)
    c.add(p)
    return c


def kiwix_245() -> Case:
    """The 'services' node is full on CPU requests; the other four nodes are another role."""
    msg = ("0/5 nodes are available: 1 Insufficient cpu, 4 node(s) didn't match Pod's node affinity/selector. "
           "preemption: 0/5 nodes are available: 1 No preemption victims found for incoming pod, 4 Preemption is not "
           "helpful for scheduling.")
    c = Case("kiwix-operations-245-services-node-cpu-requests",
             source="https://github.com/kiwix/operations/issues/245",
             fragment="0/5 nodes are available: 1 Insufficient cpu, 4 node(s) didn't match Pod's node affinity/selector.",
             where="FailedScheduling event of the zimfarm API pod during a rolling restart",
             expect="insufficient-cpu", trap=True,
             must_not=["node-selector-mismatch", "insufficient-gpu", "unknown-resource-name"],
             resolution="The node looked idle but its CPU requests were exhausted: requests were set too high. The "
                        "team lowered the requests on all nodes (and switched some deployments to Recreate because of a "
                        "host port). The four other nodes are another role and are meant to be excluded.",
             target={"pod": "zimfarm/api-6b8d9c7f5-q4w2e"}, k8s="v1.29 (Sep 2024)",
             notes="Trap: the selector clause names 4 nodes, the cause is the CPU requests on the one node the pod "
                   "belongs on. The thread's terminal wrapped the message; it is reproduced unwrapped.")
    c.add(cpu_node("services-1", cpu="4", memory="16Gi", kubelet="v1.29.8", labels={"k8s.kiwix.org/role": "services"}))
    for i, (name, req) in enumerate((("dev-api", "800m"), ("cms", "1"), ("library", "1"), ("wp1", "500m"))):
        c.add(bound(f"{name}-0", "zimfarm" if i == 0 else name, "services-1", requests={"cpu": req, "memory": "1Gi"}))
    c.add(bound("api-6b8d9c7f5-old11", "zimfarm", "services-1", requests={"cpu": "500m", "memory": "1Gi"},
                owner=("ReplicaSet", "api-6b8d9c7f5")))
    for i in range(4):
        c.add(cpu_node(f"storage-{i + 1}", cpu="8", memory="32Gi", kubelet="v1.29.8",
                       labels={"k8s.kiwix.org/role": "storage"}))
    p = pod("api-6b8d9c7f5-q4w2e", "zimfarm", owner=("ReplicaSet", "api-6b8d9c7f5"),
            node_selector={"k8s.kiwix.org/role": "services"},
            containers=[container("api", image="ghcr.io/openzim/zimfarm-backend:latest",
                                  requests={"cpu": "1", "memory": "1Gi"})])
    scheduler_said(c, ("zimfarm", "api-6b8d9c7f5-q4w2e"), msg, count=2, p=p)
    c.add(p)
    return c


# ------------------------------------------------------------------ shortage vs fragmentation vs constraints


def device_plugin_328() -> Case:
    """Four A5000s, three Triton replicas running, the fourth GPU held by a crash-looping pod."""
    frag = ("1 Insufficient nvidia.com/gpu, 1 node(s) had taint {protect: no_schedule}, that the pod didn't tolerate, "
            "1 node(s) didn't match Pod's node affinity/selector.")
    msg = "0/3 nodes are available: " + frag
    c = Case("k8s-device-plugin-328-crashloop-pods-hold-gpus",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/328",
             fragment=frag, where="FailedScheduling event of the fourth Triton replica",
             expect="insufficient-gpu",
             must_not=["untolerated-taint", "node-selector-mismatch", "device-plugin-not-running", "gpu-unhealthy"],
             resolution="nvidia-smi showed a GPU idle, but the GPU was allocated: klueska explained that a pod that "
                        "asked for a GPU keeps it even while crash-looping; deleting the crash-looping pods let the "
                        "fourth replica get GPU 0. The taint and selector clauses are the cluster's other two nodes.",
             target={"pod": "default/model-2-79d7d6786c-bprm8"}, k8s="v1.24 (GPU Operator v1.11.1, Aug 2022)",
             notes="The thread prints '0/1 nodes are available:' before three one-node clauses, which cannot hold; "
                   "the snapshot has the three nodes the clauses describe. A finding should name the crash-looping "
                   "holder on agentnode.")
    sel = {"nvidia.com/gpu.product": "NVIDIA-RTX-A5000"}
    c.add(gpu_node("agentnode", gpus=4, product="NVIDIA-RTX-A5000", kubelet="v1.24.3", driver="510.54", cuda="11.6",
                   cpu="48", memory="256Gi"))
    c.add(device_plugin_pod("agentnode", namespace="gpu-operator", labels={"app": "nvidia-device-plugin-daemonset"},
                            image="nvcr.io/nvidia/k8s-device-plugin:v0.12.2-ubi8"))
    c.add(cpu_node("controlnode", kubelet="v1.24.3", taints=[taint("protect", "no_schedule")]))
    c.add(cpu_node("storagenode", kubelet="v1.24.3"))
    for i in range(3):
        c.add(bound(f"model-2-79d7d6786c-r{i}xyz", "default", "agentnode", gpus=1,
                    owner=("ReplicaSet", "model-2-79d7d6786c"), labels={"app": "model-infr"},
                    image="nvcr.io/nvidia/tritonserver:22.06-py3"))
    c.add(bound("model-1-5b7c9d8f6-zz9k1", "default", "agentnode", gpus=1, owner=("ReplicaSet", "model-1-5b7c9d8f6"),
                image="nvcr.io/nvidia/tritonserver:22.06-py3",
                statuses=[waiting("triton", "CrashLoopBackOff", "back-off 5m0s restarting failed container=triton",
                                  restarts=212, last_exit={"reason": "Error", "exitCode": 1},
                                  image="nvcr.io/nvidia/tritonserver:22.06-py3")]))
    p = pod("model-2-79d7d6786c-bprm8", "default", owner=("ReplicaSet", "model-2-79d7d6786c"),
            labels={"app": "model-infr"}, node_selector=sel,
            containers=[container("triton", image="nvcr.io/nvidia/tritonserver:22.06-py3", gpus=1)])
    scheduler_said(c, ("default", "model-2-79d7d6786c-bprm8"), msg, count=4, p=p)
    c.add(p)
    return c


def device_plugin_33() -> Case:
    """The plain case: another pod holds the node's only GPU."""
    msg = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    c = Case("k8s-device-plugin-33-other-pod-holds-the-gpu",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/33",
             fragment="0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
             where="FailedScheduling event of the new GPU pod",
             expect="insufficient-gpu",
             must_not=["device-plugin-not-running", "unknown-resource-name", "untolerated-taint"],
             resolution="One of the thread's resolutions (hellojack123): another pod had taken all the GPU resources; "
                        "deleting that pod let the new one schedule. A real shortage, the message means what it says.",
             target={"pod": "default/gpu-pod"}, k8s="v1.22 (Dec 2021)",
             notes="The thread collects many causes of the same message; this case models the one where the GPU is "
                   "genuinely taken (the device plugin is up and the node advertises its GPU).")
    c.add(gpu_node("gpu-server", gpus=1, product="Tesla-T4", kubelet="v1.22.4", cpu="16", memory="64Gi"))
    c.add(device_plugin_pod("gpu-server", image="nvcr.io/nvidia/k8s-device-plugin:v0.10.0"))
    c.add(bound("jupyter-train", "default", "gpu-server", gpus=1, image="tensorflow/tensorflow:2.7.0-gpu-jupyter"))
    p = pod("gpu-pod", "default", containers=[container("cuda-container", image="nvidia/cuda:11.0-base", gpus=1)],
            spec={"restartPolicy": "OnFailure"})
    scheduler_said(c, ("default", "gpu-pod"), msg, count=6, p=p)
    c.add(p)
    return c


CASES = [kubeflow_4770, kubeflow_7109, website_26943, jenkins_operator_34, soperator_378, pangeo_138,
         autoscaler_3869, autoscaler_5692, elyra_2681, aibrix_909, home_ops_10281, couler_236, origin_17455, kiwix_245,
         pangeo_111, device_plugin_328, device_plugin_33]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
