package schedule

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Permission is one thing a `meshbench run` does to the Kubernetes API, with why. RequiredPermissions is the single
// list: the scheduled run's ClusterRole is generated from it, and `meshbench preflight` checks it with
// SelfSubjectAccessReview before anything is changed.
type Permission struct {
	Group       string   // API group; "" is the core group
	Resource    string   // plural resource, e.g. "deployments"
	Subresource string   // e.g. "exec", "proxy"; "" for the resource itself
	Verbs       []string // in the order get, list, watch, create, patch, update, delete
	Why         string   // which step needs it
}

// ResourceName is "resource" or "resource/subresource", as RBAC rules write it.
func (p Permission) ResourceName() string {
	if p.Subresource == "" {
		return p.Resource
	}
	return p.Resource + "/" + p.Subresource
}

// RequiredPermissions is every API permission a run needs, cluster-wide (the run creates the app's namespaces, so a
// namespaced Role cannot be bound in advance). Treat it as read-only; docs/in-cluster.md says how it is used.
var RequiredPermissions = []Permission{
	{Group: "", Resource: "namespaces", Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "create the app namespaces, label them for the data-plane mode (istio-injection, istio.io/dataplane-mode, istio.io/use-waypoint), delete them at teardown and wait until they are gone"},
	{Group: "apps", Resource: "deployments", Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "apply the app and load-client Deployments (server-side apply), wait for rollouts, restart them after a mode switch, remove them"},
	{Group: "apps", Resource: "statefulsets", Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "apply Bank of Anthos's databases (server-side apply), wait for them, remove them"},
	{Group: "apps", Resource: "daemonsets", Verbs: []string{"get", "list"},
		Why: "detect Istio's node agents (ztunnel, istio-cni) and their images for the run facts"},
	{Group: "", Resource: "services", Verbs: []string{"get", "list", "create", "patch", "delete"},
		Why: "apply the app's Services and the network-test Services (headless and ClusterIP)"},
	{Group: "", Resource: "services", Subresource: "proxy", Verbs: []string{"get", "create"},
		Why: "reach an in-cluster Prometheus through the API server, without port-forwards: every query is a POST (create; client_golang's query API sends GET only after a refusal) and the scrape config a GET"},
	{Group: "", Resource: "configmaps", Verbs: []string{"get", "list", "create", "patch", "delete"},
		Why: "apply the app's ConfigMaps; read Istio's mesh config for the run facts; a tracing variant adds its span sink's provider to istiod's mesh ConfigMap (patch) and takes it out again (cleanup lists the ConfigMaps it marked)"},
	{Group: "", Resource: "secrets", Verbs: []string{"get", "list", "create", "patch", "delete"},
		Why: "create Bank of Anthos's JWT key Secret (and app manifests' Secrets) in the app namespaces; teardown lists and deletes the run's by label"},
	{Group: "", Resource: "serviceaccounts", Verbs: []string{"get", "list", "create", "patch", "delete"},
		Why: "apply the app's ServiceAccounts (the identities the mesh sees); teardown lists and deletes the run's by label"},
	{Group: "", Resource: "pods", Verbs: []string{"get", "list", "watch", "create", "delete"},
		Why: "wait for pods, verify per pod that the data-plane mode took effect, attribute resource samples to components; cni: create the network-test pods, teardown deletes them by label"},
	{Group: "discovery.k8s.io", Resource: "endpointslices", Verbs: []string{"list"},
		Why: "cni: wait until the test Services have ready endpoints"},
	{Group: "", Resource: "pods", Subresource: "exec", Verbs: []string{"get", "create"},
		Why: "drive fortio load clients and iperf3/netperf clients inside their pods: an exec is a WebSocket upgrade (a GET: get, and create from Kubernetes 1.35), SPDY (a POST: create) only when the upgrade fails"},
	{Group: "", Resource: "pods", Subresource: "proxy", Verbs: []string{"get"},
		Why: "read agent and proxy endpoints of test pods through the API server"},
	{Group: "", Resource: "nodes", Verbs: []string{"get", "list"},
		Why: "record node facts (versions, allocatable CPU and memory) and place network tests on two nodes"},
	{Group: "", Resource: "nodes", Subresource: "proxy", Verbs: []string{"get"},
		Why: "kubelet resource metrics (/metrics/resource) when no Prometheus is configured; the cluster DNS domain (kubelet /configz clusterDomain); after a case failed on a node, whether its kubelet answers (/healthz) before the next case"},
	{Group: "", Resource: "events", Verbs: []string{"list"},
		Why: "explain a failed case (image pulls, scheduling, evictions) in its reason"},
	{Group: "gateway.networking.k8s.io", Resource: "gateways", Verbs: []string{"get", "list", "watch", "create", "patch", "delete"},
		Why: "create the waypoint Gateways (gatewayClassName istio-waypoint) for mode waypoint, wait until programmed, remove them"},
	{Group: "gateway.networking.k8s.io", Resource: "gatewayclasses", Verbs: []string{"get"},
		Why: "preflight and mode waypoint: check that Istio's istio-waypoint GatewayClass exists"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", Verbs: []string{"create"},
		Why: "preflight: check every permission in this list before changing anything"},
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verbs: []string{"get", "list"},
		Why: "preflight: detect the Gateway API and Istio CRDs and their versions"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Verbs: []string{"list"},
		Why: "find the Istio revisions, revision tags and the default injector, to label namespaces for the control plane that serves the app"},
	{Group: "security.istio.io", Resource: "peerauthentications", Verbs: []string{"list", "create", "patch", "delete"},
		Why: "record the effective mTLS mode (PeerAuthentication, mesh-wide and per namespace) of every case; variants: create and delete a variant's mTLS mode (cleanup sweeps it by label); app manifests: apply the user's PeerAuthentications"},
	{Group: "telemetry.istio.io", Resource: "telemetries", Verbs: []string{"list", "create", "delete"},
		Why: "variants: create and delete a variant's access log setting (Telemetry; cleanup sweeps it by label)"},
	{Group: "", Resource: "persistentvolumeclaims", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "", Resource: "endpoints", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "", Resource: "limitranges", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "", Resource: "resourcequotas", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "", Resource: "podtemplates", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "apps", Resource: "controllerrevisions", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.k8s.io", Resource: "ingresses", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "autoscaling", Resource: "horizontalpodautoscalers", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "rbac.authorization.k8s.io", Resource: "roles", Verbs: []string{"list", "create", "patch", "delete"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply); teardown lists and deletes the run's by label"},
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verbs: []string{"list", "create", "patch", "delete"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply); teardown lists and deletes the run's by label"},
	{Group: "networking.istio.io", Resource: "virtualservices", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "destinationrules", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "gateways", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "serviceentries", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "sidecars", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "workloadentries", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "workloadgroups", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "envoyfilters", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "networking.istio.io", Resource: "proxyconfigs", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
	{Group: "security.istio.io", Resource: "authorizationpolicies", Verbs: []string{"list", "create", "patch", "delete"},
		Why: "time to enforce and variants: create and delete the deny policy and a variant's rules (cleanup sweeps them by label); app manifests: apply the user's objects of this kind (server-side apply)"},
	{Group: "security.istio.io", Resource: "requestauthentications", Verbs: []string{"create", "patch"},
		Why: "app manifests: apply the user's objects of this kind (workloads' placeable kinds, server-side apply)"},
}

// policyRules turns permissions into RBAC rules, one rule per permission, in order.
func policyRules(perms []Permission) []rbacv1.PolicyRule {
	rules := make([]rbacv1.PolicyRule, 0, len(perms))
	for _, p := range perms {
		rules = append(rules, rbacv1.PolicyRule{
			APIGroups: []string{p.Group},
			Resources: []string{p.ResourceName()},
			Verbs:     append([]string(nil), p.Verbs...),
		})
	}
	return rules
}
