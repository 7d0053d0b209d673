"""The resources the emulator serves: their paths, kinds, scopes and subresources."""


# ---------------------------------------------------------------------------------------------
# Resource registry


class Resource:
    def __init__(self, group, version, plural, kind, namespaced, short=(), subresources=(),
                 verbs=None, crd=False, categories=(), singular=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.short = list(short)
        self.subresources = list(subresources)
        self.verbs = verbs or ["create", "delete", "deletecollection", "get", "list", "patch",
                               "update", "watch"]
        self.crd = crd
        self.categories = list(categories)
        self.singular = singular or kind.lower()

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self):
        return f"{self.group}/{self.version}/{self.plural}"

    @property
    def qualified(self):
        # What error messages and Status details call the resource: "pods", "leases.coordination.k8s.io".
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCES = [
    Resource("", "v1", "pods", "Pod", True, ["po"], ["status", "binding", "eviction"],
             categories=["all"]),
    Resource("", "v1", "bindings", "Binding", True, verbs=["create"]),
    Resource("", "v1", "nodes", "Node", False, ["no"], ["status"]),
    Resource("", "v1", "namespaces", "Namespace", False, ["ns"], ["status"],
             verbs=["create", "delete", "get", "list", "patch", "update", "watch"]),
    Resource("", "v1", "events", "Event", True, ["ev"]),
    Resource("", "v1", "resourcequotas", "ResourceQuota", True, ["quota"], ["status"]),
    Resource("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"],
             ["status"]),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    Resource("events.k8s.io", "v1", "events", "Event", True),
    # What deploy/ (kustomize) creates, stored only (no controllers act on them): tests apply the
    # rendered base with kubectl and read it back.
    Resource("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
    Resource("apps", "v1", "deployments", "Deployment", True, ["deploy"], ["status", "scale"],
             categories=["all"]),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ["netpol"]),
    Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True,
             ["pg", "podgroup-v1beta1"], crd=True),
    Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False,
             ["q", "queue-v1beta1"], ["status"], crd=True),
    # Volcano's topology CRDs, cluster-scoped as Volcano installs them.
    Resource("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ["hn"], ["status"],
             crd=True),
    Resource("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", "Numatopology", False, ["numatopo"],
             crd=True),
]
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES if r.plural != "bindings"}
POD = BY_PATH[("", "v1", "pods")]
NODE = BY_PATH[("", "v1", "nodes")]
NAMESPACE = BY_PATH[("", "v1", "namespaces")]
PDB = BY_PATH[("policy", "v1", "poddisruptionbudgets")]
PRIORITY_CLASS = BY_PATH[("scheduling.k8s.io", "v1", "priorityclasses")]
PODGROUP = BY_PATH[("scheduling.volcano.sh", "v1beta1", "podgroups")]
QUEUE = BY_PATH[("scheduling.volcano.sh", "v1beta1", "queues")]
HYPERNODE = BY_PATH[("topology.volcano.sh", "v1alpha1", "hypernodes")]
NUMATOPOLOGY = BY_PATH[("nodeinfo.volcano.sh", "v1alpha1", "numatopologies")]
GROUPS = []  # (group, [versions]) in discovery order
for _r in RESOURCES:
    if _r.group and all(g != _r.group for g, _ in GROUPS):
        GROUPS.append((_r.group, [_r.version]))

FIELD_SELECTORS = {
    "pods": ["spec.nodeName", "spec.schedulerName", "status.phase", "status.nominatedNodeName",
             "spec.restartPolicy", "spec.serviceAccountName", "spec.hostNetwork", "status.podIP"],
    "events": ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
               "regarding.kind", "regarding.name", "regarding.namespace", "regarding.uid"],
    "nodes": ["spec.unschedulable"],
    "namespaces": ["status.phase"],
}
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"]
