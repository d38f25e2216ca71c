// Package images builds and publishes meshbench's own two images (meshbench-agent and the CLI) from its source with
// go-containerregistry, no Docker: multi-platform OCI indexes, reproducible (same tree, same digests), tagged with
// the tool version (Tag) so a run deploys the agent of its own CLI's version. Push writes them to a registry,
// writeArchive to an OCI layout tarball for containerd's importer; Check resolves a run's images for preflight.
// Layers, labels, progress and the checks' verdicts: docs/in-cluster.md.
package images
