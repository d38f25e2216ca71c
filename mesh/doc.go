// Package mesh switches an app between Istio data-plane modes and proves, per pod, that a mode took effect:
//
//	none      no injection label, no dataplane-mode label; pods have no sidecar and no ambient redirection
//	sidecar   istio-injection=enabled (or istio.io/rev=<rev>); pods have sidecar.istio.io/status and a ready
//	          istio-proxy (a container, or a native sidecar: an init container with restartPolicy Always)
//	ambient   istio.io/dataplane-mode=ambient; pods have ambient.istio.io/redirection=enabled and no sidecar
//	waypoint  ambient + istio.io/use-waypoint=<gateway> (+ istio.io/use-waypoint-namespace when shared); the
//	          waypoint Gateway is Programmed=True AND its Deployment is available
//
// Switcher.Apply follows the safe order of docs/ambient/migrate (shared/reference/istio-modes.md): a waypoint is
// created and ready before anything is labelled to use it; the new mode's labels go on before the old mode's come
// off; Deployments and StatefulSets are restarted only when sidecar involvement changes (injection happens at pod
// creation; ambient capture is asynchronous and needs no restart). Apply does not wait for those rollouts: the
// caller waits for the app once (the runner's wait-ready, target.WaitReady), then Verify watches until every app pod
// proves the mode. The decision per pod is the pure Prove. The app is described by internal/target.Target, so mesh
// never imports workloads.
//
// Labels meshbench changes on namespaces it did not create, and the restart annotation it puts on the pod template
// of workloads it did not create (app existing), are written to a LabelRecord (namespace-labels.json in the run
// directory) before the change, and restored at the end of the run, after a failure or Ctrl-C, and by
// `meshbench cleanup`: labels first, then annotations, so the rollout the restored annotation causes brings the
// user's pods back in their original mode.
//
// Detect reads what is installed (istiod version through the pods/proxy subresource, ambient capability, native
// sidecars, Gateway API CRDs and their bundle-version, stand-in data planes built by hack/); package preflight judges
// it against a scenario, with the nodes, namespaces, images, Prometheus and permissions, so a run fails before it
// changes anything.
package mesh
