"""Real-world cases for the codes the corpus had fewest of: GPU fragmentation (a pod
asks for more GPUs than any one node has), node affinity that excludes every node,
GPU pods that request no GPU, ResourceQuotas that refuse GPU workloads. Run
``python tests/realworld/build_thin.py`` to rewrite their snapshots.

Where a thread does not say a detail the snapshot needs (a pod's generated name, a
node's name, the GPU model), the case says so in ``notes``; everything the diagnosis
turns on (the message, the requests, the node counts and GPUs per node, the versions
the thread gives) is taken from the thread."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (Case, container, cpu_node, crashloop, device_plugin_pod, event,  # noqa: E402
                 gpu_node, obj, pod, backoff_event, scheduler_said, runtime_class, node_info)


# ------------------------------------------------------------------ local helpers


def controller_event(kind: str, name: str, namespace: str, reason: str, message: str, api: str,
                     source: str, count: int = 1) -> dict:
    """An event on a workload object (involvedObject.apiVersion set)."""
    e = event(kind, name, namespace, reason, message, count=count, source=source)
    e["involvedObject"]["apiVersion"] = api
    return e


# ------------------------------------------------------------------ GPU fragmentation


def kubeflow_4954() -> Case:
    """Kubeflow 1.0: a notebook asks for 8 GPUs on two servers with 4 K40s each."""
    msg = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    c = Case("kubeflow-4954-eight-gpus-across-two-four-gpu-nodes",
             source="https://github.com/kubeflow/kubeflow/issues/4954",
             fragment="0/2 nodes are available: 2 Insufficient nvidia.com/gpu",
             where="event FailedScheduling on the Jupyter notebook server pod (and its PodScheduled condition)",
             expect="gpu-fragmentation", trap=True,
             resolution="Two servers with 4 Tesla K40 GPUs each; a notebook server with 4 GPUs works, one with 8 "
                        "stays Pending with 'Insufficient nvidia.com/gpu'. The maintainer answered that GPUs of "
                        "different nodes cannot be attached to one pod; 8 GPUs need distributed training (several "
                        "pods). The cluster has the 8 free GPUs, but no single node has more than 4: the request "
                        "is larger than any node, not a GPU shortage.",
             target={"pod": "anonymous/gpu-notebook-0"},
             must_not=["insufficient-gpu", "unknown-resource-name", "device-plugin-not-running"],
             k8s="v1.15 (Kubeflow 1.0)",
             notes="The thread gives two servers with 4 Tesla K40 each, Kubeflow 1.0 and the scheduler message. "
                   "Node names, the notebook's name and namespace (Kubeflow 1.0's default profile 'anonymous') and "
                   "the notebook image are not given; the 4-GPU notebook that works is not running in this "
                   "snapshot (both nodes' GPUs are free, as when the 8-GPU notebook was tried alone).")
    nodes = [f"gpu-server-{i}" for i in (1, 2)]
    for n in nodes:
        c.add(gpu_node(n, gpus=4, product="Tesla-K40m", gfd=False, kubelet="v1.15.11", cpu="40", memory="256Gi",
                       driver="440.64.00", cuda="10.2"))
        c.add(device_plugin_pod(n, name=f"nvidia-device-plugin-daemonset-{n[-1]}k7qz",
                                image="nvidia/k8s-device-plugin:1.0.0-beta4"))
    image = "gcr.io/kubeflow-images-public/tensorflow-1.15.2-notebook-gpu:1.0.0"
    p = pod("gpu-notebook-0", "anonymous",
            containers=[container("gpu-notebook", image=image, gpus=8,
                                  requests={"cpu": "500m", "memory": "1Gi"})],
            owner=("StatefulSet", "gpu-notebook"), labels={"app": "gpu-notebook", "notebook-name": "gpu-notebook"},
            created="2026-11-20T02:40:00Z")
    scheduler_said(c, p, msg, count=23)
    c.add(p)
    return c


def k8s_device_plugin_165() -> Case:
    """Two GPU pods' worth in one pod: two containers with 1 GPU each on nodes with one GPU each."""
    msg = "0/3 nodes are available: 3 insufficient nvidia.com/gpu."
    c = Case("k8s-device-plugin-165-two-gpus-on-one-gpu-nodes",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/165",
             fragment=msg,
             where="event FailedScheduling on the pod (and its PodScheduled condition)",
             expect="gpu-fragmentation", trap=True,
             resolution="The maintainer: 'You are still asking for 2 GPUs, but none of your nodes has more than 1 "
                        "GPU on it. In your setup, it will only work if you have 3 separate pods that each ask for 1 "
                        "GPU.' GPUs are per container and add up per pod; the GPU nodes k8s-node1 and k8s-node2 have "
                        "one free GPU each, two in total, but no node can hold the pod. With one GPU per pod the "
                        "reporter's pod was scheduled (on k8s-node2).",
             target={"pod": "default/gpu-pod"},
             must_not=["insufficient-gpu", "device-plugin-not-running", "unknown-resource-name"],
             k8s="v1.15.11",
             notes="The thread gives Kubernetes 1.15.11, the three nodes (k8s-master with the master NoSchedule taint, "
                   "k8s-node1 and k8s-node2 with nvidia.com/gpu: 1), the official example pod and the message, which "
                   "it quotes with a lower-case 'insufficient' (in the title and the description); it is kept as "
                   "quoted. The pod is the official two-container example with each container's limit lowered to 1 "
                   "('still asking for 2 GPUs'); the GPU model is not given.")
    c.add(cpu_node("k8s-master", cpu="4", memory="16Gi", kubelet="v1.15.11",
                   labels={"node-role.kubernetes.io/master": ""},
                   taints=[{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]))
    for n in ("k8s-node1", "k8s-node2"):
        node = gpu_node(n, gpus=1, product="GeForce-GTX-1080-Ti", gfd=False, kubelet="v1.15.11", cpu="4", memory="16Gi")
        c.add(node_info(node, "v1.15.11", "docker://18.9.7", "Ubuntu 16.04.6 LTS", "4.15.0-99-generic"))
        c.add(device_plugin_pod(n, name=f"nvidia-device-plugin-daemonset-{n[-1]}w8kq",
                                image="nvidia/k8s-device-plugin:1.0.0-beta6"))
    p = pod("gpu-pod", "default",
            containers=[container("cuda-container", image="nvidia/cuda:9.0-devel", gpus=1),
                        container("digits-container", image="nvidia/digits:6.0", gpus=1)],
            created="2026-11-20T02:30:00Z")
    scheduler_said(c, p, msg, count=12)
    c.add(p)
    return c


# ------------------------------------------------------------------ driver older than the image's CUDA


def kubeflow_1009() -> Case:
    """TF Serving 1.7 GPU image built on CUDA 9.1 on GKE nodes whose installer put driver 384.111."""
    frag = "Internal: cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version"
    image = "gcr.io/kubeflow-images-public/tensorflow-serving-1.7gpu:v20180604-0da89b8a"
    c = Case("kubeflow-1009-tf-serving-cuda-9-1-on-gke-384-driver",
             source="https://github.com/kubeflow/kubeflow/issues/1009",
             fragment=frag,
             where="log of the TF Serving GPU container (previous instance) of the inception test deployment",
             expect="driver-cuda-mismatch",
             resolution="The TF Serving 1.7 GPU image was built on CUDA 9.1, which the GKE GPU nodes' driver does not "
                        "support; the fix (kubeflow PR #1030, 'Fix #1009') rebuilt the image on CUDA 9.0: '9.1 is not "
                        "supported by driver now.' After that the image worked on the same nodes. The pod does "
                        "request its GPU; the driver really is older than the image needs.",
             target={"pod": "kubeflow-test/inception-gpu-v1-6c8f7b9d5-m4kzt"},
             must_not=["gpu-not-requested", "nvidia-runtime-error", "runtime-class-missing"],
             k8s="v1.10 (GKE)",
             notes="The log line is PR #940's test output quoted in the issue. The driver version of the GKE GPU pool "
                   "is not printed in the thread; 384.111 is the GKE COS installer's driver of that time (CUDA 9.0; "
                   "CUDA 9.1 needs 387.26), as triagemd/tensorflow-builds#13 notes for the same installer. The image "
                   "tag, GPU model (K80, the Kubeflow test pool) and pod names are assumed. GKE nodes of that time carry no "
                   "GFD driver labels, so the snapshot, like the cluster, does not say the driver version.")
    nodes = [f"gke-kubeflow-testing-gpu-pool-3c9d1e7f-{s}" for s in ("q8vm", "z2rt")]
    for n in nodes:
        node = gpu_node(n, gpus=1, product="Tesla-K80", gfd=False, kubelet="v1.10.4-gke.2", cpu="8", memory="30Gi",
                        driver="384.111", cuda="9.0",
                        labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-k80",
                                "cloud.google.com/gke-nodepool": "gpu-pool"},
                        taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
        c.add(node_info(node, "v1.10.4-gke.2", "docker://17.3.2", "Container-Optimized OS from Google", "4.14.22+"))
        c.add(device_plugin_pod(n, name=f"nvidia-gpu-device-plugin-{n[-4:]}",
                                image="k8s.gcr.io/nvidia-gpu-device-plugin@sha256:0842734032018be107fa2490c98156992911e3e1f2a21e059ff0105b07dd8e9e",
                                labels={"k8s-app": "nvidia-gpu-device-plugin"}))
    for i in range(2):
        c.add(cpu_node(f"gke-kubeflow-testing-default-pool-7b2e4c1a-{i}", cpu="8", memory="30Gi",
                       kubelet="v1.10.4-gke.2"))
    ctr = container("inception-gpu", image=image, gpus=1, command=["/usr/bin/tensorflow_model_server"])
    name = "inception-gpu-v1-6c8f7b9d5-m4kzt"
    p = pod(name, "kubeflow-test", phase="Running", node=nodes[0], containers=[ctr],
            owner=("ReplicaSet", "inception-gpu-v1-6c8f7b9d5"), labels={"app": "inception-gpu"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            statuses=[crashloop("inception-gpu", image, restarts=6)])
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
    c.add(p, backoff_event(name, "kubeflow-test", "inception-gpu", count=18))
    log = ("2018-06-15 00:00:58.577468: I external/org_tensorflow/tensorflow/core/common_runtime/gpu/gpu_device.cc:1423] "
           "Adding visible gpu devices: 0\n"
           "2018-06-15 00:00:58.577542: E external/org_tensorflow/tensorflow/core/common_runtime/direct_session.cc:167] "
           + frag + "\n")
    c.log("kubeflow-test", name, "inception-gpu", log, previous=True)
    return c


# ------------------------------------------------------------------ node affinity


def modelmesh_231() -> Case:
    """The modelmesh controller pins kubernetes.io/arch=amd64; the only (minikube) node is not amd64."""
    frag = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector"
    c = Case("modelmesh-serving-231-controller-amd64-node-affinity",
             source="https://github.com/kserve/modelmesh-serving/issues/231",
             fragment=frag,
             where="event FailedScheduling on the modelmesh-controller pod (and its PodScheduled condition)",
             expect="node-affinity-mismatch",
             resolution="The controller Deployment (config/manager/manager.yaml) carries a required node affinity "
                        "kubernetes.io/arch In [amd64]; on the reporter's single-node minikube (and kind) cluster "
                        "the node does not match, so the controller stays Pending. The maintainer's fix: remove "
                        "the nodeAffinity section from the controller's Deployment (he saw no reason to pin amd64).",
             target={"pod": "modelmesh-serving/modelmesh-controller-5c5d84b956-hxgh9"},
             must_not=["insufficient-cpu", "insufficient-memory", "untolerated-taint", "node-selector-mismatch"],
             k8s="v1.25 (minikube)",
             notes="The thread does not print the node's architecture; the maintainer's answer (the controller is "
                   "pinned to amd64 and should not be) implies a non-amd64 node, taken as arm64 (an Apple-silicon "
                   "minikube). The minikube Kubernetes version and the controller image tag are assumed.")
    node = cpu_node("minikube", cpu="4", memory="8Gi", kubelet="v1.25.0",
                    labels={"kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "arm64",
                            "minikube.k8s.io/name": "minikube", "node-role.kubernetes.io/control-plane": ""})
    c.add(node)
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}
    image = "kserve/modelmesh-controller:v0.9.0"
    p = pod("modelmesh-controller-5c5d84b956-hxgh9", "modelmesh-serving",
            containers=[container("manager", image=image, requests={"cpu": "50m", "memory": "96Mi"},
                                  limits={"cpu": "1", "memory": "512Mi"})],
            owner=("ReplicaSet", "modelmesh-controller-5c5d84b956"), affinity=aff,
            labels={"control-plane": "modelmesh-controller"}, created="2026-11-20T02:58:06Z")
    scheduler_said(c, p, frag + ".", count=4)
    c.add(p)
    return c


# ------------------------------------------------------------------ nodeSelector


def gist_gputest_match_node_selector() -> Case:
    """Kubernetes 1.3: a GPU pod with nodeSelector gpu=true on nodes that nobody labelled."""
    frag = "fit failure on node (ip-172-20-0-16.us-west-1.compute.internal): MatchNodeSelector"
    nodes = [f"ip-172-20-0-{i}.us-west-1.compute.internal" for i in (16, 14, 15)]
    msg = "pod (gputest) failed to fit in any node\n" + "\n".join(
        f"fit failure on node ({n}): MatchNodeSelector" for n in nodes)
    c = Case("gist-elsonrodriguez-gputest-gpu-label-missing",
             source="https://gist.github.com/elsonrodriguez/60e53e2479dc3146447b",
             fragment=frag,
             where="event FailedScheduling on pod gputest (and its PodScheduled condition)",
             expect="node-selector-mismatch",
             resolution="The walkthrough's GPU test pod selects nodes labelled gpu=true and none is: 'No node matches "
                        "the nodeSelector! Let's label a node.' After 'kubectl label node $nodename gpu=true' the pod "
                        "runs. The nodes have their GPU; only the label the pod selects is missing.",
             target={"pod": "default/gputest"},
             must_not=["insufficient-gpu", "unknown-resource-name", "device-plugin-not-running"],
             k8s="v1.3 (AWS)",
             notes="The message and the fix are the gist's; its pod.yaml is linked, not quoted: the nodeSelector "
                   "gpu=true is what the fix labels, and the GPU limit uses the resource of that Kubernetes "
                   "(alpha.kubernetes.io/nvidia-gpu: 1). The instance type (g2.2xlarge, one GPU) and kubelet "
                   "version are assumed; the three node names are the message's.")
    gpu = "alpha.kubernetes.io/nvidia-gpu"
    for n in nodes:
        node = gpu_node(n, gpus=1, resource=gpu, gfd=False, kubelet="v1.3.5", cpu="8", memory="15Gi",
                        labels={"beta.kubernetes.io/instance-type": "g2.2xlarge",
                                "failure-domain.beta.kubernetes.io/region": "us-west-1"})
        c.add(node_info(node, "v1.3.5", "docker://1.11.2", "Debian GNU/Linux 8 (jessie)", "4.4.26-k8s"))
    p = pod("gputest", "default", containers=[container("gputest", image="nvidia/cuda:7.5", gpus=1, resource=gpu)],
            node_selector={"gpu": "true"}, created="2026-11-20T02:59:20Z")
    scheduler_said(c, p, msg, count=4)
    c.add(p)
    return c


def rocketmq_operator_48() -> Case:
    """The operator Deployment's nodeSelector rocketmq-operator=on matches none of the three nodes."""
    msg = "0/3 nodes are available: 3 node(s) didn't match node selector."
    c = Case("rocketmq-operator-48-operator-node-selector-unlabelled",
             source="https://github.com/huanwei/rocketmq-operator/issues/48",
             fragment=msg,
             where="event FailedScheduling on the rocketmq-operator pod (and its PodScheduled condition)",
             expect="node-selector-mismatch",
             resolution="The maintainer: remove the nodeSelector settings from the operator's YAML; the reporter "
                        "confirmed it was solved. The operator Deployment (deploy/03-deploymentWithConfig.yaml) "
                        "selects rocketmq-operator: \"on\" (the two lines another user deleted in #44), and none of "
                        "the three nodes carries that label.",
             target={"pod": "rocketmq-operator/rocketmq-operator-5657b85cf9-kxjv7"},
             must_not=["insufficient-cpu", "insufficient-memory", "untolerated-taint", "node-affinity-mismatch"],
             k8s="v1.17",
             notes="The message, pod name and namespace are the thread's (the namespace as kubectl get pods printed "
                   "it); the nodeSelector is the manifest's as quoted in #44 of the same repository. The node names, "
                   "sizes, Kubernetes version and operator image are assumed; no node is tainted (the message names "
                   "only the selector).")
    for i in range(3):
        c.add(cpu_node(f"k8s-node-{i + 1}", cpu="8", memory="16Gi", kubelet="v1.17.2"))
    p = pod("rocketmq-operator-5657b85cf9-kxjv7", "rocketmq-operator",
            containers=[container("rocketmq-operator", image="huanwei/rocketmq-operator:0.2.1",
                                  requests={"cpu": "100m", "memory": "128Mi"})],
            owner=("ReplicaSet", "rocketmq-operator-5657b85cf9"), labels={"name": "rocketmq-operator"},
            node_selector={"rocketmq-operator": "on"}, created="2026-11-20T02:55:00Z")
    scheduler_said(c, p, msg, count=6)
    c.add(p)
    return c


# ------------------------------------------------------------------ no GPU requested


def faster_whisper_1259() -> Case:
    frag = "RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version"
    image = "lscr.io/linuxserver/faster-whisper:gpu"
    c = Case("faster-whisper-1259-gpu-image-without-gpu-request",
             source="https://github.com/SYSTRAN/faster-whisper/issues/1259",
             fragment=frag,
             where="log of the faster-whisper container (previous instance); the pod crash-loops on the GPU node",
             expect="gpu-not-requested", trap=True,
             resolution="Not an old driver: the host runs driver 550.144.03 (CUDA 12.4), new enough for the image. "
                        "The reporter's pod used the nvidia runtime but requested no GPU; the reporter's later "
                        "comment says the fix linked in the thread (adding the GPU resource requests) worked: "
                        "'Unsure why it requires these requests. Other services can access it without it.' Without "
                        "nvidia.com/gpu the device plugin hands the container no GPU and no driver library, and the "
                        "CUDA runtime reports the missing driver as an insufficient driver version. Another user "
                        "with the same message found the card was not attached to the container.",
             target={"pod": "ai/faster-whisper-6d8f9b7c5-wq4tz"},
             must_not=["driver-cuda-mismatch", "nvidia-runtime-error"],
             k8s="v1.31",
             notes="The GPU (RTX 3090 FE), the driver (550.144.03, CUDA 12.4), the image and the nvidia runtime are "
                   "the thread's; the Kubernetes version, node, namespace and pod names are assumed. The linked "
                   "comment that holds the working spec is not quoted in the thread; the reporter calls the change "
                   "'these requests'. Only the error line is put in the log.")
    node = gpu_node("gpu-node-1", gpus=1, product="NVIDIA-GeForce-RTX-3090", driver="550.144.03", cuda="12.4",
                    kubelet="v1.31.4", cpu="16", memory="64Gi")
    c.add(node, runtime_class("nvidia"))
    dp = device_plugin_pod("gpu-node-1", namespace="nvidia-device-plugin", name="nvidia-device-plugin-7xq2m",
                           image="nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                           labels={"app.kubernetes.io/name": "nvidia-device-plugin"})
    dp["spec"]["runtimeClassName"] = "nvidia"
    c.add(dp)
    ctr = container("faster-whisper", image=image, env={"WHISPER_MODEL": "medium-int8", "WHISPER_LANG": "en"},
                    requests={"cpu": "1", "memory": "2Gi"}, limits={"memory": "8Gi"})
    p = pod("faster-whisper-6d8f9b7c5-wq4tz", "ai", phase="Running", node="gpu-node-1", containers=[ctr],
            owner=("ReplicaSet", "faster-whisper-6d8f9b7c5"), labels={"app": "faster-whisper"},
            spec={"runtimeClassName": "nvidia"},
            statuses=[crashloop("faster-whisper", image, restarts=9)])
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
    c.add(p, backoff_event("faster-whisper-6d8f9b7c5-wq4tz", "ai", "faster-whisper", count=40))
    c.log("ai", "faster-whisper-6d8f9b7c5-wq4tz", "faster-whisper", frag + "\n", previous=True)
    return c


# ------------------------------------------------------------------ ResourceQuota


def kubernetes_46639() -> Case:
    """Kubernetes 1.6: a quota that names the alpha GPU resource refuses every pod with 'status unknown'."""
    frag = 'pods "tensorflow-3620546736-" is forbidden: status unknown for quota: quota'
    msg = "Error creating: " + frag
    ns = "test"
    c = Case("kubernetes-46639-alpha-gpu-in-quota-status-unknown",
             source="https://github.com/kubernetes/kubernetes/issues/46639",
             fragment=frag,
             where="event (Warning, reason FailedCreate, from replicaset-controller) on the Deployment's ReplicaSet; "
                   "its pods are never created",
             expect="quota-exceeded",
             resolution="The namespace's ResourceQuota lists requests/limits of alpha.kubernetes.io/nvidia-gpu, which "
                        "the 1.6 quota system does not track: the quota's status never carries usage for them, so "
                        "quota admission refuses every pod of the namespace ('status unknown for quota'). The "
                        "reporter found the error goes away when the GPU entries are removed from the quota; GPU "
                        "quota came with extended-resource quota in 1.10 (requests.nvidia.com/gpu). The "
                        "ResourceQuota blocks the workload, not the GPUs.",
             target={"namespace": ns, "target": "replicaset/tensorflow-3620546736"},
             must_not=["insufficient-gpu", "unknown-resource-name", "device-plugin-not-running"],
             k8s="v1.6.4",
             notes="The quota, the FailedCreate message and the Kubernetes version are the thread's; the Deployment's "
                   "spec, the nodes and the image are assumed. The workload objects are written as apps/v1 (1.6 served "
                   "them as extensions/v1beta1) so that the live test's API server serves them.")
    gpu = "alpha.kubernetes.io/nvidia-gpu"
    node = gpu_node("gpu-node-1", gpus=1, resource=gpu, gfd=False, kubelet="v1.6.4", cpu="16", memory="64Gi")
    node = node_info(node, "v1.6.4", "docker://1.12.6", "Ubuntu 16.04.2 LTS", "4.4.0-78-generic")
    c.add(node, cpu_node("node-2", cpu="8", memory="32Gi", kubelet="v1.6.4"))
    hard = {"requests.cpu": "12", "requests.memory": "8Gi", f"requests.{gpu}": "1", "limits.cpu": "12",
            "limits.memory": "8Gi", f"limits.{gpu}": "1", "configmaps": "100", "services": "100", "secrets": "100"}
    tracked = {k: v for k, v in hard.items() if gpu not in k}
    used = {"requests.cpu": "0", "requests.memory": "0", "limits.cpu": "0", "limits.memory": "0",
            "configmaps": "0", "services": "0", "secrets": "1"}
    c.add(obj("v1", "ResourceQuota", "quota", ns, spec={"hard": hard}, status={"hard": tracked, "used": used}))
    ctr = container("tensorflow", image="gcr.io/tensorflow/tensorflow:1.1.0-gpu",
                    requests={"cpu": "2", "memory": "4Gi", gpu: "1"}, limits={"cpu": "2", "memory": "4Gi", gpu: "1"})
    tmpl = {"metadata": {"labels": {"app": "tensorflow", "pod-template-hash": "3620546736"}},
            "spec": {"containers": [ctr]}}
    c.add(obj("apps/v1", "Deployment", "tensorflow", ns,
              spec={"replicas": 1, "selector": {"matchLabels": {"app": "tensorflow"}}, "template": tmpl},
              status={"replicas": 0, "unavailableReplicas": 1}))
    c.add(obj("apps/v1", "ReplicaSet", "tensorflow-3620546736", ns,
              spec={"replicas": 1, "selector": {"matchLabels": {"app": "tensorflow", "pod-template-hash": "3620546736"}},
                    "template": tmpl},
              status={"replicas": 0, "readyReplicas": 0},
              owner=("apps/v1", "Deployment", "tensorflow")))
    c.add(controller_event("ReplicaSet", "tensorflow-3620546736", ns, "FailedCreate", msg, api="apps/v1",
                           source="replicaset-controller", count=17))
    return c


CASES = [kubeflow_4954, k8s_device_plugin_165, modelmesh_231, gist_gputest_match_node_selector, rocketmq_operator_48,
         faster_whisper_1259, kubernetes_46639, kubeflow_1009]


def main() -> None:
    for make in CASES:
        print(make().write())


if __name__ == "__main__":
    main()
