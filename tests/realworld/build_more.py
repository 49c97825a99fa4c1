"""Real-world cases, more of them: GPU pods (and pods on GPU nodes) that ask for GPUs plus
another resource where the other resource is what is short (pod slots, memory); required
pod anti-affinity during a rolling update; a GPU pod on a cluster that has no GPU node.
Run ``python tests/realworld/build_more.py`` to rewrite their snapshots.

Where a thread does not say a detail the snapshot needs (a pod's generated name, a node's
name, the other pods on a node), the case says so in ``notes``; everything the diagnosis
turns on (the message, the node counts it states, the requests, the versions the thread
gives) is taken from the thread."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (Case, container, cpu_node, device_plugin_pod, gpu_node, pod,  # noqa: E402
                 taint, bound, scheduler_said)


# ------------------------------------------------------------------ local helpers


def daemon_pod(name: str, namespace: str, node: str, ds: str, image: str, requests: Optional[dict] = None,
               labels: Optional[dict] = None) -> dict:
    """A DaemonSet pod on ``node`` (pinned there by the matchFields node affinity the
    DaemonSet controller writes)."""
    p = bound(name, namespace, node, requests=requests, owner=("DaemonSet", ds), labels=labels or {"app": ds},
              image=image, tolerations=[{"operator": "Exists"}])
    p["spec"]["affinity"] = pin_to(node)
    return p


def pin_to(node: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}


# ------------------------------------------------------------------ GPU plus pod slots


def kubeflow_6515() -> Case:
    """DGX A100 nodes in a multi-tenant Kubeflow: the node with free MIG slices is at the
    kubelet's 110-pod limit (two KFP pods per user namespace), the others have no free
    slice; the user reads only 'Insufficient nvidia.com/gpu'."""
    msg = "0/3 nodes are available: 1 Too many pods, 2 Insufficient nvidia.com/gpu."
    c = Case("kubeflow-6515-dgx-max-pods-reads-insufficient-gpu",
             source="https://github.com/kubeflow/kubeflow/issues/6515",
             fragment="Insufficient nvidia.com/gpu",
             where="event FailedScheduling on the notebook server pod (and its PodScheduled condition)",
             expect="insufficient-resource", trap=True,
             resolution="The reporter's own analysis (the issue was closed on it): Kubeflow Pipelines creates at "
                        "least two pods per user namespace (ml-pipeline-ui-artifact and "
                        "ml-pipeline-visualizationserver); with 100+ users the DGX A100 nodes hit the kubelet's "
                        "default 110 pods per node. 'A compute node with free gpu might have max pods, then we "
                        "would hit errors that say no GPUs are available when its actually no more pod space on "
                        "that node.' The short resource on the node with free GPUs is pod slots, not GPUs.",
             target={"pod": "kubeflow-user-ava-chen/gpu-nb-0"},
             must_not=["insufficient-gpu", "gpu-fragmentation", "unknown-resource-name", "device-plugin-not-running"],
             k8s="not stated in the thread (Kubeflow 1.5, June 2022)",
             notes="The thread gives DGX A100 nodes with 56 MIG slices each (seven 1g.5gb per A100, the single MIG "
                   "strategy: the slices are advertised as nvidia.com/gpu), 100+ users, two KFP pods per profile "
                   "namespace and the 110-pod default. It quotes the message only as 'Insufficient nvidia.com/gpu' "
                   "(the title); the full message here adds what the scheduler prints for the node at its pod "
                   "limit ('Too many pods'). Three nodes, user names, notebook sizes and the kubelet version are "
                   "assumed.")
    nodes = [f"dgx-a100-{i:02d}" for i in (1, 2, 3)]
    mig = {"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb",
           "nvidia.com/gpu.count": "56", "nvidia.com/mig.config": "all-1g.5gb"}
    for n in nodes:
        c.add(gpu_node(n, gpus=56, product="NVIDIA-A100-SXM4-40GB", kubelet="v1.21.14", cpu="256", memory="1Ti",
                       labels=mig, driver="510.47.03", cuda="11.6"))
        c.add(device_plugin_pod(n, namespace="gpu-operator", name=f"nvidia-device-plugin-daemonset-{n[-2:]}k9t",
                                image="nvcr.io/nvidia/k8s-device-plugin:v0.11.0",
                                labels={"app": "nvidia-device-plugin-daemonset"}))
    nb_image = "public.ecr.aws/j1r0q0g6/notebooks/notebook-servers/jupyter-pytorch-cuda-full:v1.5.0"
    users = [f"user-{i:03d}" for i in range(1, 121)]
    # dgx-a100-01: 53 profile namespaces x 2 KFP pods + 3 notebooks (24 slices) + the plugin pod = 110 pods
    for u in users[:53]:
        ns = f"kubeflow-{u}"
        c.add(bound(f"ml-pipeline-ui-artifact-6cb7b9d6fd-{u[-3:]}aa", ns, nodes[0],
                    requests={"cpu": "10m", "memory": "70Mi"}, owner=("ReplicaSet", "ml-pipeline-ui-artifact-6cb7b9d6fd"),
                    labels={"app": "ml-pipeline-ui-artifact"}, image="gcr.io/ml-pipeline/frontend:1.8.2"))
        c.add(bound(f"ml-pipeline-visualizationserver-5d8b7c9f4-{u[-3:]}bb", ns, nodes[0],
                    requests={"cpu": "50m", "memory": "200Mi"},
                    owner=("ReplicaSet", "ml-pipeline-visualizationserver-5d8b7c9f4"),
                    labels={"app": "ml-pipeline-visualizationserver"},
                    image="gcr.io/ml-pipeline/visualization-server:1.8.2"))
    for k, u in enumerate(users[53:56]):
        c.add(bound(f"nb-{u}-0", f"kubeflow-{u}", nodes[0], gpus=8, requests={"cpu": "4", "memory": "32Gi"},
                    owner=("StatefulSet", f"nb-{u}"), image=nb_image))
    # dgx-a100-02/03: every slice held by notebooks and training jobs; pod slots to spare
    k = 56
    for n in nodes[1:]:
        for j in range(7):
            u = users[k]
            k += 1
            c.add(bound(f"train-{u}-worker-{j}", f"kubeflow-{u}", n, gpus=8, requests={"cpu": "16", "memory": "64Gi"},
                        image="nvcr.io/nvidia/pytorch:22.04-py3"))
        for u in users[k:k + 20]:
            ns = f"kubeflow-{u}"
            c.add(bound(f"ml-pipeline-ui-artifact-6cb7b9d6fd-{u[-3:]}cc", ns, n,
                        requests={"cpu": "10m", "memory": "70Mi"},
                        owner=("ReplicaSet", "ml-pipeline-ui-artifact-6cb7b9d6fd"),
                        labels={"app": "ml-pipeline-ui-artifact"}, image="gcr.io/ml-pipeline/frontend:1.8.2"))
        k += 20
    p = pod("gpu-nb-0", "kubeflow-user-ava-chen",
            containers=[container("gpu-nb", image=nb_image, gpus=1, requests={"cpu": "500m", "memory": "1Gi"})],
            owner=("StatefulSet", "gpu-nb"), labels={"app": "gpu-nb", "notebook-name": "gpu-nb"},
            created="2026-11-20T02:40:00Z")
    scheduler_said(c, p, msg, count=14)
    c.add(p)
    return c


def hyperpod_142() -> Case:
    """SageMaker HyperPod on EKS: the one ml.g5.xlarge worker allows 14 pods; an add-on's
    DaemonSet pod for it stays Pending."""
    msg = "0/3 nodes are available: 1 Too many pods, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    hp = "hyperpod-i-0a1b2c3d4e5f60718"
    c = Case("ai-on-sagemaker-hyperpod-142-g5-xlarge-max-pods-14",
             source="https://github.com/awslabs/ai-on-sagemaker-hyperpod/issues/142",
             fragment=msg,
             where="event FailedScheduling on the add-on's DaemonSet pod for the HyperPod node (and its "
                   "PodScheduled condition)",
             expect="insufficient-resource",
             resolution="The reporter's own finding: the HyperPod ml.g5.xlarge node has \"maxPods\":14, so the "
                        "add-on pods that must run on it cannot start ('Seems this is preventing more pods to run "
                        "on my node'); the suggested instance types (ml.g5.8xlarge and larger) allow more pods. "
                        "The node is out of pod slots; its GPU, CPU and memory are not what is short.",
             target={"pod": "aws-hyperpod/health-monitoring-agent-7xq2m"},
             must_not=["insufficient-gpu", "node-affinity-mismatch", "node-selector-mismatch",
                       "device-plugin-not-running"],
             k8s="not stated in the thread (EKS, September 2026)",
             notes="The thread gives the message, the ml.g5.xlarge HyperPod node and its maxPods of 14, and that the "
                   "stuck pods are owned by add-ons. Which add-on, the two other nodes (EKS managed nodes the "
                   "DaemonSet pod's matchFields affinity excludes) and the 14 pods already on the node are "
                   "assumed; the target is a DaemonSet pod, which is why the other two nodes fail NodeAffinity.")
    node = gpu_node(hp, gpus=1, product="NVIDIA-A10G", kubelet="v1.32.3-eks-473151a", cpu="4", memory="16Gi",
                    labels={"sagemaker.amazonaws.com/compute-type": "hyperpod",
                            "sagemaker.amazonaws.com/node-health-status": "Schedulable",
                            "node.kubernetes.io/instance-type": "ml.g5.xlarge"},
                    driver="570.133.20", cuda="12.8")
    node["status"]["capacity"]["pods"] = node["status"]["allocatable"]["pods"] = "14"
    node["status"]["allocatable"]["cpu"] = "3920m"
    node["status"]["allocatable"]["memory"] = "15155Mi"
    c.add(node)
    for i, n in enumerate(("ip-10-1-41-17.us-west-2.compute.internal", "ip-10-1-87-203.us-west-2.compute.internal")):
        c.add(cpu_node(n, cpu="8", memory="32Gi", kubelet="v1.32.3-eks-473151a",
                       labels={"node.kubernetes.io/instance-type": "m5.2xlarge",
                               "eks.amazonaws.com/nodegroup": "system"}))
    on_node = [
        ("aws-node-8kq4d", "kube-system", "aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2", {"cpu": "25m"}),
        ("kube-proxy-tz7x9", "kube-system", "kube-proxy", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.32.0", {"cpu": "100m"}),
        ("ebs-csi-node-m2v6p", "kube-system", "ebs-csi-node", "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.40.0", {"cpu": "10m", "memory": "40Mi"}),
        ("eks-pod-identity-agent-5hr8w", "kube-system", "eks-pod-identity-agent", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/eks-pod-identity-agent:0.1.21", {"cpu": "25m"}),
        ("hyperpod-dependencies-nvidia-device-plugin-q9f2l", "kube-system", "hyperpod-dependencies-nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1", {}),
        ("hyperpod-dependencies-aws-efa-k8s-device-plugin-w4c7n", "kube-system", "hyperpod-dependencies-aws-efa-k8s-device-plugin", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6", {"cpu": "10m", "memory": "20Mi"}),
        ("hyperpod-dependencies-neuron-device-plugin-5nz8k", "kube-system", "hyperpod-dependencies-neuron-device-plugin", "public.ecr.aws/neuron/neuron-device-plugin:2.22.4.0", {}),
        ("fsx-csi-node-v8b2q", "kube-system", "fsx-csi-node", "public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver:v1.3.0", {"cpu": "10m", "memory": "40Mi"}),
        ("mountpoint-s3-csi-node-x3r7t", "kube-system", "s3-csi-node", "public.ecr.aws/mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver:v1.14.1", {"cpu": "10m", "memory": "40Mi"}),
        ("cloudwatch-agent-6kd9s", "amazon-cloudwatch", "cloudwatch-agent", "public.ecr.aws/cloudwatch-agent/cloudwatch-agent:1.300052.0b1024", {"cpu": "250m", "memory": "128Mi"}),
        ("fluent-bit-2jw6z", "amazon-cloudwatch", "fluent-bit", "public.ecr.aws/aws-observability/aws-for-fluent-bit:2.32.5", {"cpu": "50m", "memory": "25Mi"}),
        ("dcgm-exporter-7pq3m", "amazon-cloudwatch", "dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04", {}),
        ("node-exporter-9tbx4", "monitoring", "node-exporter", "quay.io/prometheus/node-exporter:v1.8.2", {"cpu": "10m", "memory": "30Mi"}),
    ]
    for name, ns, ds, image, req in on_node:
        labels = {"app": ds}
        if ds == "hyperpod-dependencies-nvidia-device-plugin":
            labels = {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": "hyperpod-dependencies"}
        c.add(daemon_pod(name, ns, hp, ds, image, requests=req or None, labels=labels))
    c.add(bound("training-operators-6f7d8c9b5-lq2zr", "kubeflow", hp, requests={"cpu": "100m", "memory": "64Mi"},
                owner=("ReplicaSet", "training-operators-6f7d8c9b5"), labels={"control-plane": "kubeflow-training-operator"},
                image="kubeflow/training-operator:v1-855e096"))
    p = pod("health-monitoring-agent-7xq2m", "aws-hyperpod",
            containers=[container("health-monitoring-agent",
                                  image="905418368575.dkr.ecr.us-west-2.amazonaws.com/hyperpod-health-monitoring-agent:1.0.552.0_1.0.161.0",
                                  requests={"cpu": "500m", "memory": "512Mi"})],
            owner=("DaemonSet", "health-monitoring-agent"), labels={"app": "health-monitoring-agent"},
            tolerations=[{"operator": "Exists"}], affinity=pin_to(hp), created="2026-11-20T02:30:00Z")
    scheduler_said(c, p, msg, count=27)
    c.add(p)
    return c


# ------------------------------------------------------------------ GPU plus memory


def pai_5577() -> Case:
    """OpenPAI (hived scheduler): one master, one GPU worker; the job's memory request does
    not fit the worker."""
    msg = ("0/2 nodes are available: 1 Insufficient memory, 1 Pod is waiting for preemptible or free resource to "
           "appear: have to use at least one bad node 1/xx.xx.xx.xx when scheduling in VC default, 1 node(s) didn't "
           "match node selector.")
    worker = "xx.xx.xx.xx"
    c = Case("pai-5577-job-memory-exceeds-gpu-worker",
             source="https://github.com/microsoft/pai/issues/5577",
             fragment=msg,
             where="event FailedScheduling from hivedscheduler-ds-default on the job's task pod (and its PodScheduled "
                   "condition)",
             expect="insufficient-memory",
             resolution="The reporter ('my k8s cluster has only one gpu node, and doesn't run other task') asked about "
                        "the GPU; the OpenPAI maintainer answered: 'The log shows that the memory you requested "
                        "exceeds the quota, not the GPU.' The master fails the node selector, the one GPU worker "
                        "has the GPU but not the memory the task asks for.",
             target={"pod": "default/5a7d3c1b9e2f4a6c8d0e1f2a3b4c5d6e-taskrole-0"},
             must_not=["insufficient-gpu", "gpu-fragmentation", "node-not-ready", "unknown-resource-name"],
             k8s="not stated in the thread (OpenPAI v1.7.0, July 2021)",
             notes="The thread gives OpenPAI v1.7.0, the message (the worker's address is masked as xx.xx.xx.xx in the "
                   "thread, kept so here as the node's name), one master and one GPU worker, both Ready. A second "
                   "maintainer pointed at hived's 'bad node' wording and asked to restart hivedscheduler; the thread "
                   "does not say that helped. Requests, node sizes, the GPU model and the pod's name are assumed "
                   "(OpenPAI's task pods are named <job hash>-taskrole-<index>; they carry the "
                   "pai-worker nodeSelector the master lacks).")
    c.add(cpu_node("pai-master", cpu="8", memory="32Gi", kubelet="v1.15.11",
                   labels={"pai-master": "true", "node-role.kubernetes.io/master": ""}))
    w = gpu_node(worker, gpus=4, product="Tesla-V100-SXM2-16GB", gfd=False, kubelet="v1.15.11", cpu="24",
                 memory="64Gi", labels={"pai-worker": "true"}, driver="450.80.02", cuda="11.0")
    w["status"]["allocatable"]["memory"] = "63Gi"
    c.add(w)
    c.add(device_plugin_pod(worker, name="nvidia-device-plugin-daemonset-p7k2x",
                            image="nvidia/k8s-device-plugin:1.0.0-beta4"))
    c.add(bound("log-manager-ds-8xk2m", "default", worker, requests={"cpu": "500m", "memory": "2Gi"},
                owner=("DaemonSet", "log-manager-ds"), image="openpai/log-manager-nginx:v1.7.0"))
    c.add(bound("job-exporter-q4v9t", "default", worker, requests={"cpu": "200m", "memory": "1Gi"},
                owner=("DaemonSet", "job-exporter"), image="openpai/job-exporter:v1.7.0"))
    p = pod("5a7d3c1b9e2f4a6c8d0e1f2a3b4c5d6e-taskrole-0", "default",
            containers=[container("app", image="openpai/standard:python_3.6-pytorch_1.2.0-gpu", gpus=1,
                                  requests={"cpu": "4", "memory": "80Gi"}, limits={"memory": "80Gi"})],
            node_selector={"pai-worker": "true"}, labels={"type": "kube-launcher-task"},
            spec={"schedulerName": "hivedscheduler-ds-default"}, created="2026-11-20T02:20:00Z")
    scheduler_said(c, p, msg, count=19, source="hivedscheduler-ds-default")
    c.add(p)
    return c


# ------------------------------------------------------------------ required pod anti-affinity during a rollout


def console_operator_560() -> Case:
    """Console pods pinned to the three masters with a required hostname anti-affinity:
    during a rolling update the surge pod finds every master taken."""
    msg = ("0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 3 node(s) didn't match "
           "pod affinity/anti-affinity rules, 3 node(s) didn't match pod anti-affinity rules.")
    c = Case("console-operator-560-rollout-required-anti-affinity-three-masters",
             source="https://github.com/openshift/console-operator/pull/560",
             fragment=msg,
             where="PodScheduled condition of the new console pod (quoted from its status in the thread) and the "
                   "FailedScheduling event",
             expect="pod-topology-constraint",
             resolution="The PR made the console's pod anti-affinity required (topologyKey hostname). A reviewer "
                        "found it blocked the console rollout with this message and explained: 'the problem is with "
                        "rolling deployments since we'll have more than the normal number of replicas. If there are "
                        "ever more than 3, they'll fail to schedule.' The three masters each already run a console "
                        "pod, the workers fail the master nodeSelector: the required anti-affinity, not resources, "
                        "keeps the surge pod Pending.",
             target={"pod": "openshift-console/console-7d9f8b6c54-xk2lp"},
             must_not=["insufficient-cpu", "insufficient-memory", "untolerated-taint", "node-unschedulable",
                       "node-selector-mismatch"],
             k8s="v1.21 (OpenShift 4.8 CI, June 2021)",
             notes="Six nodes as the message states (three masters, three workers of the e2e-aws CI cluster); node "
                   "names, the replica counts of the old and new ReplicaSets and the requests are assumed. No GPU "
                   "here: the case is about reading a required anti-affinity during a rollout.")
    masters = [f"ip-10-0-{x}.ec2.internal" for x in ("139-47", "161-212", "215-8")]
    workers = [f"ip-10-0-{x}.ec2.internal" for x in ("141-90", "178-33", "240-126")]
    for n in masters:
        c.add(cpu_node(n, cpu="8", memory="32Gi", kubelet="v1.21.1+f36aa36",
                       labels={"node-role.kubernetes.io/master": ""},
                       taints=[taint("node-role.kubernetes.io/master")]))
    for n in workers:
        c.add(cpu_node(n, cpu="4", memory="16Gi", kubelet="v1.21.1+f36aa36",
                       labels={"node-role.kubernetes.io/worker": ""}))
    lab = {"app": "console", "component": "ui"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": lab}, "topologyKey": "kubernetes.io/hostname"}]}}
    tol = [{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}]
    image_old = "quay.io/openshift/origin-console:4.8.0-0.ci-2021-06-23"
    image_new = "quay.io/openshift/origin-console:4.8.0-0.ci-2021-06-24"
    running = [("console-5b8c7d9f6-4hq2v", masters[0], "5b8c7d9f6", image_old),
               ("console-5b8c7d9f6-9tz7m", masters[1], "5b8c7d9f6", image_old),
               ("console-7d9f8b6c54-b6w8r", masters[2], "7d9f8b6c54", image_new)]
    for name, n, h, image in running:
        p = bound(name, "openshift-console", n, requests={"cpu": "10m", "memory": "100Mi"},
                  owner=("ReplicaSet", f"console-{h}"), labels={**lab, "pod-template-hash": h}, image=image,
                  affinity=anti, tolerations=tol)
        p["spec"]["nodeSelector"] = {"node-role.kubernetes.io/master": ""}
        c.add(p)
    p = pod("console-7d9f8b6c54-xk2lp", "openshift-console",
            containers=[container("console", image=image_new, requests={"cpu": "10m", "memory": "100Mi"})],
            owner=("ReplicaSet", "console-7d9f8b6c54"), labels={**lab, "pod-template-hash": "7d9f8b6c54"},
            node_selector={"node-role.kubernetes.io/master": ""}, affinity=anti, tolerations=tol,
            created="2026-11-20T02:50:00Z")
    scheduler_said(c, p, msg, count=5)
    c.add(p)
    return c


# ------------------------------------------------------------------ GPU pod on a cluster without GPU nodes


def kubeflow_website_727() -> Case:
    """Kubeflow TF Serving with numGpus=1 on an EKS cluster created without a GPU node group."""
    msg = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    c = Case("kubeflow-website-727-eks-without-gpu-nodegroup",
             source="https://github.com/kubeflow/website/issues/727",
             fragment=msg,
             where="event FailedScheduling on the TF Serving pod (and its PodScheduled condition)",
             expect="insufficient-gpu", trap=True,
             resolution="The reporter first guessed that 'the nvidia.com/gpu plugin has not been deployed'; the "
                        "solution he posted (EDIT): 'When creating the cluster, nodeGroups of type p3.2xlarge must "
                        "be created. This will automatically create instances using the \"EKS Optimized with GPU\" "
                        "AMI'. The one node of the cluster is a CPU instance: there is no GPU to give, not a device "
                        "plugin that fails to advertise one.",
             target={"pod": "kubeflow/mnist-v1-6c9b8f7d54-2xk8q"},
             must_not=["unknown-resource-name", "nvml-init-failed"],
             k8s="not stated in the thread (EKS, May 2019)",
             notes="The thread gives the message, EKS and the fix (a p3.2xlarge node group with the EKS GPU AMI). The "
                   "existing node's instance type, the serving pod's name and image tag are assumed.")
    c.add(cpu_node("ip-192-168-33-12.ec2.internal", cpu="4", memory="16Gi", kubelet="v1.12.7",
                   labels={"beta.kubernetes.io/instance-type": "m5.xlarge",
                           "alpha.eksctl.io/nodegroup-name": "ng-1"}))
    p = pod("mnist-v1-6c9b8f7d54-2xk8q", "kubeflow",
            containers=[container("mnist", image="tensorflow/serving:1.11.1-gpu", gpus=1,
                                  requests={"cpu": "1", "memory": "1Gi"},
                                  command=["/usr/bin/tensorflow_model_server"])],
            owner=("ReplicaSet", "mnist-v1-6c9b8f7d54"), labels={"app": "mnist", "version": "v1"},
            created="2026-11-20T02:45:00Z")
    scheduler_said(c, p, msg, count=8)
    c.add(p)
    return c


def cozystack_64() -> Case:
    """A 128-CPU / 1.5 TiB node at its kubelet max-pods (220): platform pods stay Pending
    while the node looks empty in every other metric."""
    msg = ("0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims "
           "found for incoming pod.")
    node = "cozy-node-1"
    c = Case("ansible-cozystack-64-max-pods-220-on-large-node",
             source="https://github.com/cozystack/ansible-cozystack/issues/64",
             fragment="0/1 nodes are available: 1 Too many pods",
             where="event FailedScheduling on a Pending platform pod (and its PodScheduled condition)",
             expect="insufficient-resource",
             resolution="The reporter's own diagnosis: the inventories set --kubelet-arg=max-pods=220, and 'on a "
                        "128 CPU / 1.5 TiB node this turned into the binding constraint: the node sat at 220 pods "
                        "with 6% of memory used, and platform pods stayed Pending. The only clue is in the scheduler "
                        "events, `0/1 nodes are available: 1 Too many pods`'. Raising max-pods (after checking pod "
                        "IP capacity) is the fix; CPU and memory are not short.",
             target={"pod": "cozy-monitoring/vmagent-monitoring-7c9b6d5f8-t2xkq"},
             must_not=["insufficient-cpu", "insufficient-memory", "node-not-ready"],
             k8s="not stated in the thread (Cozystack on k3s, July 2026)",
             notes="The thread gives the node size, max-pods=220, 220 pods on the node, 6% memory used and the "
                   "message (its preemption clause is the scheduler's usual one for a single node, added here). "
                   "The pods' names, namespaces and requests and the Pending pod are assumed. No GPU: the case is "
                   "about pod slots being the short resource on a big node.")
    n = cpu_node(node, cpu="128", memory="1536Gi", kubelet="v1.33.3+k3s1",
                 labels={"node-role.kubernetes.io/control-plane": "true"})
    n["status"]["capacity"]["pods"] = n["status"]["allocatable"]["pods"] = "220"
    c.add(n)
    namespaces = ["cozy-system", "cozy-cilium", "cozy-kubeovn", "cozy-linstor", "cozy-monitoring", "cozy-fluxcd",
                  "cozy-cert-manager", "cozy-victoria-metrics-operator", "cozy-kubevirt", "cozy-dashboard",
                  "tenant-root", "tenant-dev"]
    for i in range(220):
        ns = namespaces[i % len(namespaces)]
        c.add(bound(f"workload-{i:03d}-5f6d7c8b9-{i:05d}"[:40], ns, node, requests={"cpu": "100m", "memory": "256Mi"},
                    image="ghcr.io/cozystack/cozystack/platform:v0.36.0", created="2026-07-30T10:00:00Z"))
    p = pod("vmagent-monitoring-7c9b6d5f8-t2xkq", "cozy-monitoring",
            containers=[container("vmagent", image="victoriametrics/vmagent:v1.121.0",
                                  requests={"cpu": "200m", "memory": "512Mi"})],
            owner=("ReplicaSet", "vmagent-monitoring-7c9b6d5f8"), labels={"app.kubernetes.io/name": "vmagent"},
            created="2026-07-31T08:00:00Z")
    scheduler_said(c, p, msg, count=41)
    c.add(p)
    return c


# ------------------------------------------------------------------ nodeSelector naming the wrong label


def gpu_operator_371() -> Case:
    """OpenShift: the gpu-operator pod carries the namespace's default node selector
    enterprise.discover.com/shared=true; every GPU node is labelled .../dedicated=true."""
    msg = ("0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 3 node(s) had taint "
           "{node-role.kubernetes.io/master: }, that the pod didn't tolerate.")
    c = Case("gpu-operator-371-openshift-selector-shared-vs-dedicated",
             source="https://github.com/NVIDIA/gpu-operator/issues/371",
             fragment="node(s) didn't match Pod's node affinity/selector",
             where="event FailedScheduling on the gpu-operator pod (and its PodScheduled condition)",
             expect="node-selector-mismatch",
             resolution="The reporter's own analysis in the thread: the gpu-operator pod fails to start because "
                        "'node(s) didn't match Pod's node affinity/selector'; 'There are multiple GPU nodes but they "
                        "all have the \"enterprise.discover.com/dedicated: true\" label rather than the "
                        "\"enterprise.discover.com/shared: true\" label which is what the gpu-operator pod requires.' "
                        "The selector names a label the GPU nodes do not carry (a sibling key); the fix is the "
                        "selector (Red Hat support sent him to set the operator's nodeSelector to the dedicated "
                        "label).",
             target={"pod": "nvidia-gpu-operator/gpu-operator-7c8d9f6b5d-2xqzm"},
             must_not=["insufficient-cpu", "insufficient-memory", "insufficient-gpu", "device-plugin-not-running"],
             k8s="v1.21 (OpenShift 4.8.39)",
             notes="The thread gives OpenShift 4.8.39, the message clause, the two labels and that all GPU nodes carry "
                   "the dedicated one. The node counts, names, GPU model and how the selector reached the pod (here "
                   "the pod spec's nodeSelector, as OpenShift's project default node selector writes it) are "
                   "assumed; no node carries the shared label, or the operator pod (which needs no GPU) would run "
                   "there.")
    for i in range(3):
        c.add(cpu_node(f"ocp-master-{i}", cpu="8", memory="32Gi", kubelet="v1.21.11+6b3cbdd",
                       labels={"node-role.kubernetes.io/master": ""},
                       taints=[taint("node-role.kubernetes.io/master")]))
    for i in range(3):
        n = f"ocp-gpu-worker-{i}"
        c.add(gpu_node(n, gpus=0, product="Tesla-V100-SXM2-16GB", kubelet="v1.21.11+6b3cbdd", cpu="32",
                       memory="256Gi", labels={"enterprise.discover.com/dedicated": "true",
                                               "node-role.kubernetes.io/worker": "",
                                               "feature.node.kubernetes.io/pci-10de.present": "true"}))
    p = pod("gpu-operator-7c8d9f6b5d-2xqzm", "nvidia-gpu-operator",
            containers=[container("gpu-operator", image="nvcr.io/nvidia/gpu-operator:v1.11.0",
                                  requests={"cpu": "200m", "memory": "200Mi"})],
            owner=("ReplicaSet", "gpu-operator-7c8d9f6b5d"), labels={"app": "gpu-operator"},
            node_selector={"enterprise.discover.com/shared": "true"}, created="2026-11-20T02:35:00Z")
    scheduler_said(c, p, msg, count=22)
    c.add(p)
    return c


def kubernetes_116891() -> Case:
    """Three nodes, three replicas with a required hostname anti-affinity: the surge pod of a
    rolling update is refused by every node the old pods hold."""
    msg = ("0/3 nodes are available: 3 node(s) didn't match pod affinity/anti-affinity, 3 node(s) didn't satisfy "
           "existing pods anti-affinity rules.")
    c = Case("kubernetes-116891-rollout-surge-vs-required-anti-affinity",
             source="https://github.com/kubernetes/kubernetes/issues/116891",
             fragment=msg,
             where="event FailedScheduling on the new ReplicaSet's pod (and its PodScheduled condition)",
             expect="pod-topology-constraint",
             resolution="With 3 replicas, 3 nodes and a required podAntiAffinity on app=nginx (topologyKey "
                        "hostname), changing the image creates a surge pod that every node refuses while the old "
                        "pods still run; maxUnavailable (25%) rounds to 0, so the old pods are never removed. The "
                        "fix linked to the issue (kubernetes PR #135993, 'Fixes #116891') explains exactly this "
                        "deadlock and forces maxUnavailable to at least 1 while surging; the workaround is "
                        "maxSurge: 0 / maxUnavailable: 1.",
             target={"pod": "default/nginx-deployment-5d9c7b6f8c-qxk4t"},
             must_not=["insufficient-cpu", "insufficient-memory", "node-unschedulable", "untolerated-taint"],
             k8s="not stated in the thread (March 2023)",
             notes="The thread gives the Deployment (3 replicas, the anti-affinity, nginx:1.7.9 -> 1.8.1), three "
                   "nodes and the message. Node names, sizes and pod names are assumed. No GPU here: it is the "
                   "rollout pattern that keeps GPU inference Deployments with one replica per node Pending.")
    nodes = [f"node-{i}" for i in (1, 2, 3)]
    for n in nodes:
        c.add(cpu_node(n, cpu="8", memory="32Gi", kubelet="v1.26.3"))
    lab = {"app": "nginx"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["nginx"]}]},
        "topologyKey": "kubernetes.io/hostname"}]}}
    for n, suffix in zip(nodes, ("7m2kq", "b9x4z", "h6w8r")):
        c.add(bound(f"nginx-deployment-66b6c48dd5-{suffix}", "default", n, owner=("ReplicaSet", "nginx-deployment-66b6c48dd5"),
                    labels={**lab, "pod-template-hash": "66b6c48dd5"}, image="nginx:1.7.9", affinity=anti))
    p = pod("nginx-deployment-5d9c7b6f8c-qxk4t", "default",
            containers=[container("nginx", image="nginx:1.8.1")],
            owner=("ReplicaSet", "nginx-deployment-5d9c7b6f8c"), labels={**lab, "pod-template-hash": "5d9c7b6f8c"},
            affinity=anti, created="2026-11-20T02:35:00Z")
    scheduler_said(c, p, msg, count=9)
    c.add(p)
    return c


CASES = [kubeflow_6515, hyperpod_142, pai_5577, console_operator_560, kubeflow_website_727, cozystack_64,
         gpu_operator_371, kubernetes_116891]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
