"""Real-world Pending GPU pods, second round: GPUs held by other pods (named), pod
affinity that pins a GPU pod away from the GPU node. Run
``python tests/realworld/build_pending2.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (Case, container, cpu_node, device_plugin_pod, gpu_node, pod,  # noqa: E402
                 bound, scheduler_said)


# ------------------------------------------------------------------ local helpers


def cordoned(node: dict) -> dict:
    node["spec"]["unschedulable"] = True
    node["spec"].setdefault("taints", []).append(
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-19T08:00:00Z"})
    return node


# ------------------------------------------------------------------ GPUs held by other pods


def kubeflow_794() -> Case:
    msg = "0/6 nodes are available: 6 Insufficient nvidia.com/gpu."
    c = Case("kubeflow-794-stale-test-pods-hold-gpu-pool",
             source="https://github.com/kubeflow/kubeflow/issues/794",
             fragment=msg,
             where="event FailedScheduling on the TF-serving GPU test pod (and its PodScheduled condition)",
             expect="insufficient-gpu",
             resolution="The presubmit's GPU pool had its GPUs held by workloads of earlier test runs that should "
                        "have been garbage-collected; listing Running pods on the gke-kubeflow-testing-gpu-pool "
                        "nodes and deleting them freed the GPUs and the test passed. The GPUs were genuinely "
                        "allocated to other pods.",
             target={"pod": "kubeflow-presubmit/inception-gpu-v1-74fc6fd6cf-ft226"},
             must_not=["unknown-resource-name", "device-plugin-not-running", "gpu-fragmentation"],
             k8s="v1.9 (GKE)")
    gpu_nodes = [f"gke-kubeflow-testing-gpu-pool-0f3c2b1a-{s}" for s in ("7k2p", "x9qd")]
    for n in gpu_nodes:
        c.add(gpu_node(n, gpus=1, product="Tesla-K80", gfd=False, kubelet="v1.9.7-gke.1", cpu="8", memory="30Gi",
                       labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-k80",
                               "cloud.google.com/gke-nodepool": "gpu-pool"}))
        c.add(device_plugin_pod(n, name=f"nvidia-gpu-device-plugin-{n[-4:]}",
                                image="k8s.gcr.io/nvidia-gpu-device-plugin@sha256:0842734032018be107fa2490c98156992911e3e1f2a21e059ff0105b07dd8e9e",
                                labels={"k8s-app": "nvidia-gpu-device-plugin"}))
    for i in range(4):
        c.add(cpu_node(f"gke-kubeflow-testing-default-pool-5a1e9c7d-{i}", cpu="8", memory="30Gi",
                       kubelet="v1.9.7-gke.1"))
    # leftovers of earlier presubmit runs, never garbage-collected, each holding the pool's only GPU per node
    c.add(bound("inception-gpu-v1-5d8b7c9f4-q2m7w", "kubeflow-test-infra-1532", gpu_nodes[0], gpus=1,
                owner=("ReplicaSet", "inception-gpu-v1-5d8b7c9f4"), image="gcr.io/kubeflow-images-public/tf-model-server-gpu:v20180327-995786ec",
                created="2026-11-12T04:10:00Z"))
    c.add(bound("inception-gpu-v1-6b9f8d7c5-h4r8z", "kubeflow-test-infra-1547", gpu_nodes[1], gpus=1,
                owner=("ReplicaSet", "inception-gpu-v1-6b9f8d7c5"), image="gcr.io/kubeflow-images-public/tf-model-server-gpu:v20180327-995786ec",
                created="2026-11-14T11:40:00Z"))
    p = pod("inception-gpu-v1-74fc6fd6cf-ft226", "kubeflow-presubmit",
            containers=[container("inception-gpu", image="gcr.io/kubeflow-images-public/tf-model-server-gpu:v20180327-995786ec",
                                  gpus=1)],
            owner=("ReplicaSet", "inception-gpu-v1-74fc6fd6cf"), labels={"app": "inception-gpu"},
            created="2026-11-20T02:45:00Z")
    scheduler_said(c, p, msg, count=57)
    c.add(p)
    return c


def kubeflow_1262() -> Case:
    msg = "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."
    c = Case("kubeflow-1262-previous-test-pods-hold-gpus",
             source="https://github.com/kubeflow/kubeflow/issues/1262",
             fragment=msg,
             where="event FailedScheduling on the TF-serving GPU test pod (and its PodScheduled condition)",
             expect="insufficient-gpu",
             resolution="The TF Serving GPU test pod could not be scheduled because pods from previous test runs "
                        "still held the GPUs; the maintainer deleted those pods and re-ran the test.",
             target={"pod": "kubeflow-test/inception-gpu-v1-7c9d6b8f5-lm2xq"},
             must_not=["unknown-resource-name", "device-plugin-not-running", "gpu-fragmentation"],
             k8s="v1.10 (GKE)")
    gpu_nodes = [f"gke-kubeflow-testing-gpu-pool-8e21d4c0-{s}" for s in ("b3fn", "w8tk")]
    for n in gpu_nodes:
        c.add(gpu_node(n, gpus=1, product="Tesla-K80", gfd=False, kubelet="v1.10.5-gke.3", cpu="8", memory="30Gi",
                       labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-k80",
                               "cloud.google.com/gke-nodepool": "gpu-pool"}))
        c.add(device_plugin_pod(n, name=f"nvidia-gpu-device-plugin-{n[-4:]}",
                                image="k8s.gcr.io/nvidia-gpu-device-plugin@sha256:0842734032018be107fa2490c98156992911e3e1f2a21e059ff0105b07dd8e9e",
                                labels={"k8s-app": "nvidia-gpu-device-plugin"}))
    for i in range(3):
        c.add(cpu_node(f"gke-kubeflow-testing-default-pool-2c7b9e41-{i}", cpu="8", memory="30Gi",
                       kubelet="v1.10.5-gke.3"))
    c.add(bound("inception-gpu-v1-58c7f9d6b-9xk2p", "kubeflow-test-1198", gpu_nodes[0], gpus=1,
                owner=("ReplicaSet", "inception-gpu-v1-58c7f9d6b"), created="2026-11-18T07:00:00Z",
                image="gcr.io/kubeflow-images-public/tf-model-server-gpu:v20180606-9dfda4f2"))
    c.add(bound("inception-gpu-v1-6f4d8c7b9-r5t1z", "kubeflow-test-1214", gpu_nodes[1], gpus=1,
                owner=("ReplicaSet", "inception-gpu-v1-6f4d8c7b9"), created="2026-11-18T19:30:00Z",
                image="gcr.io/kubeflow-images-public/tf-model-server-gpu:v20180606-9dfda4f2"))
    p = pod("inception-gpu-v1-7c9d6b8f5-lm2xq", "kubeflow-test",
            containers=[container("inception-gpu", image="gcr.io/kubeflow-images-public/tf-model-server-gpu:v20180606-9dfda4f2",
                                  gpus=1)],
            owner=("ReplicaSet", "inception-gpu-v1-7c9d6b8f5"), labels={"app": "inception-gpu"},
            created="2026-11-20T02:30:00Z")
    scheduler_said(c, p, msg, count=31)
    c.add(p)
    return c


def pangeo_eosc_74() -> Case:
    msg = ("0/36 nodes are available: 3 node(s) were unschedulable, 33 Insufficient nvidia.com/gpu. preemption: "
           "0/36 nodes are available: 1 Insufficient nvidia.com/gpu, 3 Preemption is not helpful for scheduling, "
           "32 No preemption victims found for incoming pod..")
    c = Case("pangeo-eosc-74-gpus-used-by-other-tenants",
             source="https://github.com/pangeo-data/pangeo-eosc/issues/74",
             fragment="0/36 nodes are available: 3 node(s) were unschedulable, 33 Insufficient nvidia.com/gpu.",
             where="event FailedScheduling on the JupyterHub GPU user pod (and its PodScheduled condition)",
             expect="insufficient-gpu",
             resolution="Nothing was broken: all GPUs of the shared cluster were in use by other Kubernetes users "
                        "outside the Pangeo deployment (the Pangeo Grafana showed no GPU use because the holders "
                        "were other tenants). The pod has to wait for those GPUs.",
             target={"pod": "daskhub/jupyter-tinaok"},
             must_not=["node-unschedulable", "unknown-resource-name", "device-plugin-not-running"],
             k8s="v1.27")
    gpu_nodes = [f"k8s-eosc-gpu-{i}" for i in range(3)]
    for n in gpu_nodes:
        c.add(gpu_node(n, gpus=2, product="Tesla-V100-SXM2-16GB", kubelet="v1.27.8", cpu="32", memory="128Gi"))
        c.add(device_plugin_pod(n, namespace="gpu-operator", name=f"nvidia-device-plugin-daemonset-{n[-1]}x7q",
                                labels={"app": "nvidia-device-plugin-daemonset"}))
    for i in range(30):
        c.add(cpu_node(f"k8s-eosc-node-{i:02d}", cpu="16", memory="64Gi", kubelet="v1.27.8"))
    for i in range(3):
        c.add(cordoned(cpu_node(f"k8s-eosc-node-drain-{i}", cpu="16", memory="64Gi", kubelet="v1.27.8")))
    holders = [("climate-ml", "unet-train-0"), ("climate-ml", "unet-train-1"), ("hydro-ai", "lstm-sweep-3"),
               ("hydro-ai", "lstm-sweep-4"), ("eo-vision", "segformer-finetune-0"), ("eo-vision", "segformer-finetune-1")]
    for k, (ns, name) in enumerate(holders):
        c.add(bound(name, ns, gpu_nodes[k // 2], gpus=1, requests={"cpu": "4", "memory": "16Gi"}))
    p = pod("jupyter-tinaok", "daskhub",
            containers=[container("notebook", image="pangeo/ml-notebook:2024.04.24", gpus=1,
                                  requests={"cpu": "2", "memory": "8Gi"})],
            labels={"component": "singleuser-server", "hub.jupyter.org/username": "tinaok"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            created="2026-11-20T02:50:00Z")
    scheduler_said(c, p, msg, count=9)
    c.add(p)
    return c


# ------------------------------------------------------------------ pod (anti-)affinity


def devpod_63() -> Case:
    msg = ("0/4 nodes are available: 1 node(s) didn't match pod affinity rules, 3 Insufficient nvidia.com/gpu. "
           "preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims "
           "found for incoming pod.")
    c = Case("devpod-provider-kubernetes-63-pod-affinity-pins-to-cpu-node",
             source="https://github.com/loft-sh/devpod-provider-kubernetes/issues/63",
             fragment="0/4 nodes are available: 1 node(s) didn't match pod affinity rules, 3 Insufficient nvidia.com/gpu.",
             where="event FailedScheduling on the devpod workspace pod (and its PodScheduled condition)",
             expect="pod-topology-constraint", trap=True,
             resolution="The workspace pod asks for nvidia.com/gpu=1 but has a required pod affinity (hostname) to "
                        "the devpod helper pod devpod-devpod-default-de-a-d7206, which had been placed on an "
                        "arbitrary node without a GPU. The only GPU node (with its GPU free) fails the pod affinity; "
                        "the other three nodes have no GPU. The cause is the pod affinity, not a GPU shortage.",
             target={"pod": "devpod/devpod-default-de-a-d7206-workspace"},
             must_not=["unknown-resource-name", "device-plugin-not-running"],
             also_ok={},
             k8s="v1.31")
    c.add(gpu_node("gpu-node", gpus=1, product="NVIDIA-L4", kubelet="v1.31.4", cpu="16", memory="64Gi"))
    c.add(device_plugin_pod("gpu-node", namespace="nvidia-device-plugin", name="nvidia-device-plugin-4kq8d",
                            labels={"app.kubernetes.io/name": "nvidia-device-plugin"},
                            image="nvcr.io/nvidia/k8s-device-plugin:v0.17.0"))
    for n in ("kube01", "kube02", "kube03"):
        c.add(cpu_node(n, cpu="8", memory="32Gi", kubelet="v1.31.4"))
    helper = bound("devpod-devpod-default-de-a-d7206", "devpod", "kube02",
                   requests={"cpu": "100m", "memory": "128Mi"},
                   labels={"devpod.sh/created": "true", "devpod.sh/workspace-uid": "default-de-a-d7206"},
                   image="ghcr.io/loft-sh/devpod:v0.6.8")
    c.add(helper)
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"devpod.sh/workspace-uid": "default-de-a-d7206"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    p = pod("devpod-default-de-a-d7206-workspace", "devpod",
            containers=[container("devpod", image="mcr.microsoft.com/devcontainers/python:3.12",
                                  limits={"nvidia.com/gpu": "1"}, requests={"nvidia.com/gpu": "1"})],
            labels={"devpod.sh/created": "true", "devpod.sh/role": "workspace"}, affinity=aff,
            created="2026-11-20T02:40:00Z")
    scheduler_said(c, p, msg, count=14)
    c.add(p)
    return c


def aws_do_eks_67() -> Case:
    msg = "0/4 nodes are available: 4 node(s) didn't satisfy existing pods anti-affinity rules"
    flat = (msg + ". preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.")
    c = Case("aws-do-eks-67-gpu-pods-anti-affinity-repels-frontend",
             source="https://github.com/aws-samples/aws-do-eks/pull/67",
             fragment=msg,
             where="event FailedScheduling on the frontend pod (and its PodScheduled condition)",
             expect="pod-topology-constraint",
             resolution="On a 4-node all-GPU p6-b200 cluster the prefill/decode GPU pods carried a required pod "
                        "anti-affinity (hostname) whose selector app.kubernetes.io/part-of matched every pod of the "
                        "deployment, frontend included. With one GPU pod on each node, the running pods' rule "
                        "rejects the frontend everywhere. The fix narrowed the selector to the GPU components; the "
                        "cause is the existing pods' anti-affinity, not GPUs or CPU.",
             target={"pod": "nemotron/nemotron-ultra-disagg-frontend-7d9c5b8f6-x2l4k"},
             must_not=["insufficient-gpu", "insufficient-cpu", "insufficient-memory"],
             k8s="v1.35 (EKS)")
    part_of = {"app.kubernetes.io/part-of": "nemotron-ultra-disagg"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": dict(part_of)}, "topologyKey": "kubernetes.io/hostname"}]}}
    nodes = [f"ip-192-168-{a}.us-east-2.compute.internal" for a in ("35-42", "61-7", "88-130", "112-19")]
    roles = ["prefill-0", "prefill-1", "decode-0", "decode-1"]
    for n, role in zip(nodes, roles):
        c.add(gpu_node(n, gpus=8, product="NVIDIA-B200", kubelet="v1.35.0-eks-3cfe0ce", cpu="192", memory="2048Gi",
                       labels={"node.kubernetes.io/instance-type": "p6-b200.48xlarge"},
                       extra_capacity={"vpc.amazonaws.com/efa": "8"}))
        c.add(device_plugin_pod(n, namespace="gpu-operator", name=f"nvidia-device-plugin-daemonset-{role}",
                                labels={"app": "nvidia-device-plugin-daemonset"}))
        comp = role.split("-")[0]
        gp = bound(f"nemotron-ultra-disagg-{role}", "nemotron", n, gpus=8,
                   requests={"cpu": "96", "memory": "1024Gi"},
                   labels={**part_of, "app.kubernetes.io/component": comp},
                   image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1")
        gp["spec"]["affinity"] = anti
        c.add(gp)
    fe = pod("nemotron-ultra-disagg-frontend-7d9c5b8f6-x2l4k", "nemotron",
             containers=[container("frontend", image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1",
                                   requests={"cpu": "10", "memory": "32Gi"}, limits={"cpu": "10", "memory": "32Gi"})],
             labels={**part_of, "app.kubernetes.io/component": "frontend"},
             owner=("ReplicaSet", "nemotron-ultra-disagg-frontend-7d9c5b8f6"), created="2026-11-20T02:40:00Z")
    scheduler_said(c, fe, flat, count=22)
    c.add(fe)
    return c


CASES = [kubeflow_794, kubeflow_1262, pangeo_eosc_74, devpod_63, aws_do_eks_67]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
