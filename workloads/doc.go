// Package workloads is meshbench's app catalog (bank-of-anthos, fortio-chain), built as typed Kubernetes objects in
// Go (Objects, pure and golden-tested), placed in one or many namespaces, applied with server-side apply, waited for
// and torn down (Deployer). It also logs in to an app from inside the mesh (Login), reads and checks the user's app
// "manifests" (Renderer, CheckManifests) and discovers app "existing" (Discover). The apps, the namespace rules and
// the manifest rules: docs/apps.md.
package workloads
