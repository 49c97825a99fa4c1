"""Real-world cases for distributed training workloads (Kubeflow PyTorchJob/MPIJob,
Volcano jobs, KubeRay clusters, Kubeflow notebooks and pipelines): gang scheduling that
never completes, workloads whose pods are never created, and training failures whose
cause is the pod's setup (shared memory) rather than NCCL, CUDA or the GPU. Run
``python tests/realworld/build_training.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (Case, cond, container, cpu_node, event, gpu_node, obj, pod, quota, taint, terminated, unschedulable, waiting)  # noqa: E402
# ------------------------------------------------------------------ helpers (local to this area)

VOLCANO_SCHED = "scheduling.volcano.sh/v1beta1"
VOLCANO_BATCH = "batch.volcano.sh/v1alpha1"
KUBEDL = "training.kubedl.io/v1alpha1"
RAY = "ray.io/v1alpha1"


def owned_by(p: dict, api: str, kind: str, name: str) -> dict:
    """Point a pod's controller owner reference at a custom resource (PyTorchJob, MPIJob, RayCluster)."""
    ns = p["metadata"]["namespace"]
    p["metadata"]["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": name,
                                         "uid": f"uid-{ns}-{name}", "controller": True, "blockOwnerDeletion": True}]
    return p


def crashed(name: str, restarts: int, image: str, exit_code: int = 1) -> dict:
    return waiting(name, "CrashLoopBackOff", f"back-off 5m0s restarting failed container={name}", restarts=restarts,
                   last_exit={"exitCode": exit_code, "reason": "Error"}, image=image)


# ------------------------------------------------------------------ shared memory (/dev/shm) traps


def nccl_shm_segment_kubeflow() -> Case:
    """NVIDIA/nccl#525: a Kubeflow training pod on a 4x T4 node fails with NCCL shared
    memory warnings; /dev/shm in the container is the container runtime's 64 MB default."""
    img = "gcr.io/deeplearning-platform-release/tf2-gpu.2-4:m69"
    frag = "NCCL WARN Error while creating shared memory segment nccl-shm-recv-1462445a6f01cbfc-1-2-3 (size 9637888)"
    c = Case("nccl-525-kubeflow-dev-shm-too-small-for-nccl",
             source="https://github.com/NVIDIA/nccl/issues/525",
             fragment=frag,
             where="log of the training container (NCCL_DEBUG=INFO), which then exits; the pod restarts",
             expect="crash-loop", trap=True,
             also_ok={"inconclusive": "nothing in the Kubernetes objects records /dev/shm's size; the data cannot "
                                      "prove the shared-memory cause, only that the app keeps exiting"},
             resolution="The NCCL maintainer answered that /dev/shm is full: in a container it is the runtime's 64 MB "
                        "default, too small for NCCL's shared-memory transport between the 4 local GPUs (the same job ran "
                        "on an 8-GPU a2-highgpu-8g). The fix is a memory-backed emptyDir mounted at /dev/shm in the pod "
                        "(or NCCL_SHM_DISABLE=1); the GPUs, the driver and NCCL itself are fine.",
             target={"pod": "kubeflow-user/tf-multigpu-train-0"},
             must_not=["gpu-unhealthy", "xid-error", "nvidia-runtime-error", "gpu-memory-exhausted",
                       "container-oom-killed", "driver-cuda-mismatch", "ecc-uncorrectable"],
             k8s="v1.19 (GKE, Kubeflow 1.3)")
    c.add(gpu_node("gke-kf-gpu-pool-t4x4-7c1d", gpus=4, product="Tesla-T4", kubelet="v1.19.9-gke.1900",
                   driver="450.119.04", cuda="11.0", cpu="48", memory="312Gi"))
    c.add(cpu_node("gke-kf-default-pool-2a9e", kubelet="v1.19.9-gke.1900"))
    log = ("[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n"
           "[3] NCCL INFO include/shm.h:41 -> 2\n"
           f"[3] include/shm.h:48 {frag}\n")
    p = pod("tf-multigpu-train-0", "kubeflow-user", node="gke-kf-gpu-pool-t4x4-7c1d", phase="Running",
            containers=[container("tensorflow", image=img, gpus=4, requests={"cpu": "8", "memory": "32Gi"})],
            statuses=[crashed("tensorflow", 6, img)],
            conditions=[cond("Ready", "False", "ContainersNotReady", "containers with unready status: [tensorflow]"),
                        {"type": "PodScheduled", "status": "True"}])
    c.add(p, event("Pod", "tf-multigpu-train-0", "kubeflow-user", "BackOff",
                   "Back-off restarting failed container tensorflow in pod tf-multigpu-train-0_kubeflow-user("
                   "uid-kubeflow-user-tf-multigpu-train-0)", count=23, source="kubelet"))
    c.log("kubeflow-user", "tf-multigpu-train-0", "tensorflow", log, previous=True)
    c.log("kubeflow-user", "tf-multigpu-train-0", "tensorflow", log)
    return c


def kfp_train_step_bus_error() -> Case:
    """kubeflow/pipelines#6510: a pipeline's train step on a GPU node pool dies with the
    DataLoader's 'Unexpected bus error' (insufficient shm); remounting the node's /dev/shm
    did not help, an in-memory emptyDir at the pod's /dev/shm did."""
    img = "eu.gcr.io/ml-project/yolov5-train:0.3"
    frag = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."
    c = Case("kubeflow-pipelines-6510-train-step-bus-error-shm",
             source="https://github.com/kubeflow/pipelines/issues/6510",
             fragment=frag,
             where="log of the pipeline step's main container (Argo workflow pod); the step fails with exit code 1",
             expect="crash-loop",
             also_ok={"inconclusive": "the pod's /dev/shm size is not in any Kubernetes object, so the data can only "
                                      "show an application failure, not prove its cause"},
             resolution="The reporter first enlarged /dev/shm on the GPU nodes themselves ('sudo mount -o remount,"
                        "size=8G /dev/shm') without effect: the container has its own 64 MB /dev/shm. Mounting a "
                        "PipelineVolume with emptyDir medium Memory at /dev/shm of the train task fixed it; a "
                        "maintainer agreed it is a Kubernetes pod setting, not a Kubeflow or GPU problem.",
             target={"pod": "kubeflow/yolov5-pipeline-8kq2n-2104875531"},
             must_not=["gpu-unhealthy", "xid-error", "gpu-memory-exhausted", "container-oom-killed",
                       "nvidia-runtime-error"],
             k8s="v1.20 (GKE, Kubeflow Pipelines 1.7)")
    c.add(gpu_node("gke-kf-gpu-pool-3f0a9c2e-x1q7", gpus=1, product="Tesla-T4", kubelet="v1.20.9-gke.1001",
                   driver="450.119.04", cuda="11.0", cpu="8", memory="30Gi"))
    c.add(cpu_node("gke-kf-default-pool-5c1b", kubelet="v1.20.9-gke.1001"))
    name = "yolov5-pipeline-8kq2n-2104875531"
    p = pod(name, "kubeflow", node="gke-kf-gpu-pool-3f0a9c2e-x1q7", phase="Failed",
            containers=[container("wait", image="gcr.io/ml-pipeline/argoexec:v3.1.6-patch-license-compliance"),
                        container("main", image=img, gpus=1, requests={"cpu": "4", "memory": "16Gi"},
                                  command=["python", "train.py", "--batch-size", "64", "--workers", "8"])],
            labels={"workflows.argoproj.io/workflow": "yolov5-pipeline-8kq2n", "pipelines.kubeflow.org/cache_enabled": "true"},
            statuses=[terminated("wait", "Completed", 0, image="gcr.io/ml-pipeline/argoexec:v3.1.6-patch-license-compliance"),
                      terminated("main", "Error", 1, image=img)],
            spec={"restartPolicy": "Never"})
    c.add(p)
    c.log("kubeflow", name, "main",
          "Epoch 0/299  gpu_mem 5.12G\n" + (frag + "\n") * 2 +
          "RuntimeError: DataLoader worker (pid 214) is killed by signal: Bus error. It is possible that dataloader's "
          "workers are out of shared memory. Please try to raise your shared memory limit.\n")
    return c


def pangeo_hub_notebook_shm() -> Case:
    """pangeo-data/pangeo-docker-images#258: PyTorch training with DataLoader workers in a
    JupyterHub (Planetary Computer) GPU notebook fails to write to /dev/shm."""
    img = "pcccr.azurecr.io/public/planetary-computer/gpu-pytorch:2021.10.19.0"
    frag = "RuntimeError: unable to write to file </torch_1394_2747491098>"
    c = Case("pangeo-docker-images-258-hub-notebook-dev-shm",
             source="https://github.com/pangeo-data/pangeo-docker-images/issues/258",
             fragment=frag,
             where="output of the notebook kernel, in the log of the singleuser notebook container; the pod keeps running",
             expect="inconclusive",
             resolution="The 'Unexpected bus error ... insufficient shared memory (shm)' comes from the notebook pod's "
                        "small /dev/shm, not from the image or the GPU. The hub fixed it (microsoft/planetary-computer-hub"
                        "#35, 'Workaround for small /dev/shm') by adding a memory volume mounted at /dev/shm to the "
                        "singleuser pods. Nothing in the cluster's objects is wrong: the pod runs, the GPU is fine.",
             target={"pod": "prod/jupyter-calebrob6"},
             must_not=["container-oom-killed", "gpu-memory-exhausted", "gpu-unhealthy", "xid-error", "crash-loop"],
             k8s="v1.20 (AKS, Zero to JupyterHub)")
    c.add(gpu_node("aks-gpuuser-18204951-vmss000002", gpus=1, product="Tesla-T4", kubelet="v1.20.9",
                   driver="470.57.02", cuda="11.4", cpu="4", memory="28Gi",
                   labels={"hub.jupyter.org/node-purpose": "user", "kubernetes.azure.com/accelerator": "nvidia"},
                   taints=[taint("nvidia.com/gpu", "present")]))
    c.add(cpu_node("aks-core-18204951-vmss000000", kubelet="v1.20.9"))
    p = pod("jupyter-calebrob6", "prod", node="aks-gpuuser-18204951-vmss000002", phase="Running",
            containers=[container("notebook", image=img, gpus=1, requests={"cpu": "3", "memory": "24Gi"})],
            labels={"component": "singleuser-server", "hub.jupyter.org/username": "calebrob6"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}])
    c.add(p)
    c.log("prod", "jupyter-calebrob6", "notebook",
          "[I 2021-10-19 14:02:11.201 SingleUserLabApp kernelmanager:179] Kernel started: 5b0e\n"
          "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
          "Traceback (most recent call last):\n"
          '  File "/srv/conda/envs/notebook/lib/python3.8/site-packages/torch/multiprocessing/reductions.py", line 321, '
          "in reduce_storage\n"
          "    fd, size = storage._share_fd_()\n"
          f"{frag}\n")
    return c


# ------------------------------------------------------------------ gang scheduling that never completes


def kubedl_mpijob_dag_gang() -> Case:
    """kubedl-io/kubedl#180: an MPIJob's workers stay Pending under Volcano gang scheduling;
    the launcher is never created because KubeDL's DAG scheduling waits for the workers
    to run first, so the 3-member gang can never be complete."""
    frag = "3/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 3 minAvailable."
    c = Case("kubedl-180-mpijob-dag-blocks-volcano-gang",
             source="https://github.com/kubedl-io/kubedl/issues/180",
             fragment=frag,
             where="FailedScheduling event (from volcano) on each MPIJob worker pod; no launcher pod exists",
             expect="queue-not-admitted", trap=True,
             resolution="Not a shortage of resources: KubeDL's DAGScheduling creates the launcher only after the "
                        "workers run, while Volcano's gang (minAvailable 3 = 2 workers + launcher) schedules nothing "
                        "until all 3 pods exist. The maintainer confirmed the conflict; disabling it with "
                        "--feature-gates=DAGScheduling=false on the kubedl controller fixed it. The job is held by the "
                        "gang, which can never fill.",
             target={"pod": "default/mpi-demo-worker-0"},
             notes="KubeDL's MPIJob is training.kubedl.io/v1alpha1, which gpuctl's live client does not look up "
                   "(it knows kubeflow.org MPIJob only), so the case targets a worker pod.",
             must_not=["insufficient-gpu", "insufficient-cpu", "insufficient-memory", "gpu-fragmentation"],
             k8s="v1.20 (KubeDL v0.4, Volcano v1.3)")
    for i in (1, 2):
        c.add(gpu_node(f"gpu-node-{i}", gpus=4, product="Tesla-V100-SXM2-16GB", kubelet="v1.20.11",
                       driver="460.73.01", cuda="11.2", cpu="32", memory="256Gi"))
    tmpl = {"spec": {"schedulerName": "volcano", "containers": [
        container("mpi", image="kubedl/horovod-mnist:v0.20.0", gpus=1, requests={"cpu": "2", "memory": "4Gi"})]}}
    c.add(obj(KUBEDL, "MPIJob", "mpi-demo", "default",
              spec={"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": tmpl},
                                        "Worker": {"replicas": 2, "template": tmpl}}},
              status={"conditions": [cond("Created", "True", "JobCreated", "MPIJob mpi-demo is created.")]}))
    c.add(obj(VOLCANO_SCHED, "PodGroup", "mpi-demo", "default", owner=(KUBEDL, "MPIJob", "mpi-demo"),
              spec={"minMember": 3, "queue": "default"},
              status={"phase": "Pending", "conditions": [cond("Unschedulable", "True", "NotEnoughResources", frag)]}))
    c.add(obj(VOLCANO_SCHED, "Queue", "default", spec={"weight": 1, "reclaimable": True},
              status={"state": "Open", "pending": 1}))
    for i in (0, 1):
        name = f"mpi-demo-worker-{i}"
        p = pod(name, "default",
                containers=[container("mpi", image="kubedl/horovod-mnist:v0.20.0", gpus=1,
                                      requests={"cpu": "2", "memory": "4Gi"})],
                labels={"job-name": "mpi-demo", "replica-type": "worker", "replica-index": str(i),
                        "group-name": "training.kubedl.io"},
                annotations={"scheduling.k8s.io/group-name": "mpi-demo"},
                spec={"schedulerName": "volcano"}, conditions=[unschedulable(frag)])
        owned_by(p, KUBEDL, "MPIJob", "mpi-demo")
        c.add(p, event("Pod", name, "default", "FailedScheduling", frag, count=14, source="volcano"))
    return c


def raycluster_ready_while_pods_pending() -> Case:
    """ray-project/kuberay#2188: the RayCluster reports state 'ready' while its head pod is
    Pending; the scheduler's message says why."""
    frag = ("0/5 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
            "{node-role.kubernetes.io/master: }, 3 node(s) didn't match Pod's node affinity/selector. preemption: "
            "0/5 nodes are available: 1 No preemption victims found for incoming pod, 4 Preemption is not helpful "
            "for scheduling..")
    c = Case("kuberay-2188-raycluster-ready-head-pod-insufficient-cpu",
             source="https://github.com/ray-project/kuberay/issues/2188",
             fragment=frag,
             where="PodScheduled condition (Unschedulable) of the RayCluster's head pod; the RayCluster status says ready",
             expect="insufficient-cpu", trap=True,
             resolution="The maintainers took the RayCluster's status.state 'ready' as a KubeRay status bug (labelled "
                        "for 1.2.0, CRD observability): the pods were really Pending. Of the 5 nodes, 3 are outside the pods' node selector, "
                        "the control-plane node is tainted, and the one eligible GPU node lacks free CPU: the cluster's "
                        "CPU on that node, not the Ray operator or the GPUs, keeps the head pod out.",
             target={"pod": "ray/raycluster-gpu-head-8x2lq"},
             must_not=["insufficient-gpu", "untolerated-taint", "device-plugin-not-running"],
             k8s="not stated (2024, KubeRay 1.1)")
    sel = {"ray-pool": "gpu"}
    c.add(gpu_node("worker-gpu-0", gpus=4, product="NVIDIA-A10G", kubelet="v1.27.10+28ed2d7", cpu="16",
                   memory="64Gi", labels=sel))
    c.add(cpu_node("master-0", kubelet="v1.27.10+28ed2d7", labels={"node-role.kubernetes.io/master": ""},
                   taints=[taint("node-role.kubernetes.io/master", None)]))
    for i in range(3):
        c.add(cpu_node(f"worker-cpu-{i}", kubelet="v1.27.10+28ed2d7"))
    busy = pod("notebook-7f9c-0", "ray", phase="Running", node="worker-gpu-0",
               containers=[container("notebook", image="quay.io/modh/cuda-notebooks:py39", requests={"cpu": "12", "memory": "24Gi"})])
    c.add(busy)
    c.add(obj(RAY, "RayCluster", "raycluster-gpu", "ray",
              spec={"headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"}},
                    "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 2, "maxReplicas": 2}]},
              status={"state": "ready", "desiredCPU": "22", "desiredGPU": "4", "desiredMemory": "24G",
                      "desiredWorkerReplicas": 2}))
    head = pod("raycluster-gpu-head-8x2lq", "ray", node_selector=sel,
               containers=[container("ray-head", image="rayproject/ray:2.23.0-gpu",
                                     requests={"cpu": "6", "memory": "8G"}, limits={"cpu": "6", "memory": "8G"})],
               labels={"ray.io/cluster": "raycluster-gpu", "ray.io/node-type": "head"},
               conditions=[unschedulable(frag, at="2024-06-12T13:55:11Z")])
    owned_by(head, "ray.io/v1", "RayCluster", "raycluster-gpu")
    c.add(head, event("Pod", head["metadata"]["name"], "ray", "FailedScheduling", frag, count=9))
    for i, suffix in enumerate(("k2v9d", "p7qzm")):
        w = pod(f"raycluster-gpu-worker-gpu-{suffix}", "ray", node_selector=sel,
                containers=[container("ray-worker", image="rayproject/ray:2.23.0-gpu", gpus=2,
                                      requests={"cpu": "8", "memory": "8G"})],
                labels={"ray.io/cluster": "raycluster-gpu", "ray.io/node-type": "worker", "ray.io/group": "gpu"},
                conditions=[unschedulable(frag)])
        owned_by(w, "ray.io/v1", "RayCluster", "raycluster-gpu")
        c.add(w)
    return c


# ------------------------------------------------------------------ pods refused or never made


def kuberay_init_container_gpu_admission() -> Case:
    """ray-project/kuberay#1414: RayCluster worker pods fail UnexpectedAdmissionError
    because the operator-injected init container wait-gcs-ready copies the Ray
    container's resources, GPU included; the node's GPU scheduler (CCE) allocated the
    GPU to the ray-worker container only."""
    frag = ("Pod Allocate failed due to pod d65f09ad-cca3-4631-a0a3-d5ba850f8a69 container wait-gcs-ready unable to "
            "find GPU device allocation by scheduler, which is unexpected")
    img = "rayproject/ray:2.6.3-gpu"
    c = Case("kuberay-1414-wait-gcs-ready-init-container-requests-gpu",
             source="https://github.com/ray-project/kuberay/issues/1414",
             fragment="container wait-gcs-ready unable to find GPU device allocation by scheduler, which is unexpected",
             where="status.message of the worker pod (phase Failed, reason UnexpectedAdmissionError)",
             expect="unexpected-admission-error", trap=True,
             resolution="The message reads as a scheduler or device-plugin fault, but the reporter found that removing "
                        "the GPU request from KubeRay's injected wait-gcs-ready init container made the worker group "
                        "start; the maintainer changed KubeRay (PR #1470) to give that init container fixed CPU/memory "
                        "instead of a copy of the Ray container's resources. The node's GPU allocation had named only "
                        "the ray-worker container, so the kubelet refused the init container's GPU at admission.",
             target={"pod": "ray/raycluster-autoscaler-worker-gpu-group-b96cw"},
             must_not=["insufficient-gpu", "gpu-unhealthy", "device-plugin-not-running", "unknown-resource-name"],
             k8s="v1.25 (Huawei Cloud CCE, KubeRay 0.6)")
    c.add(gpu_node("192.168.0.87", gpus=1, product="Tesla-T4", kubelet="v1.25.5-r0-25.2.9", gfd=False,
                   cpu="16", memory="64Gi", labels={"accelerator": "nvidia-t4"}))
    c.add(cpu_node("192.168.0.12", kubelet="v1.25.5-r0-25.2.9"))
    head = pod("raycluster-autoscaler-head-7xq4n", "ray", phase="Running", node="192.168.0.12",
               containers=[container("ray-head", image=img, requests={"cpu": "2", "memory": "4Gi"})],
               labels={"ray.io/cluster": "raycluster-autoscaler", "ray.io/node-type": "head"})
    owned_by(head, RAY, "RayCluster", "raycluster-autoscaler")
    init = container("wait-gcs-ready", image=img, gpus=1, requests={"cpu": "1", "memory": "1Gi"},
                     command=["/bin/bash", "-lc", "--"])
    name = "raycluster-autoscaler-worker-gpu-group-b96cw"
    w = pod(name, "ray", phase="Failed", node="192.168.0.87",
            containers=[container("ray-worker", image=img, gpus=1, requests={"cpu": "1", "memory": "1Gi"})],
            init_containers=[init],
            labels={"ray.io/cluster": "raycluster-autoscaler", "ray.io/group": "gpu-group",
                    "ray.io/node-type": "worker", "app.kubernetes.io/created-by": "kuberay-operator"},
            annotations={"cce.io/gpu-decision": '{"ray-worker":{"nvidia3":1000}}'},
            reason="UnexpectedAdmissionError", message=frag, statuses=[])
    owned_by(w, RAY, "RayCluster", "raycluster-autoscaler")
    c.add(head, w, event("Pod", name, "ray", "UnexpectedAdmissionError", frag, source="kubelet"))
    return c


def volcano_vcjob_k8s_quota_rejects_pods() -> Case:
    """volcano-sh/volcano#3456: a Volcano job on Ascend 910 NPUs is Terminated at once; the
    controller's pod creation is forbidden by a Kubernetes ResourceQuota."""
    jobn = "job-lhjob4-20240508150346338940"
    frag = (f'pods \\"{jobn}-task-0\\" is forbidden: exceeded quota: naie-resource-job-quota, requested: '
            "requests.huawei.com/Ascend910=1, used: requests.huawei.com/Ascend910=1, limited: "
            "requests.huawei.com/Ascend910=1")
    line = (f"E0508 15:03:47.112093       1 job_controller_actions.go:330] Failed to create pod {jobn}-task-0 for Job "
            f'{jobn}, err &errors.StatusError{{ErrStatus:v1.Status{{TypeMeta:v1.TypeMeta{{Kind:"", APIVersion:""}}, '
            'ListMeta:v1.ListMeta{SelfLink:"", ResourceVersion:"", Continue:"", RemainingItemCount:(*int64)(nil)}, '
            f'Status:"Failure", Message:"{frag}", Reason:"Forbidden", Details:(*v1.StatusDetails)(0x400057cde0), '
            "Code:403}}\n")
    ns = "naie"
    c = Case("volcano-3456-vcjob-pods-forbidden-by-resourcequota",
             source="https://github.com/volcano-sh/volcano/issues/3456",
             fragment=frag,
             where="log of the volcano-controllers container (job controller) when it creates the job's pod; the "
                   "job is Terminated with no pods",
             expect="quota-exceeded",
             resolution="A Kubernetes ResourceQuota in the namespace allows one huawei.com/Ascend910 and another pod "
                        "already holds it, so the apiserver rejects the job's pod; Volcano does not requeue on that "
                        "and the job ends. The maintainers answered that a Kubernetes ResourceQuota rejects pod "
                        "creation outright (use Volcano queue capacity instead); the NPUs and their plugin are fine.",
             target={"namespace": ns, "target": "vcjob/" + jobn},
             must_not=["insufficient-resource", "unknown-resource-name", "device-plugin-not-running"],
             k8s="v1.23 (Volcano v1.9, Ascend 910)")
    npu = {"huawei.com/Ascend910": "8"}
    c.add(gpu_node("npu-node-01", gpus=0, gfd=False, kubelet="v1.23.17", cpu="192", memory="1500Gi",
                   extra_capacity=npu, labels={"accelerator": "huawei-Ascend910"}))
    c.add(cpu_node("master-01", kubelet="v1.23.17"))
    c.add(quota("naie-resource-job-quota", ns, hard={"requests.huawei.com/Ascend910": "1"},
                used={"requests.huawei.com/Ascend910": "1"}))
    other = pod("job-lhjob3-20240508141502113374-task-0", ns, phase="Running", node="npu-node-01",
                containers=[container("main", image="swr.cn-north-4.myhuaweicloud.com/naie/mindspore:2.2",
                                      requests={"cpu": "8", "memory": "32Gi", "huawei.com/Ascend910": "1"},
                                      limits={"huawei.com/Ascend910": "1"})],
                labels={"volcano.sh/job-name": "job-lhjob3-20240508141502113374"})
    c.add(other)
    tmpl = {"spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [
        container("main", image="swr.cn-north-4.myhuaweicloud.com/naie/mindspore:2.2",
                  requests={"cpu": "8", "memory": "32Gi", "huawei.com/Ascend910": "1"},
                  limits={"huawei.com/Ascend910": "1"})]}}
    c.add(obj(VOLCANO_BATCH, "Job", jobn, ns,
              spec={"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                    "tasks": [{"name": "task", "replicas": 1, "template": tmpl}]},
              status={"state": {"phase": "Terminated"}, "minAvailable": 1}))
    ctl = pod("volcano-controllers-7d5c9b8f6-kq2xv", "volcano-system", phase="Running", node="master-01",
              containers=[container("volcano-controllers", image="volcanosh/vc-controller-manager:v1.9.0")],
              labels={"app": "volcano-controller"})
    c.add(ctl).log("volcano-system", ctl["metadata"]["name"], "volcano-controllers", line)
    return c


def pytorch_workers_crash_until_master_up() -> Case:
    """kubeflow/pytorch-operator#125: PyTorchJob workers crash-loop with 'host not found'
    while the master pod is not up yet; they run fine once it is."""
    img = "gcr.io/my-project/optimizer:0.9.1"
    frag = "ValueError: host not found: Name or service not known"
    c = Case("pytorch-operator-125-workers-crash-until-master-up",
             source="https://github.com/kubeflow/pytorch-operator/issues/125",
             fragment=frag,
             where="log of the worker's pytorch container (previous run); the worker restarts (CrashLoopBackOff) "
                   "while the master pod is still Pending",
             expect="crash-loop", trap=True,
             also_ok={"inconclusive": "the restarts stop by themselves once the master runs; nothing on the nodes or "
                                      "GPUs is at fault"},
             resolution="Not a DNS or cluster networking fault: the worker's init_process_group resolves MASTER_ADDR, "
                        "the master's headless service, which has no endpoint until the master pod runs; the workers "
                        "crash until then and run fine afterwards. The operator was changed (pytorch-operator PR #145) "
                        "to create the workers only once the master is Running.",
             target={"namespace": "default", "target": "pytorchjob/optimizer"},
             must_not=["gpu-unhealthy", "xid-error", "nvidia-runtime-error", "container-lost-gpu-access",
                       "gpu-memory-exhausted"],
             notes="The thread's operator served kubeflow.org/v1beta1; the snapshot uses kubeflow.org/v1, the version "
                   "gpuctl's live client reads.",
             k8s="v1.11 (GKE, pytorch-operator v0.4)")
    c.add(gpu_node("gke-train-gpu-pool-v100-01", gpus=8, product="Tesla-V100-SXM2-16GB", kubelet="v1.11.5-gke.5",
                   gfd=False, cpu="64", memory="416Gi"))
    c.add(gpu_node("gke-train-gpu-pool-v100-02", gpus=8, product="Tesla-V100-SXM2-16GB", kubelet="v1.11.5-gke.5",
                   gfd=False, cpu="64", memory="416Gi"))
    tmpl = {"spec": {"containers": [container("pytorch", image=img, gpus=8, requests={"cpu": "16", "memory": "64Gi"})]}}
    c.add(obj("kubeflow.org/v1", "PyTorchJob", "optimizer", "default",
              spec={"pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": tmpl},
                                            "Worker": {"replicas": 1, "restartPolicy": "OnFailure", "template": tmpl}}},
              status={"conditions": [cond("Created", "True", "PyTorchJobCreated", "PyTorchJob optimizer is created.")]}))
    lab = {"pytorch-job-name": "optimizer", "controller-name": "pytorch-operator", "group-name": "kubeflow.org"}
    master = pod("optimizer-master-0", "default", node="gke-train-gpu-pool-v100-01", phase="Pending",
                 containers=[container("pytorch", image=img, gpus=8, requests={"cpu": "16", "memory": "64Gi"})],
                 labels={**lab, "pytorch-replica-type": "master", "pytorch-replica-index": "0"},
                 statuses=[waiting("pytorch", "ContainerCreating", image=img)],
                 conditions=[{"type": "PodScheduled", "status": "True"},
                             cond("Ready", "False", "ContainersNotReady", "containers with unready status: [pytorch]")])
    owned_by(master, "kubeflow.org/v1", "PyTorchJob", "optimizer")
    worker = pod("optimizer-worker-0", "default", node="gke-train-gpu-pool-v100-02", phase="Running",
                 containers=[container("pytorch", image=img, gpus=8, requests={"cpu": "16", "memory": "64Gi"})],
                 labels={**lab, "pytorch-replica-type": "worker", "pytorch-replica-index": "0"},
                 statuses=[crashed("pytorch", 4, img)],
                 conditions=[{"type": "PodScheduled", "status": "True"},
                             cond("Ready", "False", "ContainersNotReady", "containers with unready status: [pytorch]")])
    owned_by(worker, "kubeflow.org/v1", "PyTorchJob", "optimizer")
    c.add(master, worker,
          event("Pod", "optimizer-master-0", "default", "Pulling",
                f'pulling image "{img}"', type_="Normal", source="kubelet"),
          event("Pod", "optimizer-worker-0", "default", "BackOff", "Back-off restarting failed container",
                count=6, source="kubelet"))
    log = ("2019-01-11 05:43:30,310 INFO     main(rmq_host=rmq.default.svc.cluster.local, rmq_port=5672, batch_size=12)\n"
           "2019-01-11 05:43:30,310 INFO     init_distribution\n"
           "Traceback (most recent call last):\n"
           '  File "optimizer.py", line 413, in init_distribution\n'
           "    torch.distributed.init_process_group(backend=backend)\n"
           '  File "/root/.local/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 143, in '
           "_env_rendezvous_handler\n"
           "    store = TCPStore(master_addr, master_port, start_daemon)\n"
           f"{frag}\n")
    c.log("default", "optimizer-worker-0", "pytorch", log, previous=True)
    return c


def nccl_dgx_notebook_firewall() -> Case:
    """NVIDIA/nccl#352: multi-GPU TensorFlow/Horovod in a Kubeflow notebook on a DGX worker
    node hangs after NCCL's 'No plugin found' line; the node's firewall blocks eth0."""
    img = "nvcr.io/nvidia/tensorflow:20.06-tf2-py3"
    frag = "NCCL INFO NET/Plugin : No plugin found (libnccl-net.so)."
    c = Case("nccl-352-dgx-notebook-hang-host-firewall",
             source="https://github.com/NVIDIA/nccl/issues/352",
             fragment=frag,
             where="output of the training process in the notebook container's log; the pod stays Running, the job hangs",
             expect="inconclusive", trap=True,
             resolution="The 'No plugin found (libnccl-net.so)' line is informational, not the fault. The NCCL maintainer "
                        "found firewall rules on the DGX host blocking communication through eth0, so NCCL's socket "
                        "connections between the local ranks hang; the fix is to allow eth0 in the host firewall (or "
                        "set NCCL_SOCKET_IFNAME to an unblocked interface). No Kubernetes object records a host "
                        "firewall: the snapshot cannot decide, and the GPUs, driver and NCCL are fine.",
             target={"pod": "kubeflow-user/dgx-notebook-0"},
             must_not=["gpu-unhealthy", "xid-error", "nvidia-runtime-error", "driver-cuda-mismatch",
                       "gpu-memory-exhausted", "crash-loop"],
             k8s="v1.15 (on-prem, Kubeflow 1.0)")
    c.add(gpu_node("dgx-01", gpus=8, product="Tesla-V100-SXM2-16GB", kubelet="v1.15.11", driver="450.36.06",
                   cuda="11.0", cpu="80", memory="512Gi"))
    c.add(cpu_node("k8s-master-01", kubelet="v1.15.11"))
    p = pod("dgx-notebook-0", "kubeflow-user", node="dgx-01", phase="Running",
            containers=[container("dgx-notebook", image=img, gpus=4, requests={"cpu": "16", "memory": "64Gi"})],
            labels={"notebook-name": "dgx-notebook", "statefulset": "dgx-notebook"},
            owner=("StatefulSet", "dgx-notebook"))
    c.add(p)
    c.log("kubeflow-user", "dgx-notebook-0", "dgx-notebook",
          "[I 21:14:02.118 NotebookApp] Kernel started: 0c8d1f4e\n"
          "dgx-notebook-0:1203:1405 [0] NCCL INFO Bootstrap : Using [0]eth0:10.233.96.17<0>\n"
          f"dgx-notebook-0:1203:1405 [0] {frag}\n"
          "dgx-notebook-0:1203:1405 [0] NCCL INFO NET/IB : No device found.\n"
          "dgx-notebook-0:1203:1405 [0] NCCL INFO NET/Socket : Using [0]eth0:10.233.96.17<0>\n"
          "NCCL version 2.7.3+cuda11.0\n")
    return c


def kuberay_wait_gcs_ready_oomkilled() -> Case:
    """ray-project/kuberay#2735: RayCluster GPU workers never start: KubeRay's injected
    wait-gcs-ready init container has a hard-coded 256Mi limit and is OOMKilled over
    and over while running `ray health-check`."""
    img = "rayproject/ray:2.40.0-py310-gpu"
    c = Case("kuberay-2735-wait-gcs-ready-init-container-oomkilled",
             source="https://github.com/ray-project/kuberay/issues/2735",
             fragment="OOMKilled",
             where="lastState.terminated.reason (exit code 137) of the worker pod's init container wait-gcs-ready, "
                   "which restarts with back-off; the Ray container never starts",
             expect="container-oom-killed",
             resolution="The workers are not short of GPU or node memory: KubeRay injects the wait-gcs-ready init "
                        "container with fixed limits of 200m CPU and 256Mi memory, and on this image `ray health-check` "
                        "needs more, so the kernel OOM-kills it in a loop. The follow-up KubeRay PRs (#5072 'Add "
                        "gcsReadyOptions to override wait-gcs-ready init container resources', #5145) make those "
                        "resources configurable or copy the Ray container's cpu/memory.",
             target={"pod": "ml/ourclustername-gpu-group-worker-2sbdj"},
             must_not=["gpu-memory-exhausted", "insufficient-memory", "gpu-unhealthy", "insufficient-gpu"],
             k8s="v1.30 (KubeRay 1.2)")
    c.add(gpu_node("gpu-node-a10-01", gpus=1, product="NVIDIA-A10G", kubelet="v1.30.6", cpu="32", memory="128Gi"))
    c.add(cpu_node("cpu-node-01", kubelet="v1.30.6"))
    head = pod("ourclustername-head-8kq9v", "ml", phase="Running", node="cpu-node-01",
               containers=[container("ray-head", image=img, requests={"cpu": "2", "memory": "8Gi"})],
               labels={"ray.io/cluster": "ourclustername", "ray.io/node-type": "head"})
    owned_by(head, "ray.io/v1", "RayCluster", "ourclustername")
    init = container("wait-gcs-ready", image=img, requests={"cpu": "200m", "memory": "256Mi"},
                     limits={"cpu": "200m", "memory": "256Mi"}, command=["/bin/bash", "-lc", "--"])
    name = "ourclustername-gpu-group-worker-2sbdj"
    init_status = {"name": "wait-gcs-ready", "ready": False, "restartCount": 4, "image": img,
                   "state": {"waiting": {"reason": "CrashLoopBackOff",
                                         "message": "back-off 1m20s restarting failed container=wait-gcs-ready"}},
                   "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                                "startedAt": "2025-01-13T11:17:25Z", "finishedAt": "2025-01-13T11:18:07Z"}}}
    w = pod(name, "ml", phase="Pending", node="gpu-node-a10-01",
            containers=[container("ray-worker", image=img, gpus=1, requests={"cpu": "8", "memory": "32Gi"})],
            init_containers=[init], init_statuses=[init_status],
            statuses=[waiting("ray-worker", "PodInitializing", image=img)],
            labels={"ray.io/cluster": "ourclustername", "ray.io/group": "gpu-group", "ray.io/node-type": "worker"},
            conditions=[cond("Initialized", "False", "ContainersNotInitialized",
                             "containers with incomplete status: [wait-gcs-ready]"),
                        {"type": "PodScheduled", "status": "True"}])
    owned_by(w, "ray.io/v1", "RayCluster", "ourclustername")
    c.add(head, w, event("Pod", name, "ml", "BackOff", "Back-off restarting failed container wait-gcs-ready in pod "
                         f"{name}_ml(uid-ml-{name})", count=11, source="kubelet"))
    return c


CASES = [nccl_shm_segment_kubeflow, kfp_train_step_bus_error, pangeo_hub_notebook_shm,
         kubedl_mpijob_dag_gang, raycluster_ready_while_pods_pending,
         kuberay_init_container_gpu_admission, volcano_vcjob_k8s_quota_rejects_pods,
         pytorch_workers_crash_until_master_up, nccl_dgx_notebook_firewall,
         kuberay_wait_gcs_ready_oomkilled]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
